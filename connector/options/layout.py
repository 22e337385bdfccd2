"""How a table row maps to a Kafka record, shared by reads and writes.

The table's columns split into: the key columns (`key.fields`, written into the record key without the
`key.fields-prefix`), the value columns (`value.fields-include`: all data columns, or all but the key),
the change-type column, and metadata columns (`metadata.columns`: record topic, partition, offset,
timestamp, ...), which live in the record's envelope rather than its key or value (options/columns.py).
The layout is built once on the driver, after the schema was checked against the options and each
column's type against the column types its format declares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.types import DataType, StringType, StructField, StructType

from ..errors import OptionError, SchemaError
from ..formats import ChangelogCodec, Codec, CodecContext, FormatOptionError, codec_class, make_codec, spark_type_name
from ..formats.codec import Role
from ..formats.confluent.registry_codec import RegistryCodec
from ..formats.flink_types import primary_key_not_null, with_precision
from ..spark_internals import from_arrow_type, to_arrow_schema
from .canonical import FORMAT_OPTION, canonical_options, parse_options
from .catalog import FLINK_COLUMN_TYPES, KEY_FIELDS, KEY_FORMAT, SCHEMA, VALUE_FIELDS_INCLUDE, VALUE_FORMAT
from .catalog_read import READ_MODE, ReadMode
from .columns import (
    ColumnOptions,
    MetadataColumn,
    metadata_fields,
    parse_column_options,
    resolve_columns,
    type_text,
)
from .ddl import ddl_text, parse_ddl
from .kinds import ColumnPath, FlinkTimestamp
from .topics import parse_topic_selection


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
    flink_types: Mapping[ColumnPath, FlinkTimestamp] = field(default_factory=dict)  # option 'flink.column-types'
    arrow_schema: pa.Schema = field(init=False, repr=False)  # the rows Spark sees
    format_schema: pa.Schema = field(init=False, repr=False)  # the same, as the formats see it (below)

    def __post_init__(self) -> None:
        arrow = to_arrow_schema(self.schema)
        object.__setattr__(self, "arrow_schema", arrow)
        # The formats see each column as Flink types it: the primary key NOT NULL (in the key and in the value),
        # a timestamp with its Flink precision (formats/flink_types.py).
        typed = pa.schema([_with_flink_types(f, (f.name,), self.flink_types) for f in arrow])
        object.__setattr__(self, "format_schema", primary_key_not_null(typed, self.key_fields))

    def arrow_fields(self, names: tuple[str, ...]) -> pa.Schema:
        return pa.schema([self.format_schema.field(n) for n in names])

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


def parse_layout(options: Mapping[str, str], schema: StructType, topics: tuple[str, ...]) -> Layout:
    columns = parse_column_options(options)
    roles = resolve_columns(schema, columns)
    try:
        key_codec = _codec(options, Role.KEY, topics)
        value_codec = _codec(options, Role.VALUE, topics)
    except FormatOptionError as e:
        raise OptionError(str(e)) from None
    layout = Layout(
        schema=schema,
        key_fields=roles.key_fields,
        key_prefix=columns.key_prefix,
        value_fields=roles.value_fields,
        changelog_column=roles.changelog,
        metadata=roles.metadata,
        key_codec=key_codec,
        value_codec=value_codec,
        flink_types=_flink_types(options, schema),
    )
    _check_format_types(layout, columns)
    return layout


def _flink_types(options: Mapping[str, str], schema: StructType) -> Mapping[ColumnPath, FlinkTimestamp]:
    """Option 'flink.column-types', each path checked against the table: a timestamp of the same kind (Flink's
    TIMESTAMP(p) is a TIMESTAMP_NTZ, TIMESTAMP_LTZ(p) a TIMESTAMP), named as the table names it."""
    given = parse_options(options).value(FLINK_COLUMN_TYPES) or {}
    resolved: dict[ColumnPath, FlinkTimestamp] = {}
    for path, flink_type in given.items():
        struct: StructType | None = schema
        names: list[str] = []
        data_type: DataType | None = None
        for part in path:
            found = None if struct is None else _field_named(struct, part)
            if found is None:
                where = f"the table's columns ({', '.join(schema.names)})" if not names else f"'{'.'.join(names)}'"
                raise SchemaError(
                    f"option '{FLINK_COLUMN_TYPES.name}': '{'.'.join(path)}' names no field of {where}; list a column, "
                    "or a field of a STRUCT column as column.field"
                )
            names.append(found.name)
            data_type = found.dataType
            struct = data_type if isinstance(data_type, StructType) else None
        assert data_type is not None  # a path names one field at least (its kind parses no empty one)
        expected = "TIMESTAMP" if flink_type.zoned else "TIMESTAMP_NTZ"
        if type_text(data_type).upper() != expected:
            raise SchemaError(
                f"option '{FLINK_COLUMN_TYPES.name}': '{'.'.join(names)}' has type {type_text(data_type)}, which "
                f"cannot stand for Flink's {flink_type}: Flink's TIMESTAMP(p) is Spark's TIMESTAMP_NTZ and "
                "TIMESTAMP_LTZ(p) Spark's TIMESTAMP"
            )
        resolved[tuple(names)] = flink_type
    return resolved


def _field_named(struct: StructType, name: str) -> StructField | None:
    exact = [f for f in struct.fields if f.name == name]
    loose = [f for f in struct.fields if f.name.lower() == name.lower()]
    return next(iter(exact or loose), None)


def _with_flink_types(f: pa.Field, path: ColumnPath, types: Mapping[ColumnPath, FlinkTimestamp]) -> pa.Field:
    if path in types:
        return with_precision(f, types[path].precision)
    if pa.types.is_struct(f.type) and any(p[: len(path)] == path for p in types):
        return f.with_type(pa.struct([_with_flink_types(c, (*path, c.name), types) for c in f.type]))
    return f


def _check_format_types(layout: Layout, columns: ColumnOptions) -> None:
    """Every key and value column against the column types its format declares (formats.ColumnTypes)."""
    for role, codec, names in (
        (Role.KEY, layout.key_codec, layout.key_fields),
        (Role.VALUE, layout.value_codec, layout.value_fields),
    ):
        types = codec.column_types
        if types is None:  # a codec that declares none: its encoder or decoder decides (check_codecs)
            continue
        option = f"{role}.format"
        if types.columns is not None and len(names) != types.columns:
            raise SchemaError(
                f"option '{option}' ({codec.name}): the {codec.name} {role} format holds exactly "
                f"{'one column' if types.columns == 1 else f'{types.columns} columns'}, got {len(names)} "
                f"({', '.join(names)}); " + _column_count_hint(role, layout, columns)
            )
        for name in names:
            arrow_type = layout.arrow_schema.field(name).type
            unfit = types.unfit(arrow_type)
            if unfit is None:
                continue
            declared = type_text(layout.schema[name].dataType)
            inside = "" if unfit == spark_type_name(arrow_type) else f" (because of the {unfit} in it)"
            raise SchemaError(
                f"column '{name}' has type {declared}, which the {role} format '{codec.name}' (option "
                f"'{option}') cannot hold{inside}: {codec.name} holds {types.describe()}. Cast the column to "
                f"one of them, or choose another {role} format"
            )


def _column_count_hint(role: Role, layout: Layout, columns: ColumnOptions) -> str:
    several = "or choose a format that holds several columns (json, csv, avro)"
    if role is Role.KEY:
        return f"list one column in option '{KEY_FIELDS.name}', {several}"
    rest = [n for n in layout.value_fields if n not in layout.key_fields]
    if not columns.except_key and len(rest) == 1:
        return (
            f"set option '{VALUE_FIELDS_INCLUDE.name}' to EXCEPT_KEY so that the value holds '{rest[0]}' alone, "
            f"{several}"
        )
    return f"give the value one column, {several}"


def check_codecs(layout: Layout, writing: bool) -> None:
    """Build the encoders (writes) or decoders (reads) once on the driver, so that a column or format option the
    codec refuses fails before any task (each task builds its own). A write checks both formats first: building an
    encoder may register a schema, which a refused value schema must not leave behind for the key."""
    roles = (("key", layout.key_codec, layout.key_schema), ("value", layout.value_codec, layout.value_schema))
    if writing:
        for role, codec, schema in roles:
            try:
                codec.check_writable(schema)
            except FormatOptionError as e:
                raise OptionError(f"option '{role}.format' ({codec.name}): {e}") from None
    for role, codec, schema in roles:
        try:
            if writing:
                codec.encoder(schema)
            elif isinstance(codec, ChangelogCodec):  # a changelog format also reads its own metadata
                codec.changelog_decoder(schema, format_metadata(layout))
            else:
                codec.decoder(schema)
        except FormatOptionError as e:
            raise OptionError(f"option '{role}.format' ({codec.name}): {e}") from None


def prime_readers(layout: Layout) -> None:
    """On the driver, when a read is planned: a registry format fetches the reader's view every task reads with
    (its subjects' latest schemas), once, so that the tasks read alike and an unreachable registry or a view that
    cannot be read fails before any task."""
    for codec, schema in ((layout.key_codec, layout.key_schema), (layout.value_codec, layout.value_schema)):
        if isinstance(codec, RegistryCodec):
            try:
                codec.prime_reader(schema)
            except FormatOptionError as e:
                raise OptionError(f"option '{codec.context.role}.format' ({codec.name}): {e}") from None


def format_metadata(layout: Layout) -> tuple[str, ...]:
    """The value format's own metadata keys the table reads (`value.<key>` in option 'metadata.columns')."""
    return tuple(c.value_key for c in layout.metadata if c.value_key is not None)


def _codec(options: Mapping[str, str], role: Role, topics: tuple[str, ...]) -> Codec:
    declared = KEY_FORMAT if role is Role.KEY else VALUE_FORMAT
    option = declared.name
    name = parse_options(options).value(declared).strip()
    prefix = f"{role}.{codec_class(name, option).name.lower()}."  # a `module:Class` codec: its own name
    format_options = {k[len(prefix) :]: v for k, v in options.items() if k.startswith(prefix)}
    stray = [k for k in options if k.startswith(f"{role}.") and FORMAT_OPTION.match(k) and not k.startswith(prefix)]
    if stray:
        raise OptionError(
            f"option '{stray[0]}' does not belong to the {role} format '{name}' ({option}); "
            f"its options start with '{prefix}'"
        )
    return make_codec(name, option, format_options, CodecContext(role=role, topics=topics))


def _inferred_schema(options: Mapping[str, str], columns: ColumnOptions) -> StructType | None:
    """The data columns from the formats' own schemas (e.g. a registry subject's latest): the key's columns
    (with the key.fields-prefix) that the value lacks, then the value's; None when the value format has none."""
    topics = parse_topic_selection(options).names  # a pattern: no topic names, so no default subject
    try:
        key = _codec(options, Role.KEY, topics).inferred_schema()
        value = _codec(options, Role.VALUE, topics).inferred_schema()
    except FormatOptionError as e:
        raise OptionError(str(e)) from None
    if value is None:
        return None
    key_fields = [f.with_name(columns.key_prefix + f.name) for f in (key or [])]
    fields = [f for f in key_fields if f.name not in value.names] + list(value)
    return StructType([StructField(f.name, from_arrow_type(f.type), f.nullable) for f in fields])


def table_schema(raw: Mapping[str, str]) -> StructType:
    """The schema of a read given no `.schema(...)`: the data columns of option 'schema' (or of the formats'
    own schemas), the change-type column unless table mode (or listed already), and the metadata columns;
    checked as a read's schema is."""
    options = canonical_options(raw)
    columns = parse_column_options(options)
    given = options.text(SCHEMA)
    data = parse_ddl(given) if given is not None else _inferred_schema(options, columns)
    if data is None:
        raise OptionError(
            'upsert-kafka needs the table\'s columns: give them with .schema("id INT, name STRING") or option '
            f"'{SCHEMA.name}'"
        )
    fields = list(data.fields)
    listed = {f.name.lower() for f in fields}
    # DataSource.schema() cannot tell a stream from a batch read: the change column unless table mode is asked for.
    if (options.text(READ_MODE) or "").strip().lower() != ReadMode.TABLE and columns.changelog.lower() not in listed:
        fields.append(StructField(columns.changelog, StringType()))
    schema = StructType(fields + metadata_fields(columns))
    resolve_columns(schema, columns)
    return schema


def schema_ddl(raw: Mapping[str, str]) -> str:
    """table_schema as DDL text."""
    return ddl_text(table_schema(raw))
