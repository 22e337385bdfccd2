"""Tables at stream cadence: normalized_changelog as users run it (the default trigger, updates arriving all the time),
next to the same pipeline without normalization and Flink 2.2.1's ChangelogNormalize, in the same run.

    integration/dev python -m integration.bench_tables_steady [--keys 1000000] [--rates 5000,15000] [--seconds 30]
        [--flink auto|yes|no] [--pipelines plain,floor,normalize] [--cost-keys 20000,1000000] [--partitions 2]
        [--warm-s 0] [--only freshness|cost|helpers|default|bounds|all] [--changelog-checkpointing true|false]
        [--spark-conf KEY=VALUE ...]

Freshness: a topic preloaded with `--keys` keys (one record each, integration.bench_kafka.row), a pipeline reading
it from the earliest offset as an upsert-kafka stream and writing on to an upsert-kafka topic (LogAppendTime), and,
once the preload went through, updates of random keys at a fixed rate for `--seconds`, each value's `ts` its
produce time (ms). Freshness of an update is its output record's LogAppendTime minus that `ts`: p50 / p99 per
pipeline and rate (with `--warm-s S`, over the updates produced after the first S seconds only).
Pipelines: `plain` (the changelog as read: id, ts), `floor` (normalize's Python stateful operator keeping nothing: the
least any state kept through it can cost), `normalize` (normalized_changelog on id, its inserts and after-images
written), with `--pipelines` also `aggregate`, `join` (see _pipeline), `cache-bound` (normalize with its state
reads skipped) and `floor-rows` (the floor on the Row-based `transformWithState`, pyspark 4.1+: no pandas; both in
integration/bench_tables_bounds.py), `jvm-latest` and `jvm-dedup` (Spark's JVM stateful operators in normalize's
place: the latest row per key through foreachBatch, deduplication straight into the sink; see _pipeline), and
Flink's `upsert-kafka` table through ChangelogNormalize (`table.exec.source.cdc-events-duplicate` = true) into an
`upsert-kafka` table, parallelism 2, RocksDB.

Cost at a steady micro-batch size: per `--cost-keys` size, a topic of that many keys, read into the state in one
micro-batch, then 40,000 updates in micro-batches of 2,000 records (`scan.max-records-per-batch`), into `noop`:
the median micro-batch of normalize minus that of the plain read, per record; and the checkpoint's growth per update
record (bytes of its `state` folder after the updates minus after the preload, over the updates; and of its changelog
files only: what the updates' commits wrote, without the snapshots Spark's maintenance takes in the background when
its interval comes), next to Spark's JVM stateful aggregation keeping the latest row per key (`max_by(struct(...),
offset)`, update mode) on the same topic.

The other helpers at the same micro-batch size (`helpers`): aggregate_changelog behind normalized_changelog, a group
per key (COUNT(*), SUM, MAX: as many groups as keys), its own cost over normalize alone; temporal_join's latest-value
join of the updates (a second read of the topic) with the table, its own cost over the plain read (which reads the
topic once: the join's figure includes the second read).

Spark's default of 200 shuffle partitions, as a new user has it (20,000 keys): left unset, the helper's refusal; set
to 200 explicitly, a micro-batch of 2,000 updates.

What the operator lets normalize reach at best (`bounds`, integration/bench_tables_bounds.py): which Python worker
runs each state group micro-batch after micro-batch, and one micro-batch of `--keys` keys through the plain read, the
floor and normalize, with the machine's CPU seconds.

Spark runs local[2] on the RocksDB state store with `spark.sql.shuffle.partitions` = `--partitions` (the cores) and
RocksDB's changelog checkpointing as `--changelog-checkpointing` says (default true: what the helpers choose where a
session has no value; false: Spark's default), for every query of the run, the JVM's too, and any `--spark-conf`.
Writes integration/results/benchmark-tables-steady.json (with --only X: benchmark-tables-steady-X.json). Test/dev
tooling only: the product never imports this.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import orjson
from confluent_kafka import Consumer, TopicPartition

from integration import bench_kafka as kb
from integration import bench_tables_bounds as bounds
from integration.benchmark import _infrastructure, bench_session, checkpoint_dir

RESULTS = Path(__file__).parent / "results" / "benchmark-tables-steady.json"
COST_UPDATES, COST_BATCH = 40_000, 2_000


def update(i: int, keys: int, now_ms: int) -> tuple[bytes, bytes]:
    """Update i: a key spread over all keys (a stride coprime to any count of keys below it), its row changed."""
    key = (i * 1_000_003) % keys
    return orjson.dumps({"id": key}), orjson.dumps(kb.row(key) | {"ts": now_ms, "quantity": i % 13})


def _update_now(keys: int) -> Callable[[int], tuple[bytes, bytes]]:
    """Updates as RateProducer produces them: each carries its produce time as `ts`."""
    return lambda i: update(i, keys, int(time.time() * 1000))


class Arrivals:
    """The output topic read from a thread: the preload's records counted, each update's freshness kept (those
    produced from `measured_ms` on)."""

    def __init__(self, bootstrap: str, topic: str, since_ms: int) -> None:
        self.bootstrap, self.topic, self.since_ms = bootstrap, topic, since_ms
        self.measured_ms = since_ms
        self.preload, self.updates, self.fresh, self._stop = 0, 0, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": "bench-steady", "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition(self.topic, p, 0) for p in range(kb.PARTITIONS)])
        while not self._stop.is_set():
            for m in consumer.consume(10_000, timeout=0.2):
                if m.error() is None and m.value() is not None:
                    produced = orjson.loads(m.value())["produced_ms"]
                    if produced < self.since_ms:
                        self.preload += 1
                        continue
                    self.updates += 1
                    if produced >= self.measured_ms:
                        self.fresh.append(m.timestamp()[1] - produced)
        consumer.close()

    def wait(self, what, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not what() and time.monotonic() < deadline:
            time.sleep(0.1)
        return bool(what())

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(10)


def _source(spark, bootstrap: str, topic: str, **options: str):
    reader = spark.readStream.format("upsert-kafka").options(
        topic=topic, **{"properties.bootstrap.servers": bootstrap, "key.fields": "id"}
    )
    reader = reader.option("scan.startup.mode", "earliest-offset").option("schema", kb.VALUE_DDL)
    return reader.options(**{"metadata.columns": "offset", **options}).load()


AFTER_IMAGES = "_change_type IN ('insert', 'update_postimage')"


def _pipeline(spark, who: str, bootstrap: str, source: str, sink: str, checkpoint: str):
    """`who`'s pipeline from `source` to `sink`, each output row's `produced_ms` the produce time of the update it
    shows: plain, normalize, aggregate (a group per key behind normalize: the group's MAX(ts) is its latest
    update's), join (the latest-value join of a second read of the topic with the normalized table), floor,
    floor-rows and cache-bound (integration/bench_tables_bounds.py); and Spark's JVM stateful operators in
    normalize's place (their output is not normalize's): jvm-latest, the aggregation keeping the latest row per key,
    in update mode, which reaches a Python sink only through foreachBatch; jvm-dedup, streaming deduplication on
    (id, offset), a state read and write per update like normalize's, in append mode straight into the sink."""
    from pyspark.sql import functions as F
    from pyspark_upsert_kafka.foreach_batch import upsert_writer
    from pyspark_upsert_kafka.tables.aggregate import aggregate_changelog
    from pyspark_upsert_kafka.tables.normalize import normalized_changelog
    from pyspark_upsert_kafka.tables.temporal_join import temporal_join

    changes = _source(spark, bootstrap, source)
    if who in ("normalize", "aggregate", "join"):
        table = normalized_changelog(changes, "id")
    if who == "cache-bound":
        with bounds.reads_skipped():
            table = normalized_changelog(changes, "id")
    if who == "normalize-rows":
        table = normalized_changelog(changes, "id", operator_form="rows")
    if who == "floor":
        out = bounds.operator_floor(changes).selectExpr("id", "ts AS produced_ms")
    elif who == "floor-rows":
        out = bounds.operator_floor(changes, rows=True).selectExpr("id", "ts AS produced_ms")
    elif who in ("normalize", "normalize-rows", "cache-bound"):
        out = table.where(AFTER_IMAGES).selectExpr("id", "ts AS produced_ms")
    elif who == "aggregate":
        grouped = aggregate_changelog(table, "id", n="COUNT(*)", total="SUM(quantity)", produced_ms="MAX(ts)")
        out = grouped.where(AFTER_IMAGES).select("id", "produced_ms")
    elif who == "join":
        stream = _source(spark, bootstrap, source).selectExpr("id", "ts AS produced_ms")
        out = temporal_join(stream, table, "id", stream_time=None).select("id", "produced_ms")
    elif who == "jvm-latest":
        latest = changes.groupBy("id").agg(F.max_by(F.struct("ts"), "offset").alias("row"))
        out = latest.selectExpr("id", "row.ts AS produced_ms")
    elif who == "jvm-dedup":
        out = changes.dropDuplicates(["id", "offset"]).selectExpr("id", "ts AS produced_ms")
    else:
        out = changes.selectExpr("id", "ts AS produced_ms")
    sink_options = {"topic": sink, "properties.bootstrap.servers": bootstrap, "key.fields": "id"}
    if who == "jvm-latest":
        writer = out.writeStream.outputMode("update").foreachBatch(upsert_writer(**sink_options))
    else:
        writer = out.writeStream.format("upsert-kafka").options(**sink_options)
    return writer.option("checkpointLocation", checkpoint).start()


