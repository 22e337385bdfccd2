"""debezium-json, canal-json, maxwell-json and ogg-json through the real broker and Spark: topics holding the tools' own
messages (tests/formats/data/, shaped as their documentation shows them) read as changelogs and tables, with
the formats' metadata (ogg-json on Flink's own test data, tests/formats/data/ogg_flink_ogg-data.txt: Flink's
flink-formats/flink-json/src/test/resources/ogg-data.txt at apache/flink 22e02b244da8, unchanged, its `priamry_keys`
typo included); DataFrames written as envelopes shaped like Flink's serializers write them, read back;
and the errors that say what to change."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType
from pyspark_upsert_kafka.read.fetch import Records
from pyspark_upsert_kafka.read.range_calculator import PartitionRange
from pyspark_upsert_kafka.read.spec import parse_read_spec
from pyspark_upsert_kafka.read.task import range_decoder

from tests.support.kafka_io import consume_all
from tests.support.read_helpers import rows_of, run_available_now, send, stream
from tests.support.write_helpers import write

DATA = Path(__file__).parent / "data"
CUSTOMERS = "id INT, first_name STRING, last_name STRING, email STRING"
PRODUCTS = "id INT, name STRING, description STRING, weight DOUBLE"
MAXWELL_E = "id INT, m DOUBLE, c TIMESTAMP_NTZ, comment STRING"
UTC = dt.timezone.utc


def send_file(bootstrap: str, topic: str, name: str) -> None:
    """Produce a data file's records: one JSON line each, {"key": ..., "value": ...} (null: none)."""
    lines = [orjson.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]
    dump = lambda v: None if v is None else orjson.dumps(v)  # noqa: E731
    send(bootstrap, topic, [(dump(line["key"]), dump(line["value"]), None, None) for line in lines])


def cdc(options, topic: str, fmt: str, more: dict | None = None, mode: str = "changelog") -> dict:
    return options(topic, {"value.format": fmt, "read.mode": mode} | (more or {}))


@pytest.fixture
def customers(bootstrap, new_topic) -> str:
    topic = new_topic()
    send_file(bootstrap, topic, "debezium_mysql_customers.jsonl")
    return topic


# -- debezium-json ---------------------------------------------------------------------------------------


def test_debezium_events_read_as_upserts_and_deletes_in_transaction_order(spark, options, customers):
    rows = rows_of(spark, cdc(options, customers, "debezium-json"), f"{CUSTOMERS}, _change_type STRING")
    assert rows == [
        (1001, "Sally", "Thomas", "sally.thomas@acme.com", "upsert"),  # snapshot reads (op r)
        (1002, "George", "Bailey", "gbailey@foobar.com", "upsert"),
        (1003, "Edward", "Walker", "ed@walker.com", "upsert"),
        (1004, "Anne", "Kretchmar", "annek@noanswer.org", "upsert"),  # op c
        (1004, "Anne Marie", "Kretchmar", "annek@noanswer.org", "upsert"),  # one transaction's three updates
        (1002, "George", "Bailey", "george.bailey@acme.com", "upsert"),
        (1004, "Anne Marie", "Kretchmar", "anne.marie@acme.com", "upsert"),
        (1003, None, None, None, "delete"),  # op d; Debezium's tombstone after it is no row
    ]


def test_debezium_table_read_applies_the_events(spark, options, customers):
    rows = rows_of(spark, cdc(options, customers, "debezium-json", mode="table"), CUSTOMERS)
    assert sorted(rows) == [
        (1001, "Sally", "Thomas", "sally.thomas@acme.com"),
        (1002, "George", "Bailey", "george.bailey@acme.com"),
        (1004, "Anne Marie", "Kretchmar", "anne.marie@acme.com"),
    ]


def test_debezium_compacted_changelog_and_a_stream_see_the_same_changes(spark, options, customers, tmp_path):
    compact = rows_of(
        spark, cdc(options, customers, "debezium-json", {"changelog.compact": "true"}), "id INT, _change_type STRING"
    )
    assert compact == [(1001, "upsert"), (1002, "upsert"), (1004, "upsert"), (1003, "delete")]
    opts = cdc(options, customers, "debezium-json", {"scan.max-records-per-batch": "4"})
    del opts["read.mode"]
    sink = run_available_now(stream(spark, opts, "id INT, email STRING, _change_type STRING"), str(tmp_path / "cp"))
    assert [r[0] for r in sink.rows] == [1001, 1002, 1003, 1004, 1004, 1002, 1004, 1003]
    assert sink.rows[-1] == (1003, None, "delete")


