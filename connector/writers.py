"""The Spark-facing writers: batch and streaming, both Arrow; each task writes through RecordWriter."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from connector.write import RecordWriter, WriteResult
from connector.write_options import WriteSpec

log = logging.getLogger("upsert_kafka")


def _summary(messages: list[WriterCommitMessage | None]) -> str:
    results = [m for m in messages if isinstance(m, WriteResult)]
    records = sum(r.records for r in results)
    tombstones = sum(r.tombstones for r in results)
    return f"{records} record(s) ({tombstones} tombstone(s)) from {len(results)} task(s)"


class UpsertKafkaWriter(DataSourceArrowWriter):
    def __init__(self, spec: WriteSpec) -> None:
        self.spec = spec

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return RecordWriter(self.spec).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("upsert-kafka: wrote %s to topic '%s'", _summary(messages), self.spec.topic)


class UpsertKafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, spec: WriteSpec) -> None:
        self.spec = spec

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return RecordWriter(self.spec).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("upsert-kafka: batch %d wrote %s to '%s'", batchId, _summary(messages), self.spec.topic)
