"""Avro bodies decoded column-wise with numpy: every record of a chunk at once, one field after the other.

Why not fastavro alone: its per-record call builds a dict per record (~3 µs for six fields), which made the
avro formats the slowest read. Container-file readers (fastavro's block reader, polars' read_avro) need the
records concatenated, and then cannot tell where one Kafka record's bytes end, so a malformed record could
shift into its neighbour unnoticed. Here each record keeps its own bounds: the decoder holds one read
position per record and advances all of them field by field with array operations (a varint is at most
ten rounds over the records still reading), so a six-field chunk costs a few dozen numpy calls in all.

This path only ever says "these rows, exactly" or "not sure": any record it cannot vouch for (a byte past
its end or left over, a union branch, enum index, value range or UTF-8 it does not accept) makes the whole
chunk go through fastavro as before, which then names the failing records with its own reasons. Writer
schemas with types it does not handle (arrays, maps, decimals, unions of several types, ...) never take it.
What it accepts decodes to the values fastavro gives (tests/formats/test_format_avro_vector.py holds the
two side by side).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from ..payloads import Layout
from .schema import AvroDict, AvroType, collect_named, deref
from .vector_reads import (
    CONVERT,
    LOGICAL,
    PRIMITIVE_READS,
    Unsure,
    read_enum,
    read_fixed,
    read_long,
    to_binary,
    to_symbols,
)

# A column reader: (data, positions of the rows it reads, their ends) -> (values, positions after them).
Read = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[pa.Array, np.ndarray]]


class VectorReader:
    """Reads bodies written with one writer schema into the table's columns, or says it is unsure."""

    def __init__(self, fields: list[tuple[str | None, Read]], schema: pa.Schema) -> None:
        self.fields = fields  # in the writer's order; name None: read and dropped
        self.schema = schema

    @classmethod
    def build(cls, writer: AvroType, reader: AvroType, schema: pa.Schema) -> VectorReader | None:
        """The reader of records written with `writer` into the table's columns (fastavro resolves them to
        `reader`, the table's schema adopted to the writer's), or None when the schemas are outside this path."""
        if not len(schema):
            return None  # a batch without columns would lose its row count
        names = _Names(writer, reader)
        try:
            fields = _record_fields(names.writer(writer, None), names.reader(reader, None), list(schema), names)
        except _Unsupported:
            return None
        return cls(fields, schema)

    def read(self, layout: Layout, rows: np.ndarray | None, start: int) -> pa.RecordBatch | None:
        """The records of the chunk's `rows` (all when None), their bodies from byte `start` of each payload,
        as a batch of the table's columns; None when unsure."""
        begins = layout.begins if rows is None else layout.begins[rows]
        ends = layout.ends if rows is None else layout.ends[rows]
        try:
            columns, position = _read_record(self.fields, layout.data, begins + start, ends)
        except Unsure:
            return None
        if not np.array_equal(position, ends):
            return None
        arrays = [columns[f.name] if f.name in columns else pa.nulls(len(ends), f.type) for f in self.schema]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


class _Unsupported(Exception):
    pass


class _Names:
    """The named types of the writer's and of the reader's schema, to resolve references to them."""

    def __init__(self, writer: AvroType, reader: AvroType) -> None:
        self.of_writer: dict[str, AvroDict] = {}
        self.of_reader: dict[str, AvroDict] = {}
        collect_named(writer, self.of_writer, None)
        collect_named(reader, self.of_reader, None)

    def writer(self, avro: AvroType, scope: Any) -> AvroType:
        return deref(avro, self.of_writer, scope)

    def reader(self, avro: AvroType, scope: Any) -> AvroType:
        return deref(avro, self.of_reader, scope)


def _record_fields(w: Any, r: Any, targets: list[pa.Field], names: _Names) -> list[tuple[str | None, Read]]:
    """Each writer field's reader, named by the column it fills (None: no column wants it, it is skipped),
    as fastavro resolves records: reader fields by name; one the writer lacks takes its default, null."""
    if not (_kind(w) == "record" and (r is None or _kind(r) == "record")):
        raise _Unsupported
    wanted = {} if r is None else {f["name"]: f for f in r["fields"]}
    columns = {f.name: f for f in targets}
    fields: list[tuple[str | None, Read]] = []
    for wf in w["fields"]:
        rf = wanted.pop(wf["name"], None)
        if rf is None:
            fields.append((None, _reader(wf["type"], None, None, False, names, w, None)))
            continue
        column = columns.get(rf["name"])
        if column is None:
            raise _Unsupported
        fields.append((column.name, _reader(wf["type"], rf["type"], column.type, column.nullable, names, w, r)))
    if any(f.get("aliases") or f.get("default", ...) is not None for f in wanted.values()):
        raise _Unsupported  # no default (fastavro fails each record) or another default than null
    return fields


