"""Spark (as Arrow) <-> Avro schemas, mapped as Spark's and Flink's avro formats map them.

| Spark            | Avro                                                        |
|------------------|-------------------------------------------------------------|
| BOOLEAN          | boolean                                                     |
| TINYINT/SMALLINT/INT | int                                                     |
| BIGINT           | long                                                        |
| FLOAT / DOUBLE   | float / double                                              |
| DECIMAL(p,s)     | bytes, logicalType decimal (fixed decimals are read too)    |
| STRING           | string (enums are read as their symbol)                     |
| BINARY           | bytes (fixed is read too)                                   |
| DATE             | int, logicalType date                                       |
| TIME             | int, logicalType time-millis (time-micros is read too)      |
| TIMESTAMP        | long, logicalType timestamp-micros / -millis (see below)    |
| TIMESTAMP_NTZ    | long, logicalType local-timestamp-micros / -millis, or timestamp-millis (below) |
| ARRAY / MAP<STRING,_> / STRUCT | array / map / record (named <parent>_<field>) |

A nullable column or element is the union ["null", T] with default null. Avro maps have string keys only,
so a MAP with other keys is rejected (as Spark's to_avro does).

Timestamps as Flink's AvroSchemaConverter maps them: the Flink precision (formats/flink_types.py; 6 unless the
column says otherwise) picks millis (0 to 3) or micros (4 to 6), and with `timestamp_mapping.legacy` (Flink's
default, true) a TIMESTAMP(0..3) is `timestamp-millis` holding the wall clock as if in UTC. Flink's legacy mapping
refuses TIMESTAMP(4..6) and every TIMESTAMP_LTZ: those take its non-legacy mapping's types, with true microseconds.
Its non-legacy mapping declares TIMESTAMP(4..6) and TIMESTAMP_LTZ(4..6) as micros but writes milliseconds in them
(Flink 2.2.1, tests/formats/golden/flink/avro_timestamp_mapping_v2.json): with `timestamp_mapping.legacy` false such
a column is refused, since no choice of ours reads and writes the same instants as Flink there.
"""

from __future__ import annotations

import copy
from typing import Any

import pyarrow as pa

from ...kernel.errors import FormatOptionError
from ..codec import STRING_KEYED_TYPES, Role
from ..flink_types import flink_type_name, timestamp_precision

# What the mapping above holds, for both avro formats: every Spark type, with Avro's string map keys.
AVRO_TYPES = STRING_KEYED_TYPES

AvroType = Any  # an Avro schema in its JSON form: a name, a list (union) or a dict
AvroDict = dict[str, Any]  # a JSON object of one: a record, enum, fixed, array or map schema, or a record's field

_PRIMITIVES: list[tuple[Any, AvroType]] = [
    (pa.types.is_boolean, "boolean"),
    (lambda t: t in (pa.int8(), pa.int16(), pa.int32()), "int"),
    (lambda t: t == pa.int64(), "long"),
    (lambda t: t == pa.float32(), "float"),
    (lambda t: t == pa.float64(), "double"),
    (pa.types.is_string, "string"),
    (pa.types.is_binary, "bytes"),
    (pa.types.is_date32, {"type": "int", "logicalType": "date"}),
    # Flink's AvroSchemaConverter: TIME(0..3) is time-millis (it refuses a finer TIME); its runtime holds millis.
    (pa.types.is_time, {"type": "int", "logicalType": "time-millis"}),
]


def avro_schema(
    schema: pa.Schema, name: str = "record", namespace: str | None = None, legacy_timestamps: bool = True
) -> AvroDict:
    """The Avro record schema for rows of `schema` (what the avro formats write when given none), with Flink's
    timestamp mapping (`legacy_timestamps`: Flink's option avro.timestamp_mapping.legacy)."""
    record = _Deriver(legacy_timestamps).record(list(schema), name)
    if namespace:
        record["namespace"] = namespace
    return record