def _quantiles(found: list[float]) -> dict:
    q = statistics.quantiles(found, n=100) if len(found) > 1 else found * 99
    return {"p50_ms": q[49], "p99_ms": q[98], "arrived": len(found)}


def freshness_run(spark, bootstrap: str, keys: int, who: str, rate: int, seconds: float, warm_s: float = 0) -> dict:
    """One pipeline at one rate: the preload through first, then `rate` updates/s for `warm_s` + `seconds` (the
    first `warm_s` not measured)."""
    source = kb.create_topic(bootstrap, f"steady-in-{who}-{rate}-{time.time_ns()}")
    kb.produce_parallel(bootstrap, source, keys)  # the preload: one record per key
    sink = kb.create_topic(
        bootstrap, f"steady-out-{who}-{rate}-{time.time_ns()}", **{"message.timestamp.type": "LogAppendTime"}
    )
    since_ms = int(time.time() * 1000) + 1
    arrivals = Arrivals(bootstrap, sink, since_ms)
    with checkpoint_dir("bench-steady-") as checkpoint:
        started = time.monotonic()
        if who == "flink":
            from integration.bench_tables_flink import steady_job

            stop = steady_job(bootstrap, source, sink)
        else:
            query = _pipeline(spark, who, bootstrap, source, sink, checkpoint)
            stop = query.stop
        try:
            if not arrivals.wait(lambda: arrivals.preload >= keys, 900):
                raise RuntimeError(f"{who}: the preload did not go through ({arrivals.preload} of {keys})")
            preload_s = time.monotonic() - started
            updates = kb.RateProducer(bootstrap, source, rate, seconds + warm_s, _update_now(keys))
            arrivals.measured_ms = int((time.time() + warm_s) * 1000)
            updates.start().join()
            arrivals.wait(lambda: arrivals.updates >= updates.sent, 120)
            batches = [] if who == "flink" else _steady_batches(query.recentProgress)
        finally:
            stop()
            arrivals.stop()
    found = _quantiles(sorted(arrivals.fresh)) | {"sent": updates.sent, "preload_s": preload_s}
    if batches:
        found |= {k: statistics.median(b[k] for b in batches) for k in batches[0]}
    found["arrived_all"] = arrivals.updates
    print(f"  {who:<9} at {rate:,}/s: p50 {found['p50_ms']:,.0f} ms, p99 {found['p99_ms']:,.0f} ms "
          f"({found['arrived']:,} measured; {arrivals.updates:,} of {updates.sent:,} arrived; preload {preload_s:.1f} s"
          + (f"; per micro-batch, median: {_shown(batches[0], found)})" if batches else ")"), flush=True)  # fmt: skip
    return found


