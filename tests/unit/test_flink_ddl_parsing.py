"""Flink's CREATE TABLE read by flink_table, on the driver alone (no broker, no SparkSession): the options a statement
becomes (the key's NOT NULL columns, timestamp precisions in 'flink.column-types', option values as Flink reads them)
and the statements refused by name. Each statement is copied from where the comment above it says, or says it is
built for the case."""

from __future__ import annotations

import pytest
from pyspark.sql.types import StringType, StructField, TimestampNTZType, TimestampType
from pyspark_upsert_kafka import OptionError, flink_table
from pyspark_upsert_kafka.options.ddl import parse_ddl

# Flink's CREATE statements page (docs/content/docs/dev/table/sql/create.md, section WATERMARK), with the page's
# `WITH ( . . . )` placeholder: the most common rowtime, a TIMESTAMP(3).
ORDERS = """
CREATE TABLE Orders (
    `user` BIGINT,
    product STRING,
    order_time TIMESTAMP(3),
    WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND
) WITH ( . . . );
"""

# A column-level primary key, lower case: a public Flink SQL course's upsert-kafka sink (51doit.com,
# cn.doitedu.flinksql.demos.Demo6_Exercise).
T_NICK_CNT = """
create table t_nick_cnt
 (
   nick string primary key not enforced,
   user_cnt bigint
 )
 WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'doit30-nick',
  'properties.bootstrap.servers' = 'doitedu:9092',
  'key.format' = 'json' ,
  'value.format' = 'json'
 )
"""

# Huawei Cloud DLI's Flink OpenSource SQL 1.15 Kafka source table page, example 1: a Java escape for the CSV
# delimiter, a quote character written as '''' (SQL's doubled quote), every metadata column, TIMESTAMP(3) metadata.
KAFKA_SOURCE = r"""
CREATE TABLE kafkaSource(
  `topic` String metadata virtual,
  `partition` int metadata virtual,
  `headers` MAP<STRING, BYTES> metadata virtual,
  `leader-epoch` INT metadata virtual,
  `offset` bigint metadata virtual,
  `timestamp-type` string metadata virtual,
  `event_time` TIMESTAMP(3) metadata FROM 'timestamp',
  `message` string
) WITH (
  'connector' = 'kafka',
  'topic' = 'SourceKafkaTopic',
  'properties.bootstrap.servers' = 'KafkaAddress1:KafkaPort,KafkaAddress2:KafkaPort',
  'properties.group.id' = 'GroupId',
  'scan.startup.mode' = 'latest-offset',
  'format' = 'csv',
  'csv.field-delimiter' = '\u0001',
  'csv.quote-character' = ''''
);
"""


def _keyed(columns: str, with_options: str = "") -> str:
    """A statement built for the case: `columns` in a keyed upsert-kafka table."""
    return f"CREATE TABLE t ({columns}) WITH ('connector' = 'upsert-kafka'{with_options})"


def test_a_timestamp3_rowtime_keeps_its_precision_for_the_formats():
    table = flink_table(ORDERS, {"connector": "kafka", "format": "json", "key.fields": "user"})
    assert table.watermark == ("order_time", "5 seconds")
    assert table.columns["order_time"].dataType == TimestampNTZType()
    assert table.options["flink.column-types"] == "order_time TIMESTAMP(3)"


def test_column_types_name_each_timestamp_whose_precision_is_not_sparks():
    table = flink_table(
        _keyed(
            "id INT, a TIMESTAMP(3), b TIMESTAMP, c TIMESTAMP(6), d TIMESTAMP_LTZ(3), e TIMESTAMP_LTZ, "
            "f TIMESTAMP(0) WITH LOCAL TIME ZONE, g TIMESTAMP WITHOUT TIME ZONE, "
            "r ROW<inner TIMESTAMP(3), deeper ROW(at TIMESTAMP_LTZ(1))>, `odd name` ROW<`x.y` TIMESTAMP(2)>, "
            "m TIMESTAMP(3) METADATA FROM 'timestamp', PRIMARY KEY (id) NOT ENFORCED"
        )
    )
    assert table.options["flink.column-types"] == (
        "a TIMESTAMP(3), d TIMESTAMP_LTZ(3), f TIMESTAMP_LTZ(0), r.inner TIMESTAMP(3), r.deeper.at TIMESTAMP_LTZ(1), "
        "`odd name`.`x.y` TIMESTAMP(2)"
    ), "Flink's TIMESTAMP and TIMESTAMP_LTZ are precision 6, Spark's; metadata columns are the connector's"
    assert [table.columns[c].dataType for c in "afg"] == [TimestampNTZType(), TimestampType(), TimestampNTZType()]


