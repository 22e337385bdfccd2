"""The seed example, end to end on an embedded Kafka broker, streaming:

    orders (order_id, category, price) --> Kafka topic shop_sales, in waves
    streaming job: per category COUNT(*) AS num, SUM(price) AS price --> upsert-kafka topic shop_sales_num
    after every wave: the micro-batches that carried it, and shop_sales_num read back as a table
    half-way: the shop withdraws a category; its DELETE (a tombstone) removes it from the table
    at the end: the table checked against the orders produced

Run it with `integration/dev python -m integration.demo` (set KAFKA_BOOTSTRAP_SERVERS to use your own
broker instead of starting one).
"""

from __future__ import annotations

import logging
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import orjson
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from integration.kafka import KafkaBroker

CATEGORIES = ["books", "garden", "kitchen", "music", "toys"]
WITHDRAWN = "music"  # deleted from shop_sales_num after WITHDRAW_AFTER waves; no music orders after that
ORDERS_PER_WAVE, WAVES, WITHDRAW_AFTER = 500, 4, 2


@dataclass
class DemoRun:
    """What the demo saw, for its check and for tests: micro-batches and the table after each step."""

    batches: list[tuple[int, int]] = field(default_factory=list)  # (batch id, category rows upserted)
    tables: list[tuple[str, list[tuple]]] = field(default_factory=list)  # (step, rows of shop_sales_num)
    expected: list[tuple] = field(default_factory=list)
    orders: int = 0

    @property
    def ok(self) -> bool:
        return bool(self.tables) and self.tables[-1][1] == self.expected


def _orders(wave: int, rng: random.Random) -> list[dict]:
    categories = CATEGORIES if wave < WITHDRAW_AFTER else [c for c in CATEGORIES if c != WITHDRAWN]
    first = wave * ORDERS_PER_WAVE
    return [
        {"order_id": i, "category": rng.choice(categories), "price": rng.randint(1, 500)}
        for i in range(first, first + ORDERS_PER_WAVE)
    ]


def run(bootstrap: str, spark=None, sales_topic: str = "shop_sales", table_topic: str = "shop_sales_num") -> DemoRun:
    """The demo against `bootstrap`; creates both topics. Uses `spark` when given (and leaves it running)."""
    from pyspark.sql import functions as F

    from integration.spark_session import local_session

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name, future in admin.create_topics([NewTopic(sales_topic, 3, 1), NewTopic(table_topic, 2, 1)]).items():
        future.result(30)
        print(f"created topic {name}")

    own_session = spark is None
    if own_session:
        spark = local_session("upsert-kafka-demo", config={"spark.sql.shuffle.partitions": "2"})
    kafka = {"properties.bootstrap.servers": bootstrap, "key.format": "json", "value.format": "json"}
    table_options = {**kafka, "topic": table_topic, "key.fields": "category"}
    seen = DemoRun()

    orders = (
        spark.readStream.format("upsert-kafka")
        .options(**kafka)
        .option("topic", sales_topic)
        .option("key.fields", "order_id")
        .schema("order_id BIGINT, category STRING, price BIGINT, _change_type STRING")
        .load()
    )
    sales = orders.groupBy("category").agg(F.count("*").alias("num"), F.sum("price").alias("price"))

    def upsert(batch, batch_id: int) -> None:
        # Python sinks cannot take Update mode directly: each micro-batch's changed groups are upserts.
        batch = batch.persist()  # written and counted: computed once
        batch.write.format("upsert-kafka").options(**table_options).mode("append").save()
        rows = batch.count()
        batch.unpersist()
        seen.batches.append((batch_id, rows))
        print(f"  micro-batch {batch_id}: upserted {rows} category row(s)")

    def show_table(step: str) -> None:
        table = (
            spark.read.format("upsert-kafka")
            .options(**table_options)
            .schema("category STRING, num BIGINT, price BIGINT")
            .load()
            .orderBy("category")
        )
        rows = [tuple(r) for r in table.collect()]
        seen.tables.append((step, rows))
        print(f"shop_sales_num after {step}:")
        for category, num, price in rows:
            print(f"  {category:<10} num={num:<5} price={price}")

    # log_level 3: errors only (librdkafka's retried start-up notices would interleave with the tables).
    producer = Producer(
        {"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 20, "log_level": 3}
    )
    rng, sent = random.Random(42), []
    with tempfile.TemporaryDirectory(prefix="upsert-kafka-demo-") as checkpoint:
        query = (
            sales.writeStream.outputMode("update")
            .foreachBatch(upsert)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="1 second")
            .start()
        )
        try:
            for wave in range(WAVES):
                if wave == WITHDRAW_AFTER:
                    # The shop withdraws a category: a DELETE row becomes a tombstone of its key.
                    withdrawal = [(WITHDRAWN, None, None, "delete")]
                    spark.createDataFrame(
                        withdrawal, "category STRING, num BIGINT, price BIGINT, _change_type STRING"
                    ).write.format("upsert-kafka").options(**table_options).mode("append").save()
                    print(f"{time.strftime('%X')} category '{WITHDRAWN}' withdrawn: its tombstone written")
                    show_table(f"the delete of '{WITHDRAWN}'")
                for order in _orders(wave, rng):
                    producer.produce(sales_topic, orjson.dumps(order), orjson.dumps({"order_id": order["order_id"]}))
                    sent.append((order["category"], order["price"]))
                producer.flush(30)
                print(f"{time.strftime('%X')} wave {wave}: {ORDERS_PER_WAVE} orders produced")
                query.processAllAvailable()  # the stream catches up with this wave before the next one
                show_table(f"wave {wave}")
        finally:
            query.stop()

    counts, totals = Counter(c for c, _ in sent), defaultdict(int)
    for category, price in sent:
        totals[category] += price
    seen.orders = len(sent)
    seen.expected = sorted((c, counts[c], totals[c]) for c in counts if c != WITHDRAWN)
    if own_session:
        spark.stop()
    if not seen.ok:
        print(f"MISMATCH\n expected {seen.expected}\n actual   {seen.tables[-1][1] if seen.tables else None}")
    else:
        print(
            f"OK: shop_sales_num matches the {seen.orders} orders produced in {WAVES} waves "
            f"({len(seen.expected)} categories, '{WITHDRAWN}' deleted) after {len(seen.batches)} micro-batches"
        )
    return seen


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.monotonic()
    given = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if given:
        ok = run(given).ok
    else:
        with KafkaBroker() as broker:
            print(f"Kafka broker up at {broker.bootstrap_servers} (log: {broker.log_path})")
            ok = run(broker.bootstrap_servers).ok
    print(f"demo finished in {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