def test_debezium_metadata_columns(spark, options, customers):
    opts = cdc(
        options,
        customers,
        "debezium-json",
        {
            "metadata.columns": "offset, db=value.source.database, tbl=value.source.table, "
            "event_time=value.source.timestamp, ingested=value.ingestion-timestamp, props=value.source.properties"
        },
    )
    schema = (
        "id INT, _change_type STRING, offset BIGINT, db STRING, tbl STRING, event_time TIMESTAMP, "
        "ingested TIMESTAMP, props MAP<STRING, STRING>"
    )
    rows = rows_of(spark, opts, schema)
    assert [(r[0], r[2], r[3], r[4]) for r in rows][3:5] == [
        (1004, 3, "inventory", "customers"),
        (1004, 4, "inventory", "customers"),
    ]
    delete = rows[-1]
    assert delete[:3] == (1003, "delete", 7)  # the tombstone at offset 8 gave no row
    assert delete[5] == dt.datetime.fromtimestamp(1700000180, UTC).replace(tzinfo=None)
    assert delete[6] == dt.datetime.fromtimestamp(1700000180.420, UTC).replace(tzinfo=None)
    assert delete[7]["gtid"] == "6c2f3b1a-5d1e-11ee-8c99-0242ac120002:46"
    assert delete[7]["pos"] == "1066" and delete[7]["query"] is None  # values as text, as Flink's MAP<STRING, STRING>


def test_debezium_with_schemas_reads_the_payload(spark, options, bootstrap, new_topic):
    """PostgreSQL with REPLICA IDENTITY DEFAULT: an update without its before image, a delete with the key only."""
    topic = new_topic()
    send_file(bootstrap, topic, "debezium_postgres_products_schemas.jsonl")
    opts = cdc(options, topic, "debezium-json", {"value.debezium-json.schema-include": "true"})
    opts["metadata.columns"] = "schema=value.schema, value.source.schema"
    rows = rows_of(spark, opts, f"{PRODUCTS}, _change_type STRING, schema STRING, `value.source.schema` STRING")
    assert [r[:5] for r in rows] == [
        (101, "scooter", "Small 2-wheel scooter", 3.14, "upsert"),
        (102, "car battery", "12V car battery", 8.1, "upsert"),
        (101, "scooter", "Small 2-wheel scooter", 5.18, "upsert"),
        (102, None, None, None, "delete"),
    ]
    assert orjson.loads(rows[0][5])["name"] == "pgserver1.public.products.Envelope"
    assert {r[6] for r in rows} == {"public"}
    table = rows_of(spark, {**opts, "read.mode": "table", "metadata.columns": ""}, PRODUCTS)
    assert table == [(101, "scooter", "Small 2-wheel scooter", 5.18)]


def test_debezium_full_changelog_gives_flinks_row_kinds_with_images(spark, options, customers):
    opts = cdc(options, customers, "debezium-json", {"value.debezium-json.changelog-mode": "all"})
    rows = rows_of(spark, opts, "id INT, first_name STRING, email STRING, _change_type STRING")
    assert rows[3:] == [
        (1004, "Anne", "annek@noanswer.org", "insert"),
        (1004, "Anne", "annek@noanswer.org", "update_preimage"),
        (1004, "Anne Marie", "annek@noanswer.org", "update_postimage"),
        (1002, "George", "gbailey@foobar.com", "update_preimage"),
        (1002, "George", "george.bailey@acme.com", "update_postimage"),
        (1004, "Anne Marie", "annek@noanswer.org", "update_preimage"),
        (1004, "Anne Marie", "anne.marie@acme.com", "update_postimage"),
        (1003, "Edward", "ed@walker.com", "delete"),  # the deleted row's values, as in Flink
    ]


def test_full_changelog_fails_on_an_update_without_its_before_image(spark, options, bootstrap, new_topic):
    topic = new_topic()
    send_file(bootstrap, topic, "debezium_postgres_products_schemas.jsonl")
    more = {"value.debezium-json.schema-include": "true", "value.debezium-json.changelog-mode": "all"}
    expected = r"offset 2 .*update without its before image.*REPLICA IDENTITY FULL.*changelog-mode' to upsert"
    with pytest.raises(Exception, match=expected):
        rows_of(spark, cdc(options, topic, "debezium-json", more), f"{PRODUCTS}, _change_type STRING")


