"""Executor side: Arrow batches -> key/value encoders -> Kafka records (upserts and tombstones).

Partitioning is librdkafka's `murmur2_random`, which equals the Java client's default partitioner
for keyed records, so every key shares a partition with what Java producers write for it. A task
reports success only after every record it produced is acknowledged (acks=all, idempotent).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import WriterCommitMessage

from connector.errors import RecordError, escaped_prefix
from connector.kafka_clients import producer
from connector.write_options import WriteSpec
from formats import Encoder

log = logging.getLogger("upsert_kafka")

# Change kinds a row may carry (case-insensitive): ours, Delta CDF's and Flink's RowKind short strings.
VALUE_KINDS = ("upsert", "insert", "update_postimage", "+i", "+u")
DELETE_KINDS = ("delete", "-d")
SKIP_KINDS = ("update_preimage", "-u")  # the row before an update: its after-image follows


@dataclass(frozen=True)
class WriteResult(WriterCommitMessage):
    records: int
    tombstones: int
    skipped_preimages: int


class RecordWriter:
    """Writes one task's rows; one producer per task, flushed before the task reports success."""

    def __init__(self, spec: WriteSpec) -> None:
        layout = spec.layout
        self.spec, self.layout = spec, layout
        self.key_encoder = layout.key_codec.encoder(layout.key_schema)
        self.value_encoder = layout.value_codec.encoder(layout.value_schema)
        self.failure: tuple[str, Any] | None = None
        self.failures = 0

    def write(self, batches: Iterator[pa.RecordBatch]) -> WriteResult:
        client = producer(self.spec.kafka, self._on_delivery)
        try:
            return self._write(client, batches)
        except BaseException:
            client.purge()  # a failed task sends nothing more; Spark retries it whole
            raise

    def _write(self, client: Any, batches: Iterator[pa.RecordBatch]) -> WriteResult:
        records = tombstones = skipped = 0
        for batch in batches:
            rows, deletes, n_skipped = self._classify(batch)
            if rows.num_rows == 0:
                skipped += n_skipped
                continue
            self._check_keys(rows)
            keys = self._encode(self.key_encoder, rows.select(list(self.layout.key_fields)), rows, "key")
            values = self._values(rows, deletes)
            self._produce(client, keys, values)
            records += rows.num_rows
            tombstones += values.count(None)
            skipped += n_skipped
        remaining = client.flush(self.spec.kafka.timeout_s + 120)
        if self.failure is not None:
            reason, key = self.failure
            raise RecordError(
                f"{self.failures} record(s) could not be written to topic '{self.spec.topic}' at "
                f"{self.spec.kafka.describe()}: {reason} (first failed key: {escaped_prefix(key)})"
            )
        if remaining:
            raise RecordError(
                f"{remaining} record(s) were still unacknowledged by {self.spec.kafka.describe()} after the "
                f"flush timeout; nothing of this task is reported as written"
            )
        return WriteResult(records, tombstones, skipped)

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failures += 1
            if self.failure is None:
                self.failure = (error.str(), message.key())

    def _classify(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.Array | None, int]:
        """Drop pre-images; return the rows to write, which of them are deletes, and how many dropped."""
        column = self.layout.changelog_column
        if column is None:
            return batch, None, 0
        kinds = pc.utf8_lower(batch.column(column))
        known = pc.is_in(kinds, value_set=pa.array(VALUE_KINDS + DELETE_KINDS + SKIP_KINDS))
        unknown = pc.and_(pc.invert(known), pc.is_valid(kinds))
        if pc.any(unknown).as_py():
            row = pc.index(unknown, True).as_py()
            raise RecordError(
                f"column '{column}' has the unknown change kind '{batch.column(column)[row].as_py()}' in "
                f"the row with key {self._key_text(batch, row)}; use upsert, delete, insert, update_preimage "
                "or update_postimage (or Flink's +I, -U, +U, -D)"
            )
        skip = pc.fill_null(pc.is_in(kinds, value_set=pa.array(SKIP_KINDS)), False)
        n_skipped = pc.sum(skip).as_py() or 0
        if n_skipped:
            batch, kinds = batch.filter(pc.invert(skip)), kinds.filter(pc.invert(skip))
        deletes = pc.fill_null(pc.is_in(kinds, value_set=pa.array(DELETE_KINDS)), False)
        return batch, deletes, n_skipped

    def _check_keys(self, rows: pa.RecordBatch) -> None:
        for name in self.layout.key_fields:
            nulls = rows.column(name).is_null()
            if pc.any(nulls).as_py():
                row = pc.index(nulls, True).as_py()
                raise RecordError(
                    f"key column '{name}' is null in the row with key {self._key_text(rows, row)}; an "
                    "upsert-kafka key must not be null (option 'key.fields')"
                )

    def _values(self, rows: pa.RecordBatch, deletes: pa.Array | None) -> list[bytes | None]:
        columns = list(self.layout.value_fields)
        if deletes is None or not pc.any(deletes).as_py():
            return self._encode(self.value_encoder, rows.select(columns), rows, "value")
        upserts = rows.filter(pc.invert(deletes))
        encoded = iter(self._encode(self.value_encoder, upserts.select(columns), upserts, "value"))
        return [None if d else next(encoded) for d in deletes.to_pylist()]

    def _encode(self, encoder: Encoder, part: pa.RecordBatch, rows: pa.RecordBatch, role: str) -> list[bytes]:
        try:
            return encoder.encode(part)
        except (ValueError, TypeError, OverflowError) as batch_error:
            # Find the row to name it; only on this error path is encoding done row by row.
            for i in range(part.num_rows):
                try:
                    encoder.encode(part.slice(i, 1))
                except (ValueError, TypeError, OverflowError) as e:
                    raise RecordError(
                        f"cannot encode the {role} of the row with key {self._key_text(rows, i)} for topic "
                        f"'{self.spec.topic}': {e}"
                    ) from None
            raise RecordError(
                f"cannot encode a {role} for topic '{self.spec.topic}': {batch_error}"
            ) from None

    def _key_text(self, batch: pa.RecordBatch, row: int) -> str:
        return str({name: batch.column(name)[row].as_py() for name in self.layout.key_fields})

    def _produce(self, client: Any, keys: list[bytes], values: list[bytes | None]) -> None:
        produce, topic = client.produce, self.spec.topic
        for i, (key, value) in enumerate(zip(keys, values)):
            while True:
                try:
                    produce(topic, value, key)
                    break
                except BufferError:  # the local queue is full: let librdkafka send, then retry
                    client.poll(0.5)
            if i % 10000 == 9999:
                client.poll(0)
