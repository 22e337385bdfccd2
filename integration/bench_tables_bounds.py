"""What Spark's Python stateful operator lets normalized_changelog reach at best, measured next to it (part `bounds` of
integration/bench_tables_steady.py, and its pipelines `floor`, `floor-rows`, `cache-bound` and `normalize-rows`):

- `floor`: normalize's operator keeping nothing (operator_floor): the same state groups, the same columns crossing to
  Python and back, RocksDB, no state call. No state kept through this operator is fresher.
- `cache-bound`: normalized_changelog with its state reads skipped, as if a perfect cache in the Python worker held
  every key's row (its writes are as normalize's). Its output is not normalize's (every update is an insert); its
  freshness is the least a read cache could give.
- `floor-rows`: the floor on the operator's other form, the Row-based `transformWithState` (pyspark 4.1+): the same
  groups and columns, Rows in and out instead of pandas frames (operator_floor with `rows`).
- `normalize-rows`: normalized_changelog on the Row-based `transformWithState` (operator_form 'rows', pyspark 4.1+)
  instead of its default, `transformWithStateInPandas`.
- Worker affinity (affinity_run): which Python worker runs each state group, micro-batch after micro-batch. A cache
  in a worker can only serve the groups that worker ran in the micro-batch before.
- One big micro-batch (one_batch_run): `keys` keys read in one micro-batch into `noop`, the plain read, the floor and
  normalize in turn, with the machine's CPU seconds (all processes) next to each one's wall seconds: what normalize's
  state writes add to the operator's own cost.

Test/dev tooling only: the product never imports this.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from integration import bench_kafka as kb
from integration.benchmark import checkpoint_dir

VALUES_OUT = "uk_key STRING, uk_row STRING, offset BIGINT"


def operator_floor(changes, rows: bool = False):
    """normalized_changelog's operator without its state: the same state groups, the same columns crossing to
    Python and back (the key's text and the other columns' text), Spark's Python stateful operator on the RocksDB
    store, but no state call: each record comes out as it went in. `rows`: on the Row-based `transformWithState`
    (pyspark 4.1+: Rows in and out, no pandas) instead of `transformWithStateInPandas`."""
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark_upsert_kafka.tables.rows import as_text, from_text, state_group

    class PassThrough(StatefulProcessor):  # defined here, so that Spark's workers get it by value
        def init(self, handle) -> None:
            pass

        def handleInputRows(self, key, rows, timerValues):
            for frame in rows:
                yield frame[["uk_key", "uk_row", "offset"]]

        def close(self) -> None:
            pass

    class PassThroughRows(PassThrough):
        def handleInputRows(self, key, rows, timerValues):
            for row in rows:
                yield Row(uk_key=row.uk_key, uk_row=row.uk_row, offset=row.offset)

    values = [c for c in changes.columns if c not in ("id", "_change_type", "offset")]
    prepared = changes.select(
        state_group(["id"]).alias("uk_bucket"), as_text(["id"]).alias("uk_key"), as_text(values).alias("uk_row"),
        "offset",
    )  # fmt: skip
    grouped = prepared.groupBy("uk_bucket")
    if rows:
        passed = grouped.transformWithState(PassThroughRows(), VALUES_OUT, "Append", "None")
    else:
        passed = grouped.transformWithStateInPandas(PassThrough(), VALUES_OUT, "Append", "None")
    key, row = (
        from_text(F.col("uk_key"), changes.select("id").schema),
        from_text(F.col("uk_row"), changes.select(*values).schema),
    )
    return passed.select(key.alias("k"), row.alias("r")).select("k.id", "r.*")


@contextmanager
def reads_skipped() -> Iterator[None]:
    """normalized_changelog, while inside, built with a processor that reads no state (the `cache-bound` pipeline):
    the helper's own processor class swapped for the time the DataFrame is built (Spark's workers get the subclass
    by value)."""
    from pyspark_upsert_kafka.tables import normalize

    kept = normalize._LastRowPerKey

    class ReadsSkipped(kept):  # type: ignore[misc, valid-type]
        def _held(self, keys):
            return self._schema.empty_table()

    normalize._LastRowPerKey = ReadsSkipped
    try:
        yield
    finally:
        normalize._LastRowPerKey = kept


def affinity_run(spark, bootstrap: str, keys: int = 100_000, rate: int = 3_000, seconds: float = 30) -> dict:
    """Which Python worker (its process id) runs each state group of normalize's operator, micro-batch after
    micro-batch, at a steady rate: the share of a group's micro-batches that ran in the worker of its previous one."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark_upsert_kafka.tables.rows import as_text, state_group

    from integration.bench_tables_steady import _source, _update_now

    class Worker(StatefulProcessor):  # by value, as above
        def init(self, handle) -> None:
            pass

        def handleInputRows(self, key, rows, timerValues):
            import os

            import pandas as pd

            for _ in rows:
                pass
            yield pd.DataFrame({"grp": [int(key[0])], "pid": [os.getpid()]})

        def close(self) -> None:
            pass

    topic = kb.create_topic(bootstrap, f"steady-affinity-{time.time_ns()}")
    kb.produce_parallel(bootstrap, topic, keys)
    changes = _source(spark, bootstrap, topic)
    prepared = changes.select(state_group(["id"]).alias("uk_bucket"), as_text(["id"]).alias("uk_key"))
    workers = prepared.groupBy("uk_bucket").transformWithStateInPandas(
        Worker(), "grp BIGINT, pid BIGINT", "Append", "None"
    )
    batches: list[list[tuple[int, int]]] = []
    with checkpoint_dir("bench-affinity-") as checkpoint:
        query = (
            workers.writeStream.option("checkpointLocation", checkpoint)
            .foreachBatch(lambda df, _: batches.append([(r.grp, r.pid) for r in df.collect()]))
            .start()
        )
        try:
            deadline = time.monotonic() + 300
            while not batches and time.monotonic() < deadline:
                time.sleep(0.2)
            kb.RateProducer(bootstrap, topic, rate, seconds, _update_now(keys)).start().join()
        finally:
            query.stop()
    last: dict[int, int] = {}
    kept = moved = 0
    for batch in batches:  # a group's first micro-batch (the preload's) only sets its worker
        for group, pid in batch:
            if group in last:
                kept, moved = kept + (last[group] == pid), moved + (last[group] != pid)
            last[group] = pid
    found = {
        "micro_batches": len(batches),
        "workers": len({pid for batch in batches for _, pid in batch}),
        "kept_share": kept / max(kept + moved, 1),
    }
    print(f"  worker affinity, {keys:,} keys at {rate:,}/s: a state group ran in its previous micro-batch's worker "
          f"{found['kept_share']:.0%} of the time ({found['micro_batches']} micro-batches, {found['workers']} "
          "workers)", flush=True)  # fmt: skip
    return found