def _debezium(op: str, before: dict | None, after: dict | None) -> tuple:
    return (None, orjson.dumps({"before": before, "after": after, "op": op, "ts_ms": 1}), None, None)


def test_unreadable_events_fail_naming_the_offset_or_are_skipped_when_asked(spark, options, bootstrap, new_topic):
    topic = new_topic()
    good = {"id": 1, "first_name": "a", "last_name": "b", "email": "c"}
    send(bootstrap, topic, [_debezium("c", None, good), _debezium("t", None, None), _debezium("x", None, good)])
    schema = f"{CUSTOMERS}, _change_type STRING"
    with pytest.raises(Exception, match=r"offset 1 with format 'debezium-json': a truncate event \(op 't'\)"):
        rows_of(spark, cdc(options, topic, "debezium-json"), schema)
    skip = cdc(options, topic, "debezium-json", {"value.debezium-json.ignore-parse-errors": "true"})
    assert rows_of(spark, skip, schema) == [(1, "a", "b", "c", "upsert")]


def test_a_row_without_its_key_fails_naming_the_key_column(spark, options, bootstrap, new_topic):
    topic = new_topic()
    send(bootstrap, topic, [_debezium("c", None, {"first_name": "no id"})])
    with pytest.raises(Exception, match=r"offset 0 .*no value for the key column 'id'"):
        rows_of(spark, cdc(options, topic, "debezium-json"), f"{CUSTOMERS}, _change_type STRING")


# -- canal-json ------------------------------------------------------------------------------------------


@pytest.fixture
def products(bootstrap, new_topic) -> str:
    topic = new_topic()
    send_file(bootstrap, topic, "canal_inventory_products.jsonl")
    return topic


def test_canal_messages_read_row_by_row_with_their_text_values(spark, options, products):
    opts = cdc(options, products, "canal-json", {"value.canal-json.table.include": "products"})
    rows = rows_of(spark, opts, f"{PRODUCTS}, _change_type STRING")
    assert rows == [
        (101, "scooter", "Small 2-wheel scooter", 3.14, "upsert"),  # one INSERT of two rows
        (102, "car battery", "12V car battery", 8.1, "upsert"),
        (101, "scooter", "Small 2-wheel scooter", 5.18, "upsert"),  # (orders left out, ALTER has no rows)
        (103, "hammer", None, 0.75, "upsert"),
        (103, None, None, None, "delete"),  # an UPDATE of the key: a delete of the old one ...
        (104, "hammer", "14oz carpenter's hammer", 0.75, "upsert"),  # ... and the new key
        (102, None, None, None, "delete"),
    ]
    table = rows_of(spark, {**opts, "read.mode": "table"}, PRODUCTS)
    assert sorted(table) == [
        (101, "scooter", "Small 2-wheel scooter", 5.18),
        (104, "hammer", "14oz carpenter's hammer", 0.75),
    ]


def test_canal_database_filter_and_metadata(spark, options, products):
    opts = cdc(
        options,
        products,
        "canal-json",
        {
            "value.canal-json.database.include": "inv.*",
            "value.canal-json.changelog-mode": "all",
            "metadata.columns": "tbl=value.table, pk=value.pk-names, es=value.event-timestamp, types=value.sql-type",
        },
    )
    schema = "id INT, description STRING, _change_type STRING, tbl STRING, pk ARRAY<STRING>, es TIMESTAMP, "
    rows = rows_of(spark, opts, schema + "types MAP<STRING, INT>")
    assert [(r[0], r[2], r[3]) for r in rows] == [
        (101, "insert", "products"),
        (102, "insert", "products"),
        (9001, "insert", "orders"),  # no table filter: the orders row, read into these columns
        (101, "update_preimage", "products"),
        (101, "update_postimage", "products"),
        (103, "insert", "products"),
        (103, "delete", "products"),  # the key changed: delete and insert, pre-image values kept
        (104, "insert", "products"),
        (102, "delete", "products"),
    ]
    assert rows[6][1] is None and rows[7][1] == "14oz carpenter's hammer"
    assert rows[0][4] == ["id"] and rows[0][5] == dt.datetime.fromtimestamp(1700000000, UTC).replace(tzinfo=None)
    assert rows[0][6] == {"id": 4, "name": 12, "description": 12, "weight": 7}
    none = cdc(options, products, "canal-json", {"value.canal-json.database.include": "crm"})
    assert rows_of(spark, none, "id INT, _change_type STRING") == []


