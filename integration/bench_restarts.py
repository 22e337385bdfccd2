"""Availability benchmark: a stream copying a topic while its broker is killed (SIGKILL) and restarted on its
data directory, ours next to Spark's JVM `kafka` connector, in one run on the same broker.

    integration/dev python -m integration.bench_restarts [--records 20000] [--kills 4] [--batch 1500]

Starts its own broker (it is the one killed). Each query copies `--records` records in micro-batches of
`--batch`; the broker is killed whenever the query has committed two more micro-batches since the last
restart, `--kills` times. A query that fails is restarted from its checkpoint and counted. Prints, per
query: kills, query failures, records lost and duplicated (by key, in the output topic, read_committed).
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
import uuid
from pathlib import Path

import orjson
from confluent_kafka import Consumer, KafkaError, TopicPartition

from integration import bench_kafka as kb
from integration.benchmark import bench_session
from integration.kafka import KafkaBroker

PARTITIONS = 2


def _committed_batches(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return sum(1 for p in commits.iterdir() if p.name.isdigit()) if commits.is_dir() else 0


def _key_counts(bootstrap: str, topic: str) -> collections.Counter:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-restarts",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    counts: collections.Counter = collections.Counter()
    done: set[int] = set()
    deadline = time.monotonic() + 120
    while len(done) < PARTITIONS and time.monotonic() < deadline:
        for m in consumer.consume(10_000, timeout=1.0):
            if m.error() is None:
                counts[orjson.loads(m.key())["id"]] += 1
            elif m.error().code() == KafkaError._PARTITION_EOF:
                done.add(m.partition())
    consumer.close()
    return counts


class Scenario:
    def __init__(self, spark, broker: KafkaBroker, records: int, batch: int, kills: int, tmp: Path) -> None:
        self.spark, self.broker, self.tmp = spark, broker, tmp
        self.records, self.batch, self.kills = records, batch, kills

    def _query(self, who: str, source: str, sink: str, checkpoint: Path):
        servers = self.broker.bootstrap_servers
        if who.startswith("ours"):
            options = {"properties.bootstrap.servers": servers, "key.fields": "id"}
            df = self.spark.readStream.format("upsert-kafka").options(topic=source, **options)
            df = df.option("scan.max-records-per-batch", self.batch).schema(kb.VALUE_DDL + ", _change_type STRING")
            writer = df.load().writeStream.format("upsert-kafka").options(topic=sink, **options)
            if who == "ours exactly-once":
                writer = writer.options(
                    **{"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": sink}
                )
        else:
            df = self.spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers)
            df = df.option("subscribe", source).option("startingOffsets", "earliest")
            df = df.option("maxOffsetsPerTrigger", self.batch).load().select("key", "value")
            writer = df.writeStream.format("kafka").option("kafka.bootstrap.servers", servers).option("topic", sink)
        return writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()

    def run(self, who: str) -> dict:
        servers = self.broker.bootstrap_servers
        tag = uuid.uuid4().hex[:6]
        source = kb.create_topic(servers, f"restarts-in-{tag}", PARTITIONS)
        sink = kb.create_topic(servers, f"restarts-out-{tag}", PARTITIONS)
        kb.produce(servers, source, kb.json_records(self.records))
        checkpoint = self.tmp / tag
        query = self._query(who, source, sink, checkpoint)
        kills, failures, errors, mark = 0, 0, [], 2
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            if not query.isActive:
                if query.exception() is None:
                    break  # everything copied
                failures += 1
                errors.append(str(query.exception()).splitlines()[0][:200])
                query = self._query(who, source, sink, checkpoint)
            elif kills < self.kills and _committed_batches(checkpoint) >= mark:
                self.broker.kill()
                self.broker.restart()
                kills += 1
                mark = _committed_batches(checkpoint) + 2
            else:
                query.awaitTermination(0.5)
        query.stop()
        counts = _key_counts(servers, sink)
        return {
            "records": self.records,
            "kills": kills,
            "query_failures": failures,
            "lost": self.records - len(counts),
            "duplicated": sum(c - 1 for c in counts.values()),
            "errors": errors,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1_500)
    parser.add_argument("--kills", type=int, default=4)
    args = parser.parse_args(argv)

    spark = bench_session("upsert-kafka-bench-restarts", **{"spark.sql.shuffle.partitions": "2"})
    results = {}
    with KafkaBroker() as broker, tempfile.TemporaryDirectory(prefix="upsert-kafka-restarts-") as tmp:
        scenario = Scenario(spark, broker, args.records, args.batch, args.kills, Path(tmp))
        for who in ("ours exactly-once", "ours at-least-once", "JVM kafka"):
            results[who] = scenario.run(who)
            print(f"{who}: {json.dumps(results[who])}", flush=True)
    spark.stop()
    print("\n| query | records | broker kills | query failures | lost | duplicated |\n|---|---|---|---|---|---|")
    for who, r in results.items():
        print(f"| {who} | {r['records']:,} | {r['kills']} | {r['query_failures']} | {r['lost']} | {r['duplicated']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
