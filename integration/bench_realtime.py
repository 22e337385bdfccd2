"""Spark's real-time mode (4.3) with a Python sink: is it a low-latency path for writing an upsert topic?

    integration/dev python -m integration.bench_realtime [--rate 2000] [--seconds 20] [--epoch "5 seconds"]

Real-time mode accepts only allow-listed sources and sinks: Spark's JVM Kafka source and sink, `foreach` and
memory; a Python data source is refused. So the question is whether a Python `ForeachWriter` (where this
connector's encoder and partitioner would run) gets rows as they arrive. This copies a topic with the JVM
Kafka source into a Python ForeachWriter that produces each row at once (the least a writer can do), next to
the same query into Spark's JVM Kafka sink, at `rate` records/s, and prints the latency of each (the output
record's LogAppendTime minus the input's CreateTime).

What it showed here (2,000 rec/s, 5 s epochs; two runs): the JVM sink p50 7 ms / p99 435 ms; the Python
writer p50 2.6-5.6 s / p99 4.6-8.3 s, and with 30 s epochs p50 13.6 s: its latency follows the epoch length
(rows reach the Python worker in per-epoch batches, not as they arrive). Not a low-latency path.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from contextlib import ExitStack

from integration import bench_kafka as kb
from integration.benchmark import _infrastructure, bench_session


class ProduceEachRow:
    """A ForeachWriter that produces every row as it gets it (linger 0), flushed when its epoch closes."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic

    def open(self, partition_id: int, epoch_id: int) -> bool:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0, "partitioner": "murmur2_random"})
        return True

    def process(self, row) -> None:
        self.producer.produce(self.topic, row.value, row.key)
        self.producer.poll(0)

    def close(self, error) -> None:
        self.producer.flush(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--epoch", default="5 seconds", help="the real-time trigger's epoch (Spark's minimum: 5 s)")
    args = parser.parse_args(argv)

    os.environ.setdefault("SCHEMA_REGISTRY_URL", "unused")  # no registry needed
    with ExitStack() as stack:
        bootstrap, _ = _infrastructure(stack)
        # Real-time mode runs every source partition's task at once: one core each.
        spark = bench_session(
            "upsert-kafka-realtime", f"local[{kb.PARTITIONS}]", **{"spark.ui.showConsoleProgress": "false"}
        )
        spark.sparkContext.setLogLevel("OFF")  # stopping a real-time query kills its running tasks: logged
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="upsert-kafka-rtm-"))
        for who in ("python foreach", "JVM kafka sink"):
            source = kb.create_topic(bootstrap, f"rtm-in-{uuid.uuid4().hex[:8]}")
            appended = {"message.timestamp.type": "LogAppendTime"}
            sink = kb.create_topic(bootstrap, f"rtm-out-{uuid.uuid4().hex[:8]}", **appended)
            df = (
                spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", source)
                .option("startingOffsets", "earliest")
                .load()
                .selectExpr("key", "to_json(named_struct('produced_ms', unix_millis(timestamp))) AS value")
            )
            writer = df.writeStream.outputMode("update").option("checkpointLocation", f"{tmp}/{who}")
            if who == "python foreach":
                writer = writer.foreach(ProduceEachRow(bootstrap, sink))
            else:
                writer = writer.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", sink)
            query = writer.trigger(realTime=args.epoch).start()
            try:
                deadline = time.monotonic() + 120
                while query.lastProgress is None and query.isActive and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert query.isActive, query.exception()
                producer = kb.RateProducer(bootstrap, source, args.rate, args.seconds)
                producer.start().join()
                found = sorted(kb.latencies(bootstrap, sink, producer.sent))
            finally:
                query.stop()
            q = statistics.quantiles(found, n=100)
            print(f"  real-time mode, epoch {args.epoch}, {who:<15} p50 {q[49]:6,.0f} ms  p99 {q[98]:6,.0f} ms "
                  f"({len(found)} of {producer.sent} records)")  # fmt: skip
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
