"""A data source that reports what connector/spark_internals.py's probes answer inside real Spark processes
(tests/compat/test_spark_internals.py): `format("internals-probe").option("out", <file>)`.

Its writers consume their rows and report, per task, whether the input was complete and the micro-batch; its
batch reader reports whether pushdown was on for the planning call. Reports are JSON lines appended to `out` by
the driver-side commit (writers) or the planning worker (reader)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark_upsert_kafka import spark_internals


@dataclass
class TaskReport(WriterCommitMessage):
    rows: int
    input_complete: bool | None
    micro_batch: dict | None


def _report(rows: Iterator) -> TaskReport:
    count = sum(1 for _ in rows)
    batch = spark_internals.task_micro_batch()
    return TaskReport(count, spark_internals.task_input_complete(), None if batch is None else asdict(batch))


def _append(path: str, entries: list[dict]) -> None:
    with open(path, "a") as out:
        out.writelines(json.dumps(e) + "\n" for e in entries)


class _Writer(DataSourceWriter):
    def __init__(self, out: str) -> None:
        self.out = out

    def write(self, iterator: Iterator) -> TaskReport:
        return _report(iterator)

    def commit(self, messages: list) -> None:
        _append(self.out, [asdict(m) for m in messages])


class _StreamWriter(DataSourceStreamWriter):
    def __init__(self, out: str) -> None:
        self.out = out

    def write(self, iterator: Iterator) -> TaskReport:
        return _report(iterator)

    def commit(self, messages: list, batchId: int) -> None:
        _append(self.out, [asdict(m) | {"commit_batch": batchId} for m in messages])


class _Reader(DataSourceReader):
    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        yield (1,)


class InternalsProbe(DataSource):
    @classmethod
    def name(cls) -> str:
        return "internals-probe"

    def schema(self) -> str:
        return "id INT"

    def writer(self, schema, overwrite: bool) -> DataSourceWriter:
        return _Writer(self.options["out"])

    def streamWriter(self, schema, overwrite: bool) -> DataSourceStreamWriter:
        return _StreamWriter(self.options["out"])

    def reader(self, schema) -> DataSourceReader:
        _append(self.options["out"], [{"pushdown_enabled": spark_internals.pushdown_enabled()}])
        return _Reader()
