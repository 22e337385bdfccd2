"""A key look-up against a full scan, with filter pushdown on (`spark.sql.python.filterPushdown.enabled`):

    integration/dev python -m integration.bench_lookup [--records 1000000] [--repeat 3]

One topic of `records` JSON records over 8 partitions; timed in one run, median of `repeat`: the table read of
the whole topic, the look-up `id = K` with pushdown on (one partition read) and off (every partition read and
filtered by Spark), and Spark's JVM `kafka` source with `from_json` and the same filter (it has no key
pushdown). Prints seconds and the ratios; writes integration/results/benchmark-lookup.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from contextlib import ExitStack

from integration import bench_kafka as kb
from integration.benchmark import RESULTS, Bench, _infrastructure, bench_session

PARTITIONS = 8
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    with ExitStack() as stack:
        bootstrap, registry_url = _infrastructure(stack)
        spark = bench_session("upsert-kafka-lookup-benchmark", **{"spark.driver.memory": "4g"})
        bench = Bench(spark, bootstrap, registry_url, args.records, args.repeat)
        topic = kb.create_topic(bootstrap, f"bench-lookup-{uuid.uuid4().hex[:8]}", PARTITIONS)
        kb.produce_parallel(bootstrap, topic, args.records)
        key = args.records * 3 // 7

        def seconds(df_of, pushdown: bool) -> tuple[float, list]:
            """Median seconds of collecting df_of() (planned anew each run: pushdown is decided then)."""
            spark.conf.set(PUSHDOWN, str(pushdown).lower())
            runs, rows = [], []
            for _ in range(args.repeat):
                df = df_of()
                started = time.perf_counter()
                rows = df.collect()
                runs.append(time.perf_counter() - started)
            return statistics.median(runs), rows

        table = lambda: bench.ours(topic).schema(kb.VALUE_DDL).load()  # noqa: E731
        jvm = lambda: (  # noqa: E731
            bench.jvm(topic)
            .load()
            .selectExpr(f"from_json(CAST(value AS STRING), '{kb.VALUE_DDL}') AS v")
            .selectExpr("v.*")
            .where(f"id = {key}")
        )
        full, _ = seconds(lambda: table().selectExpr("count(*)"), pushdown=True)
        on, found_on = seconds(lambda: table().where(f"id = {key}"), pushdown=True)
        off, found_off = seconds(lambda: table().where(f"id = {key}"), pushdown=False)
        peer, found_jvm = seconds(jvm, pushdown=False)
        spark.stop()
    assert [r.id for r in found_on] == [r.id for r in found_off] == [r.id for r in found_jvm] == [key]
    figures = {
        "records": args.records,
        "partitions": PARTITIONS,
        "seconds": {
            "ours: full table read (count)": full,
            "ours: key look-up, pushdown on": on,
            "ours: key look-up, pushdown off": off,
            "JVM kafka + from_json: key filter": peer,
        },
        "look-up speed-up over pushdown off": off / on,
        "look-up speed-up over the JVM source": peer / on,
    }
    for name, value in figures["seconds"].items():
        print(f"  {name:<40} {value:8.2f} s")
    print(f"  look-up: {off / on:.1f}x faster than without pushdown, {peer / on:.1f}x faster than the JVM source")
    (RESULTS / "benchmark-lookup.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