def test_metadata_timestamps_are_not_column_types():
    table = flink_table(KAFKA_SOURCE, {"key.fields": "message"})
    assert "flink.column-types" not in table.options
    assert table.options["metadata.columns"].endswith("event_time=timestamp")


@pytest.mark.parametrize(
    ("columns", "error"),
    [
        ("id INT, ts TIMESTAMP(9)", r"'ts' is TIMESTAMP\(9\): Spark's timestamps hold microseconds.*TIMESTAMP\(6\)"),
        ("id INT, r ROW<at TIMESTAMP_LTZ(7)>", r"'r.at' is TIMESTAMP_LTZ\(7\)"),
        ("id INT, a ARRAY<TIMESTAMP(3)>", r"'a' holds a TIMESTAMP\(3\) inside an ARRAY or MAP, which option "
         r"'flink.column-types' cannot address yet"),
        ("id INT, m MAP<STRING, ROW<at TIMESTAMP_LTZ(3)>>", r"'m.at' holds a TIMESTAMP_LTZ\(3\) inside an ARRAY"),
    ],
)  # fmt: skip
def test_timestamps_the_option_cannot_carry_are_refused_by_name(columns, error):
    with pytest.raises(OptionError, match=error):
        flink_table(_keyed(f"{columns}, PRIMARY KEY (id) NOT ENFORCED"))


def test_an_array_of_microsecond_timestamps_needs_no_column_type():
    table = flink_table(
        _keyed("id INT, a ARRAY<TIMESTAMP(6)>, m MAP<STRING, TIMESTAMP_LTZ>, PRIMARY KEY (id) NOT ENFORCED")
    )
    assert "flink.column-types" not in table.options


def test_a_column_level_primary_key_is_the_key_and_not_null():
    table = flink_table(T_NICK_CNT)
    assert table.options["key.fields"] == "nick"
    assert table.columns["nick"] == StructField("nick", StringType(), False), "Flink: a key's columns are NOT NULL"
    assert table.columns["user_cnt"].nullable
    assert parse_ddl(table.options["schema"])["nick"].nullable is False


@pytest.mark.parametrize(
    "column",
    [
        "id STRING NOT NULL PRIMARY KEY NOT ENFORCED",
        "id STRING CONSTRAINT pk PRIMARY KEY NOT ENFORCED COMMENT 'the key'",
        "`id` STRING NULL constraint `pk` primary key not enforced",
    ],
)  # built for the case: the forms of Flink's <column_constraint> (create.md's grammar)
def test_each_column_constraint_form_is_the_key(column):
    table = flink_table(_keyed(f"{column}, v BIGINT"))
    assert table.options["key.fields"] == "id" and not table.columns["id"].nullable


def test_a_table_level_key_makes_its_columns_not_null_in_the_schema_option():
    table = flink_table(_keyed("a STRING, b INT, c BIGINT, PRIMARY KEY (b, a) NOT ENFORCED"))
    assert table.options["schema"] == "`a` string NOT NULL, `b` int NOT NULL, `c` bigint"
    assert table.options["key.fields"] == "b;a"


@pytest.mark.parametrize(
    ("columns", "error"),
    [
        ("a STRING PRIMARY KEY NOT ENFORCED, b INT PRIMARY KEY NOT ENFORCED",
         r"a second PRIMARY KEY: a Flink table has one primary key; name all its columns in one PRIMARY KEY \(a, b\)"
         r".*at 'PRIMARY KEY NOT ENFORCED\)"),
        ("a STRING PRIMARY KEY NOT ENFORCED, b INT, PRIMARY KEY (a, b) NOT ENFORCED", r"a second PRIMARY KEY"),
        ("a STRING PRIMARY KEY (a) NOT ENFORCED", r"a PRIMARY KEY after column 'a' names no columns"),
        ("a STRING PRIMARY KEY", r"Flink takes only PRIMARY KEY \.\.\. NOT ENFORCED"),
        ("a STRING, PRIMARY KEY (b) NOT ENFORCED", r"the PRIMARY KEY of table 't' names 'b', which is no column"),
    ],
)  # fmt: skip
def test_keys_flink_would_refuse_are_refused_by_name(columns, error):
    with pytest.raises(OptionError, match=error):
        flink_table(_keyed(columns))


