"""The multi-table write (Flink CDC's Kafka pipeline sink), against the real broker: two tables of different
schemas in one write, each to its topic keyed by its own primary key, read back with the CDC formats."""

from __future__ import annotations

import orjson
import pytest

from integration.kafka import java_partitions
from tests.support.kafka_io import consume_messages, create_topic
from tests.support.write_helpers import table

# One DataFrame holding the rows of two tables (unionByName(..., allowMissingColumns=True) makes one like it).
SCHEMA = "table_id STRING, order_id INT, amount BIGINT, status STRING, line_no INT, sku STRING, _change_type STRING"
ROWS = [
    ("shop.orders", 1, 100, "new", None, None, "insert"),
    ("shop.order_lines", 1, None, None, 1, "apple", "insert"),
    ("shop.orders", 2, 250, "new", None, None, "insert"),
    ("shop.order_lines", 1, None, None, 2, "pear", "insert"),
    ("shop.order_lines", 1, None, None, 2, "pear", "update_preimage"),
    ("shop.order_lines", 1, None, None, 2, "plum", "update_postimage"),
    ("shop.orders", 2, 250, "new", None, None, "delete"),
    *[("shop.order_lines", 2, None, None, n, f"sku-{n}", "insert") for n in range(30)],
    *[("shop.orders", n, n * 10, "paid", None, None, "upsert") for n in range(10, 40)],
]


def _options(bootstrap: str, orders: str, lines: str, more: dict | None = None) -> dict:
    return {
        "properties.bootstrap.servers": bootstrap,
        "sink.table-id.column": "table_id",
        "sink.table-id.key-fields": "shop.orders:order_id;shop.order_lines:order_id,line_no",
        "sink.table-id.fields": "shop.orders:order_id,amount,status;shop.order_lines:order_id,line_no,sku",
        # Flink CDC's selectors: an exact id, and a regular expression per part (`\.` is the regex `.`).
        "sink.tableId-to-topic.mapping": f"shop.orders:{orders};shop.order_l\\.*:{lines}",
        "sink.add-tableId-to-header-enabled": "true",
        "sink.custom-header": "origin:mysql;pipeline:nightly",
    } | (more or {})


def _write(spark, opts: dict) -> None:
    # Three tasks, each key's changes in one of them and in order (as a CDC pipeline delivers them): one map side
    # (coalesce(1)) hashed by table and key. A round-robin repartition could split an insert from its update.
    rows = spark.createDataFrame(ROWS, SCHEMA).coalesce(1).repartition(3, "table_id", "order_id")
    rows.write.format("upsert-kafka").options(**opts).mode("append").save()


def _check_records(bootstrap: str, topic: str, table_name: str, key_fields: list[str], key_of) -> list[dict]:
    """Every record: keyed by the table's key, in the partition the Java client picks for it, with the headers."""
    messages = consume_messages(bootstrap, topic)
    keys = [m.key() for m in messages]
    assert [m.partition() for m in messages] == java_partitions(bootstrap, topic + "-java", keys)
    expected_headers = [
        ("namespace", b""),
        ("schemaName", b"shop"),
        ("tableName", table_name.encode()),
        ("origin", b"mysql"),
        ("pipeline", b"nightly"),
    ]
    values = []
    for m in messages:
        assert m.headers() == expected_headers
        value = orjson.loads(m.value())
        values.append(value)
        assert m.key() == key_of([value_row(value)[f] for f in key_fields])
    return values


def value_row(envelope: dict) -> dict:
    """The row of a debezium or canal envelope."""
    if "op" in envelope:
        return envelope["after"] or envelope["before"]
    return envelope["data"][0]