def _steady_batches(progress) -> list[dict]:
    """Each steady micro-batch's figures (not the preload's): its records, its time and, with a stateful operator,
    the operator's update time and its state store's commit time (ms, summed over its tasks), with its RocksDB
    commit's file sync and the state rows it wrote."""
    found = []
    for p in progress:
        if not p["numInputRows"] or p["numInputRows"] >= 100_000:
            continue
        batch = {"records": p["numInputRows"], "batch_ms": p["durationMs"]["triggerExecution"],
                 "add_batch_ms": p["durationMs"].get("addBatch", 0)}  # fmt: skip
        for state in p.get("stateOperators", [])[:1]:
            metrics = state.get("customMetrics", {})
            batch |= {"state_updates_ms": state["allUpdatesTimeMs"], "state_commit_ms": state["commitTimeMs"],
                      "rocksdb_sync_ms": metrics.get("rocksdbCommitFileSyncLatencyMs", 0),
                      "state_rows_updated": state["numRowsUpdated"]}  # fmt: skip
        found.append(batch)
    return found


def _shown(keys: dict, found: dict) -> str:
    return ", ".join(f"{k} {found[k]:,.0f}" for k in keys)


# Each cost step and the step its own cost is measured against (the same query without it).
STEPS = {"read": None, "normalize": "read", "jvm": "read", "aggregate": "normalize", "join": "read"}
TABLE_STEPS, HELPER_STEPS = ("read", "normalize", "jvm"), ("read", "normalize", "aggregate", "join")