def test_the_csv_delimiter_is_unescaped_as_flink_unescapes_it():
    table = flink_table(KAFKA_SOURCE, {"key.fields": "message"})
    assert table.options["csv.field-delimiter"] == "\x01", "Flink's CsvFormatFactory: StringEscapeUtils.unescapeJava"
    assert table.options["csv.quote-character"] == "'", "SQL's '''' is one quote"


@pytest.mark.parametrize(
    ("written", "character"),
    [
        (r"'\t'", "\t"),  # Flink's CSV page: "'\t' represents the tab character"
        (r"U&'\0001'", "\x01"),  # Flink's CSV page: "'csv.field-delimiter' = U&'\0001' represents the 0x01 character"
        (r"u&'!0009' UESCAPE '!'", "\t"),
        (r"'\001'", "\x01"),  # commons-lang3's OctalUnescaper
        (r"'\uu+0009'", "\t"),  # its UnicodeUnescaper: more u's and a +
        (r"'\|'", "|"),  # a backslash before another character is dropped
        (r"'\\'", "\\"),
        ("';'", ";"),
    ],
)  # built for the case, with the values Flink's CSV format page and commons-lang3's unescaper name
def test_each_escape_flink_reads_in_the_field_delimiter(written, character):
    for option in ("key.csv.field-delimiter", "value.csv.field-delimiter"):
        table = flink_table(_keyed("a STRING, PRIMARY KEY (a) NOT ENFORCED", f", '{option}' = {written}"))
        assert table.options[option] == character


def test_only_the_field_delimiter_is_unescaped():
    # Hive's null literal \N, a common csv.null-literal: Flink passes it as the two characters.
    table = flink_table(
        _keyed("a STRING, PRIMARY KEY (a) NOT ENFORCED", r", 'value.format' = 'csv', 'value.csv.null-literal' = '\N'")
    )
    assert table.options["value.csv.null-literal"] == "\\N"


@pytest.mark.parametrize(
    ("written", "error"),
    [
        (r"'\u00g1'", r"option 'csv.field-delimiter' = '\\u00g1': Flink reads Java escapes in it, and '\\u00g1' is "
         r"not \\u and 4 hex digits"),
        (r"'\u01'", r"'\\u01' is not \\u and 4 hex digits"),
        (r"U&'\01'", r"\\01' in a U&'...' string is not \\ and 4 hex digits"),
    ],
)  # fmt: skip
def test_malformed_escapes_are_refused_by_name(written, error):
    with pytest.raises(OptionError, match=error):
        flink_table(_keyed("a STRING, PRIMARY KEY (a) NOT ENFORCED", f", 'csv.field-delimiter' = {written}"))


