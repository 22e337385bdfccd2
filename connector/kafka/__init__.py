"""The Kafka wing: librdkafka's clients as the connector makes, pools and questions them (consumers, producers, admin
clients, the driver's questions to the brokers, librdkafka's errors and their retries, OAUTHBEARER token providers,
the Java client's partitioner). Below read/ and write/, importing neither. Its modules load by themselves: this
package imports none of them."""
