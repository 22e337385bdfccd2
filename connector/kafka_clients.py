"""librdkafka clients built from a KafkaSpec, and the few broker questions the driver asks.

Every call to the brokers is bounded by the spec's timeout and turns librdkafka's failures into one
error that names the servers and what to change; no credential ever reaches a message or a log.
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import Consumer, IsolationLevel, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType

from connector.errors import KafkaUnavailableError, TopicError
from connector.options import KafkaSpec

log = logging.getLogger("upsert_kafka")
_client_log = logging.getLogger("upsert_kafka.librdkafka")


def admin_client(kafka: KafkaSpec) -> AdminClient:
    return AdminClient(kafka.client_config(logger=_client_log))


def consumer(kafka: KafkaSpec) -> Consumer:
    """A consumer for explicitly assigned ranges: no group membership, no offset commits."""
    return Consumer(
        kafka.client_config(
            **{
                "group.id": "pyspark-upsert-kafka",  # required by librdkafka; never joined or committed
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                # A start below the log start must fail, not silently jump: that is data loss.
                "auto.offset.reset": "error",
                "isolation.level": "read_committed",
                "logger": _client_log,
            }
        )
    )


def producer(kafka: KafkaSpec, on_delivery: Any) -> Producer:
    """A producer partitioning like the Java client, idempotent, reporting only failed deliveries."""
    return Producer(
        kafka.client_config(
            **{
                "partitioner": "murmur2_random",  # Java's default partitioner for keyed records
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "batch.num.messages": 10000,
                "queue.buffering.max.messages": 500000,
                "message.timeout.ms": 120000,  # as the Java client's delivery.timeout.ms
                "delivery.report.only.error": True,
                "on_delivery": on_delivery,
                "logger": _client_log,
            }
        )
    )


def _unavailable(kafka: KafkaSpec, what: str, error: BaseException) -> KafkaUnavailableError:
    return KafkaUnavailableError(
        f"could not {what} from the Kafka brokers {kafka.describe()} within {kafka.timeout_s:g} s "
        f"({_reason(error)}). Check option 'properties.bootstrap.servers' and that the brokers are up, "
        "or raise option 'client.timeout'."
    )


def _reason(error: BaseException) -> str:
    if isinstance(error, KafkaException) and error.args:
        return error.args[0].str()
    return str(error) or type(error).__name__


def topic_partitions(admin: AdminClient, kafka: KafkaSpec, topic: str) -> list[int]:
    """The topic's partition ids, sorted; a missing topic is an error naming it."""
    try:
        # All topics, not one by name: asking for one by name may auto-create it.
        metadata = admin.list_topics(timeout=kafka.timeout_s)
    except KafkaException as e:
        raise _unavailable(kafka, "read metadata", e) from None
    found = metadata.topics.get(topic)
    if found is None:
        raise TopicError(f"topic '{topic}' does not exist at {kafka.describe()} (option 'topic')")
    if found.error is not None:
        raise TopicError(f"topic '{topic}' is not usable: {found.error.str()}")
    return sorted(found.partitions)


def list_offsets(
    admin: AdminClient, kafka: KafkaSpec, topic: str, partitions: list[int], which: str
) -> dict[int, int]:
    """The earliest or latest (last stable, as read_committed sees it) offset of each partition."""
    spec = OffsetSpec.earliest() if which == "earliest" else OffsetSpec.latest()
    request = {TopicPartition(topic, p): spec for p in partitions}
    if not request:
        return {}
    futures = admin.list_offsets(
        request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=kafka.timeout_s
    )
    try:
        return {tp.partition: future.result().offset for tp, future in futures.items()}
    except KafkaException as e:
        raise _unavailable(kafka, f"list {which} offsets of topic '{topic}'", e) from None


def check_writable(admin: AdminClient, kafka: KafkaSpec, topic: str) -> None:
    """A missing topic is fine when the brokers create topics on first write; otherwise an error."""
    try:
        topic_partitions(admin, kafka, topic)
    except TopicError:
        if not _brokers_create_topics(admin, kafka):
            raise TopicError(
                f"topic '{topic}' does not exist at {kafka.describe()} and the brokers do not create topics "
                "on first write (auto.create.topics.enable=false): create it first (option 'topic')"
            ) from None
        log.info("topic '%s' does not exist yet; the brokers will create it on first write", topic)


def _brokers_create_topics(admin: AdminClient, kafka: KafkaSpec) -> bool:
    try:
        broker = next(iter(admin.list_topics(timeout=kafka.timeout_s).brokers))
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        configs = admin.describe_configs([resource], request_timeout=kafka.timeout_s)[resource].result()
    except KafkaException as e:
        raise _unavailable(kafka, "read the broker configuration", e) from None
    entry = configs.get("auto.create.topics.enable")
    return entry is not None and entry.value == "true"