# Flink's CREATE statements page (create.md), section LIKE: LIKE after WITH (...), the column list holding only the
# watermark; then the same with like options and the page's `...` placeholder.
ORDERS_WITH_WATERMARK = """
CREATE TABLE Orders_with_watermark (
    -- Add watermark definition
    WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND
) WITH (
    -- Overwrite the startup-mode
    'scan.startup.mode' = 'latest-offset'
)
LIKE Orders;
"""
ORDERS_IN_KAFKA = """
CREATE TABLE Orders_in_kafka (
    -- Add watermark definition
    WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND
) WITH (
    'connector' = 'kafka',
    ...
)
LIKE Orders_in_file (
    -- Exclude everything besides the computed columns which we need to generate the watermark for.
    -- We do not want to have the partitions or filesystem options as those do not apply to kafka.
    EXCLUDING ALL
    INCLUDING GENERATED
);
"""
# create.md, sections AS select_statement and [CREATE OR] REPLACE TABLE.
MY_CTAS_TABLE = """
CREATE TABLE my_ctas_table
WITH (
    'connector' = 'kafka',
    ...
)
AS SELECT id, name, age FROM source_table WHERE mod(id, 10) = 0;
"""
MY_RTAS_TABLE = """
REPLACE TABLE my_rtas_table
WITH (
    'connector' = 'kafka',
    ...
)
AS SELECT id, name, age FROM source_table WHERE mod(id, 10) = 0;
"""
# create.md, Computed Columns (its `...` placeholder after a missing comma, as on the page).
MY_TABLE_COMPUTED = """
CREATE TABLE MyTable (
  `user_id` BIGINT,
  `price` DOUBLE,
  `quantity` DOUBLE,
  `cost` AS price * quantity  -- evaluate expression and supply the result to queries
) WITH (
  'connector' = 'kafka'
  ...
);
"""
CTAS_FIX = r"create the table with its columns .* then write the query's DataFrame with .*\.write\(df\)"


@pytest.mark.parametrize(
    ("ddl", "error"),
    [
        (ORDERS_WITH_WATERMARK, r"LIKE Orders takes columns and options from another Flink table's definition, which "
         r"Spark does not have: write the whole table in one statement .* without LIKE \(at 'LIKE Orders;'\)"),
        (ORDERS_IN_KAFKA, r"LIKE Orders_in_file takes columns .* \(at 'LIKE Orders_in_file \( -- Exclude"),
        (MY_CTAS_TABLE, rf"CREATE TABLE \.\.\. AS SELECT fills the table with a query's rows.*{CTAS_FIX}"),
        (MY_RTAS_TABLE, rf"REPLACE TABLE \.\.\. AS SELECT fills .*{CTAS_FIX}"),
        ("CREATE OR REPLACE TABLE t WITH ('connector' = 'kafka') AS SELECT a || b AS c FROM s",
         r"REPLACE TABLE \.\.\. AS SELECT"),
        (MY_TABLE_COMPUTED, r"'cost' is a computed column, which this connector cannot compute: .* withColumn"),
        # built for the case: expressions with characters no Flink type or option holds
        (_keyed("id BIGINT, first STRING, last STRING, full_name AS first || ' ' || last"),
         r"'full_name' is a computed column"),
        (_keyed("id BIGINT, pct AS id % 100 <> 0 AND id != 3, ts AS TO_TIMESTAMP(FROM_UNIXTIME(id / 1000))"),
         r"'pct' is a computed column"),
        # create.md: "a processing time attribute can be defined easily via `proc AS PROCTIME()`"
        (_keyed("id BIGINT, proc AS PROCTIME()"),
         r"'proc' AS PROCTIME\(\) is Flink's processing time, which Spark has as current_timestamp\(\): leave the "
         r"column out and add it with withColumn\('proc', F.current_timestamp\(\)\)"),
    ],
)  # fmt: skip
def test_statements_that_take_their_columns_elsewhere_are_refused_by_name(ddl, error):
    with pytest.raises(OptionError, match=error):
        flink_table(ddl)


def test_an_unclosed_string_is_named():
    with pytest.raises(OptionError, match=r"a quoted string is not closed"):
        flink_table("CREATE TABLE t (a STRING, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'kafka)")


# A `kafka` table with a changelog value format, as Flink's debezium-json page declares one (a primary key) with its
# key format's columns (key.fields): built for the case, the shape of tests/formats/golden/flink/debezium_json.json.
def _kafka_table(key_fields: str) -> str:
    return f"""
CREATE TABLE products (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = 'products', 'properties.bootstrap.servers' = 'localhost:9092',
  'key.format' = 'json', 'key.fields' = '{key_fields}', 'value.format' = 'debezium-json'
)"""


def test_a_primary_key_and_the_same_key_fields_are_one_key():
    assert flink_table(_kafka_table("id")).options["key.fields"] == "id"


def test_a_primary_key_and_other_key_fields_are_refused_naming_both():
    with pytest.raises(OptionError, match=r"PRIMARY KEY \(id\) and option 'key.fields' = 'name'.*same columns"):
        flink_table(_kafka_table("name"))
