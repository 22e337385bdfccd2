"""temporal_join on a real broker, against a real Flink: the orders and currency rates of Flink's documented event-time
temporal join, as Flink 2.2.1 wrote them (tests/formats/golden/flink/tables_temporal_join.json), joined here give the
rows Flink's TemporalJoin emitted, LEFT and inner; late rows, deletes, a restart from the checkpoint, the latest-value
join, a checkpoint of an earlier state layout refused, and the errors."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import orjson
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark_upsert_kafka import SchemaError
from pyspark_upsert_kafka.tables.normalize import normalized_changelog
from pyspark_upsert_kafka.tables.temporal_join import temporal_join

from tests.support.kafka_io import produce
from tests.support.read_helpers import as_utc, collect_until, run_available_now
from tests.tables.forms import OPERATOR_FORMS

GOLDEN = json.loads((Path(__file__).parents[1] / "formats/golden/flink/tables_temporal_join.json").read_text())
KEEP = {"retention.ms": "-1"}  # the records' timestamps are in 2024: kept past the default retention
COLUMNS = ("order_id", "price", "currency", "conversion_rate", "order_time")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
END = 1704153600000  # 2024-01-02T00:00Z: after every record of the golden file


def _ms(text: str) -> int:
    return int((dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc) - EPOCH).total_seconds() * 1000)


def _orders(spark, options, topic: str):
    """Flink's orders topic has no keys (a `kafka` table): the same values, keyed by order_id for this source."""
    read = {"key.fields": "order_id", "scan.startup.mode": "earliest-offset", "metadata.columns": "offset"}
    return (
        spark.readStream.format("upsert-kafka")
        .options(**options(topic, read))
        .option("schema", "order_id STRING, price DECIMAL(32, 2), currency STRING, order_time TIMESTAMP_NTZ")
        .load()
        .select("order_id", "price", "currency", as_utc(F.col("order_time")).alias("order_time"))
        .withWatermark("order_time", "0 seconds")  # Flink's WATERMARK FOR order_time AS order_time
    )


def _rates(spark, options, topic: str):
    """Flink's currency_rates table: update_time is the record's timestamp, the rowtime."""
    read = {"key.fields": "currency", "metadata.columns": "update_time=timestamp,offset"}
    return (
        spark.readStream.format("upsert-kafka")
        .options(**options(topic, read | {"scan.startup.mode": "earliest-offset"}))
        .option("schema", "currency STRING, conversion_rate DECIMAL(32, 2)")
        .load()
        .withWatermark("update_time", "0 seconds")
    )


