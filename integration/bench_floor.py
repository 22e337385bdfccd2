"""The floor of a micro-batch through the Python Data Source API, for the latency benchmark: a Python source
whose every trigger has one row per partition (no Kafka, no decoding) copied into a Python sink that does
nothing. Whatever a Python source -> Python sink query does, its micro-batches take at least this long here;
the JVM connector's micro-batches do not pay it.

Test/dev tooling only: the product never imports this package. Spark's Python workers import this module by
name (they start in the repository root, as the benchmark does).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Iterator

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)


class _Slot(InputPartition):
    def __init__(self, index: int) -> None:
        self.index = index


class _Reader(DataSourceStreamReader):
    def __init__(self, tasks: int) -> None:
        self.tasks = tasks

    def initialOffset(self) -> dict:
        return {"at": 0}

    def latestOffset(self) -> dict:
        return {"at": time.time_ns()}  # always new: every trigger runs a micro-batch

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [_Slot(i) for i in range(self.tasks)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        yield (partition.index,)

    def commit(self, end: dict) -> None:
        pass


class _Writer(DataSourceStreamArrowWriter):
    def write(self, iterator) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages, batchId: int) -> None:
        pass

    def abort(self, messages, batchId: int) -> None:
        pass


class FloorSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "latency-floor"

    def schema(self) -> str:
        return "task INT"

    def streamReader(self, schema) -> DataSourceStreamReader:
        return _Reader(int(self.options.get("tasks", "1")))

    def streamWriter(self, schema, overwrite: bool) -> DataSourceStreamArrowWriter:
        return _Writer()


def floor(spark, tasks: int, seconds: float) -> dict:
    """Median durations (ms) of the micro-batches of a do-nothing Python source -> Python sink query with
    `tasks` tasks per micro-batch, run back to back (default trigger) for `seconds`; the first few skipped."""
    spark.dataSource.register(FloorSource)
    query = (
        spark.readStream.format("latency-floor")
        .option("tasks", str(tasks))
        .load()
        .writeStream.format("latency-floor")
        .option("checkpointLocation", tempfile.mkdtemp(prefix="latency-floor-"))
        .start()
    )
    try:
        time.sleep(seconds)
        progress = list(query.recentProgress)[5:]
    finally:
        query.stop()
    steps = ("triggerExecution", "walCommit", "addBatch", "commitOffsets")
    out = {step: statistics.median(p.durationMs.get(step, 0) for p in progress) for step in steps if progress}
    return {"tasks": tasks, "batches": len(progress), **out}
