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
from collections.abc import Callable
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
        raise FormatOptionError(f"the Avro schema must be a record to give table columns, got {_show(avro)}")
    return pa.schema([_arrow_field(f["name"], f["type"], names, top) for f in top["fields"]])


def _arrow_field(name: str, avro: AvroType, names: dict[str, AvroDict], scope: AvroDict | None) -> pa.Field:
    avro = deref(avro, names, scope)
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1:
            raise FormatOptionError(
                f"field '{name}': only unions of null and one type map to a column, got {_show(avro)}"
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
            return pa.list_(_arrow_field("element", avro["items"], names, scope))
        if kind == "map":
            return pa.map_(pa.string(), _arrow_field("value", avro["values"], names, scope))
        if kind == "record":
            return pa.struct([_arrow_field(f["name"], f["type"], names, avro) for f in avro["fields"]])
    if isinstance(kind, str) and kind in _BASE:
        return _BASE[kind]
    raise FormatOptionError(f"Avro type {_show(avro)} has no Spark column type here")


def deref(avro: AvroType, names: dict[str, AvroDict], scope: AvroDict | None) -> AvroType:
    """Resolve a named-type reference; remember named types as they are defined."""
    if isinstance(avro, dict) and isinstance(avro.get("type"), (dict, list)):
        return deref(avro["type"], names, scope)
    if isinstance(avro, dict) and avro.get("type") in ("record", "enum", "fixed"):
        names[_full_name(avro, scope)] = avro
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


def _full_name(avro: AvroDict, scope: AvroDict | None) -> str:
    name: str = avro["name"]
    if "." in name:
        return name
    namespace = avro.get("namespace", _namespace(scope))
    return f"{namespace}.{name}" if namespace else name


def _show(avro: AvroType) -> str:
    text = str(avro)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------------------------
# Reading records written with another schema


def reader_schema(reader: AvroType, writer: AvroType) -> AvroType:
    """`reader` (derived from the table) adjusted so Avro schema resolution accepts `writer`: named types
    take the writer's names, and where the table wants a STRING or BINARY the writer's enum or fixed is
    read as is (the values come out as the symbol and the bytes)."""
    return _Adopter(writer).adopt(reader, writer, None)


def with_defaults(reader: AvroDict, columns: pa.Schema, source: AvroType) -> AvroDict:
    """`reader` (derived from `columns`) with the field defaults of `source` (the registry's schema the table reads
    as: its subject's latest), at any depth of records, where `source`'s field has the column's type: what a record
    whose writer lacks the field reads, as Confluent's deserializer reading with that schema gives. A default of a
    union whose first branch is not null keeps that branch first (Avro's rule for a union's default). Defaults of
    logical types, bytes and fixed are not carried (see _field_defaults)."""
    names: dict[str, AvroDict] = {}
    top = deref(source, names, None)
    if not (isinstance(top, dict) and top.get("type") == "record"):
        return reader
    return _record_defaults(reader, list(columns), top, names)


def _record_defaults(
    reader: AvroDict, columns: list[pa.Field], source: AvroDict, names: dict[str, AvroDict]
) -> AvroDict:
    given = {f["name"]: f for f in source["fields"]}
    fields = []
    for field, column in zip(reader["fields"], columns):
        sf = given.get(field["name"])
        try:  # the column's type (a column given nullable reads a NOT NULL field's values too)
            fits = sf is not None and _arrow_field(column.name, sf["type"], names, source).type == column.type
        except FormatOptionError:
            fits = False
        if fits and sf is not None:
            field = _field_defaults(field, column, sf, names, source)
        fields.append(field)
    return {**reader, "fields": fields}


def _field_defaults(
    field: AvroDict, column: pa.Field, sf: AvroDict, names: dict[str, AvroDict], scope: AvroDict
) -> AvroDict:
    t = field["type"]
    inner = deref(sf["type"], names, scope)
    branches = inner if isinstance(inner, list) else [inner]
    record = next((deref(b, names, scope) for b in branches if b != "null"), None)
    if pa.types.is_struct(column.type) and isinstance(record, dict) and record.get("type") == "record":
        if isinstance(t, list):
            t = ["null" if b == "null" else _record_defaults(b, list(column.type), record, names) for b in t]
        else:
            t = _record_defaults(t, list(column.type), record, names)
    if "default" not in sf or (sf["default"] is None and not isinstance(t, list)):  # null: a nullable column's
        return {**field, "type": t}
    default = sf["default"]
    first = deref(branches[0], names, scope)
    logical = isinstance(first, dict) and "logicalType" in first
    if default is not None and (logical or _kind(first) not in _READ_AS_WRITTEN):
        # fastavro hands a default out as the JSON holds it (millis, days, text for bytes), which the column would
        # take for another value: such a field the writer lacks is refused (_Adopter._record), never misread.
        return {**{k: v for k, v in field.items() if k != "default"}, "type": t, UNREAD_DEFAULT: default}
    if default is not None and isinstance(t, list):
        t = [b for b in t if b != "null"] + ["null"]  # the default's branch first (Avro's rule)
    return {**field, "type": t, "default": default}


#: The types whose default fastavro hands out as a written value reads.
_READ_AS_WRITTEN = {"boolean", "int", "long", "float", "double", "string", "enum"}
#: A reader field's key holding a default the reader does not carry (with_defaults).
UNREAD_DEFAULT = "x-upsert-kafka-unread-default"


class _Adopter:
    def __init__(self, writer: AvroType) -> None:
        self.names: dict[str, AvroDict] = {}
        self.emitted: set[str] = set()
        collect_named(writer, self.names, None)

    def adopt(self, r: AvroType, w: AvroType, scope: AvroDict | None) -> AvroType:
        w = deref(w, self.names, scope)
        if isinstance(r, list):  # the reader's ["null", T] (or [T, "null"] where T's default is the field's)
            inner = next(b for b in r if b != "null")
            options = w if isinstance(w, list) else [w]
            match = next((b for b in options if _same_kind(inner, deref(b, self.names, scope))), None)
            adopted = inner if match is None else self.adopt(inner, match, scope)
            return ["null", adopted] if r[0] == "null" else [adopted, "null"]
        if isinstance(w, list):  # writer union, reader not nullable: match a branch
            match = next((b for b in w if _same_kind(r, deref(b, self.names, scope))), None)
            return r if match is None else self.adopt(r, match, scope)
        if isinstance(w, dict) and w.get("type") in ("enum", "fixed") and _kind(r) in ("string", "bytes"):
            return self._named(w, scope, lambda: w)
        if isinstance(r, dict) and isinstance(w, dict):
            if r.get("type") == "record" and w.get("type") == "record":
                return self._named(w, w, lambda: self._record(r, w))
            if r.get("type") == "array" and w.get("type") == "array":
                return {**r, "items": self.adopt(r["items"], w["items"], scope)}
            if r.get("type") == "map" and w.get("type") == "map":
                return {**r, "values": self.adopt(r["values"], w["values"], scope)}
        return r

    def _named(self, w: AvroDict, scope: AvroDict | None, build: Callable[[], AvroType]) -> AvroType:
        name = _full_name(w, scope)
        if name in self.emitted:
            return name
        self.emitted.add(name)
        return build()

    def _record(self, r: AvroDict, w: AvroDict) -> AvroDict:
        by_name = {f["name"]: f for f in w["fields"]}
        for f in w["fields"]:
            for alias in f.get("aliases", ()):
                by_name.setdefault(alias, f)
        name = w["name"] if "." in w["name"] or not w.get("namespace") else f"{w['namespace']}.{w['name']}"
        fields = []
        for f in r["fields"]:
            wf = by_name.get(f["name"])
            if wf is None and UNREAD_DEFAULT in f:
                raise SchemaMismatch(
                    f"field '{f['name']}': the writer's record '{name}' has none, and the reader's schema (the "
                    f"subject's latest version) gives it the default {f[UNREAD_DEFAULT]!r}, of a type whose default "
                    "this connector does not read (logical types, bytes, fixed, records, arrays, maps); skip such "
                    "records with ignore-parse-errors"
                )
            if wf is None and "default" not in f:
                raise SchemaMismatch(
                    f"field '{f['name']}': the writer's record '{name}' has none, and the table reads it NOT NULL "
                    "without a default; declare the column nullable, or give the field a default in the reader's "
                    "schema (the subject's latest version)"
                )
            if wf is not None and not self._resolves(f["type"], wf["type"], w):
                raise SchemaMismatch(
                    f"field '{f['name']}': the writer writes {_show(wf['type'])}, the table reads {_show(f['type'])}"
                )
            fields.append(f if wf is None else {**f, "type": self.adopt(f["type"], wf["type"], w)})
        return {"type": "record", "name": name, "fields": fields}

    def _resolves(self, r: AvroType, w: AvroType, scope: AvroDict | None) -> bool:
        """Whether some value of writer type `w` reads as reader type `r` (a writer union: any of its branches)."""
        readers = r if isinstance(r, list) else [r]
        w = deref(w, self.names, scope)
        writers = w if isinstance(w, list) else [w]
        return any(
            (b == "null" and "null" in readers) or any(_same_kind(a, deref(b, self.names, scope)) for a in readers)
            for b in writers
        )


class SchemaMismatch(FormatOptionError):
    """A writer's schema that no record of can be read into the table's columns (names the field and both types)."""


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


def _kind(avro: AvroType) -> str | None:  # None: a dict without a type
    return avro if isinstance(avro, str) else avro.get("type") if isinstance(avro, dict) else "union"


_PROMOTABLE = {"int": {"int", "long", "float", "double"}, "long": {"long", "float", "double"}}


def _same_kind(r: AvroType, w: AvroType) -> bool:
    rk, wk = _kind(r), _kind(w)
    if rk == wk or (wk in _PROMOTABLE and rk in _PROMOTABLE[wk]):
        return True
    if wk == "float" and rk == "double":
        return True
    return {rk, wk} <= {"string", "bytes", "enum", "fixed"} and rk in ("string", "bytes")
