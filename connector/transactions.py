"""Exactly-once: one Kafka transaction per Spark task, and a marker that keeps a replay from writing twice.

A task's transactional id is `<sink.transactional-id-prefix>-<Spark partition id>`, the same for every
attempt and every micro-batch, so `init_transactions` fences an earlier attempt and aborts whatever it
left open. Kafka's transactions make a task's records visible all at once or never, but Spark may run a
task again after it committed (a retried stage, a micro-batch replayed after a restart). So each
transaction also commits a marker — the write id as the metadata of a consumer-group offset, in the group
named like the transactional id — through `send_offsets_to_transaction`, atomically with the records. A
task that finds its write id in the marker (read after `init_transactions`, so nothing is in flight) has
been written already and writes nothing.

Write ids: a micro-batch's is its query id and batch id (Spark sets both as local properties of its tasks,
also for batch writes inside foreachBatch); a batch write gets a fresh id on the driver. The target
topics are part of it, so two writes of one micro-batch to different topics do not mistake each other's
markers.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from connector.errors import RecordError
from connector.write_options import WriteSpec

log = logging.getLogger("upsert_kafka")


def transactional_id(spec: WriteSpec, partition_id: int) -> str:
    return f"{spec.transactional_id_prefix}-{partition_id}"


def write_id(spec: WriteSpec, local_properties: dict[str, str | None], fresh_id: str) -> str:
    """The id a replay of this write shares: the micro-batch's when there is one, else the driver's."""
    batch, query = local_properties.get("streaming.sql.batchId"), local_properties.get("sql.streaming.queryId")
    target = hashlib.sha1(spec.topics.describe().encode()).hexdigest()[:12]
    return f"query {query} batch {batch} to {target}" if batch and query else f"write {fresh_id} to {target}"


class TaskTransaction:
    """The transaction of one task on `client`, a producer configured with its transactional id."""

    def __init__(self, client: Any, spec: WriteSpec, transactional_id: str, write_id: str) -> None:
        self.client, self.spec, self.id, self.write_id = client, spec, transactional_id, write_id
        self.timeout_s = spec.kafka.timeout_s
        self._group = Consumer(
            spec.kafka.client_config(
                **{"group.id": transactional_id, "enable.auto.commit": False, "isolation.level": "read_committed"}
            )
        )

    def begin(self) -> bool:
        """Fence earlier attempts; False when one of them already committed this write."""
        self._call("start a transaction", self.client.init_transactions, self.timeout_s)
        if self._committed():
            log.info("upsert-kafka: %s already committed write '%s'; not writing it again", self.id, self.write_id)
            self._group.close()
            return False
        self.client.begin_transaction()
        return True

    def _committed(self) -> bool:
        # Read committed (KIP-447 require_stable): an offset of a transaction still completing is waited for.
        topics = [t for t in self.client.list_topics(timeout=self.timeout_s).topics if self.spec.topics.accepts(t)]
        if not topics:
            return False
        marks = self._call(
            "read the exactly-once markers",
            self._group.committed,
            [TopicPartition(t, 0) for t in sorted(topics)],
            timeout=self.timeout_s,
        )
        return any(tp.metadata == self.write_id for tp in marks)

    def commit(self, marker_topic: str | None) -> None:
        """Commit the records and, with them, the marker (on partition 0 of a topic the task wrote)."""
        try:
            if marker_topic is not None:
                marker = TopicPartition(marker_topic, 0, 0, metadata=self.write_id)
                self._call(
                    "commit the exactly-once marker",
                    self.client.send_offsets_to_transaction,
                    [marker],
                    self._group.consumer_group_metadata(),
                    self.timeout_s,
                )
            self._call("commit the transaction", self.client.commit_transaction, self.timeout_s)
        finally:
            self._group.close()

    def abort(self) -> None:
        """Best effort: an abandoned transaction is aborted anyway by the next attempt or by its timeout."""
        try:
            self.client.abort_transaction(self.timeout_s)
        except KafkaException as e:
            log.warning("upsert-kafka: could not abort the transaction of %s: %s", self.id, e.args[0].str())
        finally:
            self._group.close()

    def _call(self, what: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except KafkaException as e:
            raise RecordError(
                f"could not {what} for transactional id '{self.id}' at {self.spec.kafka.describe()}: "
                f"{e.args[0].str()}{_hint(e.args[0])}"
            ) from None


def _hint(error: Any) -> str:
    name = error.name()
    if name == "INVALID_TRANSACTION_TIMEOUT":
        return " (option 'properties.transaction.timeout.ms' exceeds the brokers' transaction.max.timeout.ms)"
    if name in ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"):
        return (
            " (exactly-once needs WRITE on the transactional ids and READ on the consumer groups named "
            "'<sink.transactional-id-prefix>-<partition>', and READ on the target topics)"
        )
    if name == "PRODUCER_FENCED" or name == "_FENCED":
        return " (another writer uses the same 'sink.transactional-id-prefix'; give each query or job its own)"
    return ""

