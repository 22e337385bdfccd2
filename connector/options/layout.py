"""How a table row maps to a Kafka record, shared by reads and writes.

The table's columns split into: the key columns (`key.fields`, written into the record key without the
`key.fields-prefix`), the value columns (`value.fields-include`: all data columns, or all but the key),
the change-type column, and metadata columns (`metadata.columns`: record topic, partition, offset,
timestamp, ...), which live in the record's envelope rather than its key or value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampType,
)

from ..errors import OptionError, did_you_mean
from ..formats import ChangelogCodec, Codec, CodecContext, FormatOptionError, codec_class, make_codec
from .common import (
    FORMAT_OPTION,
    canonical_options,
    changelog_column_name,
    parse_topic_selection,
    require,
)

# Flink's kafka connector metadata keys and their types in Spark.
METADATA_TYPES: dict[str, DataType] = {
    "topic": StringType(),
    "partition": IntegerType(),
    "offset": LongType(),
    "timestamp": TimestampType(),
    "timestamp-type": StringType(),
    "headers": MapType(StringType(), BinaryType()),
    "leader-epoch": IntegerType(),
    "watermark": TimestampType(),  # not the record's: the merged watermark when the batch was planned
}
WRITABLE_METADATA = frozenset({"timestamp", "headers"})


@dataclass(frozen=True)
class MetadataColumn:
    column: str  # the table column
    kind: str  # one of METADATA_TYPES, or `value.<key>`: metadata of a changelog value format (read only)
    format_type: DataType | None = None  # the type of a value format's metadata

    @property
    def data_type(self) -> DataType:
        return self.format_type or METADATA_TYPES[self.kind]


@dataclass(frozen=True)
class Layout:
    schema: StructType
    key_fields: tuple[str, ...]  # table column names
    key_prefix: str  # stripped from key_fields inside the key format
    value_fields: tuple[str, ...]
    changelog_column: str | None  # None when the table has no such column
    metadata: tuple[MetadataColumn, ...]
    key_codec: Codec
    value_codec: Codec
    arrow_schema: pa.Schema = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "arrow_schema", to_arrow_schema(self.schema, timezone="UTC"))

    def arrow_fields(self, names: tuple[str, ...]) -> pa.Schema:
        return pa.schema([self.arrow_schema.field(n) for n in names])

    @property
    def key_record_names(self) -> tuple[str, ...]:
        """The key columns' names inside the key format (prefix removed)."""
        return tuple(name[len(self.key_prefix) :] for name in self.key_fields)

    @property
    def key_schema(self) -> pa.Schema:
        """The key format's schema: the key columns under their record names."""
        fields = self.arrow_fields(self.key_fields)
        return pa.schema([f.with_name(n) for f, n in zip(fields, self.key_record_names)])

    @property
    def value_schema(self) -> pa.Schema:
        return self.arrow_fields(self.value_fields)


def parse_metadata_columns(options: Mapping[str, str]) -> tuple[MetadataColumn, ...]:
    """`metadata.columns`: `kind` or `column=kind`, comma-separated, e.g. `offset, event_time=timestamp`."""
    raw = options.get("metadata.columns", "").strip()
    columns: list[MetadataColumn] = []
    formats = _value_format_metadata(options) if "value." in raw.lower() else {}
    for entry in filter(None, (part.strip() for part in raw.split(","))):
        column, _, kind = entry.rpartition("=")
        column, kind = (column.strip() or kind.strip()), kind.strip().lower()
        if kind not in METADATA_TYPES and kind not in formats:
            known = [*METADATA_TYPES, *formats]
            hint = did_you_mean(kind, known)
            value_format = options.get("value.format", "json").strip()
            note = "" if formats or not kind.startswith("value.") else f" (value format '{value_format}' has none)"
            raise OptionError(
                f"option 'metadata.columns': unknown metadata '{kind}'{note}.{hint} Available: {', '.join(known)}"
            )
        if any(c.column == column for c in columns):
            raise OptionError(f"option 'metadata.columns' names column '{column}' twice")
        columns.append(MetadataColumn(column, kind, formats.get(kind)))
    return tuple(columns)


def _value_format_metadata(options: Mapping[str, str]) -> dict[str, DataType]:
    """The value format's readable metadata as `value.<key>` -> Spark type (Flink's keys of it in the kafka
    connector); none for formats without."""
    try:
        cls = codec_class(options.get("value.format", "json").strip(), "value.format")
    except FormatOptionError as e:
        raise OptionError(str(e)) from None
    readable = getattr(cls, "readable_metadata", {})
    return {f"value.{key}": from_arrow_type(t) for key, t in readable.items()}


def metadata_ddl(columns: tuple[MetadataColumn, ...]) -> str:
    return ", ".join(f"`{c.column}` {c.data_type.simpleString().upper()}" for c in columns)


