"""The tables/ helpers on every supported pyspark (transformWithStateInPandas exists from 4.0): an upsert topic
normalized and aggregated, across a restart from the checkpoint."""

from __future__ import annotations

import orjson
from pyspark_upsert_kafka.tables.aggregate import aggregate_changelog
from pyspark_upsert_kafka.tables.normalize import normalized_changelog

from tests.support.kafka_io import produce
from tests.support.read_helpers import run_available_now


def _order(i: int, category: str | None, price: float = 1.0) -> tuple:
    value = None if category is None else orjson.dumps({"id": i, "category": category, "price": price})
    return (orjson.dumps({"id": i}), value)


def test_an_upsert_topic_normalized_and_aggregated_goes_on_after_a_restart(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(2)
    produce(bootstrap, topic, [_order(1, "a", 2.0), _order(2, "a", 3.0), _order(3, "b"), _order(1, "a", 2.0)])
    changes = (
        spark.readStream.format("upsert-kafka")
        .options(**options(topic, {"metadata.columns": "offset", "scan.startup.mode": "earliest-offset"}))
        .option("schema", "id INT, category STRING, price DOUBLE")
        .load()
    )
    sales = aggregate_changelog(
        normalized_changelog(changes, "id").drop("offset"),
        "category",
        n="COUNT(*)",
        total="SUM(price)",
        top="MAX(price)",
    )
    first = run_available_now(sales, str(tmp_path)).rows
    assert sorted(first) == [("a", 2, 5.0, 3.0, "insert"), ("b", 1, 1.0, 1.0, "insert")]
    # order 2 leaves a (its maximum) for b; order 3 is deleted, then b gets order 2
    produce(bootstrap, topic, [_order(3, None), _order(2, "b", 3.0), _order(9, None)])
    second = run_available_now(sales, str(tmp_path)).rows
    assert sorted(second) == [
        ("a", 1, 2.0, 2.0, "update_postimage"),
        ("a", 2, 5.0, 3.0, "update_preimage"),
        ("b", 1, 1.0, 1.0, "update_preimage"),
        ("b", 1, 3.0, 3.0, "update_postimage"),
    ]