def cost_run(spark, bootstrap: str, keys: int, steps: tuple[str, ...] = TABLE_STEPS) -> dict:
    """Per-record cost and checkpoint growth of each step at micro-batches of COST_BATCH records, `keys` keys held."""
    topic = kb.create_topic(bootstrap, f"steady-cost-{keys}-{time.time_ns()}")
    kb.produce_parallel(bootstrap, topic, keys)
    found: dict = {}
    runs: dict[str, Path] = {}
    with ExitStack() as stack:
        for step in steps:
            checkpoint = Path(stack.enter_context(checkpoint_dir(f"bench-cost-{step}-")))
            runs[step] = checkpoint
            _cost_query(spark, bootstrap, topic, step, checkpoint, keys)  # the preload, one micro-batch
        before = {s: (_state_bytes(runs[s]), _state_bytes(runs[s], "*.changelog")) for s in steps}
        now = int(time.time() * 1000)
        kb.produce(bootstrap, topic, [update(i, keys, now) for i in range(COST_UPDATES)])
        for step in steps:
            progress = _cost_query(spark, bootstrap, topic, step, runs[step], COST_UPDATES, COST_BATCH)
            batches = [p["durationMs"]["triggerExecution"] for p in progress if p["numInputRows"]]
            grown = (_state_bytes(runs[step]) - before[step][0]) / COST_UPDATES
            committed = (_state_bytes(runs[step], "*.changelog") - before[step][1]) / COST_UPDATES
            found[step] = {
                "batch_ms_p50": statistics.median(batches),
                "batches": len(batches),
                "bytes_per_update": grown,
                "changelog_bytes_per_update": committed,
            }
    shown = []
    for step in steps:
        if STEPS[step] in found:
            own = (found[step]["batch_ms_p50"] - found[STEPS[step]]["batch_ms_p50"]) * 1000 / COST_BATCH
            found[f"{step}_own_us_per_record"] = own
            shown.append(f"{step} {found[step]['batch_ms_p50']:,.0f} ms ({own:,.0f} us a record of its own over "
                         f"{STEPS[step]}, checkpoint {found[step]['bytes_per_update']:,.0f} B an update, its "
                         f"changelogs {found[step]['changelog_bytes_per_update']:,.0f} B)")  # fmt: skip
    print(f"  {keys:,} keys, micro-batches of {COST_BATCH:,}: read {found['read']['batch_ms_p50']:,.0f} ms; "
          + "; ".join(shown), flush=True)  # fmt: skip
    return found


