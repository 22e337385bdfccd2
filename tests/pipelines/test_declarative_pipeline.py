"""The example declarative pipeline (integration/pipeline/) run by `spark-pipelines` on a Spark Connect server, on the
real broker: new orders, then updates, repeats and deletes in a second run that goes on from the first one's
checkpoints. After each run the streaming table holds the topic's records once each, the materialized views equal the
topic's table and its history, and the upsert-kafka sink's topic equals the totals worked out here. And a tables
helper called where a pipeline cannot run it says where to build it. pyspark 4.2+ (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import functions as F
from pyspark_upsert_kafka import changelog_history

from integration.pipeline_demo import (
    FIRST,
    ORDERS,
    SECOND,
    TOTALS,
    PipelineTopics,
    run_pipeline,
    send_orders,
    spark_pipelines,
)

MISUSE = Path(__file__).parent / "misuse" / "spark-pipeline.yml"


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _topic(spark, options, topic: str, key: str, schema: str, **more: str):
    """The topic read by upsert-kafka: its table, or with read.mode = changelog its records."""
    return (
        spark.read.format("upsert-kafka")
        .options(**options(topic, {"key.fields": key, "schema": schema, **more}))
        .load()
    )


def test_a_pipeline_keeps_the_topics_table_its_history_and_an_upsert_kafka_sink(
    spark, connect_server, new_topic, options, bootstrap
):
    topics = PipelineTopics(new_topic(partitions=3), new_topic(partitions=2))
    table = connect_server.warehouse
    sent = 0
    for orders in (FIRST, SECOND):  # the second run is a restart from the first one's checkpoints
        send_orders(bootstrap, topics.orders, orders)
        sent += len(orders)
        run_pipeline(connect_server, bootstrap, topics)

        stored = spark.read.parquet(str(table / "orders_changes"))
        assert stored.count() == sent  # each record once, across the restart
        topic_changes = _topic(
            spark,
            options,
            topics.orders,
            "order_id",
            ORDERS,
            **{"read.mode": "changelog", "metadata.columns": "offset"},
        )
        assert _rows(stored) == _rows(topic_changes.select(*stored.columns))

        orders = _topic(spark, options, topics.orders, "order_id", ORDERS).drop("_change_type")
        assert _rows(spark.read.parquet(str(table / "orders"))) == _rows(orders)
        history = spark.read.parquet(str(table / "orders_history"))
        assert _rows(history) == _rows(changelog_history(topic_changes, "order_id"))

        totals = orders.groupBy("category").agg(F.count("*").alias("num"), F.sum("price").alias("total"))
        assert _rows(spark.read.parquet(str(table / "category_totals"))) == _rows(totals)
        assert _rows(_topic(spark, options, topics.totals, "category", TOTALS).drop("_change_type")) == _rows(totals)

    ids = {r.order_id for r in orders.collect()}
    assert "o3" not in ids and {"o6", "o9"} <= ids  # deleted; deleted and back; new in the second run
    assert history.where("order_id = 'o2'").count() == 2 and history.where("order_id = 'o4'").count() == 1


def test_a_tables_helper_inside_a_query_function_says_to_build_it_outside(connect_server):
    done = spark_pipelines(connect_server, MISUSE, "dry-run", {})
    assert done.returncode != 0
    assert (
        "normalized_changelog looks at its input's columns, which Spark refuses inside a pipeline's query"
        in done.stdout
    )
    assert "build it outside the function" in done.stdout