def _busy_cpu_s() -> float:
    """The machine's CPU seconds so far, all cores, idle and iowait left out (/proc/stat, in USER_HZ = 1/100 s)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / 100


ONE_BATCH_STEPS = ("read", "floor", "floor-rows", "normalize", "normalize-rows")


def one_batch_run(spark, bootstrap: str, keys: int, repeat: int = 3, partitions: str = "4") -> dict:
    """`keys` keys (one record each) in one micro-batch into `noop`: each step's wall and CPU seconds, medians of
    `repeat` rounds, the steps in turn (a noisy moment weighs on all); each step run once first on 1,000 keys. With
    `partitions` shuffle partitions for the time (integration/bench_tables.py's, whose figures these compare with)."""
    from pyspark_upsert_kafka.tables.normalize import normalized_changelog

    from integration.bench_tables_steady import _source

    def run(topic: str, step: str) -> tuple[float, float]:
        changes = _source(spark, bootstrap, topic)
        steps = {
            "read": lambda: changes,
            "floor": lambda: operator_floor(changes),
            "floor-rows": lambda: operator_floor(changes, rows=True),
            "normalize": lambda: normalized_changelog(changes, "id"),
            "normalize-rows": lambda: normalized_changelog(changes, "id", operator_form="rows"),
        }
        query = steps[step]()
        with checkpoint_dir("bench-one-batch-") as checkpoint:
            started, cpu = time.perf_counter(), _busy_cpu_s()
            running = (
                query.writeStream.format("noop").option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start()
            )  # fmt: skip
            running.awaitTermination()
            if running.exception():
                raise RuntimeError(str(running.exception()))
            return time.perf_counter() - started, _busy_cpu_s() - cpu

    warm, topic = (kb.create_topic(bootstrap, f"one-batch-{n}-{time.time_ns()}") for n in (1_000, keys))
    kb.produce_parallel(bootstrap, warm, 1_000)
    kb.produce_parallel(bootstrap, topic, keys)
    runs: dict[str, list[tuple[float, float]]] = {step: [] for step in ONE_BATCH_STEPS}
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", partitions)
    try:
        for step in ONE_BATCH_STEPS:
            run(warm, step)
        for _ in range(repeat):
            for step in ONE_BATCH_STEPS:
                runs[step].append(run(topic, step))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    found = {
        step: {"wall_s": statistics.median(w for w, _ in r), "cpu_s": statistics.median(c for _, c in r)}
        for step, r in runs.items()
    }
    found["partitions"] = partitions
    shown = "; ".join(f"{s} {found[s]['wall_s']:.1f} s ({found[s]['cpu_s']:.1f} CPU s)" for s in ONE_BATCH_STEPS)
    print(
        f"  one micro-batch of {keys:,} keys, {partitions} shuffle partitions, medians of {repeat}: {shown}", flush=True
    )
    return found
