"""The benchmark's partitions step (issue 31): the same records on few and on many partitions, and on a skewed
topic (a few large partitions among many small ones). A read's cost should follow its records, not its partitions:
each shape is read by a batch read into `noop` (median of the runs) and by a Trigger.AvailableNow stream (wall
time), ours and the JVM connector in the same run, and the table gives the seconds, each shape's time over the
4-partition time, and ours over the JVM's.

    integration/dev python -m integration.benchmark --only partitions [--partition-records 100000] [--no-peer]
"""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Producer

from integration import bench_kafka as kb

RECORDS = 100_000
EVEN = (4, 64, 512)
# The skewed topic: SKEW_PARTITIONS partitions, of which the first SKEW_LARGE hold SKEW_SHARE of the records.
SKEW_PARTITIONS, SKEW_LARGE, SKEW_SHARE = 512, 4, 0.8
SKEWED = f"{SKEW_PARTITIONS} skewed"
PREFIX = "partitions "
PEER_REPEAT = 1  # the JVM connector's read of 512 partitions takes minutes: one run (its AvailableNow too)


def partition_of(i: int, n: int, shape: int | str) -> int:
    """Record i's partition: round robin on an even topic; on the skewed one the first SKEW_SHARE of the records
    round robin over the large partitions, the rest over the small ones."""
    if shape != SKEWED:
        return i % int(shape)
    large = int(n * SKEW_SHARE)
    return i % SKEW_LARGE if i < large else SKEW_LARGE + (i - large) % (SKEW_PARTITIONS - SKEW_LARGE)


def fill(bootstrap: str, shape: int | str, n: int) -> str:
    """A new topic of the shape holding json_records(n), each sent to its partition_of."""
    count = SKEW_PARTITIONS if shape == SKEWED else int(shape)
    topic = kb.create_topic(bootstrap, f"bench-parts-{count}-{uuid.uuid4().hex[:8]}", partitions=count)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000, "acks": "all"})
    failures: list = []
    for i, (key, value) in enumerate(kb.json_records(n)):
        while True:
            try:
                producer.produce(topic, value, key, partition=partition_of(i, n, shape),
                                 on_delivery=lambda e, m: e and failures.append(e))  # fmt: skip
                break
            except BufferError:
                producer.poll(0.1)
    if producer.flush(120) or failures:
        raise RuntimeError(f"producing to {topic} failed: {failures[:3]}")
    return topic


def run(bench: Any, tmp: Any, n: int, peer: bool) -> None:
    """Measure every shape: a batch read (ours: bench.repeat runs, the JVM's: PEER_REPEAT) and an AvailableNow
    stream (one run each, as the issue's table)."""
    for shape in (*EVEN, SKEWED):
        topic = fill(bench.bootstrap, shape, n)
        name = f"{PREFIX}{shape}"
        ours = bench.ours(topic, **{"read.mode": "changelog"}).schema(kb.VALUE_DDL + ", _change_type STRING").load()
        bench.measure(f"{name} batch: ours json", lambda df=ours: bench.timed(lambda: bench.noop(df)), n)
        if peer:
            jvm = bench.jvm_json(bench.jvm(topic).load())
            run_jvm = lambda df=jvm: bench.timed(lambda: bench.noop(df))  # noqa: E731
            bench.measure(f"{name} batch: JVM kafka + from_json", run_jvm, n, PEER_REPEAT)
        bench.streaming(topic, tmp, f"{name} AvailableNow", n, repeat=1, peer=peer)


def _seconds(results: dict, key: str) -> float | None:
    found = results.get(key)
    return None if found is None else found["records"] / found["median"]


def table(results: dict) -> list[dict]:
    """Per shape: seconds (median) of each read, ours and the JVM's, when the step ran."""
    rows = []
    for shape in (*EVEN, SKEWED):
        name = f"{PREFIX}{shape}"
        row = {"shape": str(shape)}
        for what, key in (("batch", "batch"), ("available_now", "AvailableNow")):
            row[f"ours_{what}"] = _seconds(results, f"{name} {key}: ours json")
            row[f"jvm_{what}"] = _seconds(results, f"{name} {key}: JVM kafka + from_json")
        if row["ours_batch"] is not None:
            rows.append(row)
    return rows


def print_table(results: dict) -> None:
    rows = table(results)
    if not rows:
        return
    base = rows[0]

    def ratio(a: float | None, b: float | None) -> str:
        return "-" if a is None or not b else f"{a / b:.2f}"

    def secs(a: float | None) -> str:
        return "-" if a is None else f"{a:.2f}"

    print(f"\nthe same records on {rows[0]['shape']}..{rows[-1]['shape']} partitions (seconds; x{base['shape']}: "
          f"over the {base['shape']}-partition time; /JVM: ours over the JVM's)")  # fmt: skip
    print(f"{'partitions':<12} {'ours batch':>10} {'JVM batch':>10} {'x' + base['shape']:>6} {'/JVM':>6} "
          f"{'ours AvNow':>10} {'JVM AvNow':>10} {'x' + base['shape']:>6} {'/JVM':>6}")  # fmt: skip
    for row in rows:
        cells = []
        for what in ("batch", "available_now"):
            ours, jvm = row[f"ours_{what}"], row[f"jvm_{what}"]
            times = ratio(ours, base[f"ours_{what}"])
            cells.append(f"{secs(ours):>10} {secs(jvm):>10} {times:>6} {ratio(ours, jvm):>6}")
        print(f"{row['shape']:<12} {' '.join(cells)}")