def parse_layout(options: Mapping[str, str], schema: StructType, topics: tuple[str, ...]) -> Layout:
    changelog = changelog_column_name(options)
    metadata = parse_metadata_columns(options)
    names = [f.name for f in schema.fields]
    _check_metadata_in_schema(metadata, schema, changelog)
    meta_names = {c.column for c in metadata}
    data_columns = [n for n in names if n != changelog and n not in meta_names]

    prefix = options.get("key.fields-prefix", "")
    include = options.get("value.fields-include", "ALL").strip().upper()
    if include not in ("ALL", "EXCEPT_KEY"):
        raise OptionError(f"option 'value.fields-include' must be ALL or EXCEPT_KEY, got '{include}'")
    if prefix and include != "EXCEPT_KEY":
        raise OptionError(
            "option 'key.fields-prefix' requires 'value.fields-include' to be EXCEPT_KEY (the prefix keeps "
            "key and value field names apart, so the value must not hold the key fields)"
        )
    key_fields = _parse_key_fields(options, data_columns, meta_names)
    for name in key_fields:
        if not name.startswith(prefix):
            raise OptionError(
                f"option 'key.fields': column '{name}' does not start with the 'key.fields-prefix' "
                f"'{prefix}'; with a prefix, every key column is named with it"
            )
    value_fields = tuple(n for n in data_columns if include == "ALL" or n not in key_fields)
    try:
        key_codec = _codec(options, "key", topics)
        value_codec = _codec(options, "value", topics)
    except FormatOptionError as e:
        raise OptionError(str(e)) from None
    if isinstance(value_codec, ChangelogCodec) and include != "ALL":
        raise OptionError(
            f"value format '{value_codec.name}' carries whole rows (the key columns among them): it needs "
            "'value.fields-include' = ALL, and no 'key.fields-prefix'"
        )
    return Layout(
        schema=schema,
        key_fields=key_fields,
        key_prefix=prefix,
        value_fields=value_fields,
        changelog_column=changelog if changelog in names else None,
        metadata=metadata,
        key_codec=key_codec,
        value_codec=value_codec,
    )


def _check_metadata_in_schema(metadata: tuple[MetadataColumn, ...], schema: StructType, changelog: str) -> None:
    fields = {f.name: f for f in schema.fields}
    for c in metadata:
        expected = c.data_type.simpleString()
        if c.column == changelog:
            raise OptionError(f"option 'metadata.columns': column '{c.column}' is the changelog column")
        if c.column not in fields:
            raise OptionError(
                f"option 'metadata.columns': column '{c.column}' ({c.kind}) is not in the schema; add "
                f"`{c.column}` {expected.upper()} to .schema(...), or give the data columns with option "
                "'schema' and it is added for you"
            )
        actual = fields[c.column].dataType.simpleString()
        if actual != expected:
            raise OptionError(
                f"option 'metadata.columns': column '{c.column}' holds the record {c.kind} and must have "
                f"type {expected.upper()}, not {actual.upper()}"
            )


def _parse_key_fields(options: Mapping[str, str], columns: list[str], meta_names: set[str]) -> tuple[str, ...]:
    raw = require(options, "key.fields", "id" if "id" in columns else ";".join(columns[:1]) or "id")
    by_lower = {c.lower(): c for c in columns}
    fields = []
    for name in (part.strip() for part in raw.split(";")):
        if name in meta_names:
            raise OptionError(f"option 'key.fields': column '{name}' is a metadata column, not a data column")
        column = name if name in columns else by_lower.get(name.lower())
        if column is None:
            raise OptionError(
                f"option 'key.fields': column '{name}' is not in the schema ({', '.join(columns)})."
                + did_you_mean(name, columns)
            )
        if column in fields:
            raise OptionError(f"option 'key.fields' lists column '{column}' twice")
        fields.append(column)
    return tuple(fields)


def _codec(options: Mapping[str, str], role: str, topics: tuple[str, ...]) -> Codec:
    option = f"{role}.format"
    name = options.get(option, "json").strip()
    prefix = f"{role}.{codec_class(name, option).name.lower()}."  # a `module:Class` codec: its own name
    format_options = {k[len(prefix) :]: v for k, v in options.items() if k.startswith(prefix)}
    stray = [k for k in options if k.startswith(f"{role}.") and FORMAT_OPTION.match(k) and not k.startswith(prefix)]
    if stray:
        raise OptionError(
            f"option '{stray[0]}' does not belong to the {role} format '{name}' ({option}); "
            f"its options start with '{prefix}'"
        )
    return make_codec(name, option, format_options, CodecContext(role=role, topics=topics))


def _inferred_ddl(options: Mapping[str, str]) -> str:
    """The data columns from the formats' own schemas (e.g. a registry subject's latest): the key's columns
    (with the key.fields-prefix) that the value lacks, then the value's; '' when the value format has none."""
    topics = parse_topic_selection(options).names  # a pattern: no topic names, so no default subject
    try:
        key = _codec(options, "key", topics).inferred_schema()
        value = _codec(options, "value", topics).inferred_schema()
    except FormatOptionError as e:
        raise OptionError(str(e)) from None
    if value is None:
        return ""
    prefix = options.get("key.fields-prefix", "")
    key_fields = [f.with_name(prefix + f.name) for f in (key or [])]
    fields = [f for f in key_fields if f.name not in value.names] + list(value)
    return ", ".join(
        f"`{f.name}` {from_arrow_type(f.type).simpleString()}{'' if f.nullable else ' NOT NULL'}" for f in fields
    )


def schema_ddl(raw: Mapping[str, str]) -> str:
    """The schema for a read given no `.schema(...)`: option 'schema', the changelog column (unless table
    mode) and the metadata columns."""
    options = canonical_options(raw)
    ddl = options.get("schema", "").strip() or _inferred_ddl(options)
    if not ddl:
        raise OptionError(
            "upsert-kafka needs the table's columns: give them with .schema(\"id INT, name STRING\") or option 'schema'"
        )
    if options.get("read.mode", "").strip().lower() != "table":
        ddl += f", `{changelog_column_name(options)}` STRING"
    metadata = parse_metadata_columns(options)
    return f"{ddl}, {metadata_ddl(metadata)}" if metadata else ddl