# Metadata `value.sql-type` sends every message of a batch through the per-message path (canal.slow_metadata).
@pytest.mark.parametrize("path", [{}, {"metadata.columns": "types=value.sql-type"}], ids=["arrow", "per-message"])
def test_canal_init_snapshot_rows_read_as_inserts_in_every_mode(spark, options, bootstrap, new_topic, path):
    """Canal's initial snapshot (type INIT) is read as Flink reads it: inserts."""
    topic = new_topic()
    messages = [
        {"data": [{"id": "1", "name": "a"}, {"id": "2", "name": "b"}], "type": "INIT", "database": "d", "table": "t"},
        {"data": [{"id": "3", "name": None}], "type": "INIT", "database": "d", "table": "t", "isDdl": False},
        {"data": [{"id": "1", "name": "a2"}], "old": [{"name": "a"}], "type": "UPDATE", "database": "d", "table": "t"},
    ]
    send(bootstrap, topic, [(None, orjson.dumps(m), None, None) for m in messages])
    schema = "id INT, name STRING, _change_type STRING" + (", types MAP<STRING, INT>" if path else "")
    upserts = [r[:3] for r in rows_of(spark, cdc(options, topic, "canal-json", path), schema)]
    assert upserts == [(1, "a", "upsert"), (2, "b", "upsert"), (3, None, "upsert"), (1, "a2", "upsert")]
    every = rows_of(spark, cdc(options, topic, "canal-json", {"value.canal-json.changelog-mode": "all"} | path), schema)
    assert [r[2] for r in every] == ["insert", "insert", "insert", "update_preimage", "update_postimage"]
    table = rows_of(spark, cdc(options, topic, "canal-json", mode="table"), "id INT, name STRING")
    assert sorted(table, key=lambda r: r[0]) == [(1, "a2"), (2, "b"), (3, None)]


def test_envelope_decimals_are_rounded_half_up_to_the_columns_scale_as_flink_reads_them(
    spark, options, bootstrap, new_topic
):
    """Flink's Kafka changelog ITCase reads Debezium's `weight` 3.140000104904175 into DECIMAL(10,3) as 3.140;
    Canal sends numbers as text ("5.1805"); a value that rounds past the precision still fails the record."""
    debezium, canal = new_topic(), new_topic()
    events = [{"before": None, "after": {"id": 1, "weight": w}, "op": "c"} for w in (3.140000104904175, -0.0005)]
    send(bootstrap, debezium, [(None, orjson.dumps(e), None, None) for e in events])
    message = {"data": [{"id": "1", "weight": "5.1805"}], "type": "INSERT", "database": "d", "table": "t"}
    send(bootstrap, canal, [(None, orjson.dumps(message), None, None)])
    schema = "id INT, weight DECIMAL(10,3), _change_type STRING"
    assert rows_of(spark, cdc(options, debezium, "debezium-json"), schema) == [
        (1, Decimal("3.140"), "upsert"),
        (1, Decimal("-0.001"), "upsert"),
    ]
    assert rows_of(spark, cdc(options, canal, "canal-json"), schema) == [(1, Decimal("5.181"), "upsert")]
    too_wide = {"before": None, "after": {"id": 2, "weight": 9999999.9995}, "op": "c"}
    send(bootstrap, debezium, [(None, orjson.dumps(too_wide), None, None)])
    with pytest.raises(Exception, match=r"offset 2 .*does not fit DECIMAL\(10,3\)"):
        rows_of(spark, cdc(options, debezium, "debezium-json"), schema)


# -- maxwell-json ----------------------------------------------------------------------------------------


