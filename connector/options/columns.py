"""Which column of the table is what, and the table's schema checked against it once, on the driver.

A table's columns are the change-type column (`changelog.column`), the metadata columns (`metadata.columns`,
taken from the record's envelope), the key columns (`key.fields`, written into the key without the
`key.fields-prefix`) and the data columns of the value (`value.fields-include`). Column names compare
case-insensitively, as Spark compares them by default. Each mistake is one error that names the column or
the option, says what is wrong and what to write instead: SchemaError when the columns are at fault,
OptionError when an option is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    CharType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VarcharType,
)

from ..errors import OptionError, SchemaError, did_you_mean
from ..formats import ChangelogCodec, Codec, FormatOptionError, codec_class
from ..kernel.option_kinds import OptionValues
from ..spark_internals import from_arrow_type, to_arrow_type
from .canonical import changelog_column_name, parse_options
from .catalog import (
    CHANGELOG_COLUMN,
    KEY_FIELDS,
    KEY_FIELDS_PREFIX,
    METADATA_COLUMNS,
    SCHEMA,
    VALUE_FIELDS_INCLUDE,
    VALUE_FORMAT,
)
from .values import require

# Flink's kafka connector metadata keys and their types in Spark.
METADATA_TYPES: dict[str, DataType] = {
    "topic": StringType(),
    "partition": IntegerType(),
    "offset": LongType(),
    "timestamp": TimestampType(),
    "timestamp-type": StringType(),
    "headers": MapType(StringType(), BinaryType()),
    # The headers as the record holds them: in order, a key that repeats kept each time, a value may be null
    # (a map keeps one value per key, so a record's duplicate keys need this form).
    "header-list": ArrayType(
        StructType([StructField("key", StringType(), nullable=False), StructField("value", BinaryType())])
    ),
    "leader-epoch": IntegerType(),
    "watermark": TimestampType(),  # not the record's: the merged watermark when the batch was planned
}
WRITABLE_METADATA = frozenset({"timestamp", "headers", "header-list"})
VALUE_METADATA = "value."  # `value.<key>`: a changelog value format's own metadata (read only)
_CASE = "column names compare case-insensitively, as in Spark"


@dataclass(frozen=True)
class MetadataColumn:
    column: str  # the table column
    kind: str  # one of METADATA_TYPES, or `value.<key>`: metadata of a changelog value format (read only)
    data_type: DataType  # its type in Spark

    @property
    def value_key(self) -> str | None:
        """The value format's own metadata key (`value.<key>`); None for the record's metadata."""
        return self.kind[len(VALUE_METADATA) :] if self.kind.startswith(VALUE_METADATA) else None


@dataclass(frozen=True)
class ColumnOptions:
    """The options that say which column is what, parsed once."""

    changelog: str  # changelog.column
    metadata: tuple[MetadataColumn, ...]
    key_fields: tuple[str, ...]  # as the option lists them
    key_prefix: str
    except_key: bool  # value.fields-include=EXCEPT_KEY: the value holds the non-key columns only


@dataclass(frozen=True)
class ColumnRoles:
    """The table's columns by role, named as the schema names them."""

    key_fields: tuple[str, ...]
    value_fields: tuple[str, ...]
    changelog: str | None  # the change-type column, when the table has one
    metadata: tuple[MetadataColumn, ...]


def parse_column_options(given: Mapping[str, str]) -> ColumnOptions:
    options = parse_options(given)
    changelog = changelog_column_name(options)
    metadata = _parse_metadata(options, changelog)
    include = options.value(VALUE_FIELDS_INCLUDE)
    prefix = options.value(KEY_FIELDS_PREFIX)
    if include != "ALL" or prefix:
        value_format = _value_codec_class(options)
        if issubclass(value_format, ChangelogCodec):
            raise OptionError(
                f"option '{VALUE_FIELDS_INCLUDE.name}': value format '{value_format.name}' carries whole rows (the "
                f"key columns among them): it needs '{VALUE_FIELDS_INCLUDE.name}' = ALL and no "
                f"'{KEY_FIELDS_PREFIX.name}'"
            )
    if prefix and include != "EXCEPT_KEY":
        raise OptionError(
            f"option '{KEY_FIELDS_PREFIX.name}' requires '{VALUE_FIELDS_INCLUDE.name}' to be EXCEPT_KEY (the prefix "
            "keeps key and value field names apart, so the value must not hold the key fields)"
        )
    reserved = {changelog.lower(): f"the change-type column (option '{CHANGELOG_COLUMN.name}')"}
    reserved |= {c.column.lower(): "a metadata column" for c in metadata}
    key_fields: list[str] = []
    raw = require(options, KEY_FIELDS, "id")
    for name in (part.strip() for part in raw.split(";")):
        if not name:
            raise OptionError(
                f"option '{KEY_FIELDS.name}' has an empty column name in '{raw}': separate the names by ';'"
            )
        if name.lower() in reserved:
            raise OptionError(
                f"option '{KEY_FIELDS.name}': column '{name}' is {reserved[name.lower()]}, not a data column"
            )
        if name.lower() in (k.lower() for k in key_fields):
            raise OptionError(f"option '{KEY_FIELDS.name}' lists column '{name}' twice")
        key_fields.append(name)
    return ColumnOptions(changelog, metadata, tuple(key_fields), prefix, include == "EXCEPT_KEY")