def _cost_query(
    spark, bootstrap: str, topic: str, step: str, checkpoint: Path, expected: int, per_batch: int | None = None
) -> list:
    """Run `step` on its checkpoint until it read `expected` records; its micro-batches' progress."""
    from pyspark.sql import functions as F
    from pyspark_upsert_kafka.tables.aggregate import aggregate_changelog
    from pyspark_upsert_kafka.tables.normalize import normalized_changelog
    from pyspark_upsert_kafka.tables.temporal_join import temporal_join

    options = {"scan.max-records-per-batch": str(per_batch)} if per_batch else {}
    changes = _source(spark, bootstrap, topic, **options)
    mode = "append"
    if step in ("normalize", "aggregate"):
        changes = normalized_changelog(changes, "id")
    if step == "aggregate":  # a group per key: the state holds as many groups as the table has keys
        changes = aggregate_changelog(changes, "id", n="COUNT(*)", total="SUM(quantity)", top="MAX(price)")
    elif step == "join":  # the latest-value join of the updates (a second read of the topic) with the table
        stream = _source(spark, bootstrap, topic, **options).selectExpr("id", "quantity AS ordered")
        changes = temporal_join(stream, changes, "id", stream_time=None)
    elif step == "jvm":
        columns = [c for c in changes.columns if c not in ("id", "offset")]
        changes = changes.groupBy("id").agg(F.max_by(F.struct(*columns), "offset").alias("row"))
        mode = "update"
    query = (
        changes.writeStream.format("noop").outputMode(mode).option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="0 seconds").start()
    )  # fmt: skip
    deadline = time.monotonic() + 900
    try:
        while time.monotonic() < deadline:
            progress = [p for p in query.recentProgress if p["numInputRows"]]
            read = sum(p["numInputRows"] for p in progress)
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            if read >= expected:
                return progress
            time.sleep(0.2)
        raise RuntimeError(f"{step}: did not read its records in time")
    finally:
        query.stop()


def default_partitions_run(spark, bootstrap: str, keys: int, batches: int = 3) -> dict:
    """Spark's default of 200 shuffle partitions, as a new user has it: left unset, each helper refuses it before the
    query starts (their messages kept); set to 200 explicitly, the median of `batches` micro-batches of COST_BATCH
    updates (each runs 200 stateful tasks)."""
    from pyspark.sql import functions as F
    from pyspark_upsert_kafka import OptionError, SchemaError
    from pyspark_upsert_kafka.tables.aggregate import aggregate_changelog
    from pyspark_upsert_kafka.tables.normalize import normalized_changelog
    from pyspark_upsert_kafka.tables.temporal_join import temporal_join

    partitions = "spark.sql.shuffle.partitions"
    before = spark.conf.get(partitions)
    topic = kb.create_topic(bootstrap, f"steady-default-{keys}-{time.time_ns()}")
    kb.produce_parallel(bootstrap, topic, keys)
    found: dict = {}
    try:
        spark.conf.unset(partitions)
        changes = _source(spark, bootstrap, topic)
        table = changes.withColumn("_change_type", F.lit("insert"))  # a changelog, as the helpers take
        stream = changes.selectExpr("id", "quantity AS ordered")  # no column on both sides of the join
        for helper, build in {
            "normalize": lambda: normalized_changelog(changes, "id"),
            "aggregate": lambda: aggregate_changelog(table, "id", n="COUNT(*)"),
            "join": lambda: temporal_join(stream, table, "id", stream_time=None),
        }.items():
            try:
                build()
                found[f"unset: {helper}"] = "accepted"
            except SchemaError:  # the benchmark's own mistake, not the refusal it shows
                raise
            except OptionError as e:
                found[f"unset: {helper}"] = f"refused before the query started: {e}"
        spark.conf.set(partitions, "200")
        with checkpoint_dir("bench-default-") as checkpoint:
            _cost_query(spark, bootstrap, topic, "normalize", Path(checkpoint), keys)
            now = int(time.time() * 1000)
            kb.produce(bootstrap, topic, [update(i, keys, now) for i in range(batches * COST_BATCH)])
            progress = _cost_query(
                spark, bootstrap, topic, "normalize", Path(checkpoint), batches * COST_BATCH, COST_BATCH
            )
        found["set_200_batch_ms_p50"] = statistics.median(p["durationMs"]["triggerExecution"] for p in progress)
    finally:
        spark.conf.set(partitions, before)
    unset = "; ".join(f"{k}: {v[:40]}..." for k, v in found.items() if k.startswith("unset"))
    print(f"  Spark's default 200 shuffle partitions, {keys:,} keys: {unset}; normalize set to 200: "
          f"{found['set_200_batch_ms_p50']:,.0f} ms a micro-batch of {COST_BATCH:,} updates", flush=True)  # fmt: skip
    return found


