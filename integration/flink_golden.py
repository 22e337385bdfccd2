"""The Flink golden corpus: bytes a real Apache Flink 2.2.1 wrote to Kafka, and the one command that regenerates it.

    integration/dev python -m integration.flink_golden            # all cases (a few minutes)
    integration/dev python -m integration.flink_golden json csv   # only the named cases (and the type mapping)
    integration/dev python -m integration.flink_golden --tables   # only the tables_* cases (flink_golden_tables.py)

Not part of CI: the files it writes are committed, and the tests compare the connector with them.

What it does: fetches on first use, into ~/.cache/pyspark-upsert-kafka/flink/ (PYSPARK_UPSERT_KAFKA_CACHE), a venv
with PyPI's apache-flink==2.2.1 (its pins clash with pyspark's: never the project's .venv) and the jars of
integration/flink/pom.xml (flink-sql-connector-kafka 5.0.0-2.2, flink-avro 2.2.1, avro 1.11.4, Jackson 2.14.3;
flink-json and flink-csv come with PyFlink's own lib/). It starts the project's Kafka broker (integration/kafka.py)
and Schema Registry (integration/registry.py, Apicurio), all on 127.0.0.1, and a PyFlink session
(integration/flink/golden_job.py, run by the Flink venv's python). For each case it creates the Flink table with a
real CREATE TABLE, writes the case's changes with Flink SQL (a changelog stream carrying each change's RowKind, and
an INSERT INTO ... SELECT of typed SQL literals), waits for the job, reads the table back with Flink itself (a
bounded scan, its changelog folded by key), consumes the topic with confluent-kafka and writes
tests/formats/golden/flink/<case>.json. Every wait has a timeout; the processes it started are stopped at the end.

Flink session settings: 'table.local-time-zone' = 'UTC', parallelism 1, 'table.exec.sink.upsert-materialize' =
'NONE'. Topics are created beforehand (3 partitions for upsert-kafka, 1 for the change envelopes,
retention.ms=-1); each record's Kafka timestamp is set through a `kafka_timestamp TIMESTAMP_LTZ(3) METADATA FROM
'timestamp'` column (fixed values: the output is deterministic, two runs give identical files). The changes
reach the sink as a retract stream: Flink's upsert-kafka writes UPDATE_BEFORE as a tombstone, as it does DELETE.

Confluent's Maven repository (https://packages.confluent.io/maven/) is tried on every run for
flink-avro-confluent-registry's kafka-schema-registry-client (integration/flink/pom-confluent.xml). Where it is
unreachable (it is on the machine this corpus was made on: "Unknown host packages.confluent.io"), Flink cannot run
its avro-confluent formats, so the avro_confluent case's bytes are written by confluent-kafka's own Python
AvroSerializer (auto-registering under <topic>-key / <topic>-value) with the schemas Flink derives for the table
(AvroSchemaConverter.convertToSchema, what Flink's avro-confluent format registers), its table is the changes folded
by key, and debezium-avro-confluent is left out. Each file names its writer.

Each <case>.json:
- flink, case, writer ("flink" | "confluent-kafka AvroSerializer with Flink's derived schema")
- ddl: the CREATE TABLE statement run, with '{topic}', '{bootstrap}' (and '{registry}') placeholders
- columns [{name, type}] in table order, primary_key [names], partitions
- avro_schemas {key, value}: Flink's derived Avro schemas of the key and value rows (avro formats; else null)
- registered {subject: schema}: what the registry holds after the write (avro-confluent only)
- refused [{column, type, error}]: columns of the type matrix that Flink refused for the format (with its error)
- records [{partition, offset, key, value, timestamp, headers}]: the topic, in offset order per partition; key and
  value as hex (null for none), timestamp in epoch ms, headers [[name, hex]]
- changes [{kind, row}]: the rows Flink was given, in order (kind "+I" | "-U" | "+U" | "-D")
- table [row]: Flink's final table, read back by Flink, sorted by the primary key; null where Flink could not read
  its own records back, with table_error {error, causes, root_frames} (Flink's exception chain)
- notes: what else a reader of the file must know (present only when there is something)
Values are in the canonical form of tests/support/flink_golden.py (`canonical(value, flink_type_text)`; its
docstring has the table): null; booleans; integers as numbers; FLOAT/DOUBLE as the Python float's repr in a
string ("nan", "inf", "-0.0"); DECIMAL as a plain string with the scale's digits; BYTES as hex; DATE "YYYY-MM-DD";
TIME "HH:MM:SS[.ffffff]"; TIMESTAMP "YYYY-MM-DDTHH:MM:SS.ffffff"; TIMESTAMP_LTZ epoch microseconds; ARRAY lists;
MAP sorted [key, value] pairs; ROW objects.

avro_type_mapping.json: AvroSchemaConverter.convertToSchema for each single Flink type, NULL and NOT NULL, legacy
timestamp mapping true and false (one entry each), at top level and inside ROW / ARRAY / MAP (keys top, row, array,
map: the schema, or {"error": ...} where Flink refuses).

time_json.json, time_csv.json, time_avro.json, time_avro_confluent.json, time_debezium_json.json: Flink's TIME
(`TIME`, `TIME(0)`, `TIME(3)`, `TIME(3) NOT NULL`, `TIME(6)`) as the value format's columns, a json key. Flink 2.2.1
resolves each declared TIME(p) as TIME(0) (DESCRIBE), its runtime value being milliseconds of the day: json writes
whole seconds, csv the fraction (read back truncated to seconds), avro time-millis (its table keeps the millis).

tables_normalize.json, tables_aggregate.json, tables_temporal_join.json (integration/flink_golden_tables.py, whose
docstring has their shape; `--tables` regenerates only them, not avro_type_mapping.json): the topic as a table inside
a stream. Flink's sinks write the records (json keys and values, one partition per topic, Kafka timestamps set
through writer tables), then Flink's queries run over them and every row they emit is recorded with its RowKind in
emission order, with Flink's plan: `SELECT * FROM users` through ChangelogNormalize (default settings and with
'table.exec.state.ttl'), a GROUP BY over an upsert table (its changelog, and the records of its upsert-kafka sink),
the event-time temporal join of Flink's docs (LEFT and inner) and Flink's error for it on processing time. These
files have no top-level "ddl" (tests/formats/test_flink_golden.py's cases are the files with one). They run last
(some of their queries change a session setting for themselves, and put it back).

The Flink session, the fetching of Flink and what every case shares are integration/flink_session.py's; the tables_*
cases integration/flink_golden_tables.py's. Test/dev tooling only: the product never imports this module.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import shutil
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from integration.flink_golden_tables import dump_tree, run_tables_case, table_cases
from integration.flink_session import (
    BASE_TS,
    FLINK_VERSION,
    ROOT,
    FlinkJobError,
    FlinkSession,
    consume_all,
    create_topic,
    ensure_flink_jars,
    ensure_flink_venv,
    fold,
    log,
    micros,
    q,
    try_confluent_jars,
)
from integration.kafka import KafkaBroker
from integration.registry import SchemaRegistryServer
from tests.support.flink_golden import parse_type

OUT = ROOT / "tests" / "formats" / "golden" / "flink"
CONFLUENT_WRITER = "confluent-kafka AvroSerializer with Flink's derived schema"


# ---------------------------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    columns: list[tuple[str, str]]  # physical columns, in table order
    key: list[str]
    changes: list[dict[str, Any]]  # {"kind", "row"}, rows canonical, without kafka_timestamp
    options: dict[str, str]  # WITH options besides connector/topic/bootstrap
    connector: str = "upsert-kafka"
    partitions: int = 3
    table: str = ""
    probe: bool = False  # a type matrix: drop (and record) the value columns Flink refuses for the format
    headers: bool = False  # a kafka_headers METADATA column too
    avro: tuple[str, ...] = ()  # the roles whose Avro schema to record, with the legacy flag in avro_legacy
    avro_legacy: bool = True
    confluent: bool = False  # avro-confluent: written by Flink with the registry jars, else by confluent-kafka
    refused: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.table = self.table or self.name
        self.topic = "golden-" + self.name.replace("_", "-")

    def all_columns(self) -> list[tuple[str, str]]:
        meta = [("kafka_timestamp", "TIMESTAMP_LTZ(3)")]
        if self.headers:
            meta.append(("kafka_headers", "MAP<STRING, BYTES>"))
        return self.columns + meta

    def ddl(self) -> str:
        cols = [f"  {q(n)} {t}" for n, t in self.columns]
        cols.append("  `kafka_timestamp` TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'")
        if self.headers:
            cols.append("  `kafka_headers` MAP<STRING, BYTES> METADATA FROM 'headers'")
        cols.append(f"  PRIMARY KEY ({', '.join(q(k) for k in self.key)}) NOT ENFORCED")
        opts = {
            "connector": self.connector,
            "topic": "{topic}",
            "properties.bootstrap.servers": "{bootstrap}",
            **self.options,
        }
        with_ = ",\n".join(f"  '{k}' = '{v}'" for k, v in opts.items())
        return f"CREATE TABLE {q(self.table)} (\n" + ",\n".join(cols) + f"\n) WITH (\n{with_}\n)"

    def timed_changes(self) -> list[dict[str, Any]]:
        out = []
        for n, change in enumerate(self.changes):
            row = {c: change["row"].get(c) for c, _ in self.columns}
            row["kafka_timestamp"] = (BASE_TS + 1000 * n) * 1000  # canonical TIMESTAMP_LTZ: epoch microseconds
            if self.headers:
                row["kafka_headers"] = [["change", format(n, "02x")], ["source", "666c696e6b"]]
            out.append({"kind": change["kind"], "row": row})
        return out


# Value columns of the type matrix, the candidates: each format keeps those Flink accepts for it.
MATRIX_COLUMNS = [
    ("c_boolean", "BOOLEAN"),
    ("c_tinyint", "TINYINT"),
    ("c_smallint", "SMALLINT"),
    ("c_int", "INT"),
    ("c_bigint", "BIGINT"),
    ("c_float", "FLOAT"),
    ("c_double", "DOUBLE"),
    ("c_decimal_10_2", "DECIMAL(10, 2)"),
    ("c_decimal_38_18", "DECIMAL(38, 18)"),
    ("c_string", "STRING"),
    ("c_bytes", "BYTES"),
    ("c_date", "DATE"),
    ("c_timestamp_3", "TIMESTAMP(3)"),
    ("c_timestamp_6", "TIMESTAMP(6)"),
    ("c_timestamp_ltz_3", "TIMESTAMP_LTZ(3)"),
    ("c_timestamp_ltz_6", "TIMESTAMP_LTZ(6)"),
    ("c_row", "ROW<x INT NOT NULL, y STRING>"),
    ("c_array_int", "ARRAY<INT>"),
    ("c_array_string", "ARRAY<STRING>"),
    ("c_map", "MAP<STRING, INT>"),
    ("c_int_nn", "INT NOT NULL"),
    ("c_double_nn", "DOUBLE NOT NULL"),
    ("c_string_nn", "STRING NOT NULL"),
    ("c_decimal_nn", "DECIMAL(10, 2) NOT NULL"),
    ("c_timestamp_nn", "TIMESTAMP(3) NOT NULL"),
    ("c_row_nn", "ROW<x INT NOT NULL, y STRING> NOT NULL"),
]

# The logical rows of the type matrix, by label: A typical, B maxima, C minima, D special floats, E every nullable
# column null, F and G more edges; A2 and B2 replace A and B. One tuple per column, in LABELS order.
LABELS = ("A", "B", "C", "D", "E", "F", "G", "A2", "B2")
_TS3 = (
    "2024-02-29T12:34:56.789000", "9999-12-31T23:59:59.999000", "0001-01-01T00:00:00.000000",
    "1969-12-31T23:59:59.999000", None, "2100-01-01T00:00:00.123000", "1900-01-01T00:00:00.000000",
    "1970-01-01T00:00:00.000000", "2038-01-19T03:14:08.000000",
)  # fmt: skip
_TS6 = (
    "2024-02-29T12:34:56.789123", "9999-12-31T23:59:59.999999", "0001-01-01T00:00:00.000000",
    "1969-12-31T23:59:59.999999", None, "2100-01-01T00:00:00.123456", "1900-01-01T00:00:00.000001",
    "1970-01-01T00:00:00.000001", "2038-01-19T03:14:08.000001",
)  # fmt: skip
# fmt: off
_MATRIX_VALUES: dict[str, tuple[Any, ...]] = {
    "c_boolean": (True, True, False, False, None, True, False, False, True),
    "c_tinyint": (1, 127, -128, 0, None, 42, -1, 2, -2),
    "c_smallint": (2, 32767, -32768, 0, None, 4242, -1, 3, -3),
    "c_int": (3, 2147483647, -2147483648, 0, None, 424242, -1, 4, -4),
    "c_bigint": (4, 9223372036854775807, -9223372036854775808, 0, None, 4242424242424, -1, 5, -5),
    "c_float": ("1.5", "3.4028234663852886e+38", "-3.4028234663852886e+38", "nan", None, "1.401298464324817e-45",
                "-inf", "-0.0", "inf"),
    "c_double": ("2.25", "1.7976931348623157e+308", "-1.7976931348623157e+308", "nan", None, "5e-324", "-inf",
                 "-0.0", "inf"),
    "c_decimal_10_2": ("12345678.90", "99999999.99", "-99999999.99", "0.00", None, "1.00", "-12.30", "-0.01", "0.10"),
    "c_decimal_38_18": ("3.141592653589793238", "99999999999999999999.999999999999999999",
                        "-99999999999999999999.999999999999999999", "0.000000000000000000", None,
                        "12345678901234567890.123456789012345678", "-1.000000000000000000", "0.000000000000000001",
                        "-0.000000000000000001"),
    "c_string": ("hello", "Grüße, 世界 🌍", "", "quote ' double \" backslash \\ comma , semicolon ;", None,
                 "line\nbreak\ttab", "𝄞 U+1D11E", "hello again", " leading and trailing "),
    "c_bytes": ("00ff10", "", "00", "ffffffff", None, "7b2261223a317d", "80", "deadbeef", "0a0d22"),
    "c_date": ("2024-02-29", "9999-12-31", "0001-01-01", "1969-12-31", None, "2100-01-01", "1582-10-04",
               "1970-01-01", "2038-01-19"),
    "c_timestamp_3": _TS3,
    "c_timestamp_6": _TS6,
    "c_timestamp_ltz_3": tuple(None if v is None else micros(v) for v in _TS3),
    "c_timestamp_ltz_6": tuple(None if v is None else micros(v) for v in _TS6),
    "c_row": ({"x": 1, "y": "a"}, {"x": 2147483647, "y": ""}, {"x": -2147483648, "y": None}, None, None,
              {"x": 0, "y": "ü"}, {"x": -1, "y": "g"}, {"x": 2, "y": "a2"}, {"x": 3, "y": None}),
    "c_array_int": ([1, 2, 3], [], [None, -2147483648], None, None, [2147483647], [0, 0], [4], [5, None]),
    "c_array_string": (["a", "b"], [""], [], ["x", None], None, ["ü", "🌍"], None, ["c"], ["d", "e", "f"]),
    "c_map": ([["a", 1], ["b", 2]], [], [["k", None]], [["", 0]], None, [["ü", -1]], None, [["a", 3]],
              [["z", 2147483647]]),
    "c_int_nn": (10, 2147483647, -2147483648, 0, 0, 11, 12, 13, 14),
    "c_double_nn": ("0.5", "1.7976931348623157e+308", "-1.7976931348623157e+308", "nan", "0.0",
                    "2.2250738585072014e-308", "-inf", "-0.0", "inf"),
    "c_string_nn": ("a", "ß", "", "d", "", "f", "g", "a2", "b2"),
    "c_decimal_nn": ("1.00", "99999999.99", "-99999999.99", "0.00", "0.00", "0.01", "-0.01", "2.00", "3.00"),
    "c_timestamp_nn": (*_TS3[:4], "1970-01-01T00:00:00.000000", *_TS3[5:]),
    "c_row_nn": ({"x": 1, "y": None}, {"x": 2147483647, "y": "max"}, {"x": -2147483648, "y": "min"},
                 {"x": 0, "y": ""}, {"x": 0, "y": None}, {"x": 5, "y": "f"}, {"x": 6, "y": "g"},
                 {"x": 7, "y": "a2"}, {"x": 8, "y": "b2"}),
}
# fmt: on
# (kind, label of the key, label of the values): inserts, an upsert of a key without UPDATE_BEFORE, an
# UPDATE_BEFORE/UPDATE_AFTER pair, a DELETE (a tombstone), and a key inserted after the delete.
_MATRIX_CHANGES = [
    ("+I", 1, "A"),
    ("+I", 2, "B"),
    ("+I", 3, "C"),
    ("+I", 4, "D"),
    ("+I", 5, "E"),
    ("+I", 6, "F"),
    ("+U", 1, "A2"),
    ("-U", 2, "B"),
    ("+U", 2, "B2"),
    ("-D", 3, "C"),
    ("+I", 7, "G"),
]
_REGIONS = {1: "us-east", 2: "eu-west", 3: "ap-south", 4: "us-east", 5: "", 6: "sa-east-ü", 7: "eu-west"}


def matrix_case(
    name: str,
    fmt: str,
    options: dict[str, str],
    composite_key: bool = False,
    overrides: dict[str, dict[str, Any]] | None = None,
    **more: Any,
) -> Case:
    """The type matrix for a format used as key and value format of an upsert-kafka table; `overrides` replaces
    the values of some labels of some columns for this format (`{column: {label: value}}`)."""
    overrides = overrides or {}
    key_cols = [("region", "STRING"), ("id", "BIGINT")] if composite_key else [("id", "INT")]
    changes = []
    for kind, k, label in _MATRIX_CHANGES:
        row: dict[str, Any] = {"id": k * 10_000_000_000 if composite_key else k}
        if composite_key:
            row["region"] = _REGIONS[k]
        for col, _ in MATRIX_COLUMNS:
            row[col] = overrides.get(col, {}).get(label, _MATRIX_VALUES[col][LABELS.index(label)])
        changes.append({"kind": kind, "row": row})
    opts = {"key.format": fmt, "value.format": fmt, **options, "scan.bounded.mode": "latest-offset"}
    return Case(name, key_cols + MATRIX_COLUMNS, [c for c, _ in key_cols], changes, opts, probe=True, **more)


def _kinds(rows: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"kind": kind, "row": row} for kind, row in rows]


def raw_cases() -> list[Case]:
    opts = {"key.format": "raw", "value.format": "raw", "value.fields-include": "EXCEPT_KEY"}
    opts["scan.bounded.mode"] = "latest-offset"
    strings = _kinds(
        [
            ("+I", {"k": "a", "v": "hello"}),
            ("+I", {"k": "ü", "v": "Grüße, 世界 🌍"}),
            ("+I", {"k": "", "v": ""}),
            ("+I", {"k": "n", "v": None}),
            ("+U", {"k": "a", "v": "hello again"}),
            ("-D", {"k": "ü", "v": "Grüße, 世界 🌍"}),
        ]
    )
    blobs = _kinds(
        [
            ("+I", {"k": 1, "v": "00ff"}),
            ("+I", {"k": -1, "v": ""}),
            ("+I", {"k": 9223372036854775807, "v": "deadbeef"}),
            ("+I", {"k": 0, "v": None}),
            ("+U", {"k": 1, "v": "01"}),
            ("-D", {"k": -1, "v": ""}),
        ]
    )
    note = ["a null raw value is written as a null Kafka value, a tombstone: Flink's table has no row for its key"]
    return [
        Case("raw_string", [("k", "STRING"), ("v", "STRING")], ["k"], strings, opts, notes=list(note)),
        Case("raw_bytes", [("k", "BIGINT"), ("v", "BYTES")], ["k"], blobs, opts, notes=list(note)),
    ]


def pageviews_cases() -> list[Case]:
    cols = [("user_region", "STRING"), ("pv", "BIGINT"), ("uv", "BIGINT")]
    changes = _kinds(
        [
            ("+I", {"user_region": "us-east", "pv": 10, "uv": 3}),
            ("+I", {"user_region": "eu-west", "pv": 4, "uv": 1}),
            ("+U", {"user_region": "us-east", "pv": 12, "uv": 4}),
            ("-D", {"user_region": "eu-west", "pv": 4, "uv": 1}),
        ]
    )
    opts = {"key.format": "avro", "value.format": "avro", "scan.bounded.mode": "latest-offset"}
    table = "pageviews_per_region"
    return [
        Case("pageviews_per_region", cols, ["user_region"], changes, opts, table=table, avro=("key", "value")),
        Case(
            "pageviews_per_region_except_key", cols, ["user_region"], changes,
            {**opts, "value.fields-include": "EXCEPT_KEY"}, table=table, avro=("key", "value"),
        ),
    ]  # fmt: skip


CDC_COLUMNS = [
    ("id", "INT"),
    ("name", "STRING"),
    ("price", "DECIMAL(10, 2)"),
    ("ts", "TIMESTAMP(3)"),
    ("score", "DOUBLE"),
    ("flag", "BOOLEAN"),
]


def cdc_cases(confluent: bool) -> list[Case]:
    v1 = {"id": 1, "name": "scooter", "price": "3.14", "ts": "2024-01-01T10:00:00.123000", "score": "1.5"}
    v1 |= {"flag": True}
    v1b = {**v1, "name": "scooter v2", "price": "4.00", "score": "nan", "flag": False}
    v2 = {"id": 2, "name": "Grüße, 世界 🌍", "price": "-0.50", "ts": "1969-12-31T23:59:59.999000", "score": "-0.0"}
    v2 |= {"flag": False}
    v3 = {"id": 3, "name": None, "price": None, "ts": None, "score": None, "flag": None}
    v4 = {"id": 4, "name": "", "price": "99999999.99", "ts": "2100-01-01T00:00:00.000000", "score": "-inf"}
    v4 |= {"flag": True}
    changes = _kinds([("+I", v1), ("+I", v2), ("+I", v3), ("-U", v1), ("+U", v1b), ("-D", v2), ("+I", v4)])
    bounded = {"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}
    cases = []
    for fmt in ("debezium-json", "canal-json", "maxwell-json", "ogg-json"):
        opts = {"key.format": "json", "key.fields": "id", "value.format": fmt, **bounded}
        cases.append(Case(fmt.replace("-", "_"), CDC_COLUMNS, ["id"], changes, opts, connector="kafka", partitions=1))
    if confluent:
        opts = {"key.format": "avro-confluent", "key.avro-confluent.url": "{registry}", "key.fields": "id"}
        opts |= {"value.format": "debezium-avro-confluent", "value.debezium-avro-confluent.url": "{registry}"}
        cases.append(
            Case("debezium_avro_confluent", CDC_COLUMNS, ["id"], changes, {**opts, **bounded}, connector="kafka",
                 partitions=1, confluent=True)
        )  # fmt: skip
    return cases


# What Flink's csv cannot read back even with a null literal: a null ROW ("Row length mismatch") and an ARRAY of one
# empty string (an empty field: []). The csv cases Flink reads back replace them.
CSV_READABLE: dict[str, dict[str, Any]] = {
    "c_row": {"D": {"x": 0, "y": "d"}, "E": {"x": 0, "y": None}},
    "c_array_string": {"B": ["", "b"]},
}


def _csv_options(options: dict[str, str]) -> dict[str, str]:
    """The csv options for the key and the value format."""
    return {f"{role}.csv.{k}": v for role in ("key", "value") for k, v in options.items()}


# Flink's TIME (issue 36). Flink 2.2.1 resolves every TIME(p) of a CREATE TABLE as TIME(0) (DESCRIBE says so), yet
# its runtime value is milliseconds of the day and its avro carries them; its json writes whole seconds, its csv writes
# the fraction and reads it back truncated to the resolved TIME(0). TIME(6) is probed as the other columns are.
TIME_COLUMNS = [("t", "TIME"), ("t0", "TIME(0)"), ("t3", "TIME(3)"), ("t3_nn", "TIME(3) NOT NULL"), ("t6", "TIME(6)")]
_TIME_ROWS = {
    "A": ("12:34:56", "12:34:56", "12:34:56.789000", "00:00:00.001000", "12:34:56.789000"),
    "B": ("23:59:59", "23:59:59", "23:59:59.999000", "23:59:59.999000", "23:59:59.999000"),
    "C": ("00:00:00", "00:00:00", "00:00:00", "00:00:00", "00:00:00"),
    "D": (None, None, None, "12:00:00.100000", None),
    "E": ("01:02:03", "01:02:03", "00:00:00.120000", "01:02:03.050000", "00:00:00.120000"),
    "A2": ("07:08:09", "07:08:09", "07:08:09.010000", "07:08:09", "07:08:09.010000"),
    "B2": ("18:00:00", "18:00:00", "18:00:00.500000", "18:00:00.500000", "18:00:00.500000"),
}
_TIME_CHANGES = [("+I", 1, "A"), ("+I", 2, "B"), ("+I", 3, "C"), ("+I", 4, "D"), ("+I", 5, "E"), ("+U", 1, "A2"),
                 ("-U", 2, "B"), ("+U", 2, "B2"), ("-D", 3, "C")]  # fmt: skip


def time_cases() -> list[Case]:
    changes = [
        {"kind": kind, "row": {"id": k, **dict(zip([c for c, _ in TIME_COLUMNS], _TIME_ROWS[label], strict=True))}}
        for kind, k, label in _TIME_CHANGES
    ]
    bounded = {"scan.bounded.mode": "latest-offset"}
    cols = [("id", "INT"), *TIME_COLUMNS]

    def case(name: str, fmt: str, options: dict[str, str], **more: Any) -> Case:
        opts = {"key.format": "json", "value.format": fmt, **options, **bounded}
        return Case(name, cols, ["id"], [dict(c, row=dict(c["row"])) for c in changes], opts, probe=True, **more)

    cases = [
        case("time_json", "json", {}),
        case("time_csv", "csv", {"value.csv.null-literal": "\\N"}),
        case("time_avro", "avro", {}, avro=("value",)),
        case("time_avro_confluent", "avro-confluent",
             {"key.format": "avro-confluent", "key.avro-confluent.url": "{registry}",
              "value.avro-confluent.url": "{registry}"}, avro=("key", "value"), confluent=True),
    ]  # fmt: skip
    env = {"scan.startup.mode": "earliest-offset"}
    cases.append(
        Case("time_debezium_json", cols, ["id"], [dict(c, row=dict(c["row"])) for c in changes],
             {"key.format": "json", "key.fields": "id", "value.format": "debezium-json", **env, **bounded},
             connector="kafka", partitions=1)
    )  # fmt: skip
    return cases


def all_cases(confluent: bool) -> list[Case]:
    cases = [
        matrix_case(
            "json", "json", {}, headers=True,
            notes=["Flink 2.2.1's json writes TIME(3) as 'HH:mm:ss': the milliseconds are lost (see table)"],
        ),
        # Flink's csv writes a null as an empty field and cannot read that back into a number: its table_error
        # records it ('csv.null-literal' does not help: a null ROW then fails with "Row length mismatch").
        matrix_case("csv", "csv", {}, composite_key=True),
        # The same matrix as Flink can read it back: a null literal, no null ROW and no ARRAY of one empty string.
        matrix_case("csv_null_literal", "csv", _csv_options({"null-literal": "\\N"}), composite_key=True,
                    overrides=CSV_READABLE),
        # Every other option Flink's csv writer has: which strings Jackson quotes depends on the field delimiter.
        matrix_case(
            "csv_options", "csv",
            _csv_options({
                "field-delimiter": "|", "quote-character": "''", "escape-character": "\\",
                "array-element-delimiter": ",", "null-literal": "NULL",
                "write-bigdecimal-in-scientific-notation": "true",
            }),
            composite_key=True, overrides=CSV_READABLE,
        ),
        matrix_case("avro", "avro", {}, avro=("key", "value")),
        matrix_case(
            "avro_timestamp_mapping_v2", "avro",
            {"key.avro.timestamp_mapping.legacy": "false", "value.avro.timestamp_mapping.legacy": "false"},
            composite_key=True, avro=("key", "value"), avro_legacy=False,
            notes=[
                "Flink 2.2.1 declares TIMESTAMP(6) as local-timestamp-micros and TIMESTAMP_LTZ(6) as "
                "timestamp-micros but writes (and reads back) epoch MILLISECONDS in those longs: the "
                "microseconds are lost and a reader that trusts the schema is off by a factor of 1000"
            ],
        ),
        matrix_case(
            "avro_confluent", "avro-confluent",
            {"key.avro-confluent.url": "{registry}", "value.avro-confluent.url": "{registry}"},
            avro=("key", "value"), confluent=True,
        ),
    ]  # fmt: skip
    return cases + raw_cases() + pageviews_cases() + cdc_cases(confluent) + time_cases()


# ---------------------------------------------------------------------------------------------------------------
# Running a case


def diff_note(expected: list[dict[str, Any]], table: list[dict[str, Any]], key: list[str]) -> str:
    """Where Flink's table differs from the changes folded by key (what a lossless round trip would give)."""
    want = {tuple(r[c] for c in key): r for r in expected}
    got = {tuple(r[c] for c in key): r for r in table}
    parts = []
    if set(want) - set(got):
        parts.append(f"keys missing from Flink's table: {sorted(set(want) - set(got))}")
    if set(got) - set(want):
        parts.append(f"keys only in Flink's table: {sorted(set(got) - set(want))}")
    columns: dict[str, int] = {}
    for k in set(want) & set(got):
        for c, v in want[k].items():
            if got[k].get(c) != v:
                columns[c] = columns.get(c, 0) + 1
    if columns:
        parts.append("columns whose values differ: " + ", ".join(f"{c} ({n} rows)" for c, n in sorted(columns.items())))
    return "table differs from the changes folded by key: " + "; ".join(parts)


