"""Authentication and TLS failures on the secured broker: one clear error naming what failed, the servers and the
mechanism or the setting to change, without a retry, with the password nowhere in the error or the
logs. librdkafka reports these only through its error callback; a metadata call alone just times out."""

from __future__ import annotations

import dataclasses

import pytest
from pyspark_upsert_kafka.errors import KafkaAuthenticationError

from tests.security.acls import read_grants, write_grants
from tests.security.failures import QUERY_WAIT_S, TIMEOUT_OPTIONS, assert_no_secret, failure_of
from tests.support.secure_fixtures import PLAIN, SASL_PLAINTEXT, SASL_SSL, SCRAM, Credentials

SCHEMA = "id INT, name STRING"


def batch_read(spark, opts: dict):
    return lambda: (
        spark.read.format("upsert-kafka").options(**opts).schema(SCHEMA + ", _change_type STRING").load().collect()
    )


def batch_write(spark, opts: dict):
    df = spark.createDataFrame([(1, "a")], SCHEMA)
    return lambda: df.write.format("upsert-kafka").options(**opts).mode("append").save()


def streaming_read(spark, opts: dict, checkpoint: str):
    def run() -> None:
        df = spark.readStream.format("upsert-kafka").options(**opts).schema(SCHEMA + ", _change_type STRING").load()
        query = (
            df.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        )
        try:
            query.awaitTermination(QUERY_WAIT_S)
            assert not query.isActive, f"the query neither failed nor finished in {QUERY_WAIT_S} s"
        finally:
            query.stop()

    return run


@pytest.mark.parametrize("action", ["read", "write"])
def test_wrong_password_says_authentication_failed(
    spark, secure_kafka, secure_topic, kafka_user, spark_logs, caplog, action
):
    topic = secure_topic()
    user = kafka_user(*(read_grants(topic) if action == "read" else write_grants(topic)))
    wrong = dataclasses.replace(user, password="wr0ng-" + user.password)
    opts = secure_kafka.options(wrong, topic, SASL_SSL, **TIMEOUT_OPTIONS)

    failure = failure_of(batch_read(spark, opts) if action == "read" else batch_write(spark, opts))

    failure.assert_says("authentication", secure_kafka.ssl_servers, SCRAM, r"properties\.sasl\.username",
                        r"properties\.sasl\.password")  # fmt: skip
    if action == "read":
        assert "brokers are up" not in failure.message
    failure.assert_failed_as(KafkaAuthenticationError)
    assert_no_secret(wrong.password, failure.message, spark_logs.text(), caplog.text)


def test_unknown_user_on_a_streaming_read_says_authentication_failed(
    spark, secure_kafka, secure_topic, tmp_path, spark_logs, caplog
):
    topic = secure_topic()
    nobody = Credentials("nobody-here", "n0body-s3cret-pw", PLAIN)
    opts = secure_kafka.options(nobody, topic, SASL_PLAINTEXT, **TIMEOUT_OPTIONS)

    failure = failure_of(streaming_read(spark, opts, str(tmp_path / "cp")))

    failure.assert_says("authentication", secure_kafka.plaintext_servers, PLAIN, r"properties\.sasl\.username",
                        r"properties\.sasl\.password")  # fmt: skip
    assert "brokers are up" not in failure.message
    failure.assert_failed_as(KafkaAuthenticationError)
    assert_no_secret(nobody.password, failure.message, spark_logs.text(), caplog.text)


# -- TLS ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["read", "write"])
def test_broker_certificate_from_an_untrusted_ca_fails_naming_the_ca_option(
    spark, secure_kafka, secure_topic, kafka_user, tls_files, spark_logs, caplog, action
):
    topic = secure_topic()
    user = kafka_user(*read_grants(topic), *write_grants(topic))
    # tls_files.ca is another CA: it did not sign the broker's certificate.
    opts = secure_kafka.options(
        user, topic, SASL_SSL, **TIMEOUT_OPTIONS, **{"properties.ssl.ca.location": tls_files.ca}
    )

    failure = failure_of(batch_read(spark, opts) if action == "read" else batch_write(spark, opts))

    failure.assert_says("certificate", r"verif", secure_kafka.ssl_servers, r"properties\.ssl\.ca\.location")
    assert "brokers are up" not in failure.message
    failure.assert_failed_as(KafkaAuthenticationError)
    assert_no_secret(user.password, failure.message, spark_logs.text(), caplog.text)


def test_hostname_verification_is_on_by_default(spark, secure_kafka, secure_topic, kafka_user):
    topic = secure_topic()
    user = kafka_user(*read_grants(topic))
    secure_kafka.produce(topic, [(b'{"id":1}', b'{"id":1,"name":"a"}')])
    # The broker's certificate names IP 127.0.0.1 only; 'localhost' is the same socket under another name.
    port = secure_kafka.ssl_servers.rsplit(":", 1)[1]
    opts = secure_kafka.options(
        user, topic, SASL_SSL, **TIMEOUT_OPTIONS, **{"properties.bootstrap.servers": f"localhost:{port}"}
    )

    failure = failure_of(batch_read(spark, opts))

    failure.assert_says("certificate", "hostname|host name", f"localhost:{port}")
    failure.assert_failed_as(KafkaAuthenticationError)
    # The same read with verification of the name turned off works: the name was what failed.
    opts["properties.ssl.endpoint.identification.algorithm"] = "none"
    assert [tuple(r)[:2] for r in batch_read(spark, opts)()] == [(1, "a")]