def _parse_metadata(options: OptionValues, changelog: str) -> tuple[MetadataColumn, ...]:
    """`metadata.columns`: `kind` or `column=kind`, comma-separated, e.g. `offset, event_time=timestamp`."""
    raw = (options.text(METADATA_COLUMNS) or "").strip()
    # A changelog value format's own metadata, read only (Flink's `value.<key>` keys of the kafka connector).
    known = METADATA_TYPES | (_value_format_metadata(options) if VALUE_METADATA in raw.lower() else {})
    columns: list[MetadataColumn] = []
    for entry in filter(None, (part.strip() for part in raw.split(","))):
        column, _, kind = entry.rpartition("=")
        column, kind = (column.strip() or kind.strip()), kind.strip().lower()
        if kind not in known:
            hint = did_you_mean(kind, known)
            value_format = options.value(VALUE_FORMAT).strip()
            none = kind.startswith(VALUE_METADATA) and len(known) == len(METADATA_TYPES)
            note = f" (value format '{value_format}' has none)" if none else ""
            raise OptionError(
                f"option '{METADATA_COLUMNS.name}': unknown metadata '{kind}'{note}.{hint} Available: "
                f"{', '.join(known)}"
            )
        if "=" in column or "`" in column:
            raise OptionError(
                f"option '{METADATA_COLUMNS.name}': cannot read '{entry}'; write `kind` or `column=kind`, e.g. "
                "'offset, event_time=timestamp'"
            )
        if any(c.column.lower() == column.lower() for c in columns):
            raise OptionError(f"option '{METADATA_COLUMNS.name}' names column '{column}' twice ({_CASE})")
        if column.lower() == changelog.lower():
            raise OptionError(
                f"option '{METADATA_COLUMNS.name}': column '{column}' is the change-type column (option "
                f"'{CHANGELOG_COLUMN.name}'); name the metadata column otherwise, e.g. 'record_{{kind}}={{kind}}'"
            )
        columns.append(MetadataColumn(column, kind, known[kind]))
    return tuple(columns)


def _value_codec_class(options: OptionValues) -> type[Codec]:
    try:
        return codec_class(options.value(VALUE_FORMAT).strip(), VALUE_FORMAT.name)
    except FormatOptionError as e:
        raise OptionError(str(e)) from None


def _value_format_metadata(options: OptionValues) -> dict[str, DataType]:
    """The value format's readable metadata as `value.<key>` -> Spark type; none for a format without."""
    cls = _value_codec_class(options)
    readable = cls.readable_metadata if issubclass(cls, ChangelogCodec) else {}
    return {VALUE_METADATA + key: from_arrow_type(t) for key, t in readable.items()}


def metadata_fields(columns: ColumnOptions) -> list[StructField]:
    return [StructField(c.column, c.data_type) for c in columns.metadata]


def resolve_columns(schema: StructType, columns: ColumnOptions) -> ColumnRoles:
    """Each column's role, after checking the schema against the options: no name twice, reserved columns of
    their types, key columns present, every data column of a type Spark can hand over as Arrow."""
    _check_unique_names(schema, columns)
    fields = {f.name.lower(): f for f in schema.fields}
    changelog = fields.get(columns.changelog.lower())
    if changelog is not None and not isinstance(changelog.dataType, StringType):
        raise SchemaError(
            f"column '{changelog.name}' holds the change type (upsert / delete) and must have type STRING, not "
            f"{type_text(changelog.dataType)}: declare it as `{changelog.name}` STRING, or name another column "
            f"with option '{CHANGELOG_COLUMN.name}'"
        )
    metadata = tuple(replace(c, column=_metadata_field(c, fields, schema).name) for c in columns.metadata)
    reserved = {f.name.lower() for f in (changelog,) if f is not None} | {c.column.lower() for c in metadata}
    data = [f for f in schema.fields if f.name.lower() not in reserved]
    for f in data:
        _check_arrow_form(f)
    key_fields = tuple(_key_field(name, data, columns.key_prefix) for name in columns.key_fields)
    value_fields = tuple(f.name for f in data if not (columns.except_key and f.name in key_fields))
    return ColumnRoles(key_fields, value_fields, None if changelog is None else changelog.name, metadata)