def _state_bytes(checkpoint: Path, files: str = "*") -> int:
    """The bytes of the checkpoint's state folder (`files`: of those files only; `*.changelog`: what commits wrote
    with RocksDB's changelog checkpointing, snapshots taken in the background left out)."""
    return sum(f.stat().st_size for f in (checkpoint / "state").rglob(files) if f.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--rates", default="5000,15000")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--warm-s", type=float, default=0, help="updates not measured at first (seconds)")
    parser.add_argument("--flink", choices=("auto", "yes", "no"), default="auto")
    parser.add_argument(
        "--pipelines",
        default="plain,floor,normalize",
        help="of plain, floor, floor-rows, normalize, normalize-rows, cache-bound, aggregate, join, jvm-latest, "
        "jvm-dedup",
    )
    parser.add_argument("--cost-keys", default="20000,1000000")
    parser.add_argument("--partitions", default="2")
    parser.add_argument("--only", choices=("freshness", "cost", "helpers", "default", "bounds", "all"), default="all")
    parser.add_argument(
        "--changelog-checkpointing", choices=("true", "false"), default="true",
        help="RocksDB's, for every query of the run (the helpers' choice, where a session has none, is true)",
    )  # fmt: skip
    parser.add_argument(
        "--spark-conf", action="append", default=[], type=_setting, metavar="KEY=VALUE", help="more session settings"
    )
    args = parser.parse_args(argv)
    from pyspark_upsert_kafka.secrets import redact_options
    from pyspark_upsert_kafka.tables.rows import CHANGELOG_CHECKPOINTING, ROCKSDB

    run = {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine()}
    results: dict = {"run": run, "keys": args.keys, "seconds": args.seconds, "warm_s": args.warm_s,
                     "partitions": args.partitions,
                     "changelog_checkpointing": args.changelog_checkpointing,
                     "spark_conf": redact_options(dict(args.spark_conf))}  # fmt: skip
    with ExitStack() as stack:
        bootstrap, _ = _infrastructure(stack)
        spark = bench_session(
            "bench-tables-steady",
            **{
                "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
                "spark.sql.shuffle.partitions": args.partitions,
                CHANGELOG_CHECKPOINTING: args.changelog_checkpointing,
                **dict(args.spark_conf),
            },
        )
        whos = args.pipelines.split(",") + (["flink"] if _flink_wanted(args.flink) else [])
        if args.only in ("freshness", "all"):
            for rate in [int(r) for r in args.rates.split(",")]:
                for who in whos:
                    results[f"freshness: {who} at {rate}"] = freshness_run(
                        spark, bootstrap, args.keys, who, rate, args.seconds, args.warm_s
                    )
        if args.only in ("cost", "all"):
            for keys in [int(k) for k in args.cost_keys.split(",")]:
                results[f"cost: {keys} keys"] = cost_run(spark, bootstrap, keys)
        if args.only in ("helpers", "all"):
            for keys in [int(k) for k in args.cost_keys.split(",")]:
                results[f"helpers: {keys} keys"] = cost_run(spark, bootstrap, keys, HELPER_STEPS)
        if args.only in ("default", "all"):
            results["default partitions: 20000 keys"] = default_partitions_run(spark, bootstrap, 20_000)
        if args.only in ("bounds", "all"):
            results["bounds: worker affinity"] = bounds.affinity_run(spark, bootstrap)
            results[f"bounds: one batch of {args.keys} keys"] = bounds.one_batch_run(spark, bootstrap, args.keys)
    part = "" if args.only == "all" else f"-{args.only}"
    out = RESULTS.with_name(f"{RESULTS.stem}{part}{'-warm' if args.warm_s else ''}.json")
    out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _setting(text: str) -> tuple[str, str]:
    key, is_set, value = text.partition("=")
    if not key or not is_set:
        raise argparse.ArgumentTypeError(f"'{text}': give KEY=VALUE")
    return key, value


def _flink_wanted(choice: str) -> bool:
    if choice == "no":
        return False
    from integration.flink_session import VENV

    ready = (VENV / "bin" / "python").is_file()
    if choice == "yes" and not ready:
        raise SystemExit("--flink yes: the Flink venv is not prepared (integration.flink_session.ensure_flink_venv)")
    return ready


if __name__ == "__main__":
    raise SystemExit(main())
