"""What ordering by version costs: a table read with and without `scan.upsert.version` = `timestamp`, and
normalized_changelog with and without `version=` (the record's timestamp), on the same topic in the same run.

    integration/dev python -m integration.bench_versions [--keys 500000] [--repeat 3]

The topic (integration.bench_kafka: 4 partitions) holds every key twice: the benchmark's 6-field json row, then an
update of it (another quantity). A table read reduces 2 x `--keys` records to `--keys` rows; normalize gives an insert
and an update a key on both sides. (The same row twice would not do: the version column is part of the row, so the
second record, equal but of a later timestamp, is an update by version and nothing without, and the two sides would
emit different changes.) Each round runs the four steps
back to back, each pair's two sides in turn first (a noisy moment weighs on both sides of a pair): the table read
into Spark's `noop` sink, and normalize as a Trigger.AvailableNow stream into `noop` on a fresh checkpoint (RocksDB,
local[2], 2 shuffle partitions). Figures: the median seconds of each step and each pair's ratio (with the version /
without), per round, median. Writes integration/results/benchmark-versions.json. Test/dev tooling only: the
product never imports this.
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

RESULTS = Path(__file__).parent / "results" / "benchmark-versions.json"
STEPS = ("table read", "table read by version", "normalize", "normalize by version")


def _options(bootstrap: str, topic: str) -> dict[str, str]:
    return {"topic": topic, "properties.bootstrap.servers": bootstrap, "key.fields": "id", "schema": kb.VALUE_DDL}


def _step(spark, bootstrap: str, topic: str, step: str) -> float:
    """One run of `step`: its wall seconds."""
    from pyspark_upsert_kafka.tables.normalize import normalized_changelog

    options = _options(bootstrap, topic)
    started = time.perf_counter()
    if step.startswith("table read"):
        reader = spark.read.format("upsert-kafka").options(**options)
        if step.endswith("by version"):
            reader = reader.option("scan.upsert.version", "timestamp")
        reader.load().write.format("noop").mode("overwrite").save()
        return time.perf_counter() - started
    changes = spark.readStream.format("upsert-kafka").options(**options)
    changes = changes.option("scan.startup.mode", "earliest-offset")
    by_version = step.endswith("by version")
    changes = changes.option("metadata.columns", "offset, version=timestamp" if by_version else "offset").load()
    normalized = normalized_changelog(changes, "id", version="version" if by_version else None)
    with tempfile.TemporaryDirectory(prefix="bench-versions-") as checkpoint:
        query = normalized.writeStream.format("noop").option("checkpointLocation", checkpoint)
        query = query.trigger(availableNow=True).start()
        query.awaitTermination(1800)
        if query.exception() is not None or query.isActive:
            query.stop()
            raise RuntimeError(f"{step}: {query.exception() or 'did not finish'}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    from pyspark_upsert_kafka.tables.rows import ROCKSDB

    with ExitStack() as stack:
        bootstrap, _ = _infrastructure(stack)
        spark = bench_session("bench-versions", **{"spark.sql.streaming.stateStore.providerClass": ROCKSDB,
                                                   "spark.sql.shuffle.partitions": "2"})  # fmt: skip
        topic = kb.create_topic(bootstrap, f"versions-{time.time_ns()}")
        for revision in range(2):
            kb.produce_parallel(bootstrap, topic, args.keys, revision)
        warm = kb.create_topic(bootstrap, f"versions-warm-{time.time_ns()}")
        kb.produce_parallel(bootstrap, warm, 1_000)
        for step in STEPS:  # a session's first query of a kind pays its warm-up
            _step(spark, bootstrap, warm, step)
        rounds: dict[str, list[float]] = {s: [] for s in STEPS}
        for r in range(args.repeat):
            # Each pair runs plain first in even rounds, by version first in odd ones: a machine getting busier or
            # quieter within a round weighs on both sides alike over two rounds.
            for step in STEPS if r % 2 == 0 else (STEPS[1], STEPS[0], STEPS[3], STEPS[2]):
                rounds[step].append(_step(spark, bootstrap, topic, step))
            print(f"  round {r + 1}: " + ", ".join(f"{s} {rounds[s][-1]:.1f} s" for s in STEPS), flush=True)
    figures: dict = {"run": {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine()},
                     "keys": args.keys, "records": 2 * args.keys, "repeat": args.repeat}  # fmt: skip
    for step in STEPS:
        figures[step] = {"median_s": statistics.median(rounds[step]), "rounds_s": rounds[step]}
    for plain in ("table read", "normalize"):
        ratios = [b / a for a, b in zip(rounds[plain], rounds[f"{plain} by version"])]
        figures[f"{plain}: by version / plain"] = statistics.median(ratios)
        print(f"{plain}: {figures[plain]['median_s']:.1f} s, by version "
              f"{figures[plain + ' by version']['median_s']:.1f} s: x{statistics.median(ratios):.2f}")  # fmt: skip
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
