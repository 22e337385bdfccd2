"""Driver side, before any task of a write sends a record: what the brokers say about the target (the topics
that exist, their record size limit, the transaction timeout to use), with the checks that fail early."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from confluent_kafka.admin import ConfigEntry, ConfigResource, ResourceType

from ..errors import KafkaAuthorizationError, OptionError, TopicError
from ..kafka.brokers import Brokers
from ..kafka.spec import KafkaSpec

log = logging.getLogger("upsert_kafka")

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
    brokers = Brokers(kafka, **{"allow.auto.create.topics": False})  # never create a topic by asking about it
    metadata = brokers.metadata()
    broker = brokers.describe_config(ConfigResource(ResourceType.BROKER, str(next(iter(metadata.brokers)))))
    if pattern is not None:
        topics = tuple(sorted(t for t in metadata.topics if re.fullmatch(pattern, t)))
    else:
        topics = tuple(t for t in names if t in metadata.topics)
        missing = [t for t in names if t not in metadata.topics]
        if missing:
            check_missing_topics(brokers, missing, _creates_topics(broker))
    return WriteTarget(
        topics=topics,
        max_message_bytes=_max_message_bytes(brokers, topics),
        transaction_timeout_ms=None
        if transaction_timeout_ms == 0
        else _transaction_timeout(broker, transaction_timeout_ms),
    )


def check_missing_topics(brokers: Brokers, missing: list[str], creates_topics: bool | None) -> None:
    """A topic absent from the listing is either not there or hidden from this user: ask by name to tell.
    A topic that is not there fails the write unless the brokers create topics on first write
    (creates_topics; None: their configuration is not readable, so the first record will tell)."""
    kafka = brokers.kafka
    for topic in brokers.hidden(missing):
        raise KafkaAuthorizationError(
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


def _creates_topics(broker: dict[str, ConfigEntry] | None) -> bool | None:
    entry = (broker or {}).get("auto.create.topics.enable")
    return None if entry is None else entry.value == "true"


def _max_message_bytes(brokers: Brokers, topics: tuple[str, ...]) -> int | None:
    limits = []
    for config in brokers.topic_configs(list(topics)).values():
        limit = None if config is None else config["max.message.bytes"]  # None: not set or hidden
        if limit is None:
            return None
        limits.append(int(limit))
    return min(limits, default=None)


def _transaction_timeout(broker: dict[str, ConfigEntry] | None, wanted_ms: int | None) -> int:
    entry = (broker or {}).get("transaction.max.timeout.ms")
    maximum = None if entry is None or entry.value is None else int(entry.value)  # None: not set or hidden
    if maximum is None:  # not readable: the broker refuses a too-long timeout when a task starts its transaction
        return wanted_ms or DEFAULT_TRANSACTION_TIMEOUT_MS
    if wanted_ms is not None and wanted_ms > maximum:
        raise OptionError(
            f"option 'properties.transaction.timeout.ms' ({wanted_ms} ms) exceeds the brokers' "
            f"transaction.max.timeout.ms ({maximum} ms): lower it, or raise the broker setting"
        )
    return wanted_ms or min(DEFAULT_TRANSACTION_TIMEOUT_MS, maximum)
