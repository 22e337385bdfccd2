"""The multi-table write's options (write.multi_table), pure logic: where each table goes, its headers, and one error
naming the option for each mistake. The write itself: tests/write/test_write_tables.py."""

from __future__ import annotations

import pytest
from pyspark_upsert_kafka import OptionError
from pyspark_upsert_kafka.options.ddl import parse_ddl
from pyspark_upsert_kafka.write.spec import parse_write_spec

SCHEMA = parse_ddl("tid STRING, id INT, name STRING, line INT, sku STRING, _change_type STRING")
BASE = {
    "properties.bootstrap.servers": "b:9092",
    "sink.table-id.column": "tid",
    "sink.table-id.key-fields": "db.a:id;db.b:id,line",
    "sink.table-id.fields": "db.a:id,name;db.b:id,line,sku",
}


def _spec(**more: str):
    return parse_write_spec({k.lower(): v for k, v in (BASE | more).items()}, SCHEMA)


def _topics(**more: str) -> dict[str, str]:
    return {t.table_id: t.topic for t in _spec(**more).tables.tables}


def test_each_table_goes_to_its_id_unless_mapped_and_option_topic_takes_them_all():
    assert _topics() == {"db.a": "db.a", "db.b": "db.b"}
    assert _topics(**{"sink.tableId-to-topic.mapping": "db.a:ta"}) == {"db.a": "ta", "db.b": "db.b"}
    # Flink CDC's selectors: each part a regular expression, `\.` the regex `.`; `,` lists several; first rule wins.
    assert _topics(**{"sink.tableId-to-topic.mapping": r"db.x,db.\.*:all;db.a:never"}) == {"db.a": "all", "db.b": "all"}
    assert _topics(**{"sink.tableId-to-topic.mapping": "db.a:ta", "topic": "one"}) == {"db.a": "one", "db.b": "one"}
    assert _spec(**{"sink.tableId-to-topic.mapping": "db.a:ta"}).topics.names == ("db.b", "ta")


def test_headers_name_the_tables_parts_and_carry_the_custom_ones():
    spec = _spec(**{"sink.add-tableId-to-header-enabled": "true", "sink.custom-header": "k1:v1, k2:v2"})
    assert spec.tables.tables[0].headers == (
        ("namespace", b""),
        ("schemaName", b"db"),
        ("tableName", b"a"),
        ("k1", b"v1"),
        ("k2", b"v2"),
    )
    assert _spec().tables.tables[0].headers == ()


MISTAKES = [
    ({"sink.table-id.column": "nope"}, "sink.table-id.column"),
    ({"sink.table-id.column": "id"}, "sink.table-id.column"),  # not a STRING
    ({"sink.table-id.key-fields": ""}, "sink.table-id.key-fields"),
    ({"sink.table-id.key-fields": "db.a:id;db.c:id"}, "sink.table-id.key-fields"),
    ({"sink.table-id.key-fields": "db.a;db.b:id"}, "sink.table-id.key-fields"),
    ({"sink.table-id.key-fields": "db.a:nope;db.b:id"}, "sink.table-id.key-fields"),
    ({"sink.table-id.key-fields": "db.a:sku;db.b:id"}, "sink.table-id.fields"),  # a key column the value lacks
    ({"sink.table-id.fields": "db.a:id,name;db.a:id;db.b:id,line"}, "sink.table-id.fields"),
    ({"sink.table-id.fields": "db.a:id,tid;db.b:id,line"}, "sink.table-id.fields"),
    ({"sink.tableId-to-topic.mapping": "db.a"}, "sink.tableId-to-topic.mapping"),
    ({"sink.tableId-to-topic.mapping": "db.(:t"}, "sink.tableId-to-topic.mapping"),
    ({"sink.tableId-to-topic.mapping": "db.a:bad topic"}, "sink.tableId-to-topic.mapping"),
    ({"sink.custom-header": "novalue"}, "sink.custom-header"),
    ({"sink.add-tableId-to-header-enabled": "yes"}, "sink.add-tableId-to-header-enabled"),
    ({"value.format": "maxwell-json"}, "value.format"),
    ({"value.format": "json"}, "value.format"),
    ({"key.format": "avro"}, "key.format"),
    ({"value.canal-json.ignore-parse-errors": "true"}, "value.canal-json.ignore-parse-errors"),
    ({"key.fields": "id"}, "key.fields"),
    ({"metadata.columns": "timestamp"}, "metadata.columns"),
    ({"sink.parallelism": "4"}, "sink.parallelism"),
]


@pytest.mark.parametrize(("more", "named"), MISTAKES, ids=[f"{i}-{n}" for i, (_, n) in enumerate(MISTAKES)])
def test_each_mistake_is_one_error_naming_the_option(more, named):
    with pytest.raises(OptionError) as caught:
        _spec(**more)
    assert f"'{named}'" in str(caught.value), str(caught.value)


def test_a_table_id_that_is_no_topic_name_must_be_mapped():
    options = BASE | {"sink.table-id.key-fields": "db a:id;db.b:id", "sink.table-id.fields": "db a:id;db.b:id"}
    with pytest.raises(OptionError, match=r"table 'db a' would be written to 'db a'.*'db a:my-topic'"):
        parse_write_spec({k.lower(): v for k, v in options.items()}, SCHEMA)
