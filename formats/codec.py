"""The codec interface: Kafka key or value bytes <-> Arrow columns, one batch at a time.

A codec knows nothing about Kafka clients or Spark plans. It is built once per query from its
validated options (and pickled to executors); decoders and encoders are made per task for a schema.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, SupportsIndex, TypeVar

import pyarrow as pa

from ..kernel.errors import FormatOptionError
from ..kernel.option_kinds import FORMAT, Flag, Option, OptionValues, Text, parse_values
from .user_modules import ShippedArchives

#: Flink's option of every format, parsed by Codec itself.
IGNORE_PARSE_ERRORS = Option(
    "ignore-parse-errors",
    "false",
    FORMAT,
    "Skip (count and log) records that fail to decode instead of failing the query.",
    kind=Flag(),
)


class Role(str, Enum):
    """The part of a Kafka record a codec is for (confluent-kafka's MessageField); a str, so `f"{role}.format"`
    and a codec's `"key"` comparisons keep working."""

    KEY = "key"
    VALUE = "value"

    def __str__(self) -> str:  # the value, on every Python (3.12 changed a mixed-in enum's format())
        return self.value


@dataclass(frozen=True)
class CodecContext:
    """Where a codec is used: for the record key or value (a Role; "key" / "value" are taken too), and of which
    topics."""

    role: Role
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "role", Role(self.role))  # a ValueError for anything but key / value


# The column types Spark hands a Python data source, by their Spark SQL names, in the README's order.
SPARK_TYPES = (
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "STRING", "BINARY",
    "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIME", "ARRAY", "MAP", "STRUCT",
)  # fmt: skip
_PRIMITIVE_NAMES = {
    pa.bool_(): "BOOLEAN",
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INT",
    pa.int64(): "BIGINT",
    pa.float32(): "FLOAT",
    pa.float64(): "DOUBLE",
    pa.string(): "STRING",
    pa.large_string(): "STRING",
    pa.binary(): "BINARY",
    pa.large_binary(): "BINARY",
    pa.date32(): "DATE",
    pa.null(): "VOID",
}


