"""Reading Avro records written with another schema than the table's: the reader schema fastavro resolves them to
(the table's, adopted to the writer's names and types, with the field defaults of the registry's schema), and the
writer schemas no record of can be read, refused naming the field and both types."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from ...kernel.errors import FormatOptionError
from .schema import AvroDict, AvroType, arrow_field, collect_named, deref, full_name, show_avro


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
            fits = sf is not None and arrow_field(column.name, sf["type"], names, source).type == column.type
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
        name = full_name(w, scope)
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
                raise MissingWithoutDefault(
                    f["name"],
                    name,
                    f"field '{f['name']}': the writer's record '{name}' has none, and the table reads it NOT NULL "
                    "without a default; declare the column nullable, or give the field a default in the reader's "
                    "schema (the subject's latest version)",
                )
            if wf is not None and not self._resolves(f["type"], wf["type"], w):
                raise SchemaMismatch(
                    f"field '{f['name']}': the writer writes {show_avro(wf['type'])}, the table reads "
                    f"{show_avro(f['type'])}"
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


class MissingWithoutDefault(SchemaMismatch):
    """A field the table reads NOT NULL without a default that the writer's record (`record`) lacks."""

    def __init__(self, field: str, record: str, message: str) -> None:
        super().__init__(message)
        self.field, self.record = field, record


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