def _order(order_id: str, currency: str | None, at_ms: int) -> tuple:
    when = dt.datetime.fromtimestamp(at_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    value = {"order_id": order_id, "price": 1, "currency": currency, "order_time": when}
    return (orjson.dumps({"order_id": order_id}), orjson.dumps(value), None, at_ms)


def _rate(currency: str, rate: str | None, at_ms: int) -> tuple:
    value = None if rate is None else b'{"currency":"%s","conversion_rate":%s}' % (currency.encode(), rate.encode())
    return (orjson.dumps({"currency": currency}), value, None, at_ms)


def _flink_topics(bootstrap, new_topic) -> tuple[str, str]:
    """Both topics with Flink's records (the rates as written, the orders keyed), then a rate and an order of another
    currency a day later: they move both watermarks past every order, as the end of Flink's bounded input did."""
    orders, rates = new_topic(1, **KEEP), new_topic(1, **KEEP)
    flinks = GOLDEN["topics"]
    produce(bootstrap, rates, [
        (bytes.fromhex(r["key"]), r["value"] and bytes.fromhex(r["value"]), None, r["timestamp"])
        for r in flinks["currency_rates"]["records"]
    ] + [_rate("ZZZ", "1", END)])  # fmt: skip
    keyed = []
    for r in flinks["orders"]["records"]:
        value = bytes.fromhex(r["value"])
        keyed.append((orjson.dumps({"order_id": orjson.loads(value)["order_id"]}), value, None, r["timestamp"]))
    produce(bootstrap, orders, [*keyed, _order("o_end", "ZZZ", END + 3_600_000)])
    return orders, rates


def _flinks_rows(query: str) -> dict:
    """Flink's emitted rows of a query, per currency in emission order (Flink's DECIMAL is text)."""
    (rows,) = [q["rows"] for q in GOLDEN["queries"] if q["name"] == query]
    by_key: dict = {}
    for change in rows:
        assert change["kind"] == "+I"
        row = change["row"]
        rate = row["conversion_rate"] and decimal.Decimal(row["conversion_rate"])
        at = dt.datetime.fromisoformat(row["order_time"]).replace(tzinfo=dt.timezone.utc)
        by_key.setdefault(row["currency"], []).append((row["order_id"], decimal.Decimal(row["price"]), rate, at))
    return by_key


def _per_key(rows: list[tuple]) -> dict:
    by_key: dict = {}
    for order_id, price, currency, rate, at in rows:
        by_key.setdefault(currency, []).append((order_id, price, rate, at.replace(tzinfo=dt.timezone.utc)))
    return by_key


@pytest.mark.parametrize("operator_form", OPERATOR_FORMS)
@pytest.mark.parametrize("how", ["left", "inner"])
def test_flinks_orders_and_rates_join_as_flinks_temporal_join(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path, how, operator_form
):
    """Flink's plan reads currency_rates through ChangelogNormalize, and so does this one (normalized_changelog): each
    order gets the rate its currency had at the order's time, o_006 (GBP before its first rate) and o_007 (CHF: no
    rate) none. Flink's quirk is reproduced, not repaired: order o_005 (JPY at 10:32) gets no rate though JPY's 0.01
    held from 09:30 until its tombstone at 12:30, because ChangelogNormalize turns the tombstone into a delete carrying
    the deleted row, its update_time 09:30 included, and the join keeps one version per key and time: the delete
    replaces the 09:30 version, so JPY counts as deleted from 09:30 on (o_009 at 12:45 gets none either). In every
    operator form."""
    orders, rates = _flink_topics(bootstrap, new_topic)
    table = normalized_changelog(_rates(spark, options, rates), "currency", operator_form=operator_form)
    joined = temporal_join(
        _orders(spark, options, orders),
        table,
        "currency",
        stream_time="order_time",
        table_time="update_time",
        how=how,
        operator_form=operator_form,
    ).select(*COLUMNS)
    expected = _flinks_rows(f"{how}_join")
    assert _per_key(collect_until(joined, tmp_path, sum(map(len, expected.values())))) == expected


def test_without_normalizing_a_tombstone_deletes_from_its_own_time(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path
):
    """The rates read as they are (no normalized_changelog): a tombstone is a delete at the record's own timestamp, so
    o_005 (JPY at 10:32) gets 0.01, the rate valid then by the records' timestamps (the golden file's note), where
    Flink gives null; every other row is Flink's."""
    orders, rates = _flink_topics(bootstrap, new_topic)
    joined = temporal_join(
        _orders(spark, options, orders), _rates(spark, options, rates), "currency",
        stream_time="order_time", table_time="update_time",
    ).select(*COLUMNS)  # fmt: skip
    expected = _flinks_rows("left_join")
    jpy = [(o, p, decimal.Decimal("0.01") if o == "o_005" else r, t) for o, p, r, t in expected["JPY"]]
    assert _per_key(collect_until(joined, tmp_path, 12)) == expected | {"JPY": jpy}


H = 3_600_000
T0 = 1704067200000  # 2024-01-01T00:00Z


def test_late_rows_deletes_and_a_restart_from_the_checkpoint(spark, rocksdb, new_topic, options, bootstrap, tmp_path):
    """Run 1: rates of A at 01:00 (1) and 03:00 (3), B at 01:00 then deleted at 02:00; orders at 02:30 (A, B) wait for
    the watermark (the least of both sides'), which 05:00 rows of C move past them: A's gets 1, B's none (deleted).
    Run 2, from the checkpoint (the watermark, 05:00, with it): late orders of A (behind the watermark) are not
    dropped, as in Flink: they are joined at once with the versions still held. A's version of 01:00 went once the
    watermark passed 03:00 (only the last version not after the watermark stays), so the order at 00:30 gets none
    (before 01:00 there was no rate anyway) and the one at 04:00 gets 3; a 06:00 order of C waits for the watermark."""
    orders, rates = new_topic(1, **KEEP), new_topic(1, **KEEP)
    produce(bootstrap, rates, [
        _rate("A", "1", T0 + H), _rate("B", "7", T0 + H), _rate("B", None, T0 + 2 * H), _rate("A", "3", T0 + 3 * H),
        _rate("C", "5", T0 + 5 * H),
    ])  # fmt: skip
    produce(bootstrap, orders, [_order("a1", "A", T0 + 2 * H + H // 2), _order("b1", "B", T0 + 2 * H + H // 2),
                                _order("c1", "C", T0 + 5 * H)])  # fmt: skip

    def joined():
        return temporal_join(
            _orders(spark, options, orders), _rates(spark, options, rates), "currency",
            stream_time="order_time", table_time="update_time",
        ).select("order_id", "conversion_rate")  # fmt: skip

    first = collect_until(joined(), tmp_path, 3)
    assert sorted(first) == [("a1", decimal.Decimal("1.00")), ("b1", None), ("c1", decimal.Decimal("5.00"))]
    produce(bootstrap, orders, [_order("a0", "A", T0 + H // 2), _order("a4", "A", T0 + 4 * H)])
    produce(bootstrap, rates, [_rate("C", "6", T0 + 6 * H)])
    produce(bootstrap, orders, [_order("c6", "C", T0 + 6 * H)])
    second = collect_until(joined(), tmp_path, 3)
    assert sorted(second) == [("a0", None), ("a4", decimal.Decimal("3.00")), ("c6", decimal.Decimal("6.00"))]


def test_the_latest_value_join_looks_up_the_current_row(spark, rocksdb, new_topic, options, bootstrap, tmp_path):
    """stream_time=None: each order gets its currency's latest rate when it is read (what Flink refuses on a versioned
    table: 'Processing-time temporal join is not supported yet.'); a micro-batch's rates apply before its orders; a
    deleted rate, an unknown currency and a null one are no match."""
    (error,) = [q["error"] for q in GOLDEN["queries"] if q["name"] == "processing_time_left_join"]
    assert "Processing-time temporal join is not supported yet." in error
    orders, rates = new_topic(1, **KEEP), new_topic(1, **KEEP)
    produce(bootstrap, rates, [_rate("A", "1", T0), _rate("A", "2", T0 + H), _rate("B", "7", T0), _rate("B", None, T0)])
    produce(
        bootstrap, orders, [_order("a", "A", T0), _order("b", "B", T0), _order("x", "X", T0), _order("n", None, T0)]
    )
    joined = temporal_join(_orders(spark, options, orders), _rates(spark, options, rates), "currency", stream_time=None)
    rows = collect_until(joined.select("order_id", "conversion_rate"), tmp_path, 4)
    assert sorted(rows) == [("a", decimal.Decimal("2.00")), ("b", None), ("n", None), ("x", None)]  # n: no currency


def test_the_join_says_what_to_change_before_a_query_starts(spark, rocksdb, new_topic, options):
    orders, rates = _orders(spark, options, new_topic()), _rates(spark, options, new_topic())
    with pytest.raises(SchemaError, match="how='right'; use 'left' or 'inner'"):
        temporal_join(orders, rates, "currency", stream_time="order_time", table_time="update_time", how="right")
    with pytest.raises(SchemaError, match="give table_time"):
        temporal_join(orders, rates, "currency", stream_time="order_time")
    with pytest.raises(SchemaError, match="stream_time 'currency' is string; it must be a TIMESTAMP"):
        temporal_join(orders, rates, "currency", stream_time="currency", table_time="update_time")
    plain = spark.readStream.format("upsert-kafka").options(**options(new_topic(), {"key.fields": "currency"}))
    plain = plain.option("schema", "currency STRING, r DOUBLE").option("metadata.columns", "t=timestamp,offset").load()
    with pytest.raises(SchemaError, match=r"the table side has no watermark: add .withWatermark\('t'"):
        temporal_join(orders, plain, "currency", stream_time="order_time", table_time="t")
    with pytest.raises(SchemaError, match=r"columns \['price'\] are on both sides"):
        temporal_join(orders, rates.withColumn("price", F.lit(1)), "currency", stream_time="order_time",
                      table_time="update_time")  # fmt: skip


class _PerKeyLayout(StatefulProcessor):
    """The first state layout of temporal_join: grouped by the key, a MapState `versions`."""

    def init(self, handle) -> None:
        self._versions = handle.getMapState("versions", "time BIGINT", "row STRING")

    def handleInputRows(self, key, rows, timerValues):
        for _ in rows:
            self._versions.updateValue((0,), ("{}",))
        return iter(())

    def close(self) -> None:
        pass


class _BucketValueLayout(StatefulProcessor):
    """The second: grouped by a BIGINT bucket, a bucket's versions and waiting rows one ValueState `versions`."""

    def init(self, handle) -> None:
        self._versions = handle.getValueState("versions", "state BINARY")

    def handleInputRows(self, key, rows, timerValues):
        for _ in rows:
            self._versions.update((b"state",))
        return iter(())

    def close(self) -> None:
        pass


EARLIER_LAYOUTS = {
    "per key": ("currency", _PerKeyLayout),
    "a value per bucket": ("pmod(xxhash64(currency), 1024)", _BucketValueLayout),
}


@pytest.mark.parametrize("layout", EARLIER_LAYOUTS)
def test_a_checkpoint_of_an_earlier_state_layout_is_refused(spark, rocksdb, tmp_path, layout):
    """A query that joined with an earlier layout cannot go on with this one: its versions would not be found. The
    state variable keeps its name (`versions`) with another key schema (a MapState's entry is keyed by the state
    group and the key), so Spark refuses the checkpoint at once."""
    grouping, processor = EARLIER_LAYOUTS[layout]
    schemas = {
        "stream": "currency STRING, n INT",
        "table": "currency STRING, rate DOUBLE, _change_type STRING, offset BIGINT",
    }
    rows = {"stream": [("A", 1)], "table": [("A", 1.5, "insert", 0)]}

    def append() -> None:
        for side, schema in schemas.items():
            spark.createDataFrame(rows[side], schema).write.mode("append").parquet(str(tmp_path / side))

    append()
    stream, table = (spark.readStream.schema(schemas[s]).parquet(str(tmp_path / s)) for s in schemas)
    old = (
        stream.selectExpr(f"{grouping} AS uk_key0")
        .unionByName(table.selectExpr(f"{grouping} AS uk_key0"))
        .groupBy("uk_key0")
        .transformWithStateInPandas(processor(), "uk_left STRING, uk_right STRING", "Append", "None")
    )
    run_available_now(old, str(tmp_path / "cp"))
    append()
    refused = r"STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE|STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE"
    with pytest.raises(StreamingQueryException, match=refused):
        # in the form it was written in (the default, pandas): its state refused
        joined = temporal_join(stream, table, "currency", stream_time=None)
        run_available_now(joined, str(tmp_path / "cp"))
