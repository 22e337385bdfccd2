"""The multi-table ingestion write (Flink CDC's Kafka pipeline sink, Realtime Compute's data ingestion sink): one
write whose rows belong to several tables, each row's table named by a column. Each table goes to its topic (option
`sink.tableId-to-topic.mapping`, else option `topic`, else the table id itself), keyed by its own primary key
(`key.format` json or csv), its value a change envelope of its own columns, key included (`value.format`
debezium-json or canal-json) that names the table as Flink CDC's serializers do; record headers `namespace`,
`schemaName`, `tableName` (`sink.add-tableId-to-header-enabled`) and `sink.custom-header`.

How it plugs in: the driver turns the options into a MultiTableSpec, the tables' topics and the layout of an
ordinary write of encoded records (key and value as raw bytes, each row's topic and headers as metadata columns),
which the usual writer performs with the write's other options: partitioning by the key bytes (murmur2), delivery
guarantees, exactly-once. Each task first turns its Arrow batches of table rows into such records (route).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import BinaryType, MapType, StringType, StructField, StructType

from ..errors import OptionError, RecordError
from ..formats import Codec, FormatOptionError, make_codec
from ..formats.codec import Role
from ..kernel.option_kinds import Option, OptionValues
from ..options.canonical import FORMAT_OPTION, canonical_options, changelog_column_name
from ..options.catalog import (
    FLINK_COLUMN_TYPES,
    KEY_FIELDS_PREFIX,
    KEY_FORMAT,
    METADATA_COLUMNS,
    VALUE_FIELDS_INCLUDE,
    VALUE_FORMAT,
)
from ..options.catalog import KEY_FIELDS as KEY_FIELDS_OPTION
from ..options.catalog import TOPIC as TOPIC_OPTION
from ..options.catalog_read import ASSIGN, TOPIC_PATTERN
from ..options.catalog_write import (
    SINK_ADD_TABLE_ID_TO_HEADER_ENABLED,
    SINK_CUSTOM_HEADER,
    SINK_PARALLELISM,
    SINK_TABLE_ID_COLUMN,
    SINK_TABLE_ID_FIELDS,
    SINK_TABLE_ID_KEY_FIELDS,
    SINK_TABLE_ID_TO_TOPIC_MAPPING,
)
from ..options.layout import Layout, parse_layout
from ..options.topics import TopicSelection
from ..spark_internals import to_arrow_schema
from .upsert_actions import classify

TABLE_COLUMN, KEY_FIELDS, FIELDS = SINK_TABLE_ID_COLUMN, SINK_TABLE_ID_KEY_FIELDS, SINK_TABLE_ID_FIELDS
MAPPING, ADD_HEADERS = SINK_TABLE_ID_TO_TOPIC_MAPPING, SINK_ADD_TABLE_ID_TO_HEADER_ENABLED
CUSTOM_HEADER = SINK_CUSTOM_HEADER
OPTIONS = (TABLE_COLUMN, KEY_FIELDS, FIELDS, MAPPING, ADD_HEADERS, CUSTOM_HEADER)
KEY_FORMATS, VALUE_FORMATS = ("json", "csv"), ("debezium-json", "canal-json")
# Flink CDC's header names (PipelineKafkaRecordSerializationSchema).
NAMESPACE_HEADER, SCHEMA_HEADER, TABLE_HEADER = "namespace", "schemaName", "tableName"
# The columns of the ordinary write the encoded records go through.
KEY, VALUE, TOPIC, HEADERS = "__key", "__value", "__topic", "__headers"
INNER_SCHEMA = StructType(
    [
        StructField(KEY, BinaryType()),
        StructField(VALUE, BinaryType()),
        StructField(TOPIC, StringType()),
        StructField(HEADERS, MapType(StringType(), BinaryType())),
    ]
)
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
Columns = tuple[str, ...]  # column names


@dataclass(frozen=True)
class TableRoute:
    """One table of the write: its id, primary key, columns (the key's included), topic and record headers."""

    table_id: str
    key_fields: tuple[str, ...]
    fields: tuple[str, ...]
    topic: str
    headers: tuple[tuple[str, bytes], ...]
    source: bytes  # what the value envelope adds to name the table (Flink CDC's `source` / `database`, `table`)


@dataclass(frozen=True)
class MultiTableSpec:
    column: str  # the column naming each row's table
    changelog: str | None  # the change-type column, when the DataFrame has one
    tables: tuple[TableRoute, ...]
    key_codec: Codec
    value_codec: Codec
    arrow_schema: pa.Schema = field(repr=False)

    def route(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Executor: batches of table rows -> batches of encoded records (INNER_SCHEMA)."""
        return _Router(self).route(batches)


@dataclass(frozen=True)
class RoutedWrite:
    """A multi-table write, and the ordinary write of encoded records its rows become."""

    spec: MultiTableSpec
    topics: TopicSelection  # the tables' topics
    layout: Layout  # of the encoded records (INNER_SCHEMA)


def _records_layout(topics: tuple[str, ...]) -> Layout:
    """Raw key and value bytes, each record's topic and headers from their columns."""
    declared = {
        KEY_FIELDS_OPTION.name: KEY,
        KEY_FORMAT.name: "raw",
        VALUE_FORMAT.name: "raw",
        VALUE_FIELDS_INCLUDE.name: "EXCEPT_KEY",
        METADATA_COLUMNS.name: f"{TOPIC}=topic,{HEADERS}=headers",
    }
    return parse_layout(canonical_options(declared), INNER_SCHEMA, topics)


def route_tables(options: OptionValues, schema: StructType) -> RoutedWrite | None:
    """The multi-table write the options ask for (option `sink.table-id.column`), or None."""
    if not options.given(TABLE_COLUMN):
        given = [o.name for o in OPTIONS if options.given(o)]
        if given:
            raise OptionError(
                f"option '{given[0]}' belongs to the multi-table write: set option '{TABLE_COLUMN.name}' to the column "
                f"naming each row's table, with '{KEY_FIELDS.name}' and '{FIELDS.name}'"
            )
        return None
    for refused, why in (
        (KEY_FIELDS_OPTION, f"each table's primary key is given by option '{KEY_FIELDS.name}'"),
        (KEY_FIELDS_PREFIX, f"each table's columns are given by option '{FIELDS.name}'"),
        (VALUE_FIELDS_INCLUDE, "a change envelope holds the table's whole row, its key included"),
        (METADATA_COLUMNS, "each record's topic and headers come from its table"),
        (TOPIC_PATTERN, f"each table's topic comes from option '{MAPPING.name}', 'topic' or its table id"),
        (ASSIGN, f"each table's topic comes from option '{MAPPING.name}', 'topic' or its table id"),
        (SINK_PARALLELISM, "df.repartition(N, <the table id column>, *the key columns) before the write does it"),
        (FLINK_COLUMN_TYPES, "its JSON formats write a timestamp as Flink does whatever its precision"),
    ):
        if options.given(refused):
            raise OptionError(
                f"option '{refused.name}' does not apply to a multi-table write (option '{TABLE_COLUMN.name}'): {why}"
            )
    names = {f.name.lower(): f.name for f in schema.fields}
    column = _column(names, (options.text(TABLE_COLUMN) or "").strip(), TABLE_COLUMN.name)
    if not isinstance(schema[column].dataType, StringType):
        raise OptionError(f"option '{TABLE_COLUMN.name}': column '{column}' must be a STRING of table ids (db.table)")
    changelog = names.get(changelog_column_name(options).lower())
    keys = _per_table(options, KEY_FIELDS, names, "shop.orders:order_id;shop.order_lines:order_id,line_no")
    fields = _per_table(options, FIELDS, names, "shop.orders:order_id,amount;shop.order_lines:order_id,line_no,sku")
    if set(keys) != set(fields):
        only = sorted(set(keys) ^ set(fields))
        raise OptionError(
            f"options '{KEY_FIELDS.name}' and '{FIELDS.name}' must list the same tables; '{only[0]}' is in one of "
            "them only"
        )
    for table, key in keys.items():
        missing = [k for k in key if k not in fields[table]]
        if missing:
            raise OptionError(
                f"option '{FIELDS.name}': table '{table}' lacks its key column '{missing[0]}' (option "
                f"'{KEY_FIELDS.name}'); the value holds the whole row, key included"
            )
        for name in (column, changelog):
            if name is not None and name in fields[table]:
                raise OptionError(f"option '{FIELDS.name}': table '{table}' lists column '{name}', which is not data")
    topics = _topics(options, list(keys))
    key_codec, value_codec = _codecs(options, tuple(sorted(set(topics.values()))))
    add_headers = options.value(ADD_HEADERS)
    custom = _custom_headers(options.text(CUSTOM_HEADER) or "")
    arrow_schema = to_arrow_schema(schema)
    routes = []
    for table in keys:
        route = TableRoute(
            table,
            keys[table],
            fields[table],
            topics[table],
            (_id_headers(table) if add_headers else ()) + custom,
            _source(value_codec.name, table, keys[table]),
        )
        _check_encoders(route, key_codec, value_codec, arrow_schema)
        routes.append(route)
    spec = MultiTableSpec(column, changelog, tuple(routes), key_codec, value_codec, arrow_schema)
    topic_names = tuple(sorted(set(topics.values())))
    return RoutedWrite(spec, TopicSelection(topic_names), _records_layout(topic_names))


def _column(names: Mapping[str, str], given: str, option: str) -> str:
    found = names.get(given.lower())
    if found is None:
        raise OptionError(f"option '{option}': column '{given}' is not in the DataFrame ({', '.join(names.values())})")
    return found


def _per_table(
    options: OptionValues, declared: Option[str | None], names: Mapping[str, str], example: str
) -> dict[str, Columns]:
    """`table:col,col;table:col` -> {table: (columns)}, columns resolved against the DataFrame's."""
    option, raw = declared.name, (options.text(declared) or "").strip()
    if not raw:
        raise OptionError(f"a multi-table write needs option '{option}', e.g. '{example}'")
    out: dict[str, Columns] = {}
    for entry in filter(None, (e.strip() for e in raw.split(";"))):
        table, colon, columns = entry.rpartition(":")
        listed = [c.strip() for c in columns.split(",")]
        if not colon or not table.strip() or not all(listed):
            raise OptionError(f"option '{option}': '{entry}' is not 'table:column,column' (e.g. '{example}')")
        table = table.strip()
        if table in out:
            raise OptionError(f"option '{option}' lists table '{table}' twice")
        resolved = tuple(_column(names, c, option) for c in listed)
        if len(set(resolved)) != len(resolved):
            raise OptionError(f"option '{option}': table '{table}' lists a column twice")
        out[table] = resolved
    return out


def _topics(options: OptionValues, tables: list[str]) -> dict[str, str]:
    """Each table's topic: option `topic` (every table to it, as Flink CDC), else the first rule of
    `sink.tableId-to-topic.mapping` whose selector matches, else the table id."""
    unified = (options.text(TOPIC_OPTION) or "").strip()
    rules = []
    for entry in filter(None, (e.strip() for e in (options.text(MAPPING) or "").split(";"))):
        selectors, colon, topic = entry.rpartition(":")
        if not colon or not selectors.strip() or not topic.strip():
            raise OptionError(
                f"option '{MAPPING.name}': '{entry}' is not 'selector:topic' (e.g. "
                "'shop.orders:orders;shop\\.order_.*:lines')"
            )
        rules.append(([_selector(s.strip()) for s in selectors.split(",") if s.strip()], topic.strip()))
    topics = {}
    for table in tables:
        if unified:
            topics[table] = unified
            continue
        topics[table] = next((t for sel, t in rules if any(s.fullmatch(table) for s in sel)), table)
        if not _TOPIC_NAME.fullmatch(topics[table]):
            raise OptionError(
                f"table '{table}' would be written to '{topics[table]}', which is not a Kafka topic name: map it "
                f"with option '{MAPPING.name}' (e.g. '{table}:my-topic')"
            )
    return topics


def _selector(pattern: str) -> re.Pattern[str]:
    """Flink CDC's table selector: `.` separates namespace, schema and table; each part is a regular expression,
    in which `\\.` stands for the regex `.`."""
    parts = re.split(r"(?<!\\)\.", pattern)
    try:
        return re.compile(r"\.".join(p.replace("\\.", ".") for p in parts))
    except re.error as e:
        raise OptionError(f"option '{MAPPING.name}': selector '{pattern}' is not a valid pattern: {e}") from None


def _id_parts(table: str) -> tuple[str | None, str | None, str]:
    """Flink CDC's TableId: `table`, `schema.table` or `namespace.schema.table`."""
    *given, name = table.split(".", 2)  # a fourth part and more: the table's
    namespace, schema = [None, None, *given][-2:]
    return namespace, schema, name


def _id_headers(table: str) -> tuple[tuple[str, bytes], ...]:
    namespace, schema, name = _id_parts(table)
    return (
        (NAMESPACE_HEADER, (namespace or "").encode()),
        (SCHEMA_HEADER, (schema or "").encode()),
        (TABLE_HEADER, name.encode()),
    )


def _custom_headers(raw: str) -> tuple[tuple[str, bytes], ...]:
    """`key1:value1;key2:value2` (Flink CDC's parser splits on `;`, its documentation shows `,`: both accepted)."""
    headers = []
    for entry in filter(None, (e.strip() for e in re.split(r"[;,]", raw))):
        key, colon, value = entry.partition(":")
        if not colon or not key.strip() or ":" in value:
            raise OptionError(
                f"option '{CUSTOM_HEADER.name}': '{entry}' is not 'key:value' (e.g. 'origin:mysql;env:prod')"
            )
        headers.append((key.strip(), value.strip().encode()))
    return tuple(headers)


def _source(value_format: str, table: str, key: tuple[str, ...]) -> bytes:
    """The members Flink CDC's serializers add to name the table: debezium-json `"source":{"db","table"}`,
    canal-json `"database"`, `"table"`, `"pkNames"` (the schema name as the database)."""
    _, schema, name = _id_parts(table)
    if value_format == "debezium-json":
        return b',"source":' + orjson.dumps({"db": schema, "table": name})
    return b"," + orjson.dumps({"database": schema, "table": name, "pkNames": list(key)})[1:-1]


def _codecs(options: OptionValues, topics: tuple[str, ...]) -> tuple[Codec, Codec]:
    from ..formats import CodecContext

    codecs = []
    roles = ((Role.KEY, KEY_FORMAT, KEY_FORMATS, "json"), (Role.VALUE, VALUE_FORMAT, VALUE_FORMATS, "debezium-json"))
    for role, declared, allowed, default in roles:
        option = declared.name
        given = options.text(declared)
        name = (default if given is None else given).strip().lower()
        if name not in allowed:
            raise OptionError(
                f"option '{option}' of a multi-table write must be {' or '.join(allowed)} (as Flink CDC's Kafka "
                f"sink), got '{name}'"
            )
        prefix = f"{role}.{name}."
        stray = [k for k in options if k.startswith(f"{role}.") and FORMAT_OPTION.match(k) and not k.startswith(prefix)]
        if stray:
            raise OptionError(f"option '{stray[0]}' does not belong to the {role} format '{name}' ({option})")
        own = {k[len(prefix) :]: v for k, v in options.items() if k.startswith(prefix)}
        try:
            codecs.append(make_codec(name, option, own, CodecContext(role=role, topics=topics)))
        except FormatOptionError as e:
            raise OptionError(f"option '{option}' ({name}): {e}") from None
    return codecs[0], codecs[1]


def _check_encoders(route: TableRoute, key_codec: Codec, value_codec: Codec, schema: pa.Schema) -> None:
    """Build the table's encoders once on the driver: a column its format cannot hold fails before any task."""
    for role, codec, names in (("key", key_codec, route.key_fields), ("value", value_codec, route.fields)):
        try:
            codec.encoder(pa.schema([schema.field(n) for n in names]))
        except (FormatOptionError, ValueError, TypeError) as e:
            raise OptionError(f"table '{route.table_id}': its {role} ({role}.format {codec.name}): {e}") from None


class _Router:
    """One task's routing: per table, its rows' keys and change envelopes, in the rows' order within the table."""

    def __init__(self, spec: MultiTableSpec) -> None:
        self.spec = spec
        schema = spec.arrow_schema
        self.encoders: dict[str, tuple[Any, Any]] = {}
        for t in spec.tables:
            key = spec.key_codec.encoder(pa.schema([schema.field(n) for n in t.key_fields]))
            value = spec.value_codec.encoder(pa.schema([schema.field(n) for n in t.fields]))
            self.encoders[t.table_id] = (key, value)
        self.by_id = {t.table_id: t for t in spec.tables}

    def route(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            routed = self._batch(batch)
            if routed is not None:
                yield routed

    def _batch(self, batch: pa.RecordBatch) -> pa.RecordBatch | None:
        batch, deletes, _ = classify(batch, self.spec.changelog)  # pre-images dropped, as the ordinary write does
        if batch.num_rows == 0:
            return None
        ids = batch.column(self.spec.column)
        self._check_ids(batch, ids)
        keys, values, topics, headers = [], [], [], []
        for table_id in pc.unique(ids).to_pylist():
            route = self.by_id[table_id]
            mask = pc.equal(ids, table_id)
            rows, flags = batch.filter(mask), deletes.filter(mask)
            self._check_keys(route, rows)
            key_encoder, value_encoder = self.encoders[table_id]
            keys += key_encoder.encode(rows.select(list(route.key_fields)))
            # Close each envelope with the members that name its table, as Flink CDC writes them.
            envelopes = value_encoder.encode_changes(rows.select(list(route.fields)), flags)
            values += [v[:-1] + route.source + b"}" for v in envelopes]
            topics += [route.topic] * rows.num_rows
            headers += [list(route.headers)] * rows.num_rows
        return pa.RecordBatch.from_arrays(
            [
                pa.array(keys, pa.binary()),
                pa.array(values, pa.binary()),
                pa.array(topics, pa.string()),
                pa.array(headers, pa.map_(pa.string(), pa.binary())),
            ],
            names=[KEY, VALUE, TOPIC, HEADERS],
        )

    def _check_ids(self, batch: pa.RecordBatch, ids: pa.Array) -> None:
        known = pc.is_in(ids, value_set=pa.array(list(self.by_id), pa.string()))
        bad = pc.invert(pc.fill_null(known, False))
        if pc.any(bad).as_py():
            table = ids[pc.index(bad, True).as_py()].as_py()
            what = "a null table id" if table is None else f"table '{table}'"
            raise RecordError(
                f"a row names {what} in column '{self.spec.column}', which options '{KEY_FIELDS.name}' and "
                f"'{FIELDS.name}' do not list (they list {', '.join(self.by_id)})"
            )

    def _check_keys(self, route: TableRoute, rows: pa.RecordBatch) -> None:
        for name in route.key_fields:
            nulls = rows.column(name).is_null()
            if pc.any(nulls).as_py():
                raise RecordError(
                    f"key column '{name}' of table '{route.table_id}' is null in a row; a record key must not be "
                    f"null (option '{KEY_FIELDS.name}')"
                )
