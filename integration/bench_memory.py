"""Peak memory of Spark's Python workers, sampled from /proc while a block runs (Linux only).

Spark forks its Python workers from `pyspark.daemon`; they keep its command line, which is how they are
found, among the descendants of this process (other Spark applications on the machine are not counted).
Workers are reused across tasks, so the figure is their peak resident set during the block.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_PAGE_MB = 1 / 1024  # VmRSS is in kB


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:  # the parent pid is the field after the ')' that closes the command name
                parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _worker_rss_mb() -> list[float]:
    out = []
    for pid in _descendants(os.getpid()):
        proc = Path("/proc") / str(pid)
        try:
            if b"pyspark.daemon" not in (proc / "cmdline").read_bytes():
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    out.append(int(line.split()[1]) * _PAGE_MB)
        except OSError:  # the process ended meanwhile
            continue
    return out


class PythonWorkerMemory:
    """`with PythonWorkerMemory() as m: ...`, then m.peak_worker_mb (largest worker) and m.peak_total_mb."""

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.peak_worker_mb = self.peak_total_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            sizes = _worker_rss_mb()
            if sizes:
                self.peak_worker_mb = max(self.peak_worker_mb, max(sizes))
                self.peak_total_mb = max(self.peak_total_mb, sum(sizes))

    def __enter__(self) -> PythonWorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# -- the table-mode memory benchmark (issue 12) ----------------------------------------------------
#
#     integration/dev python -m integration.bench_memory --keys 1000000 [--budgets default 16mb]
#
# A 4-partition topic of `keys` distinct JSON keys (each written once, so the live bytes of a partition are
# its key + value bytes), read in table mode with each budget in a fresh Spark session with one Python
# worker per task (spark.python.worker.reuse=false: no worker carries memory from an earlier read). A tiny
# table read first gives a worker's baseline (interpreter, pyarrow, Kafka client); the growth over it is what
# the read itself held. `default` reads without the option (also on code that has none); `changelog` is a
# changelog read of the same topic: no state, so its growth is the floor of streaming the records through a
# worker (the consumer's fetch queue, a chunk of records as Python objects, the output batches).


def _produce_slice(args: tuple[str, str, int, int, int]) -> float:
    from integration import bench_kafka as kb

    bootstrap, topic, start, stop, step = args
    records = ((b'{"id":%d}' % i, kb.orjson.dumps(kb.row(i))) for i in range(start, stop, step))
    return kb.produce(bootstrap, topic, records)  # type: ignore[arg-type]


def produce_keys(bootstrap: str, topic: str, keys: int) -> None:
    """Keys 0..keys-1, one record each, by two spawned producers (records made as they are sent)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_produce_slice, [(bootstrap, topic, i, keys, 2) for i in range(2)])