def test_maxwell_messages_and_bootstrap_rows(spark, options, bootstrap, new_topic):
    topic = new_topic()
    send_file(bootstrap, topic, "maxwell_test_e.jsonl")
    opts = cdc(options, topic, "maxwell-json", {"metadata.columns": "at=value.ingestion-timestamp, value.table"})
    rows = rows_of(spark, opts, f"{MAXWELL_E}, _change_type STRING, at TIMESTAMP, `value.table` STRING")
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        (1, 4.2341, "I am a creature of light.", "upsert"),
        (2, 0.5, None, "upsert"),
        (3, 7.0, "third", "upsert"),
        (1, 5.444, "I am a creature of light.", "upsert"),
        (2, 0.5, "now set", "upsert"),
        (3, None, None, "delete"),
        (4, 1.25, "from the bootstrap", "upsert"),  # bootstrap-insert; its start and complete markers: no rows
    ]
    assert rows[3][2] == dt.datetime(2023, 11, 14, 22, 13, 37, 631000)
    assert rows[3][5] == dt.datetime.fromtimestamp(1700000017, UTC).replace(tzinfo=None) and rows[3][6] == "e"
    full = rows_of(
        spark,
        {**opts, "value.maxwell-json.changelog-mode": "all", "metadata.columns": ""},
        MAXWELL_E + ", _change_type STRING",
    )
    assert [(r[0], r[3], r[4]) for r in full[3:7]] == [
        (1, "I am a creature of light.", "update_preimage"),
        (1, "I am a creature of light.", "update_postimage"),
        (2, None, "update_preimage"),  # `old` holds "comment": null: the value before was null
        (2, "now set", "update_postimage"),
    ]
    assert full[3][1:3] == (4.2341, dt.datetime(2023, 11, 14, 22, 13, 20, 523000))


# -- ogg-json --------------------------------------------------------------------------------------------


def test_ogg_messages_of_flinks_test_data_read_as_flink_reads_them(spark, options, bootstrap, new_topic):
    topic = new_topic()
    lines = (DATA / "ogg_flink_ogg-data.txt").read_bytes().splitlines()
    send(bootstrap, topic, [(None, line, None, None) for line in lines])
    opts = cdc(options, topic, "ogg-json", {"value.ogg-json.changelog-mode": "all"})
    opts["metadata.columns"] = "value.table, at=value.event-timestamp, pk=value.primary-keys"
    rows = rows_of(
        spark, opts, f"{PRODUCTS}, _change_type STRING, `value.table` STRING, at TIMESTAMP, pk ARRAY<STRING>"
    )
    # Flink's OggJsonSerDeSchemaTest expects these 20 rows: 9 inserts, 2 updates, an insert, 2 updates and a delete
    assert [(r[0], r[4]) for r in rows] == [(i, "insert") for i in range(101, 110)] + [
        (106, "update_preimage"),
        (106, "update_postimage"),
        (107, "update_preimage"),
        (107, "update_postimage"),
        (110, "insert"),
        (111, "insert"),
        (110, "update_preimage"),
        (110, "update_postimage"),
        (111, "update_preimage"),
        (111, "update_postimage"),
        (111, "delete"),
    ]
    assert rows[10][1:4] == ("hammer", "18oz carpenter hammer", 1.0)
    assert rows[-1][3] == 5.170000076293945
    assert {r[5] for r in rows} == {"OGG.TBL_TEST"}
    assert rows[-1][6] == dt.datetime(2020, 5, 13, 17, 32, 24, 455000)  # op_ts, read as UTC
    assert {r[7] for r in rows} == {None}  # the data spells it `priamry_keys`: Flink reads no key there either
    table = rows_of(spark, cdc(options, topic, "ogg-json", mode="table"), "id INT, description STRING")
    assert sorted(table)[5:] == [
        (106, "18oz carpenter hammer"),
        (107, "box of assorted rocks"),
        (108, "water resistent black wind breaker"),
        (109, "24 inch spare tire"),
        (110, "new water resistent white wind breaker"),
    ]


def _ogg(op: object, before: dict | None, after: dict | None, **more: object) -> tuple:
    return (
        None,
        orjson.dumps({"table": "INV.CUSTOMERS", "op_type": op, "before": before, "after": after} | more),
        None,
        None,
    )