def _kind(avro: AvroType) -> str | None:  # None: a dict without a type
    if isinstance(avro, list):
        return "union"
    return avro.get("type") if isinstance(avro, dict) else avro


# The reader types fastavro resolves a writer type to (Avro's promotions), as `_reader` converts them.
_RESOLVES = {
    "boolean": {"boolean"},
    "int": {"int", "long", "float", "double"},
    "long": {"long", "float", "double"},
    "float": {"float", "double"},
    "double": {"double"},
    "string": {"string"},
    "bytes": {"bytes"},
}


def _reader(
    w: AvroType, r: AvroType, target: pa.DataType | None, nullable: bool, names: _Names, w_scope: Any, r_scope: Any
) -> Read:
    """The reader of one value of writer type `w`, resolved to reader type `r`, into an Arrow column of type
    `target` (r and target None: the value is skipped)."""
    w = names.writer(w, w_scope)
    if r is not None:
        r = names.reader(r, r_scope)
        if isinstance(r, list):  # the reader's ["null", T] of a nullable column
            if len(r) != 2 or r[0] != "null":
                raise _Unsupported
            r = names.reader(r[1], r_scope)
    if isinstance(w, list):
        if len(w) != 2 or w.count("null") != 1:
            raise _Unsupported
        inner = _reader(next(b for b in w if b != "null"), r, target, nullable, names, w_scope, r_scope)
        return _union(1 - w.index("null"), inner, target, nullable)
    kind = _kind(w)
    if kind == "record":
        fields = _record_fields(w, r, [] if target is None else list(target), names)
        if target is None:
            return lambda data, pos, ends: (None, _read_record(fields, data, pos, ends)[1])
        if not pa.types.is_struct(target):
            raise _Unsupported
        return _struct(fields, target)
    if kind in ("enum", "fixed"):
        read = (read_enum if kind == "enum" else read_fixed)(w)
        if r is not None and not (_kind(r) == kind and _same_named(w, r)):
            raise _Unsupported
        convert = (to_symbols if kind == "enum" else to_binary)(target) if target is not None else None
    elif kind in _RESOLVES:
        read = read_long if kind in ("int", "long") else PRIMITIVE_READS[kind]
        logical = w.get("logicalType") if isinstance(w, dict) else None
        if r is None:
            convert = None  # skipped: only read, as fastavro skips it (no conversion)
        elif (r_kind := _kind(r)) not in _RESOLVES[kind]:
            raise _Unsupported
        elif logical is not None:  # fastavro converts by the writer's logical type
            convert = LOGICAL.get((kind, logical), lambda target: None)(target) if r_kind == kind else None
        else:
            convert = CONVERT[(kind, r_kind)](target)
    else:
        raise _Unsupported
    if target is None:
        return lambda data, pos, ends: (None, read(data, pos, ends)[1])
    if convert is None:
        raise _Unsupported

    def column(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        raw, after = read(data, pos, ends)
        return convert(raw), after

    return column


def _same_named(w: AvroDict, r: AvroDict) -> bool:
    """The reader's enum or fixed is the writer's own (how reader_schema adopts them)."""
    same_name = w["name"].rsplit(".", 1)[-1] == r["name"].rsplit(".", 1)[-1]
    return same_name and w.get("symbols") == r.get("symbols") and w.get("size") == r.get("size")


def _read_record(
    fields: list[tuple[str | None, Read]], data: np.ndarray, pos: np.ndarray, ends: np.ndarray
) -> tuple[dict[str, pa.Array], np.ndarray]:
    columns: dict[str, pa.Array] = {}
    for name, read in fields:
        values, pos = read(data, pos, ends)
        if name is not None:
            columns[name] = values
    return columns, pos


def _struct(fields: list[tuple[str | None, Read]], target: pa.StructType) -> Read:
    def read(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        columns, pos = _read_record(fields, data, pos, ends)
        children = [columns[f.name] if f.name in columns else pa.nulls(len(pos), f.type) for f in target]
        return pa.StructArray.from_arrays(children, fields=list(target)), pos

    return read


def _union(value_branch: int, inner: Read, target: pa.DataType | None, nullable: bool) -> Read:
    def read(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
        branch, pos = read_long(data, pos, ends)
        present = branch == value_branch
        if present.all():
            return inner(data, pos, ends)
        if not (present | (branch == 1 - value_branch)).all() or (target is not None and not nullable):
            raise Unsure  # a branch the union lacks, or a null for a column that takes none
        values, after = inner(data, pos[present], ends[present])
        pos = pos.copy()
        pos[present] = after
        if target is None:
            return None, pos
        # The values of the rows that have one, spread out with nulls between them.
        where = pa.array(np.cumsum(present) - 1, mask=~present)
        return values.take(where), pos

    return read