def _check_unique_names(schema: StructType, columns: ColumnOptions) -> None:
    """No name twice among the columns, nor among the fields of any STRUCT inside them: a reader would produce
    a column twice, and a row written from them would keep only one of the values."""
    repeated = _repeated(schema.names)
    if repeated:
        name, spelled = repeated
        kind = {c.column.lower(): c.kind for c in columns.metadata}.get(name.lower())
        if kind is not None:
            raise SchemaError(
                f"option '{METADATA_COLUMNS.name}': column '{name}' clashes with the data column of that name: "
                f"rename the metadata column, e.g. 'record_{name}={kind}'"
            )
        fix = "rename or drop one of them"
        if name.lower() == columns.changelog.lower():
            fix = f"it is the change-type column: list it once, as STRING (option '{SCHEMA.name}' adds it for you)"
        raise SchemaError(f"column '{name}' appears twice in the schema{spelled}: {fix}")
    for f in schema.fields:
        _check_unique_fields(f.name, f.dataType)


def _check_unique_fields(column: str, t: DataType) -> None:
    if isinstance(t, StructType):
        repeated = _repeated(t.names)
        if repeated:
            name, spelled = repeated
            raise SchemaError(f"column '{column}' has the STRUCT field '{name}' twice{spelled}: rename or drop one")
        for f in t.fields:
            _check_unique_fields(column, f.dataType)
    elif isinstance(t, ArrayType):
        _check_unique_fields(column, t.elementType)
    elif isinstance(t, MapType):
        _check_unique_fields(column, t.keyType)
        _check_unique_fields(column, t.valueType)


def _repeated(names: list[str]) -> tuple[str, str] | None:
    """The first name that repeats an earlier one case-insensitively, and how the two are spelled."""
    seen: dict[str, str] = {}
    for name in names:
        if name.lower() in seen:
            first = seen[name.lower()]
            spelled = f" (as '{first}' and '{name}'; {_CASE})" if first != name else ""
            return name, spelled
        seen[name.lower()] = name
    return None


def _metadata_field(c: MetadataColumn, fields: dict[str, StructField], schema: StructType) -> StructField:
    expected = type_text(c.data_type)
    f = fields.get(c.column.lower())
    if f is None:
        raise SchemaError(
            f"option '{METADATA_COLUMNS.name}': column '{c.column}' ({c.kind}) is not in the schema "
            f"({', '.join(schema.names)}); add `{c.column}` {expected} to .schema(...) or to the DataFrame "
            f"written, or give a read's data columns with option '{SCHEMA.name}' and it is added for you"
        )
    if type_text(f.dataType) != expected:
        raise SchemaError(
            f"option '{METADATA_COLUMNS.name}': column '{f.name}' holds the record {c.kind} and must have "
            f"type {expected}, not {type_text(f.dataType)}"
        )
    return f


def _check_arrow_form(f: StructField) -> None:
    """Spark hands a Python data source its rows as Arrow: a type without an Arrow form cannot pass."""
    try:
        to_arrow_type(f.dataType)
    except TypeError:  # pyspark's PySparkTypeError: no Arrow form
        hint = (
            "declare it as STRING"
            if isinstance(f.dataType, (CharType, VarcharType))
            else "no format can hold it; cast it to a type the formats hold (see the README's Formats)"
        )
        raise SchemaError(
            f"column '{f.name}' has type {type_text(f.dataType)}, which Spark cannot hand to a Python data source "
            f"(it has no Arrow form): {hint}"
        ) from None


def _key_field(name: str, data: list[StructField], prefix: str) -> str:
    names = [f.name for f in data]
    column = next((n for n in names if n == name), None) or next((n for n in names if n.lower() == name.lower()), None)
    if column is None:
        separator = f" ({KEY_FIELDS.name} separates columns with ';')" if "," in name else ""
        listed = ", ".join(names) if names else "no data columns"
        raise OptionError(
            f"option '{KEY_FIELDS.name}': column '{name}' is not in the schema ({listed})."
            f"{did_you_mean(name, names)}"
            f"{separator}"
        )
    if not column.startswith(prefix):
        raise OptionError(
            f"option '{KEY_FIELDS.name}': column '{column}' does not start with the '{KEY_FIELDS_PREFIX.name}' "
            f"'{prefix}'; with a prefix, every key column is named with it"
        )
    if prefix and column == prefix:
        raise OptionError(
            f"option '{KEY_FIELDS.name}': column '{column}' is the '{KEY_FIELDS_PREFIX.name}' alone, which leaves "
            "its name in the key empty; name the key column with the prefix and its name in the key, e.g. "
            f"'{prefix}id'"
        )
    return column


def type_text(t: DataType) -> str:
    """A type as DDL with its keywords in capitals and its field names as they are: STRUCT<kind:STRING>."""
    if isinstance(t, StructType):
        return f"STRUCT<{','.join(f'{f.name}:{type_text(f.dataType)}' for f in t.fields)}>"
    if isinstance(t, ArrayType):
        return f"ARRAY<{type_text(t.elementType)}>"
    if isinstance(t, MapType):
        return f"MAP<{type_text(t.keyType)},{type_text(t.valueType)}>"
    return t.simpleString().upper()
