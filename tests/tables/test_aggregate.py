"""aggregate_changelog on a real broker, against a real Flink: the orders Flink 2.2.1 wrote (upserted, moved between
categories, deleted, a category emptied and refilled; tests/formats/golden/flink/tables_aggregate.json) normalized,
aggregated and written to upsert-kafka give the records Flink's own GroupAggregate and upsert-kafka sink wrote."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark_upsert_kafka import SchemaError
from pyspark_upsert_kafka.spark_internals import ADMISSION_CONTROL
from pyspark_upsert_kafka.tables.aggregate import aggregate_changelog
from pyspark_upsert_kafka.tables.normalize import normalized_changelog

from tests.support.kafka_io import consume_messages, produce
from tests.support.read_helpers import finish_available_now, finish_reading, run_available_now
from tests.tables.forms import OPERATOR_FORMS

GOLDEN = json.loads((Path(__file__).parents[1] / "formats/golden/flink/tables_aggregate.json").read_text())
AGGREGATES = {
    "num": "COUNT(*)",
    "total": "SUM(price)",
    "avg_price": "AVG(price)",
    "min_price": "MIN(price)",
    "max_price": "MAX(price)",
}


def _records(topic: str) -> list[tuple]:
    return [
        (bytes.fromhex(r["key"]), r["value"] and bytes.fromhex(r["value"])) for r in GOLDEN["topics"][topic]["records"]
    ]


def _per_key(records: list[tuple]) -> dict:
    by_key: dict = {}
    for key, value in records:
        by_key.setdefault(key, []).append(value)
    return by_key


@pytest.mark.parametrize("operator_form", OPERATOR_FORMS)
def test_flinks_orders_aggregated_here_give_the_records_flinks_upsert_sink_wrote(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path, operator_form
):
    orders, sales = new_topic(), new_topic()
    produce(bootstrap, orders, _records("orders"))
    # One record a micro-batch: each order's change reaches the aggregate alone, as in Flink (no mini-batch), so every
    # intermediate result Flink wrote is written here too.
    read = {"metadata.columns": "offset", "scan.max-records-per-batch": "1", "scan.startup.mode": "earliest-offset"}
    changes = (
        spark.readStream.format("upsert-kafka")
        .options(**options(orders, {"key.fields": "order_id", **read}))
        .option("schema", "order_id STRING, category STRING, price DOUBLE")
        .load()
    )
    table = normalized_changelog(changes, "order_id", operator_form=operator_form)
    query = (
        aggregate_changelog(table.drop("offset"), "category", operator_form=operator_form, **AGGREGATES)
        .writeStream.format("upsert-kafka")
        .options(**options(sales, {"key.fields": "category"}))
        .option("checkpointLocation", str(tmp_path))
        # before pyspark 4.2, AvailableNow runs a capped Python source as one micro-batch: there, a trigger that goes on
        .trigger(**({"availableNow": True} if ADMISSION_CONTROL else {"processingTime": "0 seconds"}))
        .start()
    )
    if ADMISSION_CONTROL:
        finish_available_now(query, timeout_s=600)
    else:
        finish_reading(query, len(_records("orders")), timeout_s=600)
    got, flinks = (
        _per_key([(m.key(), m.value()) for m in consume_messages(bootstrap, sales)]),
        _per_key(_records("shop_sales")),
    )
    # Keys are independent (a micro-batch's groups are written by several tasks). Each key's records are Flink's, byte
    # for byte and in order, its tombstones included, but for one kind of record: Flink's GroupAggregate takes an
    # update's -U and +U one at a time and writes the group without the old row before the group with the new one
    # (books, when order o1's price changes: offsets 3 and 11, the second time a tombstone, o1 being alone there);
    # here the pair is one change of the group, written as its new value (as Flink's mini-batch aggregation does).
    assert got.keys() == flinks.keys()
    for key, records in got.items():
        assert _in_order_within(records, flinks[key]), key
        assert records[-1] == flinks[key][-1], key  # the same table at the end
    assert None in got[b'{"category":"music"}']  # music emptied by deletes (orders o4, o5), then refilled
    assert len(flinks[b'{"category":"books"}']) - len(got[b'{"category":"books"}']) == 2  # o1's two updates


def _in_order_within(records: list, others: list) -> bool:
    """Whether `records` are `others` with some left out (a subsequence)."""
    rest = iter(others)
    return all(any(r == o for o in rest) for r in records)


def test_a_group_that_empties_is_deleted_and_a_stream_of_upserts_is_refused(spark, rocksdb, tmp_path):
    rows = [("a", 1.0, "insert"), ("a", 1.0, "delete"), ("b", None, "insert")]
    changelog = spark.createDataFrame(rows, "g STRING, x DOUBLE, _change_type STRING")
    out = aggregate_changelog(changelog, "g", n="COUNT(*)", nx="COUNT(x)", s="SUM(x)", hi="MAX(x)").collect()
    # one batch: group a came and went (nothing to say); b holds one row whose x is null
    assert [tuple(r) for r in out] == [("b", 1, 0, None, None, "insert")]
    upserts = spark.createDataFrame([("a", 1.0, "upsert")], "g STRING, x DOUBLE, _change_type STRING")
    with pytest.raises(Exception, match=r"needs normalized_changelog\(...\) first"):
        aggregate_changelog(upserts, "g", n="COUNT(*)").collect()


def test_every_result_type_is_sparks_own_aggregations(spark, rocksdb):
    """Each function over each kind of column gives Spark's own groupBy().agg(...) of the rows held, type and value:
    decimals exact, timestamps, dates, strings, booleans, small integers, FLOAT, nulls and a group of only nulls."""
    schema = "g STRING, d DECIMAL(10,2), t TIMESTAMP, dt DATE, s STRING, b BOOLEAN, i INT, f FLOAT, l BIGINT"
    rows = [
        ("a", "1.25", "2026-03-08 01:59:59.999999", "2026-03-08", "é", True, 7, -0.5, 2**62),
        ("a", "-3.10", "1969-12-31 23:59:59.5", "1900-01-01", "Z", False, -7, 1.5, 2**62 - 1),
        ("a", None, None, None, None, None, None, None, None),
        ("b", None, None, None, None, None, None, None, None),
        ("c", "99999999.99", "2038-01-19 03:14:08", "9999-12-31", "", False, 2**31 - 1, float("inf"), -(2**63)),
    ]
    held = spark.createDataFrame(
        [(g, *[None if v is None else str(v) for v in rest]) for g, *rest in rows],
        ", ".join(f"{c.split()[0]} STRING" for c in schema.split(", ")),
    ).selectExpr(*[f"CAST({c.split()[0]} AS {c.split(' ', 1)[1]}) AS {c.split()[0]}" for c in schema.split(", ")])
    aggregates = {
        "sd": "SUM(d)", "ad": "AVG(d)", "xd": "MAX(d)", "nt": "MIN(t)", "xt": "MAX(t)", "xdt": "MAX(dt)",
        "ns": "MIN(s)", "xs": "MAX(s)", "xb": "MAX(b)", "nb": "MIN(b)", "ni": "MIN(i)", "si": "SUM(i)",
        "ai": "AVG(i)", "nf": "MIN(f)", "sf": "SUM(f)", "sl": "SUM(l)", "al": "AVG(l)", "cl": "COUNT(l)",
    }  # fmt: skip
    got = aggregate_changelog(held.selectExpr("*", "'insert' AS _change_type"), "g", **aggregates).drop("_change_type")
    sparks = held.groupBy("g").agg(*[F.expr(text).alias(name) for name, text in aggregates.items()])
    assert [(f.name, f.dataType) for f in got.schema] == [(f.name, f.dataType) for f in sparks.schema]
    assert sorted(got.collect()) == sorted(sparks.collect())


def test_min_and_max_follow_their_values_out_and_back_in(spark, rocksdb, tmp_path):
    """MIN / MAX over micro-batches: a retracted best value gives way to the next one held (NaN is Spark's greatest
    DOUBLE, and goes like any other), a value held twice stays until both go."""
    batches = [
        [("g", 1.0, "insert"), ("g", 3.0, "insert"), ("g", 3.0, "insert"), ("g", math.nan, "insert")],
        [("g", math.nan, "delete"), ("g", 3.0, "delete"), ("g", 1.0, "delete"), ("g", 2.0, "insert")],
        [("g", 3.0, "update_preimage"), ("g", 2.5, "update_postimage")],
    ]
    schema = "g STRING, x DOUBLE, _change_type STRING"
    source = tmp_path / "changes"
    source.mkdir()
    changes = spark.readStream.schema(schema).parquet(str(source))
    low_high = aggregate_changelog(changes, "g", lo="MIN(x)", hi="MAX(x)")
    seen = []
    for rows in batches:
        spark.createDataFrame(rows, schema).write.mode("append").parquet(str(source))
        seen.append(
            [(repr(lo), repr(hi), kind) for _, lo, hi, kind in run_available_now(low_high, str(tmp_path / "cp")).rows]
        )
    assert seen == [
        [("1.0", "nan", "insert")],
        [("1.0", "nan", "update_preimage"), ("2.0", "3.0", "update_postimage")],
        [("2.0", "3.0", "update_preimage"), ("2.0", "2.5", "update_postimage")],
    ]


class _PerGroupLayout(StatefulProcessor):
    """The state aggregate_changelog kept before its buckets: grouped by the group, its accumulators as JSON."""

    def init(self, handle) -> None:
        self._acc = handle.getValueState("accumulators", "acc STRING")

    def handleInputRows(self, key, rows, timerValues):
        self._acc.update(('{"rows": 1, "of": {"hi": {"best": 1.0}}, "log": {"logged": 1, "held": 1}}',))
        return iter(())

    def close(self) -> None:
        pass


class _BucketValueLayout(StatefulProcessor):
    """The layout before the entry per group: grouped by a BIGINT bucket, a bucket's groups one ValueState."""

    def init(self, handle) -> None:
        self._acc = handle.getValueState("accumulators", "groups BINARY")

    def handleInputRows(self, key, rows, timerValues):
        self._acc.update((b"groups",))
        return iter(())

    def close(self) -> None:
        pass


