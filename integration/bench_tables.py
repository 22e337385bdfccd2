"""Tables in streams, side by side with Flink: records/s through normalized_changelog, a retracting aggregation and an
event-time temporal join, next to the plain changelog read of the same records, in the same run, and the state they
keep per key; and Flink 2.2.1's own queries over the same topics, interleaved with them.

    integration/dev python -m integration.bench_tables [--keys N] [--repeat R] [--flink auto|yes|no] [--slope 5]

The topic (4 partitions) holds one record per key for `--keys` keys (the benchmark's 6-field json rows,
integration.bench_kafka.row: `ts` = 1,790,000,000,000 + id, in ms). The orders topic (4 partitions) holds `--keys`
orders, order j (order_id j) of key j at the key's version time (`order_ms` = the key's `ts`), so every order finds
its key's row. Each Spark query reads with Trigger.AvailableNow into Spark's `noop` sink, on a fresh checkpoint, on
the RocksDB state store, local[2]:
- read: the changelog alone; normalize: normalized_changelog on `id`; aggregate: that and aggregate_changelog per
  `category` (97 groups: COUNT, SUM, AVG, MIN, MAX of `price`); aggregate_keys: the same per `id` (a group a key);
- join: temporal_join of the orders (event time `order_time` = timestamp_millis(order_ms)) with the topic's changelog
  as the versioned table (version time `update_time` = timestamp_millis(ts)), on `id`, LEFT, both watermarks 0 s:
  2 x `--keys` records read (the join's records/s and ratios count both topics).
Flink's side (integration/bench_tables_flink.py: the same four steps as Flink SQL, parallelism 2, RocksDB) runs when
its venv is there or can be prepared (`--flink auto`, the default; `yes` fails without it, `no` skips it). Each
round runs each step on both sides back to back (Spark's, then Flink's), so a noisy moment weighs on both; with
`--slope K` (default 5, 0: off) right after at `--keys`/K keys too, on their own topics. Every step runs once per
side first, untimed, on topics of 1,000 keys (a session's first query of a kind pays its warm-up).

Figures per side and step: median wall seconds over the rounds, records/s, the ratio to the same side's read (of
records/s, per round, median), the step's own cost per record (its seconds per record minus the read's, us); from
the slope (two sizes) the same per record without the fixed costs (a Flink job's start is 15-25 s here). State
bytes per key: Spark's RocksDB SST files after the last micro-batch with rows (its stateOperators metrics) over the
keys; Flink's the full size of a checkpoint taken once every record is in (incremental RocksDB), over the keys.
Writes integration/results/benchmark-tables.json (`steps` is Spark's side, as before; `flink`, `slope` and
`comparison` are new). Test/dev tooling only: the product never imports this package.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from integration import bench_kafka as kb
from integration import bench_tables_figures as figures
from integration.benchmark import _infrastructure, bench_session

RESULTS = Path(__file__).parent / "results" / "benchmark-tables.json"
AGGREGATES = {"n": "COUNT(*)", "total": "SUM(price)", "avg": "AVG(price)", "low": "MIN(price)", "high": "MAX(price)"}
STEPS = ("read", "normalize", "aggregate", "aggregate_keys", "join")
ORDER_DDL = "order_id BIGINT, id BIGINT, amount DOUBLE, order_ms BIGINT"
BASE_MS = 1_790_000_000_000  # bench_kafka.row's ts of id 0
NO_DELAY = "0 seconds"
WARM, WARM_KEYS = "_warm", 1_000  # the warm-up's topics


def order(j: int) -> dict:
    return {"order_id": j, "id": j, "amount": round((j % 1000) / 4, 2), "order_ms": BASE_MS + j}


def _produce_orders_share(args: tuple[str, str, int, int]) -> float:
    from pyspark_upsert_kafka.formats.json.values import json_bytes

    bootstrap, topic, n, i = args
    records = [(json_bytes({"order_id": j}), json_bytes(order(j))) for j in range(i, n, kb.PROCESSES)]
    return kb.produce(bootstrap, topic, records)


def make_topics(bootstrap: str, keys: int) -> tuple[str, str]:
    """The keyed topic (one record per key) and the orders topic, both of `keys` records."""
    stamp = f"{keys}-{int(time.time())}"
    table = kb.create_topic(bootstrap, f"bench-tables-{stamp}")
    kb.produce_parallel(bootstrap, table, keys)
    orders = kb.create_topic(bootstrap, f"bench-tables-orders-{stamp}")
    kb._in_processes(_produce_orders_share, [(bootstrap, orders, keys, i) for i in range(kb.PROCESSES)])
    return table, orders


def _stream(spark, bootstrap: str, topic: str, key: str, schema: str, **options: str):
    reader = (
        spark.readStream.format("upsert-kafka")
        .option("topic", topic)
        .option("properties.bootstrap.servers", bootstrap)
        .option("key.fields", key)
        .option("scan.startup.mode", "earliest-offset")
        .option("schema", schema)
    )
    return reader.options(**options).load()


def _query(spark, bootstrap: str, topics: tuple[str, str], step: str):
    from pyspark.sql import functions as F
    from pyspark_upsert_kafka.tables.aggregate import aggregate_changelog
    from pyspark_upsert_kafka.tables.normalize import normalized_changelog
    from pyspark_upsert_kafka.tables.temporal_join import temporal_join

    changes = _stream(spark, bootstrap, topics[0], "id", kb.VALUE_DDL, **{"metadata.columns": "offset"})
    if step == "read":
        return changes
    if step == "join":
        versions = changes.withColumn("update_time", F.timestamp_millis("ts")).withWatermark("update_time", "0 seconds")
        orders = _stream(spark, bootstrap, topics[1], "order_id", ORDER_DDL).drop("_change_type")
        orders = orders.withColumn("order_time", F.timestamp_millis("order_ms")).withWatermark(
            "order_time", "0 seconds"
        )
        return temporal_join(orders, versions, "id", stream_time="order_time", table_time="update_time", how="left")
    normalized = normalized_changelog(changes, "id")
    if step == "normalize":
        return normalized
    group = "id" if step == "aggregate_keys" else "category"
    return aggregate_changelog(normalized.drop("offset"), group, **AGGREGATES)


def _run(spark, bootstrap: str, topics: tuple[str, str], step: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory(prefix="bench-tables-") as checkpoint:
        started = time.perf_counter()
        query = (
            _query(spark, bootstrap, topics, step)
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        seconds = time.perf_counter() - started
        if query.exception():
            raise RuntimeError(str(query.exception()))
        progress = query.recentProgress
    with_rows = [p for p in progress if p["numInputRows"]]
    state = _state(with_rows[-1] if with_rows else {})
    state["rows_out"] = sum(p.get("sink", {}).get("numOutputRows", 0) or 0 for p in progress)
    return seconds, state


def _state(progress: dict) -> dict:
    """Each state operator's keys (rows) and RocksDB SST bytes after the last micro-batch with rows."""
    operators = progress.get("stateOperators", [])
    return {
        "rows": [o.get("numRowsTotal", 0) for o in operators],
        "sst_bytes": [int(o.get("customMetrics", {}).get("rocksdbSstFileSize", 0)) for o in operators],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--slope", type=int, default=5, help="also run at keys/K each round (0: not)")
    parser.add_argument("--flink", choices=("auto", "yes", "no"), default="auto")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from pyspark_upsert_kafka.tables.rows import ROCKSDB

    from integration import bench_tables_flink as bf

    flink_env = bf.prepare(args.flink)
    sizes = {"": args.keys} | ({"_small": args.keys // args.slope} if args.slope > 1 else {})
    spark_runs: dict[str, dict[str, list[float]]] = {s: {step: [] for step in STEPS} for s in sizes}
    flink_runs: dict[str, dict[str, list[float]]] = {s: {step: [] for step in STEPS} for s in sizes}
    spark_state: dict[str, dict] = {}
    flink_state: dict[str, dict] = {}
    with ExitStack() as stack:
        bootstrap, _ = _infrastructure(stack)
        spark = bench_session(
            "upsert-kafka-bench-tables",
            **{
                "spark.driver.memory": "4g",
                "spark.sql.shuffle.partitions": "4",
                "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
            },
        )
        stack.callback(spark.stop)
        topics = {suffix: make_topics(bootstrap, keys) for suffix, keys in sizes.items()}
        topics[WARM] = make_topics(bootstrap, WARM_KEYS)
        flink = None
        if isinstance(flink_env, tuple):
            flink = bf.FlinkPeer(*flink_env, bootstrap, topics)
            stack.callback(flink.close)
            flink.check_plans()
        else:
            print(f"Flink side skipped: {flink_env}")
        print(f"{' and '.join(f'{k:,}' for k in sizes.values())} keys, one record each, {kb.PARTITIONS} partitions, "
              f"{args.repeat} rounds, Spark local[2]"
              + (f", Flink {bf.FLINK_VERSION} parallelism {bf.PARALLELISM}" if flink else ""))  # fmt: skip
        # Every step once on each side first, untimed, on a small topic: a session's first query of a kind pays its
        # warm-up (JIT, Python workers of the stateful operator).
        for step in STEPS:
            _run(spark, bootstrap, topics[WARM], step)
            if flink:
                flink.time(step, WARM, timeout=300)
        # Each step on both sides back to back, at both sizes (the slope's two points in the same moment): a noisy
        # moment weighs on all.
        for _ in range(args.repeat):
            for step in STEPS:
                for suffix, keys in sizes.items():
                    n = figures.records(step, keys)
                    seconds, state = _run(spark, bootstrap, topics[suffix], step)
                    spark_runs[suffix][step].append(seconds)
                    if not suffix:
                        spark_state[step] = state
                    line = f"  {keys:>9,} {step:9} spark {seconds:8.1f} s {n / seconds:10,.0f} rec/s  {state}"
                    if flink:
                        flink_seconds = flink.time(step, suffix, timeout=300 + n / 500)
                        flink_runs[suffix][step].append(flink_seconds)
                        line += f" | flink {flink_seconds:8.1f} s {n / flink_seconds:10,.0f} rec/s"
                    print(line, flush=True)
        if flink:
            for step in STEPS[1:]:  # last, and not fatal: the timings above are kept whatever happens here
                try:
                    n = figures.records(step, args.keys)
                    flink_state[step] = flink.state(step, "", n, timeout=300 + args.keys / 250)
                except Exception as e:
                    flink_state[step] = {"not_measured": f"{type(e).__name__}: {str(e)[:300]}"}
                print(f"  flink state {step}: {flink_state[step]}", flush=True)
    results = {
        "run": {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine()},
        "keys": args.keys,
        "repeat": args.repeat,
        "workload": {"orders": args.keys, "records": {step: figures.records(step, args.keys) for step in STEPS}},
        **figures.summarize(sizes, spark_runs, spark_state, flink_runs if flink else None, flink_state),
    }
    if flink:
        results["flink"]["settings"] = flink.settings()
    elif isinstance(flink_env, str):
        results["flink"] = {"skipped": flink_env}
    figures.show(results)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