def test_ogg_metadata_of_goldengates_documented_message(spark, options, bootstrap, new_topic):
    """The update of Flink's ogg-json documentation: `current_ts` with a 'T' as GoldenGate writes it."""
    topic = new_topic()
    before = {"id": 111, "name": "scooter", "description": "Big 2-wheel scooter", "weight": 5.18}
    times = {"op_ts": "2020-05-13 15:40:06.000000", "current_ts": "2020-05-13T15:40:07.123456", "primary_keys": ["id"]}
    send(bootstrap, topic, [_ogg("U", before, {**before, "weight": 5.15}, pos="00000000000000000000143", **times)])
    opts = cdc(options, topic, "ogg-json")
    opts["metadata.columns"] = "op=value.event-timestamp, seen=value.ingestion-timestamp, pk=value.primary-keys"
    rows = rows_of(spark, opts, f"{PRODUCTS}, _change_type STRING, op TIMESTAMP, seen TIMESTAMP, pk ARRAY<STRING>")
    assert rows == [
        (111, "scooter", "Big 2-wheel scooter", 5.15, "upsert", dt.datetime(2020, 5, 13, 15, 40, 6),
         dt.datetime(2020, 5, 13, 15, 40, 7, 123456), ["id"]),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (_ogg("T", None, None), r"a truncate message \(op_type 'T'\) empties the whole table"),
        (_ogg("X", None, {"id": 2}), r"unknown op_type \"X\"; GoldenGate's are I, U, D"),
        (_ogg("D", None, None), r"op_type 'D' has no 'before' row .* write before images"),
        ((None, b'{"op_type":"I","after":{"id":', None, None), r"JSON|json"),
    ],
    ids=["truncate", "unknown-op", "delete-without-before", "not-json"],
)
def test_ogg_messages_that_give_no_change_fail_naming_the_offset_or_are_skipped(
    spark, options, bootstrap, new_topic, bad, error
):
    topic = new_topic()
    send(bootstrap, topic, [_ogg("I", None, {"id": 1, "first_name": "a", "last_name": "b", "email": "c"}), bad])
    schema = f"{CUSTOMERS}, _change_type STRING"
    with pytest.raises(Exception, match=rf"topic '{topic}' partition 0 offset 1 with format 'ogg-json': .*{error}"):
        rows_of(spark, cdc(options, topic, "ogg-json"), schema)
    skip = cdc(options, topic, "ogg-json", {"value.ogg-json.ignore-parse-errors": "true"})
    assert rows_of(spark, skip, schema) == [(1, "a", "b", "c", "upsert")]


# -- writing ---------------------------------------------------------------------------------------------

ROWS = [
    (1, "a", 1.5, "upsert"),
    (2, "b", None, "insert"),
    (1, "a", 1.5, "update_preimage"),
    (1, "c", 2.0, "update_postimage"),
    (2, None, None, "delete"),
]
WRITTEN = {
    "debezium-json": [
        b'{"before":null,"after":{"id":1,"name":"a","weight":1.5},"op":"c"}',
        b'{"before":null,"after":{"id":2,"name":"b","weight":null},"op":"c"}',
        b'{"before":{"id":1,"name":"a","weight":1.5},"after":null,"op":"d"}',
        b'{"before":null,"after":{"id":1,"name":"c","weight":2.0},"op":"c"}',
        b'{"before":{"id":2,"name":null,"weight":null},"after":null,"op":"d"}',
    ],
    "canal-json": [
        b'{"data":[{"id":1,"name":"a","weight":1.5}],"type":"INSERT"}',
        b'{"data":[{"id":2,"name":"b","weight":null}],"type":"INSERT"}',
        b'{"data":[{"id":1,"name":"a","weight":1.5}],"type":"DELETE"}',
        b'{"data":[{"id":1,"name":"c","weight":2.0}],"type":"INSERT"}',
        b'{"data":[{"id":2,"name":null,"weight":null}],"type":"DELETE"}',
    ],
    "maxwell-json": [
        b'{"data":{"id":1,"name":"a","weight":1.5},"type":"insert"}',
        b'{"data":{"id":2,"name":"b","weight":null},"type":"insert"}',
        b'{"data":{"id":1,"name":"a","weight":1.5},"type":"delete"}',
        b'{"data":{"id":1,"name":"c","weight":2.0},"type":"insert"}',
        b'{"data":{"id":2,"name":null,"weight":null},"type":"delete"}',
    ],
    "ogg-json": [
        b'{"before":null,"after":{"id":1,"name":"a","weight":1.5},"op_type":"I"}',
        b'{"before":null,"after":{"id":2,"name":"b","weight":null},"op_type":"I"}',
        b'{"before":{"id":1,"name":"a","weight":1.5},"after":null,"op_type":"D"}',
        b'{"before":null,"after":{"id":1,"name":"c","weight":2.0},"op_type":"I"}',
        b'{"before":{"id":2,"name":null,"weight":null},"after":null,"op_type":"D"}',
    ],
}


