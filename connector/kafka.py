"""librdkafka clients built from a KafkaSpec, and the few broker questions the driver asks.

Every call to the brokers is bounded by the spec's timeout and turns librdkafka's failures into one
error that names the servers and what to change; no credential ever reaches a message or a log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType

from .errors import KafkaUnavailableError, OptionError, TopicError
from .options.common import KafkaSpec

log = logging.getLogger("upsert_kafka")
_client_log = logging.getLogger("upsert_kafka.librdkafka")


def admin_client(kafka: KafkaSpec) -> AdminClient:
    return AdminClient(kafka.client_config(logger=_client_log))


def consumer(kafka: KafkaSpec) -> Consumer:
    """A consumer for explicitly assigned ranges: no group membership, no offset commits."""
    # The range reader depends on every one of these; the user's properties cannot change them. A start
    # below the log start must fail (data loss), unless the user chose to skip lost offsets.
    return Consumer(
        kafka.client_config(
            **{
                "group.id": "pyspark-upsert-kafka",  # required by librdkafka; never joined or committed
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "auto.offset.reset": "error",  # a start below the log start is data loss (read.fetch decides)
                "logger": _client_log,
            }
        )
    )


# Producer settings the user may tune with `properties.*`.
_PRODUCER_DEFAULTS = {
    "linger.ms": 20,
    "batch.num.messages": 10000,
    "queue.buffering.max.messages": 500000,
    "message.timeout.ms": 120000,  # as the Java client's delivery.timeout.ms
}


def producer(kafka: KafkaSpec, on_delivery: Any, defaults: dict[str, Any] | None = None, **owned: Any) -> Producer:
    """A producer partitioning like the Java client and reporting only failed deliveries. `defaults` go on top
    of ours and may be changed by the user's properties; `owned` (the delivery guarantee's) may not."""
    return Producer(
        kafka.client_config(
            _PRODUCER_DEFAULTS | (defaults or {}),
            **{
                "partitioner": "murmur2_random",  # Java's default partitioner for keyed records
                "enable.idempotence": True,
                "acks": "all",
                "delivery.report.only.error": True,
                "on_delivery": on_delivery,
                "logger": _client_log,
                **owned,
            },
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
    admin: AdminClient, kafka: KafkaSpec, partitions: Mapping[str, list[int]], spec: Callable[[], OffsetSpec]
) -> dict[str, dict[int, int]]:
    """One request for an offset of each partition: `spec` is OffsetSpec.earliest, OffsetSpec.latest (the last
    stable offset, as read_committed readers see it) or a function making a for_timestamp spec."""
    request = {TopicPartition(t, p): spec() for t, ps in partitions.items() for p in ps}
    out: dict[str, dict[int, int]] = {t: {} for t in partitions}
    if not request:
        return out
    read_committed = IsolationLevel.READ_COMMITTED
    futures = admin.list_offsets(request, isolation_level=read_committed, request_timeout=kafka.timeout_s)
    try:
        for tp, future in futures.items():
            out[tp.topic][tp.partition] = future.result().offset
    except KafkaException as e:
        raise _unavailable(kafka, "list offsets", e) from None
    return out


# ---------------------------------------------------------------------------------------------
# Writes: what the driver asks the brokers once, before any task sends a record.

# A task's transaction timeout unless 'properties.transaction.timeout.ms' says otherwise (the Java producer's
# default). It bounds how long a crashed task's open transaction holds back every read_committed reader of
# the partitions it wrote (its last stable offset), when no later attempt fences it sooner.
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class WriteTarget:
    """The brokers' answers a write needs: the target topics that exist now, the smallest record size
    limit among them (None: not readable with these credentials) and the transaction timeout to use."""

    topics: tuple[str, ...]
    max_message_bytes: int | None
    transaction_timeout_ms: int | None


def describe_write_target(
    kafka: KafkaSpec, names: tuple[str, ...], pattern: str | None, transaction_timeout_ms: int | None = None
) -> WriteTarget:
    """Check the target can be written (authentication, topics, auto-creation) and read its limits.

    transaction_timeout_ms: for exactly-once, the user's timeout (None: our default), checked against
    the brokers' transaction.max.timeout.ms; pass 0 for writes without transactions."""
    errors: list[Any] = []
    # Never create a topic by asking about it; collect authentication errors, which metadata calls hide.
    admin = AdminClient(
        kafka.client_config(logger=_client_log, error_cb=errors.append, **{"allow.auto.create.topics": False})
    )
    try:
        metadata = admin.list_topics(timeout=kafka.timeout_s)
    except KafkaException as e:
        admin.poll(0)
        raise _authentication_failed(kafka, errors) or _unavailable(kafka, "read metadata", e) from None
    broker = _broker_config(admin, kafka, metadata)
    if pattern is not None:
        topics = tuple(sorted(t for t in metadata.topics if re.fullmatch(pattern, t)))
    else:
        topics = tuple(t for t in names if t in metadata.topics)
        missing = [t for t in names if t not in metadata.topics]
        if missing:
            check_missing_topics(admin, kafka, missing, _creates_topics(broker))
    return WriteTarget(
        topics=topics,
        max_message_bytes=_max_message_bytes(admin, kafka, topics),
        transaction_timeout_ms=None
        if transaction_timeout_ms == 0
        else _transaction_timeout(broker, transaction_timeout_ms),
    )


