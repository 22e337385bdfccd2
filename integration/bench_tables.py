"""Tables in streams: records/s through normalized_changelog and through a retracting aggregation, next to the plain
changelog read of the same records in the same run, and the state they keep per key.

    integration/dev python -m integration.bench_tables [--keys N] [--repeat R]

The topic (4 partitions) holds one record per key for `--keys` keys (the benchmark's 6-field json rows,
integration.bench_kafka.row). Each query reads it all with Trigger.AvailableNow into Spark's `noop` sink, on a fresh
checkpoint, on the RocksDB state store: `read` the changelog alone, `normalize` normalized_changelog on `id`,
`aggregate` that and aggregate_changelog per `category` (97 groups: COUNT, SUM, AVG, MIN, MAX of `price`). Figures:
median wall seconds over the runs and records/s; the ratio to `read` of each run; state bytes per key: the RocksDB
SST files' size of the last micro-batch over the keys in state (Spark's stateOperators metrics). Test/dev tooling
only: the product never imports this package.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from integration import bench_kafka as kb
from integration.benchmark import _infrastructure, bench_session

RESULTS = Path(__file__).parent / "results" / "benchmark-tables.json"
AGGREGATES = {"n": "COUNT(*)", "total": "SUM(price)", "avg": "AVG(price)", "low": "MIN(price)", "high": "MAX(price)"}


def _query(spark, bootstrap: str, topic: str, step: str):
    from pyspark_upsert_kafka.tables.aggregate import aggregate_changelog
    from pyspark_upsert_kafka.tables.normalize import normalized_changelog

    changes = (
        spark.readStream.format("upsert-kafka")
        .option("topic", topic)
        .option("properties.bootstrap.servers", bootstrap)
        .option("key.fields", "id")
        .option("metadata.columns", "offset")
        .option("scan.startup.mode", "earliest-offset")
        .option("schema", kb.VALUE_DDL)
        .load()
    )
    if step == "read":
        return changes
    normalized = normalized_changelog(changes, "id")
    return normalized if step == "normalize" else aggregate_changelog(normalized, "category", **AGGREGATES)


def _run(spark, bootstrap: str, topic: str, step: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory(prefix="bench-tables-") as checkpoint:
        started = time.perf_counter()
        query = (
            _query(spark, bootstrap, topic, step)
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        seconds = time.perf_counter() - started
        if query.exception():
            raise RuntimeError(str(query.exception()))
        progress = [p for p in query.recentProgress if p["numInputRows"]]
    return seconds, _state(progress[-1] if progress else {})


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
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from pyspark_upsert_kafka.tables.rows import ROCKSDB

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
        topic = kb.create_topic(bootstrap, f"bench-tables-{int(time.time())}")
        kb.produce_parallel(bootstrap, topic, args.keys)
        print(f"{args.keys:,} keys, one record each, {kb.PARTITIONS} partitions, {args.repeat} runs, local[2]")
        runs: dict[str, list[float]] = {"read": [], "normalize": [], "aggregate": []}
        state: dict[str, dict] = {}
        for _ in range(args.repeat):  # the steps back to back in each round: a noisy moment weighs on all
            for step in runs:
                seconds, state[step] = _run(spark, bootstrap, topic, step)
                runs[step].append(seconds)
                print(f"  {step:9} {seconds:8.1f} s  {args.keys / seconds:10,.0f} records/s  state {state[step]}")
        spark.stop()
    when = time.strftime("%Y-%m-%d %H:%M")
    results = {
        "run": {"when": when, "machine": platform.machine()},
        "keys": args.keys,
        "repeat": args.repeat,
        "steps": {},
    }
    for step, seconds in runs.items():
        ratios = [read / s for read, s in zip(runs["read"], seconds)]
        results["steps"][step] = {
            "median_s": round(statistics.median(seconds), 2),
            "records_per_s": round(args.keys / statistics.median(seconds)),
            "ratio_to_read": round(statistics.median(ratios), 3),
            "state": state[step],
        }
        print(f"{step:9} median {statistics.median(seconds):7.1f} s, {args.keys / statistics.median(seconds):9,.0f} "
              f"records/s, {statistics.median(ratios):.3f} x read")  # fmt: skip
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