@pytest.mark.parametrize("fmt", sorted(WRITTEN))
def test_a_changelog_written_as_envelopes_like_flinks_reads_back(spark, options, bootstrap, new_topic, fmt):
    topic = new_topic()
    opts = options(topic, {"value.format": fmt})
    write(spark, opts, ROWS, "id INT, name STRING, weight DOUBLE, _change_type STRING")
    records = consume_all(bootstrap, topic)
    assert [k for _, _, k, _ in records] == [b'{"id":1}', b'{"id":2}', b'{"id":1}', b'{"id":1}', b'{"id":2}']
    # As Flink's formats write them: the pre-image a delete envelope, then the post-image an insert; a delete an
    # envelope too.
    assert [v for _, _, _, v in records] == WRITTEN[fmt]
    assert rows_of(spark, opts, "id INT, name STRING, weight DOUBLE") == [(1, "c", 2.0)]
    changes = rows_of(spark, {**opts, "read.mode": "changelog"}, "id INT, name STRING, _change_type STRING")
    assert changes == [
        (1, "a", "upsert"),
        (2, "b", "upsert"),
        (1, None, "delete"),  # a delete read in upsert mode has only its key
        (1, "c", "upsert"),
        (2, None, "delete"),
    ]


# -- options ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("more", "error"),
    [
        (
            {"key.format": "debezium-json"},
            r"option 'key\.format': 'debezium-json' is a changelog format: it can be the value format",
        ),
        ({"value.fields-include": "EXCEPT_KEY"}, r"value format 'canal-json' carries whole rows .* ALL"),
        ({"metadata.columns": "value.source.table"}, r"unknown metadata 'value\.source\.table'.* value\.database"),
        ({"value.canal-json.table.include": "("}, r"option 'value\.canal-json\.table\.include' is not a valid regular"),
        ({"value.canal-json.schema-include": "true"}, r"unknown option\(s\) value\.canal-json\.schema-include"),
        (
            {"value.canal-json.timestamp-format.standard": "X"},
            r"'value\.canal-json\.timestamp-format\.standard' must be",
        ),
    ],
)
def test_options_that_cannot_apply_fail_saying_what_to_change(spark, options, new_topic, more, error):
    with pytest.raises(Exception, match=error):
        rows_of(spark, cdc(options, new_topic(), "canal-json", more), "id INT, _change_type STRING")


def test_overwrite_with_an_envelope_format_is_refused(spark, options, new_topic):
    with pytest.raises(Exception, match=r"save mode overwrite .* 'debezium-json' reader skips: write with mode append"):
        write(
            spark,
            options(new_topic(), {"value.format": "debezium-json"}),
            [(1, "a")],
            "id INT, name STRING",
            "overwrite",
        )


def test_a_struct_key_is_one_key_in_table_mode_and_in_key_changes():
    """Table mode and key changes with a STRUCT key, which Arrow cannot sort or group: compared by its identity
    (decoded without Spark or Kafka)."""
    key = StructType([StructField("region", StringType()), StructField("n", IntegerType())])
    table = StructType([StructField("k", key), StructField("v", StringType())])
    options = {"topic": "t", "properties.bootstrap.servers": "127.0.0.1:9", "key.fields": "k"}
    spec = parse_read_spec({**options, "value.format": "maxwell-json", "read.mode": "table"}, table, streaming=False)
    messages = [
        {"type": "insert", "data": {"k": {"region": "eu", "n": 1}, "v": "a"}},
        {"type": "insert", "data": {"k": {"region": "us", "n": 1}, "v": "b"}},
        {"type": "update", "data": {"k": {"region": "eu", "n": 1}, "v": "c"}, "old": {"v": "a"}},
        {"type": "update", "data": {"k": {"region": "us", "n": 2}, "v": "b"}, "old": {"k": {"region": "us", "n": 1}}},
    ]
    values = [orjson.dumps(m) for m in messages]
    records = Records([None] * len(values), values, list(range(len(values))))
    decoder = range_decoder(spec, PartitionRange("t", 0, 0, len(values)))
    rows = [r for batch in decoder.table([records]) for r in batch.to_pylist()]
    assert sorted(rows, key=str) == [
        {"k": {"region": "eu", "n": 1}, "v": "c"},
        {"k": {"region": "us", "n": 2}, "v": "b"},  # the update moved the key: {"us", 1} is deleted
    ]
