"""Flink's CREATE TABLE statements as they are (flink_table): statements copied verbatim from Flink's Kafka, Upsert
Kafka and CREATE statements documentation pages, the Flink 1.13 release notes and Alibaba's Realtime Compute docs,
read and written through the real broker. (tests/unit/test_flink_ddl_parsing.py: what statements become and what is
refused, without the broker.)"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampNTZType, TimestampType
from pyspark_upsert_kafka import OptionError, flink_table
from pyspark_upsert_kafka.options.ddl import ddl_text as ddl_of

from tests.support.kafka_io import consume_all
from tests.support.read_helpers import finish_available_now, wait_for

# Flink's Orders (a TIMESTAMP(3) rowtime) and a column-level key: their sources are named there.
from tests.unit.test_flink_ddl_parsing import ORDERS, T_NICK_CNT

# Flink 1.13's upsert-kafka page: the aggregation sink (with COMMENTs in Chinese and backticks).
SHOP_SALES_NUM = """
CREATE TABLE shop_sales_num (
  `category` STRING COMMENT '分类',
  `num` BIGINT COMMENT '订单数量',
  `price` BIGINT COMMENT '订单金额',
  PRIMARY KEY(`category`) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'shop-sales-num',
  'properties.bootstrap.servers' = 'localhost:9092',
  'key.format' = 'json',
  'value.format'='json'
)
"""

# Flink 1.13's release notes: the upsert-kafka table with a metadata column and EXCEPT_KEY (its `...` stands for
# the connection options).
KAFKA_TABLE = """
CREATE TABLE KafkaTable (
  `ts` TIMESTAMP(3) METADATA FROM 'timestamp',
  `user_id` BIGINT,
  `item_id` BIGINT,
  `behavior` STRING,
  PRIMARY KEY (`user_id`) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  ...

  'key.format' = 'json',
  'key.json.ignore-parse-errors' = 'true',

  'value.format' = 'json',
  'value.json.fail-on-missing-field' = 'false',
  'value.fields-include' = 'EXCEPT_KEY'
)
"""

# Flink 1.13's release notes: avro-confluent with the registry's older option spellings (and the notes' own
# missing comma after 'topic').
USER_BEHAVIOR = """
CREATE TABLE user_behavior (
  user_id BIGINT,
  item_id BIGINT,
  category_id BIGINT,
  behavior STRING,
  ts TIMESTAMP(3)
) WITH (
  'connector' = 'kafka',
  'properties.bootstrap.servers' = 'localhost:9092',
  'topic' = 'user_behavior'
  'format' = 'avro-confluent',
  'avro-confluent.schema-registry.url' = 'http://localhost:8081',
  'avro-confluent.schema-registry.subject' = 'user_behavior'
)
"""

# The managed-Flink upsert-kafka page: a documented sink table, on one line.
PAGEVIEWS_PER_REGION = (
    "CREATE TABLE pageviews_per_region( user_region STRING, pv BIGINT, uv BIGINT, PRIMARY KEY(user_region) NOT "
    "ENFORCED )WITH( 'connector'='upsert-kafka', 'topic'='<yourTopicName>', 'properties.bootstrap.servers'='...', "
    "'key.format'='avro', 'value.format'='avro' );"
)

# Flink's Kafka page: format metadata, virtual metadata columns, and a watermark.
WITH_WATERMARK = """
CREATE TABLE events (
  `event_time` TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  `partition_id` BIGINT METADATA FROM 'partition' VIRTUAL,  -- from Kafka connector
  `offset` BIGINT METADATA VIRTUAL,
  `user_id` BIGINT NOT NULL,
  `behavior` STRING,
  PRIMARY KEY (`user_id`) NOT ENFORCED,
  WATERMARK FOR `event_time` AS `event_time` - INTERVAL '5' SECOND
) COMMENT 'user events' WITH (
  'connector' = 'upsert-kafka', 'topic' = 'events', 'properties.bootstrap.servers' = 'localhost:9092',
  'key.format' = 'json', 'value.format' = 'json'
)
"""


# Alibaba Realtime Compute's upsert-kafka page: its source table, a watermark on a TIMESTAMP (precision 6), one line.
PAGEVIEWS = (
    "CREATE TABLE pageviews( user_id BIGINT, page_id BIGINT, viewtime TIMESTAMP, user_region STRING, WATERMARK FOR "
    "viewtime AS viewtime - INTERVAL '2' SECOND )WITH( 'connector'='kafka', 'topic'='<yourTopicName>', "
    "'properties.bootstrap.servers'='...', 'format'='json' );"
)


def _at(bootstrap: str, topic: str) -> dict[str, str]:
    return {"topic": topic, "properties.bootstrap.servers": bootstrap}


def test_the_aggregation_sink_is_written_and_read_as_in_flink(spark, new_topic, bootstrap):
    topic = new_topic()
    table = flink_table(SHOP_SALES_NUM, _at(bootstrap, topic))
    assert table.name == "shop_sales_num" and table.options["key.fields"] == "category"
    assert table.comments == {"category": "分类", "num": "订单数量", "price": "订单金额"}
    sales = spark.createDataFrame(
        [("books", 3, 50), ("toys", 1, 9), ("books", 4, 70)], "category STRING, num BIGINT, price BIGINT"
    )
    table.write(sales.limit(2)).mode("append").save()
    table.write(sales.filter("num = 4")).mode("append").save()  # an update of books
    assert sorted(map(tuple, table.read(spark).collect())) == [("books", 4, 70), ("toys", 1, 9)]
    keys = [k for _, _, k, _ in consume_all(bootstrap, topic)]
    assert sorted(keys) == [b'{"category":"books"}'] * 2 + [b'{"category":"toys"}'], "Flink's JSON key"

    spark.sql("DROP VIEW IF EXISTS shop_sales_num")
    table.create_view(spark)
    assert spark.sql("SELECT num FROM shop_sales_num WHERE category = 'books'").collect() == [(4,)]


def test_a_metadata_timestamp_and_except_key_values_round_trip(spark, new_topic, bootstrap):
    topic = new_topic()
    table = flink_table(KAFKA_TABLE, _at(bootstrap, topic))
    assert table.options["metadata.columns"] == "ts=timestamp"
    assert table.columns["ts"].dataType == TimestampNTZType(), "Flink's TIMESTAMP(3) has no time zone"
    at = dt.datetime(2026, 11, 25, 12, 30, 15, 250000)
    rows = spark.createDataFrame([(at, 1, 10, "click"), (at, 2, 20, "buy")], table.columns)
    table.write(rows).mode("append").save()
    values = sorted(json.loads(v)["item_id"] for _, _, _, v in consume_all(bootstrap, topic))
    assert values == [10, 20] and all(b"user_id" not in v for _, _, _, v in consume_all(bootstrap, topic)), "EXCEPT_KEY"
    assert sorted(map(tuple, table.read(spark).collect())) == [(at, 1, 10, "click"), (at, 2, 20, "buy")]


def test_a_kafka_table_without_a_primary_key_is_refused_until_given_one(spark, new_topic, bootstrap, registry_url):
    with pytest.raises(OptionError, match=r"table 'user_behavior' has no PRIMARY KEY .* declare its primary key"):
        flink_table(USER_BEHAVIOR)
    topic = new_topic()
    more = _at(bootstrap, topic) | {"key.fields": "user_id", "avro-confluent.schema-registry.url": registry_url}
    table = flink_table(USER_BEHAVIOR, more)
    assert table.options["avro-confluent.schema-registry.subject"] == "user_behavior"  # Flink's older spelling
    at = dt.datetime(2026, 1, 2, 3, 4, 5)
    table.write(spark.createDataFrame([(7, 70, 700, "view", at)], table.columns)).mode("append").save()
    assert table.read(spark).collect() == [(7, 70, 700, "view", at)]


def test_a_documented_avro_sink_table_round_trips(spark, new_topic, bootstrap):
    topic = new_topic()
    table = flink_table(PAGEVIEWS_PER_REGION, _at(bootstrap, topic))
    assert table.options["schema"].startswith("`user_region` string NOT NULL"), "Flink: a key's columns are NOT NULL"
    written = spark.createDataFrame([("eu", 10, 3), ("us", 5, 2)], "user_region STRING, pv BIGINT, uv BIGINT")
    table.write(written).mode("append").save()  # from nullable columns: the key is written NOT NULL all the same
    read = table.read(spark)
    assert not read.schema["user_region"].nullable
    assert sorted(map(tuple, read.collect())) == [("eu", 10, 3), ("us", 5, 2)]


def test_a_column_level_primary_key_is_the_tables_key(spark, new_topic, bootstrap):
    topic = new_topic()
    table = flink_table(T_NICK_CNT, _at(bootstrap, topic))
    counts = spark.createDataFrame([("tiedan", 1), ("goudan", 2), ("tiedan", 3)], "nick STRING, user_cnt BIGINT")
    table.write(counts.coalesce(1)).mode("append").save()
    read = table.read(spark)
    assert read.schema["nick"] == StructField("nick", StringType(), False)
    assert sorted(map(tuple, read.collect())) == [("goudan", 2), ("tiedan", 3)], "the last count per nick"
    assert sorted({k for _, _, k, _ in consume_all(bootstrap, topic)}) == [b'{"nick":"goudan"}', b'{"nick":"tiedan"}']


def test_a_java_escaped_csv_delimiter_is_the_character_on_the_wire(spark, new_topic, bootstrap):
    # Built for the case around Huawei Cloud DLI's Kafka source page option `'csv.field-delimiter' = '\u0001'`.
    topic = new_topic()
    table = flink_table(
        "CREATE TABLE logs (id STRING PRIMARY KEY NOT ENFORCED, host STRING, line STRING) WITH ('connector' = "
        "'upsert-kafka', 'key.format' = 'raw', 'value.format' = 'csv', 'value.csv.field-delimiter' = '\\u0001')",
        _at(bootstrap, topic),
    )
    table.write(spark.createDataFrame([("1", "web-1", "GET /, 200")], table.columns)).mode("append").save()
    # Quoted as Flink 2.2.1's csv writes it: the text holds a space, below the quote character.
    assert [v for _, _, _, v in consume_all(bootstrap, topic)] == [b'1\x01web-1\x01"GET /, 200"']
    assert table.read(spark).collect() == [("1", "web-1", "GET /, 200")]


@contextmanager
def _session_time_zone(spark, zone: str) -> Iterator[None]:
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


# Wall clocks across 2026-03-08 02:00, the start of daylight-saving time in Los Angeles (02:00 to 02:59 do not exist
# there), and Flink's TUMBLE(rowtime, INTERVAL '10' SECOND) window_start for each: the wall clock's floor.
WALL_CLOCKS = [
    dt.datetime(2026, 3, 8, 1, 59, 58, 500000),
    dt.datetime(2026, 3, 8, 2, 0, 3, 250000),
    dt.datetime(2026, 3, 8, 2, 0, 9, 999000),
    dt.datetime(2026, 3, 8, 2, 0, 10),
    dt.datetime(2026, 3, 8, 2, 0, 17, 1000),
]
FLINK_WINDOWS = {
    dt.datetime(2026, 3, 8, 1, 59, 50): 1,
    dt.datetime(2026, 3, 8, 2, 0, 0): 2,
    dt.datetime(2026, 3, 8, 2, 0, 10): 2,
}


@pytest.mark.parametrize("zone", ["America/Los_Angeles", "Asia/Kolkata"])
@pytest.mark.parametrize(
    ("ddl", "options"),
    [
        pytest.param(ORDERS, {"connector": "kafka", "format": "json", "key.fields": "user"}, id="Orders-TIMESTAMP(3)"),
        pytest.param(PAGEVIEWS, {"key.fields": "user_id"}, id="pageviews-TIMESTAMP"),
    ],
)  # fmt: skip
def test_windows_on_a_wall_clock_rowtime_are_flinks_whatever_the_session_time_zone(
    spark, new_topic, bootstrap, tmp_path, ddl, options, zone
):
    topic = new_topic()
    table = flink_table(ddl, _at(bootstrap, topic) | options)
    rowtime = table.watermark[0]
    assert table.columns[rowtime].dataType == TimestampNTZType()
    rows = [[None] * len(table.columns) for _ in WALL_CLOCKS]
    for i, (row, wall_clock) in enumerate(zip(rows, WALL_CLOCKS, strict=True)):
        row[0], row[table.columns.names.index(rowtime)] = i, wall_clock
    table.write(spark.createDataFrame(rows, table.columns)).mode("append").save()

    windows: dict[dt.datetime, int] = {}

    def collect(df, _):
        for start, count in df.select(F.unix_micros("window.start"), "count").collect():
            windows[dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=start)] = count  # the instant's UTC clock

    with _session_time_zone(spark, zone):
        stream = table.read_stream(spark)
        assert stream.schema[rowtime].dataType == TimestampType(), "Spark watermarks a TIMESTAMP"
        counts = stream.groupBy(F.window(rowtime, "10 seconds")).count()
        query = (
            counts.writeStream.outputMode("update")
            .foreachBatch(collect)
            .option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(availableNow=True)
            .start()
        )
        finish_available_now(query)
    assert windows == FLINK_WINDOWS


def test_virtual_metadata_and_the_watermark_map_onto_the_stream(spark, new_topic, bootstrap, tmp_path):
    topic = new_topic()
    table = flink_table(WITH_WATERMARK, _at(bootstrap, topic))
    assert table.watermark == ("event_time", "5 seconds")
    assert table.virtual == {"partition_id", "offset"}
    assert table.columns["user_id"] == StructField("user_id", LongType(), False)
    assert table.options["metadata.columns"] == "event_time=timestamp,partition_id=partition,offset=offset"
    at = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.timezone.utc)
    written = spark.createDataFrame([(at, 0, 0, 1, "a"), (at, 0, 0, 2, "b")], table.columns)
    table.write(written).mode("append").save()  # the virtual columns are left out

    stream = table.read_stream(spark)
    assert [f.name for f in stream.schema.fields] == [*table.columns.names, "_change_type"]
    assert stream.schema["partition_id"].dataType == LongType()
    rows: list = []
    query = (
        stream.writeStream.foreachBatch(lambda df, _: rows.extend(map(tuple, df.collect())))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    finish_available_now(query)
    wait_for(lambda: len(rows) == 2, "both rows")
    assert sorted((r[3], r[4], r[1], r[5]) for r in rows) == [(1, "a", 0, "upsert"), (2, "b", 0, "upsert")]
    assert sorted(r[2] for r in rows) == [0, 1], "each record's offset"


@pytest.mark.parametrize(
    ("ddl", "error"),
    [
        ("CREATE TABLE t (a INT, b AS a + 1, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka')",
         r"'b' is a computed column, .* withColumn"),
        ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'filesystem')",
         r"'connector' = 'filesystem'"),
        ("CREATE TABLE t (a INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' MONTH, PRIMARY KEY (a) NOT "
         "ENFORCED) WITH ('connector' = 'upsert-kafka')", r"the watermark of 'ts' is not"),
        ("CREATE TABLE t (a MULTISET<INT>, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka')",
         r"type MULTISET has no Spark counterpart"),
        ("CREATE TABLE t (LIKE other) WITH ('connector' = 'upsert-kafka')", r"LIKE other takes columns"),
        ("CREATE TABLE t (a INT, PRIMARY KEY (a)) WITH ('connector' = 'upsert-kafka')", r"NOT ENFORCED"),
        ("CREATE TABLE t (a INT PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka')",
         r"a PRIMARY KEY after column 'a' names no columns.* \(at '\(a\) NOT ENFORCED"),
    ],
)  # fmt: skip
def test_what_has_no_meaning_here_is_refused_by_name(ddl, error):
    with pytest.raises(OptionError, match=error):
        flink_table(ddl)


def test_flinks_types_become_sparks():
    table = flink_table(
        "CREATE TABLE t (a VARCHAR(10), b CHAR(2), c DECIMAL(10, 3), d TIMESTAMP(3) WITH LOCAL TIME ZONE, "
        "e ARRAY<ROW<x INT, y STRING NOT NULL>>, f MAP<STRING, DOUBLE PRECISION>, g BYTES, h ROW(i TINYINT), "
        "PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka')"
    )
    assert table.columns.simpleString() == (
        "struct<a:string,b:string,c:decimal(10,3),d:timestamp,e:array<struct<x:int,y:string>>,"
        "f:map<string,double>,g:binary,h:struct<i:tinyint>>"
    )
    assert not table.columns["e"].dataType.elementType["y"].nullable
    assert StructType([table.columns["a"]]) == StructType([StructField("a", StringType(), False)]), "the key"
    assert table.options["flink.column-types"] == "d TIMESTAMP_LTZ(3)"


def test_a_changelog_stream_is_written_into_another_flink_table(spark, new_topic, bootstrap, tmp_path):
    source, target = new_topic(), new_topic()
    events = flink_table(WITH_WATERMARK, _at(bootstrap, source))
    at = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.timezone.utc)
    schema = f"{ddl_of(events.columns)}, _change_type STRING"
    for rows in ([(at, 0, 0, 1, "a", "upsert"), (at, 0, 0, 2, "b", "upsert")], [(at, 0, 0, 2, None, "delete")]):
        events.write(spark.createDataFrame(rows, schema)).mode("append").save()  # then a tombstone of 2
    latest = flink_table(
        "CREATE TABLE latest (user_id BIGINT, behavior STRING, PRIMARY KEY (user_id) NOT ENFORCED) "
        "WITH ('connector' = 'upsert-kafka', 'key.format' = 'json', 'value.format' = 'json')",
        _at(bootstrap, target),
    )
    changes = events.read_stream(spark).select("user_id", "behavior", "_change_type")
    query = latest.write_stream(changes).option("checkpointLocation", str(tmp_path / "cp"))
    finish_available_now(query.trigger(availableNow=True).start())
    assert latest.read(spark).collect() == [(1, "a")], "2 was deleted"
    assert [v for _, _, _, v in consume_all(bootstrap, target)][-1] is None, "as a tombstone"
