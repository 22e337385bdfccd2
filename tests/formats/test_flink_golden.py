"""Byte for byte with Flink, proved on bytes Flink 2.2.1 itself wrote (tests/formats/golden/flink/, made by
`integration/dev python -m integration.flink_golden`): each case's records, produced as they are into a fresh topic
of the same partitions, read back through `flink_table(<Flink's own statement>)` as Flink's table; and Flink's
changes, written through the same table, give Flink's records: the same partitions, keys and values, in order.

avro-confluent records carry the schema id of the registry Flink wrote to: the test registers Flink's schema in the
session's registry and puts that id in the 5-byte header (the Avro body is Flink's, untouched); its writes are
compared after the header, and the schema they register with Flink's.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from pyspark.sql import Row
from pyspark.sql.types import StringType, StructField, StructType
from pyspark_upsert_kafka import OptionError, flink_table
from pyspark_upsert_kafka.spark_internals import TimeType

from integration.flink_golden import all_cases
from tests.support.flink_golden import FlinkType, canonical, parse_type
from tests.support.kafka_io import client_config, consume_messages

GOLDEN = Path(__file__).parent / "golden" / "flink"
CASES = sorted(p for p in GOLDEN.glob("*.json") if "ddl" in json.loads(p.read_text()))
# Every case the generator writes is here, so that a file lost or a glob gone wrong fails collection rather than
# leaving cases untested (debezium_avro_confluent only where Flink itself could write avro-confluent).
_found = {p.stem for p in CASES}
assert {c.name for c in all_cases(confluent=False)} <= _found <= {c.name for c in all_cases(confluent=True)}, (
    f"the Flink golden cases in {GOLDEN} are not the generator's (integration/flink_golden.py): {sorted(_found)}"
)
UTC = dt.timezone.utc
# Flink's records carry timestamps of 2024: the default retention (7 days) would let the broker delete them at once.
KEEP_OLD_RECORDS = {"retention.ms": "-1"}


def _case(path: Path) -> dict:
    return json.loads(path.read_text())


class _Registry:
    """The session's registry, started only for the cases that use one (avro-confluent)."""

    def __init__(self, request: pytest.FixtureRequest, case: dict) -> None:
        self.url = request.getfixturevalue("registry_url") if "{registry}" in case["ddl"] else ""
        self.client = SchemaRegistryClient({"url": self.url, "timeout": 20}) if self.url else None

    def register(self, subject: str, schema: dict) -> int:
        return self.client.register_schema(subject, Schema(json.dumps(schema), "AVRO"))

    def latest(self, subject: str) -> dict:
        return json.loads(self.client.get_latest_version(subject).schema.schema_str)


def _statement(case: dict, topic: str, bootstrap: str, registry_url: str) -> str:
    return case["ddl"].replace("{topic}", topic).replace("{bootstrap}", bootstrap).replace("{registry}", registry_url)


def _types(case: dict) -> dict[str, FlinkType]:
    return {c["name"]: parse_type(c["type"]) for c in case["columns"]}


# -- Spark's values <-> the corpus's canonical form ------------------------------------------------------------


def _from_spark(value: object, t: FlinkType) -> object:
    """Spark's Python value in canonical()'s terms: a TIMESTAMP (Flink's TIMESTAMP_LTZ) comes as a naive datetime in
    this process's local zone, made aware here; the rest as Spark gives it."""
    if value is None:
        return None
    if t.root == "TIMESTAMP_LTZ":
        return value.astimezone(UTC)
    if t.root == "ROW":
        return {name: _from_spark(value[name], ft) for name, ft in t.fields}
    if t.root == "ARRAY":
        return [_from_spark(v, t.element) for v in value]
    if t.root == "MAP":
        return {_from_spark(k, t.key): _from_spark(v, t.value) for k, v in value.items()}
    return value


