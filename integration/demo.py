"""The seed example, end to end on an embedded Kafka broker:

    orders (order_id, category, price) --> Kafka topic shop_sales
    streaming job: per category COUNT(*) AS num, SUM(price) AS price --> upsert-kafka topic shop_sales_num
    shop_sales_num read back as a table, printed, and checked against the orders produced.

Run it with `integration/dev python -m integration.demo` (set KAFKA_BOOTSTRAP_SERVERS to use your own
broker instead of starting one).
"""

from __future__ import annotations

import logging
import os
import random
import sys
import threading
import time
from collections import Counter, defaultdict

import orjson
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from integration.kafka import KafkaBroker

CATEGORIES = ["books", "garden", "kitchen", "music", "toys"]
ORDERS, WAVES = 3000, 6


def produce_orders(bootstrap: str, sent: list[tuple[str, int]]) -> None:
    """Orders in waves, while the streaming job runs, so its table changes under it."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 20})
    rng = random.Random(42)
    for wave in range(WAVES):
        for i in range(wave * ORDERS // WAVES, (wave + 1) * ORDERS // WAVES):
            category, price = rng.choice(CATEGORIES), rng.randint(1, 500)
            value = {"order_id": i, "category": category, "price": price}
            producer.produce("shop_sales", orjson.dumps(value), orjson.dumps({"order_id": i}))
            sent.append((category, price))
        producer.flush(30)
        print(f"  {time.strftime('%X')} wave {wave} produced")
        time.sleep(1.0)


def run(bootstrap: str) -> bool:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name, future in admin.create_topics(
        [NewTopic("shop_sales", 3, 1), NewTopic("shop_sales_num", 2, 1)]
    ).items():
        future.result(30)
        print(f"created topic {name}")

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("upsert-kafka-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafka = {"properties.bootstrap.servers": bootstrap, "key.format": "json", "value.format": "json"}

    orders = (
        spark.readStream.format("upsert-kafka")
        .options(**kafka)
        .option("topic", "shop_sales")
        .option("key.fields", "order_id")
        .schema("order_id BIGINT, category STRING, price BIGINT, _change_type STRING")
        .load()
    )
    sales = orders.groupBy("category").agg(F.count("*").alias("num"), F.sum("price").alias("price"))

    def upsert(batch, batch_id: int) -> None:
        # Python sinks cannot take Update mode directly: each micro-batch's changed rows are upserts.
        batch = batch.persist()  # written and counted: computed once
        batch.write.format("upsert-kafka").options(**kafka).option("topic", "shop_sales_num").option(
            "key.fields", "category"
        ).mode("append").save()
        print(f"  {time.strftime('%X')} micro-batch {batch_id}: upserted {batch.count()} category row(s)")
        batch.unpersist()

    sent: list[tuple[str, int]] = []
    producer = threading.Thread(target=produce_orders, args=(bootstrap, sent), daemon=True)
    producer.start()
    query = (
        sales.writeStream.outputMode("update").foreachBatch(upsert).trigger(processingTime="1 second").start()
    )
    producer.join()
    query.processAllAvailable()
    query.stop()
    print(f"produced {len(sent)} orders in {WAVES} waves")

    table = (
        spark.read.format("upsert-kafka")
        .options(**kafka)
        .option("topic", "shop_sales_num")
        .option("key.fields", "category")
        .schema("category STRING, num BIGINT, price BIGINT")
        .load()
        .orderBy("category")
    )
    print("shop_sales_num read back as a table:")
    table.show()

    counts, totals = Counter(c for c, _ in sent), defaultdict(int)
    for category, price in sent:
        totals[category] += price
    expected = sorted((c, counts[c], totals[c]) for c in counts)
    actual = [tuple(r) for r in table.collect()]
    spark.stop()
    if actual != expected:
        print(f"MISMATCH\n expected {expected}\n actual   {actual}")
        return False
    print(f"OK: shop_sales_num matches the {len(sent)} orders produced ({len(expected)} categories)")
    return True


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.monotonic()
    given = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if given:
        ok = run(given)
    else:
        with KafkaBroker() as broker:
            print(f"Kafka broker up at {broker.bootstrap_servers} (log: {broker.log_path})")
            ok = run(broker.bootstrap_servers)
    print(f"demo finished in {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