def test_two_tables_in_one_write_go_to_their_topics_keyed_by_their_own_keys_as_debezium_json(
    spark, new_topic, bootstrap
):
    orders, lines = new_topic(partitions=3), new_topic(partitions=4)
    create_topic(bootstrap, orders + "-java", 3)
    create_topic(bootstrap, lines + "-java", 4)
    _write(spark, _options(bootstrap, orders, lines))

    json_key = lambda names: lambda values: orjson.dumps(dict(zip(names, values)))  # noqa: E731
    order_values = _check_records(bootstrap, orders, "orders", ["order_id"], json_key(["order_id"]))
    line_values = _check_records(
        bootstrap, lines, "order_lines", ["order_id", "line_no"], json_key(["order_id", "line_no"])
    )
    assert len(order_values) == 33 and len(line_values) == 33  # pre-images are not written: 34 line rows, 1 of them
    # Flink CDC's debezium-json: the table's whole row (its key included) and the table named in `source`.
    first = next(v for v in order_values if v["after"] and v["after"]["order_id"] == 1)
    assert first == {
        "before": None,
        "after": {"order_id": 1, "amount": 100, "status": "new"},
        "op": "c",
        "source": {"db": "shop", "table": "orders"},
    }
    deleted = [v for v in order_values if v["op"] == "d"]
    assert deleted == [
        {
            "before": {"order_id": 2, "amount": 250, "status": "new"},
            "after": None,
            "op": "d",
            "source": {"db": "shop", "table": "orders"},
        }
    ]
    assert all(set(value_row(v)) == {"order_id", "line_no", "sku"} for v in line_values)

    # Read back with the debezium-json format: each topic is its table, with the table's identity as metadata.
    read = {"properties.bootstrap.servers": bootstrap, "value.format": "debezium-json", "read.mode": "table"}
    got_orders = table(
        spark,
        read
        | {
            "topic": orders,
            "key.fields": "order_id",
            "metadata.columns": "db=value.source.database,tbl=value.source.table",
        },
        "order_id INT, amount BIGINT, status STRING, db STRING, tbl STRING",
    )
    assert got_orders == [(1, 100, "new", "shop", "orders")] + [
        (n, n * 10, "paid", "shop", "orders") for n in range(10, 40)
    ]
    got_lines = table(
        spark, read | {"topic": lines, "key.fields": "order_id;line_no"}, "order_id INT, line_no INT, sku STRING"
    )
    assert got_lines == [(1, 1, "apple"), (1, 2, "plum")] + [(2, n, f"sku-{n}") for n in range(30)]


def test_canal_json_values_and_csv_keys_name_the_table_and_its_primary_key(spark, new_topic, bootstrap):
    orders, lines = new_topic(partitions=3), new_topic(partitions=2)
    create_topic(bootstrap, orders + "-java", 3)
    create_topic(bootstrap, lines + "-java", 2)
    _write(spark, _options(bootstrap, orders, lines, {"value.format": "canal-json", "key.format": "csv"}))

    csv_key = lambda values: ",".join(str(v) for v in values).encode()  # noqa: E731
    order_values = _check_records(bootstrap, orders, "orders", ["order_id"], csv_key)
    line_values = _check_records(bootstrap, lines, "order_lines", ["order_id", "line_no"], csv_key)
    assert {(v["database"], v["table"], tuple(v["pkNames"])) for v in order_values} == {
        ("shop", "orders", ("order_id",))
    }
    assert {tuple(v["pkNames"]) for v in line_values} == {("order_id", "line_no")}
    assert [v["type"] for v in order_values].count("DELETE") == 1

    read = {
        "properties.bootstrap.servers": bootstrap,
        "value.format": "canal-json",
        "key.format": "csv",
        "read.mode": "table",
    }
    got = table(
        spark,
        read | {"topic": lines, "key.fields": "order_id;line_no", "metadata.columns": "t=value.table"},
        "order_id INT, line_no INT, sku STRING, t STRING",
    )
    assert got[:2] == [(1, 1, "apple", "order_lines"), (1, 2, "plum", "order_lines")] and len(got) == 32


def test_a_row_of_a_table_the_options_do_not_list_fails_the_write_naming_it(spark, new_topic, bootstrap):
    orders, lines = new_topic(), new_topic()
    rows = [("shop.orders", 1, 1, "new", None, None, "insert"), ("shop.refunds", 7, 1, "x", None, None, "insert")]
    with pytest.raises(
        Exception,
        match=r"table 'shop.refunds' in column 'table_id', which options "
        r"'sink.table-id.key-fields' and 'sink.table-id.fields' do not list",
    ):
        spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("upsert-kafka").options(
            **_options(bootstrap, orders, lines)
        ).mode("append").save()
    assert consume_messages(bootstrap, orders) == []  # the batch holding the bad row is not written