def _to_spark(value: object, t: FlinkType) -> object:
    """A canonical value as the Python value Spark takes for the column (the inverse of canonical())."""
    if value is None:
        return None
    root = t.root
    if root in ("FLOAT", "DOUBLE"):
        return float(value)
    if root == "DECIMAL":
        return Decimal(value)
    if root in ("BINARY", "VARBINARY"):
        return bytearray.fromhex(value)
    if root == "DATE":
        return dt.date.fromisoformat(value)
    if root == "TIME":
        return dt.time.fromisoformat(value)
    if root == "TIMESTAMP":
        return dt.datetime.fromisoformat(value)
    if root == "TIMESTAMP_LTZ":
        return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=value)
    if root == "ROW":
        return Row(**{name: _to_spark(value[name], ft) for name, ft in t.fields})
    if root == "ARRAY":
        return [_to_spark(v, t.element) for v in value]
    if root == "MAP":
        return {_to_spark(k, t.key): _to_spark(v, t.value) for k, v in value}
    return value


# -- the Kafka side ------------------------------------------------------------------------------------------


def _replay(case: dict, topic: str, bootstrap: str, registry) -> None:
    """Flink's records into `topic`, each in its partition with its timestamp and headers, in offset order."""
    ids = _registered_ids(case, topic, registry)
    producer = Producer(client_config(bootstrap, **{"enable.idempotence": True}))
    for r in case["records"]:
        key, value = _hex(r["key"]), _hex(r["value"])
        if ids:
            key, value = _with_id(key, ids.get("key")), _with_id(value, ids.get("value"))
        headers = [(k, bytes.fromhex(v)) for k, v in r["headers"]]
        producer.produce(topic, value, key, partition=r["partition"], timestamp=r["timestamp"], headers=headers)
    assert producer.flush(30) == 0


def _registered_ids(case: dict, topic: str, registry) -> dict[str, int]:
    """avro-confluent: Flink's registered schemas under this topic's subjects, by role, with their ids here."""
    ids = {}
    for subject, schema in (case.get("registered") or {}).items():
        role = subject.rsplit("-", 1)[1]
        ids[role] = registry.register(f"{topic}-{role}", schema)
    return ids


def _hex(text: str | None) -> bytes | None:
    return None if text is None else bytes.fromhex(text)


def _with_id(payload: bytes | None, schema_id: int | None) -> bytes | None:
    if payload is None or schema_id is None:
        return payload
    assert payload[0] == 0, "not in Confluent's wire format"
    return payload[:1] + schema_id.to_bytes(4, "big") + payload[5:]


# -- the tests ------------------------------------------------------------------------------------------------


# Flink 2.2's avro with the legacy timestamp mapping off declares TIMESTAMP(4..6) / TIMESTAMP_LTZ(4..6) as micros and
# writes milliseconds in them: the connector refuses such a table, naming the way out (formats/avro/schema.py).
MILLIS_AS_MICROS = "declares as micros but writes as milliseconds"


# Flink's csv writes an empty string and a null alike, as an empty field (a STRING, an ARRAY element, a ROW field), and
# cannot read its own records back (the case `csv`, its `table_error`). This connector fails loudly on both sides
# instead: reading such a field into a NOT NULL column is a record error, and writing a value that would not read back
# as written is refused (formats/README.md, csv). With a null literal (the cases `csv_null_literal`, `csv_options`)
# Flink reads its records back, and this connector reads and writes them byte for byte.
CSV_AMBIGUOUS = {"read": "is NOT NULL, but the record has no value for it", "write": "which reads back as null"}


def _folded(case: dict) -> list[dict]:
    """The case's changes folded by key: the table Flink was given."""
    rows: dict[tuple, dict] = {}
    for change in case["changes"]:
        key = tuple(change["row"][k] for k in case["primary_key"])
        if change["kind"] in ("+I", "+U"):
            rows[key] = change["row"]
        else:
            rows.pop(key, None)
    return list(rows.values())


def _whole_seconds(value: str | None) -> str | None:
    """A canonical TIME without its fraction, as Flink's json writes it and its csv reads it back."""
    return None if value is None else value.split(".")[0]


