"""The declarative pipeline of integration/pipeline/ on the embedded broker (pyspark 4.1+):

    orders (order_id, category, price) --> Kafka topic pipeline_orders: new orders, then changes and deletes
    `spark-pipelines run` --> streaming table orders_changes, materialized views orders, orders_history and
                              category_totals, and the upsert-kafka topic pipeline_category_totals
    after each run: the tables, and each checked against the topics read as tables by upsert-kafka

The second run is a restart: a new `spark-pipelines run` that goes on from the flows' checkpoints. Run it with
`integration/dev python -m integration.pipeline_demo` (set KAFKA_BOOTSTRAP_SERVERS to use your own broker).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import orjson
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from integration.kafka import KafkaBroker
from integration.spark_connect import ConnectServer

SPEC = Path(__file__).parent / "pipeline" / "spark-pipeline.yml"
ORDERS = "order_id STRING, category STRING, price DECIMAL(10, 2)"
TOTALS = "category STRING, num BIGINT, total DECIMAL(20, 2)"
FIRST = [(f"o{i}", ["books", "garden", "toys"][i % 3], Decimal(f"{10 + i}.50")) for i in range(9)]
# The second wave: o1 moves to another category, o2 gets a new price, o3 and o6 are deleted, o4 repeats its row,
# o9 is new, o6 comes back.
SECOND = [
    ("o1", "books", Decimal("11.50")),
    ("o2", "toys", Decimal("99.00")),
    ("o3", None, None),
    ("o4", "garden", Decimal("14.50")),
    ("o6", None, None),
    ("o9", "music", Decimal("5.00")),
    ("o6", "toys", Decimal("1.00")),
]


@dataclass(frozen=True)
class PipelineTopics:
    orders: str
    totals: str

    def create(self, bootstrap: str) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(self.orders, 3, 1), NewTopic(self.totals, 2, 1)]).values():
            future.result(30)


def send_orders(bootstrap: str, topic: str, orders: list[tuple[str, str | None, Decimal | None]]) -> None:
    """Each order keyed by its id; an order without a category is a delete (a tombstone)."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "log_level": 3})
    for order_id, category, price in orders:
        # The price as a JSON number with its exact digits (orjson writes no Decimal).
        row = f'{{"order_id": "{order_id}", "category": "{category}", "price": {price}}}'
        value = None if category is None else row.encode()
        producer.produce(topic, value, orjson.dumps({"order_id": order_id}))
    if producer.flush(30):
        raise RuntimeError(f"orders not delivered to {topic} in 30 s")


def run_pipeline(server: ConnectServer, bootstrap: str, topics: PipelineTopics) -> str:
    """One `spark-pipelines run` of the pipeline on `server`: every flow processes what is there, then stops. The
    pipeline's storage is in the server's folder (a copy of the spec says so: the spec has no variables)."""
    folder = server.workdir / "pipeline"
    if not folder.is_dir():
        shutil.copytree(SPEC.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
        spec = yaml.safe_load(SPEC.read_text()) | {"storage": (server.workdir / "pipeline-storage").as_uri()}
        (folder / SPEC.name).write_text(yaml.safe_dump(spec))
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "PIPELINE_ORDERS_TOPIC": topics.orders,
        "PIPELINE_TOTALS_TOPIC": topics.totals,
    }
    done = spark_pipelines(server, folder / SPEC.name, "run", env)
    if done.returncode != 0:
        raise RuntimeError(f"spark-pipelines run failed (exit {done.returncode}):\n{done.stdout[-6000:]}")
    return done.stdout


def spark_pipelines(
    server: ConnectServer, spec: Path, command: str, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`spark-pipelines <command> --spec <spec>` on `server`, its output (stdout and stderr) in `stdout`."""
    cli = Path(sys.executable).parent / "spark-pipelines"
    cmd = [str(cli), command, "--spec", str(spec), "--remote", server.url]
    return subprocess.run(
        cmd, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout
    )


def _show(spark, bootstrap: str, topics: PipelineTopics) -> bool:
    """Print the pipeline's tables; whether `orders` and `category_totals` equal the topics read as tables."""
    kafka = {"properties.bootstrap.servers": bootstrap, "key.format": "json", "value.format": "json"}
    tables = {}
    for name in ("orders", "orders_history", "category_totals"):
        spark.catalog.refreshTable(name)  # the run rewrote its files
        tables[name] = sorted(tuple(row) for row in spark.read.table(name).collect())
        print(f"{name}:")
        for row in tables[name]:
            print("  " + "  ".join(map(str, row)))
    ok = True
    for name, topic, key, schema in (
        ("orders", topics.orders, "order_id", ORDERS),
        ("category_totals", topics.totals, "category", TOTALS),
    ):
        reader = spark.read.format("upsert-kafka").options(**kafka, topic=topic, **{"key.fields": key})
        table = reader.option("schema", schema).load().drop("_change_type")
        read = sorted(tuple(row) for row in table.collect())
        print(f"{name} equals topic {topic} read as a table: {tables[name] == read}")
        if tables[name] != read:
            print(f"  the topic's table: {read}")
            ok = False
    return ok


def main() -> int:
    from pyspark.sql import SparkSession

    suffix = uuid.uuid4().hex[:8]  # a broker of yours may hold the topics of an earlier run
    topics = PipelineTopics(f"pipeline_orders_{suffix}", f"pipeline_category_totals_{suffix}")
    with tempfile.TemporaryDirectory(prefix="upsert-kafka-pipeline-") as workdir:
        broker = None if os.environ.get("KAFKA_BOOTSTRAP_SERVERS") else KafkaBroker(Path(workdir) / "kafka")
        try:
            if broker:
                broker.start()
            bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or broker.bootstrap_servers
            topics.create(bootstrap)
            with ConnectServer(Path(workdir) / "spark") as server:
                spark = SparkSession.builder.remote(server.url).getOrCreate()
                try:  # the client's session ends before its server: at exit it would retry a gone server
                    ok = True
                    for wave, orders in (("new orders", FIRST), ("changes and deletes", SECOND)):
                        send_orders(bootstrap, topics.orders, orders)
                        print(f"== {len(orders)} {wave} sent; spark-pipelines run")
                        run_pipeline(server, bootstrap, topics)
                        ok = _show(spark, bootstrap, topics) and ok
                finally:
                    spark.stop()
        finally:
            if broker:
                broker.stop()
    print("pipeline demo: OK" if ok else "pipeline demo: MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