EARLIER_LAYOUTS = {
    "per group (a STRING group)": ("STRING", "g", _PerGroupLayout),
    "per group (a BIGINT group)": ("BIGINT", "g", _PerGroupLayout),
    "a value per bucket": ("STRING", "pmod(xxhash64(g), 1024)", _BucketValueLayout),
}


@pytest.mark.parametrize("layout", EARLIER_LAYOUTS)
def test_a_checkpoint_of_an_earlier_state_layout_is_refused(spark, rocksdb, tmp_path, layout):
    """A query that aggregated with an earlier layout cannot go on: its groups' results would be lost. The state
    variable keeps its name (`accumulators`) with another key schema (a MapState's entry is keyed by the state group
    and the group), so Spark refuses the checkpoint before any result."""
    group_type, grouping, processor = EARLIER_LAYOUTS[layout]
    schema = f"g {group_type}, x DOUBLE, _change_type STRING"
    source = tmp_path / "changes"
    source.mkdir()
    changes = spark.readStream.schema(schema).parquet(str(source))
    spark.createDataFrame([("1", 1.0, "insert")], "g STRING, x DOUBLE, _change_type STRING").selectExpr(
        f"CAST(g AS {group_type}) AS g", "x", "_change_type"
    ).write.mode("append").parquet(str(source))
    old = (
        changes.selectExpr(f"{grouping} AS uk_key0")
        .groupBy("uk_key0")
        .transformWithStateInPandas(processor(), "uk_group STRING, uk_result STRING, uk_kind STRING", "Append", "None")
    )
    run_available_now(old, str(tmp_path / "cp"))
    spark.createDataFrame([(2, 2.0, "insert")], "g INT, x DOUBLE, _change_type STRING").selectExpr(
        f"CAST(g AS {group_type}) AS g", "x", "_change_type"
    ).write.mode("append").parquet(str(source))
    with pytest.raises(StreamingQueryException, match="STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"):
        # in the form it was written in (the default, pandas): its state refused
        aggregated = aggregate_changelog(changes, "g", hi="MAX(x)")
        run_available_now(aggregated, str(tmp_path / "cp"))


def test_aggregates_are_checked_before_a_query_starts(spark, rocksdb):
    df = spark.createDataFrame([("a", "x", "insert")], "g STRING, s STRING, _change_type STRING")
    with pytest.raises(SchemaError, match=r"MEDIAN\(s\)' is not one of COUNT"):
        aggregate_changelog(df, "g", m="MEDIAN(s)")
    with pytest.raises(SchemaError, match="SUM of a string column"):
        aggregate_changelog(df, "g", m="SUM(s)")
    with pytest.raises(SchemaError, match="only COUNT takes"):
        aggregate_changelog(df, "g", m="MAX(*)")
    with pytest.raises(SchemaError, match="its own name"):
        aggregate_changelog(df, "g", g="COUNT(*)")