def _expected_table(case: dict) -> list[dict]:
    """Flink's table, except where Flink's own read loses what it wrote: its csv reads a null ARRAY, written as the
    null literal, as an ARRAY of one null (the literal split as one element; the case's notes), and a TIME written
    with its fraction (`12:34:56.789`) as the whole second (Flink 2.2.1 resolves a declared TIME(3) as TIME(0), and its
    csv reader truncates to that). There this connector reads back what was written; anywhere else Flink's table must
    be what it was given."""
    if "'value.format' = 'csv'" not in case["ddl"]:
        return case["table"]
    types = _types(case)
    arrays = {c for c, t in types.items() if t.root == "ARRAY"}
    times = {c for c, t in types.items() if t.root == "TIME"}
    written = {tuple(r[k] for k in case["primary_key"]): r for r in _folded(case)}
    table = []

    def as_written(c: str, v: object, given: object) -> object:
        if c in arrays and v == [None] and given is None:
            return None
        if c in times and v == _whole_seconds(given):
            return given
        return v

    for row in case["table"]:
        given = written[tuple(row[k] for k in case["primary_key"])]
        table.append({c: as_written(c, v, given[c]) for c, v in row.items()})
    assert sorted(map(str, table)) == sorted(map(str, written.values())), "Flink's csv lost more than it is known to"
    return table


def _json_times(case: dict) -> set[str]:
    """The TIME columns of a case whose value format writes JSON (json and its change envelopes)."""
    json_formats = ("debezium-json", "canal-json", "maxwell-json", "ogg-json", "json")
    value_format = next((f for f in json_formats if f in case["ddl"]), "")
    json_value = f"'value.format' = '{value_format}'" in case["ddl"] and value_format
    return {c for c, t in _types(case).items() if t.root == "TIME"} if json_value else set()


# Flink's json writes a TIME as whole seconds (and reads a fraction as 0): a TIME with a fraction of a second is refused
# by this connector's json format (formats/time_text.py); the same rows without their fractions give Flink's bytes.
TIME_FRACTION = "has a fraction of a second, which Flink's json format writes as"


# A TIME column needs pyspark 4.1 or later (Spark's TIME type): on 4.0 the table is refused before any record moves,
# saying so (the compatibility run proves it there).
NO_TIME_TYPE = "this pyspark has no TIME type"


def _refused_without_time_type(case: dict, statement: str) -> bool:
    """Whether the case needs Spark's TIME type and this pyspark lacks it: then its table is refused, as asserted."""
    if TimeType is not None or all(t.root != "TIME" for t in _types(case).values()):
        return False
    with pytest.raises(OptionError, match=NO_TIME_TYPE):
        flink_table(statement)
    return True


def _millis_as_micros(case: dict) -> bool:
    legacy_off = "timestamp_mapping.legacy' = 'false'" in case["ddl"]
    return legacy_off and any(
        t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 3 for t in _types(case).values()
    )


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_records_flink_wrote_read_back_as_flinks_table(spark, new_topic, bootstrap, request, path):
    case = _case(path)
    golden_registry = _Registry(request, case)
    topic = new_topic(case["partitions"], **KEEP_OLD_RECORDS)
    _replay(case, topic, bootstrap, golden_registry)
    statement = _statement(case, topic, bootstrap, golden_registry.url)
    if _refused_without_time_type(case, statement):
        return
    table = flink_table(statement)
    if _millis_as_micros(case):
        with pytest.raises(Exception, match=MILLIS_AS_MICROS):
            table.read(spark).collect()
        return
    if case["table"] is None:  # Flink could not read its own records back
        assert "csv" in case["ddl"] and case["table_error"]
        with pytest.raises(Exception, match=CSV_AMBIGUOUS["read"]):
            table.read(spark).collect()
        return
    types = _types(case)
    rows = table.read(spark).collect()
    got = [{c: canonical(_from_spark(r[c], types[c]), types[c]) for c in types} for r in rows]
    key = case["primary_key"]
    assert sorted(got, key=lambda r: [str(r[k]) for k in key]) == sorted(
        _expected_table(case), key=lambda r: [str(r[k]) for k in key]
    )