def partition_bytes(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    """Per partition: (records, key + value bytes), read with the raw client."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-memory", "enable.auto.commit": False,
         "enable.partition.eof": True}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    sizes = {p: [0, 0] for p in range(partitions)}
    done: set[int] = set()
    while len(done) < partitions:
        for m in consumer.consume(10_000, timeout=1.0):
            if m.error() is None:
                size = sizes[m.partition()]
                size[0] += 1
                size[1] += len(m.key() or b"") + len(m.value() or b"")
            elif m.error().code() == KafkaError._PARTITION_EOF:
                done.add(m.partition())
            else:
                raise RuntimeError(m.error().str())
    consumer.close()
    return {p: (n, b) for p, (n, b) in sizes.items()}


def _table_read(spark, bootstrap: str, topic: str, budget: str | None):
    """A table read with the budget (None: the default), or with budget 'changelog' a plain changelog read."""
    from integration import bench_kafka as kb

    reader = spark.read.format("upsert-kafka").option("topic", topic)
    reader = reader.option("properties.bootstrap.servers", bootstrap).option("key.fields", "id")
    if budget == "changelog":
        return reader.option("read.mode", "changelog").schema(kb.VALUE_DDL + ", _change_type STRING").load()
    if budget is not None:
        reader = reader.option("scan.table.memory-budget", budget)
    return reader.schema(kb.VALUE_DDL).load()


def measure_table_memory(spark, bootstrap: str, topic: str, budget: str | None, expected: int) -> dict:
    import time

    df = _table_read(spark, bootstrap, topic, budget)
    started = time.perf_counter()
    with PythonWorkerMemory() as memory:
        rows = df.count()
    seconds = time.perf_counter() - started
    if rows != expected:
        raise RuntimeError(f"table read of {topic} gave {rows:,} rows, expected {expected:,}")
    return {"peak_worker_mb": memory.peak_worker_mb, "peak_total_mb": memory.peak_total_mb, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json
    import os
    import sys
    import time
    import uuid
    from contextlib import ExitStack

    from integration import bench_kafka as kb

    parser = argparse.ArgumentParser(description="Peak Python worker memory of a table-mode read")
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument(
        "--budgets",
        nargs="+",
        default=["changelog", "default", "16mb"],
        help="'default': no option given; 'changelog': a changelog read (no state: the floor of streaming the records)",
    )
    parser.add_argument("--label", default="", help="a name for this run in the output (e.g. before)")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from integration.spark_session import local_session

    with ExitStack() as stack:
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            from integration.kafka import KafkaBroker

            broker = KafkaBroker()
            broker.start()
            stack.callback(broker.stop)
            bootstrap = broker.bootstrap_servers
        topic = kb.create_topic(bootstrap, f"bench-memory-{uuid.uuid4().hex[:8]}")
        started = time.perf_counter()
        produce_keys(bootstrap, topic, args.keys)
        print(f"{args.keys:,} keys produced in {time.perf_counter() - started:.0f} s")
        sizes = partition_bytes(bootstrap, topic, kb.PARTITIONS)
        if sum(n for n, _ in sizes.values()) != args.keys:
            raise RuntimeError(f"expected {args.keys:,} records, the topic holds {sizes}")
        largest = max(b for _, b in sizes.values())
        tiny = kb.create_topic(bootstrap, f"bench-memory-tiny-{uuid.uuid4().hex[:8]}")
        kb.produce(bootstrap, tiny, [(b'{"id":%d}' % i, kb.orjson.dumps(kb.row(i))) for i in range(16)])
        spark = local_session(
            "upsert-kafka-bench-memory", config={"spark.driver.memory": "2g", "spark.python.worker.reuse": "false"}
        )
        baseline = measure_table_memory(spark, bootstrap, tiny, None, 16)["peak_worker_mb"]
        live_mb = largest / 2**20
        print(
            f"largest partition: {largest / 2**20:,.1f} MB of live keys + values "
            f"({max(n for n, _ in sizes.values()):,} keys); worker baseline {baseline:,.0f} MB"
        )
        print(f"{'budget':<10} {'peak worker MB':>15} {'growth MB':>10} {'growth/live':>12} {'peak/live':>10} {'s':>6}")
        results: dict = {"keys": args.keys, "largest_partition_live_mb": live_mb, "baseline_worker_mb": baseline}
        for budget in args.budgets:
            figures = measure_table_memory(spark, bootstrap, topic, None if budget == "default" else budget, args.keys)
            growth = figures["peak_worker_mb"] - baseline
            figures |= {"growth_mb": growth, "growth_per_live": growth / live_mb,
                        "peak_per_live": figures["peak_worker_mb"] / live_mb}  # fmt: skip
            results[f"{args.label or 'run'}: budget {budget}"] = figures
            print(
                f"{budget:<10} {figures['peak_worker_mb']:>15,.0f} {growth:>10,.0f} {figures['growth_per_live']:>12.2f}"
                f" {figures['peak_per_live']:>10.2f} {figures['seconds']:>6.1f}"
            )
        spark.stop()
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