def table_avro_schema(
    schema: pa.Schema, role: str, name: str, namespace: str | None, legacy_timestamps: bool = True
) -> AvroDict:
    """The Avro schema a key's or a value's columns are written with when none is given, as Flink derives it:
    a key's columns are NOT NULL (a primary key's: `"long"`, no union branch in the bytes; the connector marks
    the key's columns NOT NULL in the value's schema too), other nullable columns unions with null. The writer
    refuses a null key column, so a key always fits."""
    if role == Role.KEY:  # a codec context's role, or the text "key"
        schema = pa.schema([f.with_nullable(False) for f in schema])
    return avro_schema(schema, name, namespace, legacy_timestamps)


def timestamp_logical_type(f: pa.Field, legacy: bool) -> str:
    """The Avro logical type of a timestamp field, as Flink's AvroSchemaConverter picks it (module docstring)."""
    unit = "millis" if timestamp_precision(f) <= 3 else "micros"
    zoned = f.type.tz is not None
    if not legacy and unit == "micros":
        raise FormatOptionError(
            f"column '{f.name}' is Flink's {flink_type_name(f)}, which Flink's avro with 'timestamp_mapping.legacy' = "
            "false declares as micros but writes as milliseconds (Flink 2.2), so its records and ours would disagree "
            "1000-fold: declare the column TIMESTAMP(3) / TIMESTAMP_LTZ(3) in option 'flink.column-types' to exchange "
            "it with Flink, or keep 'timestamp_mapping.legacy' true, where this connector writes true microseconds "
            "(Flink refuses the type there)"
        )
    if zoned or (legacy and unit == "millis"):
        return f"timestamp-{unit}"
    return f"local-timestamp-{unit}"


class _Deriver:
    def __init__(self, legacy: bool) -> None:
        self.legacy = legacy

    def record(self, fields: list[pa.Field], name: str) -> AvroDict:
        return {"type": "record", "name": name, "fields": [self.field(f, f"{name}_{f.name}") for f in fields]}

    def field(self, f: pa.Field, path: str) -> AvroDict:
        out: dict[str, Any] = {"name": f.name, "type": self.nullable(f, path)}
        if f.nullable:
            out["default"] = None
        return out

    def nullable(self, f: pa.Field, path: str) -> AvroType:
        t = self.avro_type(f, path)
        return ["null", t] if f.nullable else t

    def avro_type(self, f: pa.Field, path: str) -> AvroType:
        t = f.type
        for test, avro in _PRIMITIVES:
            if test(t):
                return copy.deepcopy(avro)
        if pa.types.is_decimal(t):
            return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
        if pa.types.is_timestamp(t):
            return {"type": "long", "logicalType": timestamp_logical_type(f, self.legacy)}
        if pa.types.is_list(t):
            return {"type": "array", "items": self.nullable(t.value_field, path)}
        if pa.types.is_map(t):
            if not pa.types.is_string(t.key_type):
                raise FormatOptionError(
                    f"Avro maps have string keys only; MAP<{t.key_type}, ...> cannot be written as Avro "
                    "(use MAP<STRING, ...> or an ARRAY of STRUCT<key, value>)"
                )
            return {"type": "map", "values": self.nullable(t.item_field, path)}
        if pa.types.is_struct(t):
            return self.record(list(t), path)
        raise FormatOptionError(f"the avro formats do not support type {t}")


# ---------------------------------------------------------------------------------------------
# Avro -> Arrow, for a schema that comes from elsewhere (a registry subject)


def arrow_schema(avro: AvroType) -> pa.Schema:
    """The columns of an Avro record schema (the inverse of avro_schema, plus enum, fixed, millis)."""
    names: dict[str, AvroDict] = {}
    top = deref(avro, names, None)
    if not (isinstance(top, dict) and top.get("type") == "record"):
        raise FormatOptionError(f"the Avro schema must be a record to give table columns, got {show_avro(avro)}")
    return pa.schema([arrow_field(f["name"], f["type"], names, top) for f in top["fields"]])