def _null_raw_values(case: dict, table) -> list[dict]:
    """The changes Flink writes as a tombstone although they are upserts: a null in a `raw` value column (Flink's raw
    format writes a null value as no value). This connector refuses to write them, by design: a tombstone is a delete,
    and reading the topic back, in Flink too, loses the row."""
    if table.options.get("value.format") != "raw":
        return []
    (value,) = [c for c in table.columns.names if c not in table.options["key.fields"].split(";")
                and c not in table.metadata_types]  # fmt: skip
    return [c for c in case["changes"] if c["kind"] in ("+I", "+U") and c["row"][value] is None]


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_flinks_changes_written_here_are_flinks_records(spark, new_topic, bootstrap, request, path):
    case = _case(path)
    golden_registry = _Registry(request, case)
    topic = new_topic(case["partitions"], **KEEP_OLD_RECORDS)
    statement = _statement(case, topic, bootstrap, golden_registry.url)
    if _refused_without_time_type(case, statement):
        return
    table = flink_table(statement)
    types = _types(case)
    written = [c for c in types if c in table.columns.names and c not in table.virtual]
    schema = StructType([table.columns[c] for c in written] + [StructField("_change_type", StringType())])

    def frame(changes: list[dict]):
        rows = [(*(_to_spark(c["row"][n], types[n]) for n in written), c["kind"]) for c in changes]
        return spark.createDataFrame(rows, schema).coalesce(1)

    if _millis_as_micros(case) or case["table"] is None:
        with pytest.raises(Exception, match=MILLIS_AS_MICROS if case["table"] else CSV_AMBIGUOUS["write"]):
            table.write(frame(case["changes"])).mode("append").save()
        return

    times = _json_times(case)
    if any("." in (c["row"][t] or "") for c in case["changes"] for t in times):
        with pytest.raises(Exception, match=TIME_FRACTION):
            table.write(frame(case["changes"])).mode("append").save()
        whole = {t: _whole_seconds for t in times}
        case["changes"] = [dict(c, row={n: whole.get(n, lambda v: v)(v) for n, v in c["row"].items()})
                           for c in case["changes"]]  # fmt: skip

    refused = _null_raw_values(case, table)
    for change in refused:
        with pytest.raises(Exception, match="the raw value format writes no null"):
            table.write(frame([change])).mode("append").save()
    table.write(frame([c for c in case["changes"] if c not in refused])).mode("append").save()
    # By design, a before-image (-U) writes nothing here: its +U follows on the same key, so the table read back is
    # the same. Flink's upsert sink writes it as a tombstone when its planner lets a retraction through (as here,
    # with 'table.exec.sink.upsert-materialize' = 'NONE'); its `kafka` sink writes it as a delete envelope.
    upsert_sink = "'connector' = 'upsert-kafka'" in case["ddl"]
    before_images = [c for c in case["changes"] if c["kind"] == "-U" and upsert_sink]

    # The record timestamps are Flink's when the table writes its timestamp metadata column. The Confluent header
    # holds this registry's schema id, compared below through the schema it names; the partition is the key bytes'
    # (murmur2), that id included, so there each key's records are compared in order, wherever they are.
    stamped = "=timestamp" in table.write_options.get("metadata.columns", "")
    header = 5 if case.get("registered") else 0
    skipped = {c["row"]["kafka_timestamp"] // 1000 for c in refused + before_images}

    def body(payload: bytes | None) -> bytes | None:
        return None if payload is None else payload[header:]

    def in_order(records: list[tuple]) -> list[tuple]:  # a stable sort: each key's records keep their order
        return sorted((r[1:] for r in records), key=lambda r: r[0] or b"") if header else records

    got = in_order([(m.partition(), body(m.key()), body(m.value()), stamped and m.timestamp()[1])
                    for m in consume_messages(bootstrap, topic)])  # fmt: skip
    expected = in_order([
        (r["partition"], body(_hex(r["key"])), body(_hex(r["value"])), stamped and r["timestamp"])
        for r in case["records"]
        if r["timestamp"] not in skipped
    ])  # fmt: skip
    assert got == expected
    for subject, schema in (case.get("registered") or {}).items():
        role = subject.rsplit("-", 1)[1]
        assert golden_registry.latest(f"{topic}-{role}") == schema