class Runner:
    def __init__(self, flink: FlinkSession, bootstrap: str, registry: str | None, flink_confluent: bool) -> None:
        self.flink, self.bootstrap, self.registry = flink, bootstrap, registry
        self.flink_confluent = flink_confluent
        self.done: dict[str, dict[str, Any]] = {}  # the files written so far, by case

    def render(self, text: str, topic: str) -> str:
        text = text.replace("{topic}", topic).replace("{bootstrap}", self.bootstrap)
        return text.replace("{registry}", self.registry or "")

    def probe(self, case: Case) -> None:
        """Drop the value columns Flink refuses for the case's formats, recording its error for each."""
        probe_opts = case.options
        if case.confluent and not self.flink_confluent:
            # No avro-confluent factory here: its converter is the avro format's with the legacy mapping.
            probe_opts = {
                k.replace("avro-confluent", "avro"): v.replace("avro-confluent", "avro")
                for k, v in case.options.items()
                if ".url" not in k
            }
            case.notes.append(
                "refused: probed with Flink's avro format (legacy timestamp mapping), whose converters "
                "avro-confluent shares; Flink's avro-confluent factory itself could not run here"
            )
        kept = []
        for n, (col, typ) in enumerate(case.columns):
            if col in case.key:
                kept.append((col, typ))
                continue
            keys = [c for c in case.columns if c[0] in case.key]
            probe = Case(f"probe_{case.name}_{n}", [*keys, (col, typ)], case.key, [], probe_opts, table="")
            nullable = typ.removesuffix(" NOT NULL")
            values = ", ".join([*(f"CAST(NULL AS {t})" for _, t in keys), f"CAST(NULL AS {nullable})"])
            ddl = self.render(probe.ddl(), "golden-probe")
            self.flink.request("sql", statements=[ddl])
            try:
                stmt = f"INSERT INTO {q(probe.table)} SELECT {values}, CAST(NULL AS TIMESTAMP_LTZ(3))"
                self.flink.request("explain", statement=stmt)
                kept.append((col, typ))
            except FlinkJobError as e:
                case.refused.append({"column": col, "type": typ, "error": e.answer["error"]})
                log(f"  {case.name}: Flink refuses {col} {typ}: {e.answer['error'][:160]}")
            finally:
                self.flink.request("sql", statements=[f"DROP TABLE {q(probe.table)}"])
        dropped = {r["column"] for r in case.refused}
        case.columns = kept
        for change in case.changes:
            change["row"] = {k: v for k, v in change["row"].items() if k not in dropped}

    def run(self, case: Case) -> dict[str, Any]:
        started = time.monotonic()
        flink_writes = not case.confluent or self.flink_confluent
        if case.probe:
            self.probe(case)
        create_topic(self.bootstrap, case.topic, case.partitions)
        ddl = case.ddl()
        self.flink.request("sql", statements=[f"DROP TABLE IF EXISTS {q(case.table)}", self.render(ddl, case.topic)])
        columns = [{"name": n, "type": t} for n, t in case.all_columns()]
        changes = case.timed_changes()
        value_cols = [n for n, _ in case.columns]
        if case.options.get("value.fields-include") == "EXCEPT_KEY":
            value_cols = [n for n in value_cols if n not in case.key]
        schemas: dict[str, Any] = {"key": None, "value": None}
        if case.avro:
            types = self.flink.request("row_types", table=case.table, key=case.key, value=value_cols)
            for role in case.avro:
                schemas[role] = self.flink.request("avro_schema", type=types[role], legacy=case.avro_legacy)["schema"]
        if flink_writes:
            writer = "flink"
            answer = self.flink.request("write", timeout=200, table=case.table, columns=columns, changes=changes)
            log(f"  {case.name}: Flink wrote {len(changes)} changes in {answer['seconds']} s")
        else:
            writer = CONFLUENT_WRITER
            self.write_with_confluent(case, changes, schemas)
        records = consume_all(self.bootstrap, case.topic, case.partitions)
        table_error = None
        if flink_writes:
            query = f"SELECT * FROM {q(case.table)}"
            try:
                read = self.flink.request("read", timeout=200, query=query, columns=columns, timeout_s=150)
                table = fold(read["rows"], case.key)
                log(f"  {case.name}: Flink read back {len(read['rows'])} changes in {read['seconds']} s")
            except FlinkJobError as e:  # Flink cannot read back what it wrote: recorded, not hidden
                table, table_error = None, {k: e.answer[k] for k in ("error", "causes", "root_frames") if k in e.answer}
                log(f"  {case.name}: Flink could not read its own records back: {e.answer['error']}")
        else:
            table = fold(changes, case.key)
            case.notes.append("table: the changes folded by key (Flink cannot read avro-confluent here)")
        if "avro" in case.options.get("value.format", "") and schemas["value"] is not None:
            check_avro(case, records, schemas)
        self.flink.request("sql", statements=[f"DROP TABLE {q(case.table)}"])
        registered = self.registered(case.topic) if case.confluent else None
        if case.confluent and not flink_writes and "avro" in self.done:
            case.notes.append(same_payloads(records, self.done["avro"]["records"]))
        if table is not None and table != fold(changes, case.key):
            case.notes.append(diff_note(fold(changes, case.key), table, case.key))
        out: dict[str, Any] = {
            "flink": FLINK_VERSION,
            "case": case.name,
            "writer": writer,
            "ddl": ddl,
            "columns": columns,
            "primary_key": case.key,
            "partitions": case.partitions,
            "avro_schemas": schemas,
        }
        if registered is not None:
            out["registered"] = registered
        if case.probe:
            out["refused"] = case.refused
        if case.notes:
            out["notes"] = case.notes
        out |= {"records": records, "changes": changes, "table": table}
        if table_error:
            out["table_error"] = table_error
        self.done[case.name] = out
        log(f"  {case.name}: {len(records)} records, {len(table or [])} rows, {time.monotonic() - started:.0f} s")
        return out

    def registered(self, topic: str) -> dict[str, Any]:
        """{subject: the schema the registry holds for it} for the topic's key and value subjects."""
        out = {}
        for subject in (f"{topic}-key", f"{topic}-value"):
            url = f"{self.registry}/subjects/{subject}/versions/latest"
            with urllib.request.urlopen(url, timeout=10) as r:
                got = json.loads(r.read())
            out[subject] = json.loads(got["schema"])
        return out

    def write_with_confluent(self, case: Case, changes: list[dict[str, Any]], schemas: dict[str, Any]) -> None:
        """The fallback writer of avro-confluent (see the module's docstring): confluent-kafka's AvroSerializer
        with Flink's derived schemas, auto-registered under <topic>-key / <topic>-value; records partitioned by
        the Java client's murmur2 on the key bytes and, as Flink's upsert-kafka sink does with these changes (see
        the other cases' records), UPDATE_BEFORE and DELETE written as tombstones."""
        from confluent_kafka import Producer
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        assert self.registry is not None
        client = SchemaRegistryClient({"url": self.registry})
        conf = {"auto.register.schemas": True}
        keys = AvroSerializer(client, json.dumps(schemas["key"]), conf=conf)
        values = AvroSerializer(client, json.dumps(schemas["value"]), conf=conf)
        types = dict(case.all_columns())
        key_ctx = SerializationContext(case.topic, MessageField.KEY)
        value_ctx = SerializationContext(case.topic, MessageField.VALUE)
        producer = Producer({"bootstrap.servers": self.bootstrap, "partitioner": "murmur2_random", "linger.ms": 0})
        for change in changes:
            row = {c: to_avro_python(change["row"][c], types[c]) for c, _ in case.columns}
            key = keys({c: row[c] for c in case.key}, key_ctx)
            value = None if change["kind"] in ("-U", "-D") else values(row, value_ctx)
            producer.produce(case.topic, key=key, value=value, timestamp=change["row"]["kafka_timestamp"] // 1000)
            producer.flush(30)  # one at a time: offsets in change order
        if producer.flush(30):
            raise TimeoutError("the confluent-kafka producer did not deliver in 30 s")


def to_avro_python(value: Any, flink_type: str | Any) -> Any:
    """A canonical value as the Python value fastavro writes for Flink's derived schema (logical types as the
    numbers Flink writes: epoch days, millis of the day, epoch millis or micros)."""
    t = parse_type(flink_type) if isinstance(flink_type, str) else flink_type
    if value is None:
        return None
    r = t.root
    if r in ("FLOAT", "DOUBLE"):
        return float(value)
    if r == "DECIMAL":
        import decimal

        return decimal.Decimal(value)
    if r in ("VARBINARY", "BINARY"):
        return bytes.fromhex(value)
    if r == "DATE":
        return (dt.date.fromisoformat(value) - dt.date(1970, 1, 1)).days
    if r == "TIME":
        tm = dt.time.fromisoformat(value)
        return ((tm.hour * 60 + tm.minute) * 60 + tm.second) * 1000 + tm.microsecond // 1000
    if r == "TIMESTAMP":
        epoch_us = micros(value)
        return epoch_us // 1000 if (t.precision or 6) <= 3 else epoch_us
    if r == "TIMESTAMP_LTZ":
        return value // 1000 if (t.precision or 6) <= 3 else value
    if r == "ARRAY":
        return [to_avro_python(v, t.element) for v in value]
    if r == "MAP":
        return {k: to_avro_python(v, t.value) for k, v in value}
    if r == "ROW":
        return {n: to_avro_python(value.get(n), ft) for n, ft in t.fields}
    return value


def same_payloads(confluent: list[dict[str, Any]], flink_avro: list[dict[str, Any]]) -> str:
    """Compare the fallback's records with those Flink's plain avro format wrote for the same changes (matched by
    their Kafka timestamps): the payload after Confluent's 5-byte header (magic 0, schema id) should be the same."""
    theirs = {r["timestamp"]: r for r in flink_avro}
    differ = []
    for rec in confluent:
        other = theirs.get(rec["timestamp"])
        key = rec["key"] and rec["key"][10:]
        value = rec["value"] and rec["value"][10:]
        if other is None or other["key"] != key or other["value"] != value:
            differ.append(rec["timestamp"])
    if differ or len(confluent) != len(flink_avro):
        return f"key/value payloads past the 5-byte header DIFFER from the avro case's (Flink's) at {differ}"
    return (
        "checked: every key and value past Confluent's 5-byte header (magic byte 0, schema id) is byte-identical "
        "to the record Flink's avro format wrote for the same change in the avro case"
    )


def check_avro(case: Case, records: list[dict[str, Any]], schemas: dict[str, Any]) -> None:
    """Every key and value decodes with Flink's derived schema to its last byte (confluent framing stripped)."""
    import fastavro

    parsed = {role: fastavro.parse_schema(s) for role, s in schemas.items() if s is not None}
    for rec in records:
        for role in parsed:
            data = rec[role]
            if data is None:
                continue
            buf = io.BytesIO(bytes.fromhex(data)[5:] if case.confluent else bytes.fromhex(data))
            try:
                fastavro.schemaless_reader(buf, parsed[role], None)
            except Exception as e:
                raise AssertionError(f"{case.name}: a {role} does not decode with {schemas[role]}: {data}") from e
            if buf.read():
                raise AssertionError(f"{case.name}: a {role} has bytes past Flink's schema: {data}")


# ---------------------------------------------------------------------------------------------------------------
# Flink's Avro type mapping, type by type

MAPPING_TYPES = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)", "DECIMAL(38, 18)",
    "CHAR(3)", "VARCHAR(10)", "STRING", "BINARY(4)", "BYTES", "DATE", "TIME(0)", "TIME(3)", "TIME(6)",
    "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(6)",
    "TIMESTAMP_LTZ(9)", "ROW<a INT, b STRING>", "ARRAY<INT>", "MAP<STRING, INT>", "MAP<INT, STRING>",
    "MULTISET<STRING>",
]  # fmt: skip
_POSITIONS = {"top": "{t}", "row": "ROW<f {t}> NOT NULL", "array": "ARRAY<{t}> NOT NULL"}
_POSITIONS["map"] = "MAP<STRING, {t}> NOT NULL"