def arrow_field(name: str, avro: AvroType, names: dict[str, AvroDict], scope: AvroDict | None) -> pa.Field:
    avro = deref(avro, names, scope)
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1:
            raise FormatOptionError(
                f"field '{name}': only unions of null and one type map to a column, got {show_avro(avro)}"
            )
        return pa.field(name, _arrow_type(branches[0], names, scope), nullable="null" in avro)
    return pa.field(name, _arrow_type(avro, names, scope), nullable=False)


_BASE = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
    "enum": pa.string(),
    "fixed": pa.binary(),
}
_LOGICAL = {
    "date": pa.date32(),
    "time-millis": pa.time64("ns"),  # Spark's TIME travels as nanoseconds of the day
    "time-micros": pa.time64("ns"),
    "timestamp-millis": pa.timestamp("us", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("us"),
    "local-timestamp-micros": pa.timestamp("us"),
}


def _arrow_type(avro: AvroType, names: dict[str, AvroDict], scope: AvroDict | None) -> pa.DataType:
    avro = deref(avro, names, scope)
    kind = avro["type"] if isinstance(avro, dict) else avro
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        if logical == "decimal" and avro.get("precision", 0) <= 38:
            return pa.decimal128(avro["precision"], avro.get("scale", 0))
        if logical in _LOGICAL:
            return _LOGICAL[logical]
        if kind == "array":
            return pa.list_(arrow_field("element", avro["items"], names, scope))
        if kind == "map":
            return pa.map_(pa.string(), arrow_field("value", avro["values"], names, scope))
        if kind == "record":
            return pa.struct([arrow_field(f["name"], f["type"], names, avro) for f in avro["fields"]])
    if isinstance(kind, str) and kind in _BASE:
        return _BASE[kind]
    raise FormatOptionError(f"Avro type {show_avro(avro)} has no Spark column type here")


def deref(avro: AvroType, names: dict[str, AvroDict], scope: AvroDict | None) -> AvroType:
    """Resolve a named-type reference; remember named types as they are defined."""
    if isinstance(avro, dict) and isinstance(avro.get("type"), (dict, list)):
        return deref(avro["type"], names, scope)
    if isinstance(avro, dict) and avro.get("type") in ("record", "enum", "fixed"):
        names[full_name(avro, scope)] = avro
        names.setdefault(avro["name"].rsplit(".", 1)[-1], avro)
        return avro
    if isinstance(avro, str) and avro not in _BASE and avro != "null":
        qualified = f"{_namespace(scope)}.{avro}" if "." not in avro and _namespace(scope) else avro
        found = names.get(qualified) or names.get(avro)
        if found is None:
            raise FormatOptionError(f"the Avro schema refers to the unknown type '{avro}'")
        return found
    return avro


def _namespace(scope: AvroDict | None) -> str:
    if not scope:
        return ""
    name: str = scope["name"]
    if "." in name:
        return name.rsplit(".", 1)[0]
    namespace: str = scope.get("namespace", "")
    return namespace


def full_name(avro: AvroDict, scope: AvroDict | None) -> str:
    name: str = avro["name"]
    if "." in name:
        return name
    namespace = avro.get("namespace", _namespace(scope))
    return f"{namespace}.{name}" if namespace else name


def show_avro(avro: AvroType) -> str:
    text = str(avro)
    return text if len(text) <= 80 else text[:77] + "..."


def collect_named(avro: AvroType, names: dict[str, AvroDict], scope: AvroDict | None) -> None:
    """Every named type the writer schema defines, so references to them resolve."""
    if isinstance(avro, list):
        for branch in avro:
            collect_named(branch, names, scope)
    elif isinstance(avro, dict):
        kind = avro.get("type")
        if kind in ("record", "enum", "fixed"):
            deref(avro, names, scope)
        if kind == "record":
            for f in avro["fields"]:
                collect_named(f["type"], names, avro)
        elif kind == "array":
            collect_named(avro["items"], names, scope)
        elif kind == "map":
            collect_named(avro["values"], names, scope)
        elif isinstance(kind, (dict, list)):
            collect_named(kind, names, scope)