def _authentication_failed(kafka: KafkaSpec, errors: list[Any]) -> KafkaUnavailableError | None:
    for error in errors:
        if error.code() == KafkaError._AUTHENTICATION:
            return KafkaUnavailableError(
                f"authentication with the Kafka brokers {kafka.describe()} failed ({error.str()}): check options "
                "'properties.security.protocol', 'properties.sasl.mechanism', 'properties.sasl.username' and "
                "'properties.sasl.password' (or the SSL certificate settings)"
            )
    return None


def check_missing_topics(admin: AdminClient, kafka: KafkaSpec, missing: list[str], creates_topics: bool | None) -> None:
    """A topic absent from the listing is either not there or hidden from this user: ask by name to tell.
    A topic that is not there fails the write unless the brokers create topics on first write
    (creates_topics; None: their configuration is not readable, so the first record will tell)."""
    try:
        by_name = {t: admin.list_topics(topic=t, timeout=kafka.timeout_s).topics.get(t) for t in missing}
    except KafkaException as e:
        raise _unavailable(kafka, "read metadata", e) from None
    for topic, found in by_name.items():
        code = found.error.code() if found is not None and found.error is not None else None
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise TopicError(
                f"not authorized to write topic '{topic}' at {kafka.describe()}: grant this client's user WRITE "
                "and DESCRIBE on the topic (exactly-once also needs READ on it, WRITE on the transactional ids "
                "and READ on their consumer groups)"
            )
    if creates_topics is False:
        raise TopicError(
            f"topic '{missing[0]}' does not exist at {kafka.describe()} and the brokers do not create topics on "
            "first write (auto.create.topics.enable=false): create it first (option 'topic')"
        )
    outcome = "the brokers will create them" if creates_topics else "the brokers may create them (settings hidden)"
    log.info("topic(s) %s do not exist yet; %s on first write", ", ".join(missing), outcome)


def _describe(admin: AdminClient, kafka: KafkaSpec, resource: ConfigResource) -> dict[str, Any] | None:
    """A resource's configuration; None when these credentials may not read it (limits are then not checked)."""
    try:
        return admin.describe_configs([resource], request_timeout=kafka.timeout_s)[resource].result()
    except KafkaException as e:
        if e.args and e.args[0].code() in _NOT_AUTHORIZED:
            log.info("upsert-kafka: may not read the configuration of %s; its limits are not checked", resource)
            return None
        raise _unavailable(kafka, "read the broker configuration", e) from None


_NOT_AUTHORIZED = (KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED)


def _broker_config(admin: AdminClient, kafka: KafkaSpec, metadata: Any) -> dict[str, Any] | None:
    broker = next(iter(metadata.brokers))
    return _describe(admin, kafka, ConfigResource(ResourceType.BROKER, str(broker)))


def _creates_topics(broker: dict[str, Any] | None) -> bool | None:
    entry = (broker or {}).get("auto.create.topics.enable")
    return None if entry is None else entry.value == "true"


def _max_message_bytes(admin: AdminClient, kafka: KafkaSpec, topics: tuple[str, ...]) -> int | None:
    limits = []
    for topic in topics:
        config = _describe(admin, kafka, ConfigResource(ResourceType.TOPIC, topic))
        if config is None:
            return None
        limits.append(int(config["max.message.bytes"].value))
    return min(limits, default=None)


def _transaction_timeout(broker: dict[str, Any] | None, wanted_ms: int | None) -> int:
    entry = (broker or {}).get("transaction.max.timeout.ms")
    if entry is None:  # not readable: the broker refuses a too-long timeout when a task starts its transaction
        return wanted_ms or DEFAULT_TRANSACTION_TIMEOUT_MS
    maximum = int(entry.value)
    if wanted_ms is not None and wanted_ms > maximum:
        raise OptionError(
            f"option 'properties.transaction.timeout.ms' ({wanted_ms} ms) exceeds the brokers' "
            f"transaction.max.timeout.ms ({maximum} ms): lower it, or raise the broker setting"
        )
    return wanted_ms or min(DEFAULT_TRANSACTION_TIMEOUT_MS, maximum)