def avro_type_mapping(flink: FlinkSession) -> dict[str, Any]:
    entries = []
    for base in MAPPING_TYPES:
        for nullable in (True, False):
            t = base if nullable else f"{base} NOT NULL"
            for legacy in (True, False):
                entry: dict[str, Any] = {"type": t, "legacy": legacy}
                for position, shape in _POSITIONS.items():
                    try:
                        got = flink.request("avro_schema", type=shape.format(t=t), legacy=legacy)["schema"]
                        entry[position] = got
                    except FlinkJobError as e:
                        entry[position] = {"error": e.answer["error"]}
                entries.append(entry)
    return {
        "flink": FLINK_VERSION,
        "what": f"AvroSchemaConverter.convertToSchema(type, legacy) of flink-avro {FLINK_VERSION} for each type "
        "(parsed by LogicalTypeParser), in each position: top (the type alone), row (as field f of a ROW NOT NULL), "
        "array (as element of an ARRAY NOT NULL), map (as value of a MAP<STRING, type> NOT NULL); "
        '{"error": ...} where Flink refuses',
        "positions": _POSITIONS,
        "entries": entries,
    }


# ---------------------------------------------------------------------------------------------------------------
# Output


def dump(doc: dict[str, Any]) -> str:
    """JSON with one top-level key per line and one list item per line: small and diff-friendly."""
    lines = ["{"]
    items = list(doc.items())
    for i, (k, v) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(v, list) and v:
            inner = ",\n".join("  " + json.dumps(x, ensure_ascii=False) for x in v)
            lines.append(f"{json.dumps(k)}: [\n{inner}\n]{comma}")
        else:
            lines.append(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def servers() -> Iterator[tuple[str, str]]:
    broker, registry = KafkaBroker(), SchemaRegistryServer()
    try:
        broker.start()
        log(f"Kafka up at {broker.bootstrap_servers}")
        registry.start()
        log("Schema registry up")
        yield broker.bootstrap_servers, registry.url
    finally:
        registry.stop()
        broker.stop()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(args):
        print(__doc__)
        return 0
    table_names = {c.name for c in table_cases()}
    only = {a for a in args if a != "--tables"} | (table_names if "--tables" in args else set())
    started = time.monotonic()
    python = ensure_flink_venv()
    jars = ensure_flink_jars()
    confluent_jars, why = try_confluent_jars()
    if confluent_jars:
        log("Confluent's Maven repository reachable: Flink writes avro-confluent itself")
    else:
        log(f"Confluent's Maven repository unreachable ({why}): avro_confluent by confluent-kafka's AvroSerializer")
    cases = [c for c in all_cases(bool(confluent_jars)) if not only or c.name in only]
    tables = [c for c in table_cases() if not only or c.name in only]
    unknown = only - {c.name for c in all_cases(bool(confluent_jars))} - table_names
    if unknown:
        print(f"unknown cases: {sorted(unknown)}", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="flink-golden-"))
    with servers() as (bootstrap, registry):
        flink = FlinkSession(python, jars + confluent_jars, workdir)
        try:
            log(f"Flink {FLINK_VERSION} session up (log {flink.log_path})")
            if cases or not only:
                (OUT / "avro_type_mapping.json").write_text(dump(avro_type_mapping(flink)))
            runner = Runner(flink, bootstrap, registry, bool(confluent_jars))
            for case in cases:
                log(f"case {case.name}")
                (OUT / f"{case.name}.json").write_text(dump(runner.run(case)))
            for table_case in tables:  # last: some of their queries change a session setting for a while
                log(f"case {table_case.name}")
                (OUT / f"{table_case.name}.json").write_text(dump_tree(run_tables_case(flink, bootstrap, table_case)))
        finally:
            flink.close()
    shutil.rmtree(workdir, ignore_errors=True)
    log(f"done in {time.monotonic() - started:.0f} s: {len(cases) + len(tables)} cases in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
