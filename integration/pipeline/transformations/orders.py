"""The orders topic (upsert-kafka: key order_id, a null value deletes the order) through a declarative pipeline:

    orders_changes    streaming table: the topic's records, with their offsets        (append, incremental)
    orders            materialized view: the topic's table, each order's last row     (SCD type 1)
    orders_history    materialized view: every version of every order, offsets from/to (SCD type 2)
    category_totals   materialized view: COUNT and SUM(price) per category of `orders`
    category_totals_topic  upsert-kafka sink, fed by a flow that keeps the same totals as a stream (with retractions)

Where the topic is: KAFKA_BOOTSTRAP_SERVERS, PIPELINE_ORDERS_TOPIC, PIPELINE_TOTALS_TOPIC."""

import os

from pyspark import pipelines as dp
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark_upsert_kafka import aggregate_changelog, changelog_history, changelog_table, normalized_changelog

spark = SparkSession.active()
KAFKA = {
    "properties.bootstrap.servers": os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "localhost:9092"),
    "key.format": "json",
    "value.format": "json",
}


def orders_topic():
    return (
        spark.readStream.format("upsert-kafka")
        .options(**KAFKA, topic=os.environ.get("PIPELINE_ORDERS_TOPIC", "orders"), **{"key.fields": "order_id"})
        .option("schema", "order_id STRING, category STRING, price DECIMAL(10, 2)")
        .option("metadata.columns", "offset")  # a key's records in order: a key lives in one partition
        .option("scan.startup.mode", "earliest-offset")
        .load()
    )


@dp.table(comment="The orders topic's records: _change_type upsert or delete, and the record's offset")
def orders_changes():
    return orders_topic()


@dp.materialized_view(comment="Each order's last row; a deleted order is gone")
def orders():
    return changelog_table(spark.read.table("orders_changes"), "order_id")


@dp.materialized_view(comment="Every version of every order, from and to the offsets of the changes")
def orders_history():
    return changelog_history(spark.read.table("orders_changes"), "order_id")


@dp.materialized_view
def category_totals():
    return spark.read.table("orders").groupBy("category").agg(F.count("*").alias("num"), F.sum("price").alias("total"))


dp.create_sink(
    "category_totals_topic",
    format="upsert-kafka",
    options={**KAFKA, "topic": os.environ.get("PIPELINE_TOTALS_TOPIC", "category_totals"), "key.fields": "category"},
)


# Built outside the flow's function: the table helpers look at their input's columns, which Spark refuses inside a
# pipeline's query function (ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION).
table = normalized_changelog(orders_topic(), "order_id").drop("offset")
totals = aggregate_changelog(table, "category", num="COUNT(*)", total="SUM(price)")


@dp.append_flow(target="category_totals_topic")
def category_totals_changes():
    return totals