def nested_type_has(t: pa.DataType, kind: Callable[[pa.DataType], bool]) -> bool:
    """Whether `t`, or a type anywhere inside it (list elements, map keys and values, struct fields), is `kind`."""
    if kind(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return nested_type_has(t.value_type, kind)
    if pa.types.is_map(t):
        return nested_type_has(t.key_type, kind) or nested_type_has(t.item_type, kind)
    return pa.types.is_struct(t) and any(nested_type_has(f.type, kind) for f in t)


def first_nested(
    array: pa.Array, kind: Callable[[pa.DataType], bool], find: Callable[[pa.Array], str | None]
) -> str | None:
    """`find`'s first answer (not None) over the arrays of a type `kind` inside `array` at any depth, within its
    slice: list elements, map keys and values, struct fields."""
    t = array.type
    if not nested_type_has(t, kind):
        return None
    if kind(t):
        return find(array)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return first_nested(array.flatten(), kind, find)
    if pa.types.is_map(t):
        start = array.offsets[0].as_py()
        size = array.offsets[-1].as_py() - start
        return first_nested(array.keys.slice(start, size), kind, find) or first_nested(
            array.items.slice(start, size), kind, find
        )
    return next((found for child in array.flatten() if (found := first_nested(child, kind, find))), None)


def spark_type_name(t: pa.DataType) -> str:
    """The Spark SQL name of the kind of column Spark hands over as Arrow type `t` ('DECIMAL' for every
    decimal, 'ARRAY' for every list); Spark's types without a name in SPARK_TYPES are named as Spark names
    them (VOID, INTERVAL DAY TO SECOND, VARIANT, ...)."""
    if t in _PRIMITIVE_NAMES:
        return _PRIMITIVE_NAMES[t]
    if pa.types.is_decimal(t):
        return "DECIMAL"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz else "TIMESTAMP_NTZ"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "ARRAY"
    if pa.types.is_map(t):
        return "MAP"
    if pa.types.is_struct(t):
        # Spark's VARIANT, GEOMETRY and GEOGRAPHY travel as structs with a tagged field (pyspark's to_arrow_type).
        tags = {key for f in t for key in (f.metadata or {})}
        return next((tag.decode().upper() for tag in (b"variant", b"geometry", b"geography") if tag in tags), "STRUCT")
    if pa.types.is_duration(t):
        return "INTERVAL DAY TO SECOND"
    if pa.types.is_time(t):
        return "TIME"
    return str(t)


@dataclass(frozen=True)
class ColumnTypes:
    """The column types a format holds, declared once per codec (`Codec.column_types`). The connector checks
    the table's columns against it on the driver before any task runs, and the README lists it."""

    kinds: tuple[str, ...]  # names from SPARK_TYPES; the elements of ARRAY, MAP and STRUCT must be among them
    map_keys: tuple[str, ...] | None = None  # the kinds a MAP key may have; None: any of `kinds`
    columns: int | None = None  # exactly this many columns (raw: one); None: any number

    def describe(self) -> str:
        """'BOOLEAN, ..., MAP (STRING keys), STRUCT', as errors and the README list them."""
        keys = f" ({', '.join(self.map_keys)} keys)" if self.map_keys is not None else ""
        return ", ".join(k + (keys if k == "MAP" else "") for k in self.kinds)

    def unfit(self, t: pa.DataType) -> str | None:
        """What in a column of type `t` the format cannot hold ('INTERVAL DAY TO SECOND', 'MAP with INT keys'),
        looking inside ARRAY, MAP and STRUCT; None when it holds all of it."""
        name = spark_type_name(t)
        if name not in self.kinds:
            return name
        if name == "ARRAY":
            return self.unfit(t.value_type)
        if name == "MAP":
            key = spark_type_name(t.key_type)
            if self.map_keys is not None and key not in self.map_keys:
                return f"MAP with {key} keys"
            return self.unfit(t.key_type) or self.unfit(t.item_type)
        if name == "STRUCT":
            return next((u for u in (self.unfit(f.type) for f in t) if u), None)
        return None


# Every type Spark hands over, a MAP's keys STRING: json and csv write a MAP as a JSON object, Avro's map keys are
# strings.
STRING_KEYED_TYPES = ColumnTypes(SPARK_TYPES, map_keys=("STRING",))


@dataclass(frozen=True)
class Decoded:
    """A decoded batch: the rows that decoded, in order, and the ones that did not.

    `failures` holds (index into the input, reason); `batch` has one row per input not listed there.
    """

    batch: pa.RecordBatch
    failures: tuple[tuple[int, str], ...] = ()


class Decoder(ABC):
    @abstractmethod
    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        """Decode non-null payloads into rows of the decoder's schema."""


class Encoder(ABC):
    @abstractmethod
    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        """Encode every row of `batch` (columns in the encoder's schema) into one payload each."""


@dataclass(frozen=True)
class DecodedChanges:
    """Decoded change envelopes (debezium-json, ...): each payload gave zero or more rows, each with a kind.

    `batch`: the rows, in the decoder's schema; `kinds`: per row, a ChangeKind (INSERT, UPDATE_BEFORE, UPDATE_AFTER
    or DELETE; a pre-image is always directly followed by its post-image) as its string; `records`: per row, the
    index of the payload it came from (non-decreasing: rows come in payload order, and a payload's rows in the
    order the envelope gives them); `metadata`: one array per requested format metadata key, per row;
    `failures`: (index into the input, reason), payloads that gave no row.
    """

    batch: pa.RecordBatch
    kinds: pa.Array
    records: pa.Array
    metadata: Mapping[str, pa.Array] = field(default_factory=dict)
    failures: tuple[tuple[int, str], ...] = ()


class ChangelogDecoder(ABC):
    @abstractmethod
    def decode_changes(self, payloads: Sequence[bytes]) -> DecodedChanges:
        """Decode non-null payloads, each a change envelope, into the rows they carry."""


class ChangelogEncoder(Encoder):
    @abstractmethod
    def encode_changes(self, batch: pa.RecordBatch, deletes: pa.BooleanArray) -> list[bytes]:
        """One envelope per row of `batch`: a delete where `deletes` is true, an insert elsewhere."""

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        return self.encode_changes(batch, pa.repeat(pa.scalar(False), batch.num_rows))


_C = TypeVar("_C", bound="Codec")


class Codec(ABC):
    """A named key/value format. Subclasses declare their options (`declared_options`, named without the
    `<role>.<format>.` prefix), parsed once here by their kinds into `option_values`; a codec that lists only
    `option_names` takes any text for each."""

    name: ClassVar[str]
    declared_options: ClassVar[tuple[Option[Any], ...]] = ()
    option_names: ClassVar[frozenset[str]] = frozenset()  # derived from declared_options
    #: The column types the format holds, checked before any task runs; None: not declared (every column is
    #: handed to the codec, whose encoder or decoder may refuse it).
    column_types: ClassVar[ColumnTypes | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "declared_options" in cls.__dict__:
            cls.option_names = frozenset(o.name for o in cls.declared_options)
        elif "option_names" in cls.__dict__:  # names only (a plug-in codec): each takes any text
            cls.declared_options = tuple(Option(n, None, FORMAT, "", kind=Text()) for n in sorted(cls.option_names))

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        #: How the format's options are named: `value.json.` for `value.json.<option>`.
        self.prefix = prefix = f"{context.role}.{self.name}."
        self.option_values: OptionValues = parse_values(
            self.declared_options, options, prefix=prefix, error=FormatOptionError, owner=f" for format '{self.name}'"
        )
        self.context = context
        if IGNORE_PARSE_ERRORS in self.declared_options:  # the built-in option (a plug-in may name its own)
            self.ignore_parse_errors = self.option_values.value(IGNORE_PARSE_ERRORS)

    #: True when records that fail to decode are skipped (counted and logged) instead of failing.
    ignore_parse_errors: bool = False

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[object, ...]:
        """As any object, but a codec of a user's module (`module:Class`) travels into tasks behind ShippedArchives, so
        that a module shipped as a zip after the source was registered is found there too (formats/user_modules.py)."""
        reduced = super().__reduce_ex__(protocol)
        if type(self).__module__.startswith(_OWN_MODULES) or not isinstance(reduced, tuple):
            return reduced
        return (_instance_of, (ShippedArchives(), type(self)), *reduced[2:])

    @classmethod
    def named(cls: type[_C], name: str, options: Mapping[str, str], context: CodecContext) -> _C:
        """This codec inside a format built on it (json-confluent's json, debezium-avro-confluent's avro-confluent):
        its options spelled with that format's prefix, `<role>.<name>.`."""
        codec = cls.__new__(cls)
        codec.name = name  # type: ignore[misc]  # this instance's own name (the class's stays)
        codec.__init__(options, context)  # type: ignore[misc]  # after the name, which __init__ reads
        return codec

    @abstractmethod
    def decoder(self, schema: pa.Schema) -> Decoder: ...

    @abstractmethod
    def encoder(self, schema: pa.Schema) -> Encoder: ...

    def inferred_schema(self) -> pa.Schema | None:
        """The columns this format's own schema declares (e.g. a registry subject's latest schema), used
        when the user gives none; None when the format has no schema of its own."""
        return None

    def check_writable(self, schema: pa.Schema) -> None:  # noqa: B027 (most formats have nothing to check)
        """Raise FormatOptionError when rows of `schema` cannot be written, without changing anything outside
        (a write checks the key's and the value's format so before building either encoder, which may
        register schemas)."""


_OWN_MODULES = __name__.rpartition(".")[0] + "."


def _instance_of(_archives: object, cls: type[Codec]) -> Codec:
    """An instance of `cls` for pickle to restore the state of (`_archives`: ShippedArchives, already unpickled)."""
    return cls.__new__(cls)


class ChangelogCodec(Codec):
    """A value format whose records are change envelopes (Debezium, Canal, Maxwell): a record may carry
    several rows, each an insert, an update (pre- and post-image) or a delete; rows are read with
    changelog_decoder, and written as envelopes with encoder(...).encode_changes."""

    #: Format metadata readable through `metadata.columns` as `value.<key>`, and its Arrow type.
    readable_metadata: ClassVar[Mapping[str, pa.DataType]] = {}
    #: False: rows are upserts and deletes of their key; True: Flink's full changelog, pre-images included.
    full_changelog: bool = False

    def decoder(self, schema: pa.Schema) -> Decoder:
        raise FormatOptionError(
            f"'{self.name}' is a changelog format: its records carry changes, read with changelog_decoder()"
        )

    @abstractmethod
    def changelog_decoder(self, schema: pa.Schema, metadata: Sequence[str] = ()) -> ChangelogDecoder:
        """A decoder of rows of `schema`, also reporting the format metadata keys `metadata`."""

    @abstractmethod
    def encoder(self, schema: pa.Schema) -> ChangelogEncoder: ...


def empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)


def batch_from_records(records: Sequence[Mapping[str, object]], schema: pa.Schema) -> pa.RecordBatch:
    """Rows given as dicts (one per record, keyed by field name) as a batch: one C++ conversion for the
    whole batch instead of one Python list per column."""
    if not records:
        return empty_batch(schema)
    if not len(schema):  # a batch of rows without columns
        return pa.RecordBatch.from_struct_array(pa.array([{}] * len(records), pa.struct([])))
    # The struct's fields carry the schema's names, types and nullability: no cast needed after.
    return pa.RecordBatch.from_struct_array(pa.array(records, type=pa.struct(list(schema))))


_UNFIT = (pa.ArrowException, ValueError, TypeError, OverflowError, ArithmeticError, RecursionError)


def columns_to_batch(
    columns: Sequence[Sequence[object]], schema: pa.Schema, count: int
) -> tuple[pa.RecordBatch, list[tuple[int, str]]]:
    """Converted values given a column at a time (one list per field of `schema`, `count` long) as a batch, one
    Arrow conversion per column; when a value does not fit its column after all, the rows that do not (index, reason)
    are left out instead (found one by one only in a column Arrow refused)."""
    if not count or not len(schema):  # no columns: still one (empty) row per record
        return batch_from_records([{}] * count, schema), []
    arrays: list[pa.Array] = []
    unfit: dict[int, str] = {}
    for values, f in zip(columns, schema):
        try:
            arrays.append(pa.array(values, type=f.type))
            continue
        except _UNFIT:
            pass
        for j, value in enumerate(values):
            try:
                pa.array([value], type=f.type)
            except _UNFIT as e:
                unfit.setdefault(j, f"a value does not fit the column types: {e}")
        arrays.append(pa.array([None if j in unfit else v for j, v in enumerate(values)], type=f.type))
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    if unfit:
        batch = batch.filter(pa.array([j not in unfit for j in range(count)]))
    return batch, sorted(unfit.items())
