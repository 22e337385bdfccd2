"""Column <-> text conversions of the csv format, column-wise with Arrow kernels where Arrow has them.

A column whose values Arrow's CSV reader parses itself (numbers, booleans, decimals, dates, timestamps,
strings) needs nothing here on reading; binary, ARRAY / STRUCT of flat types and nested types are read
as text and converted by a ColumnReader, which names the rows it could not convert.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from .codec import CodecContext
from .java_numbers import float_texts
from .json_codec import JsonCodec
from .json_values import RECORD_ERRORS, arrow_to_json, json_loads_for, json_reason, json_to_arrow, json_values

# (converted column, [(row, reason)]) from a column of text.
ColumnReader = Callable[[pa.Array], tuple[pa.Array, list[tuple[int, str]]]]
_ERRORS = (pa.ArrowException, *RECORD_ERRORS)
# Nested values inside a CSV field are JSON written with the json format's defaults.
_JSON_DEFAULTS = JsonCodec({}, CodecContext(role="value"))


def _flat(t: pa.DataType) -> bool:
    return not pa.types.is_nested(t)


def _delimited(t: pa.DataType) -> bool:
    """Written as elements joined by the array-element-delimiter (Flink's ARRAY / ROW in CSV)."""
    if pa.types.is_list(t):
        return _flat(t.value_type)
    return pa.types.is_struct(t) and all(_flat(f.type) for f in t)


def native_csv_type(t: pa.DataType) -> pa.DataType:
    """The type Arrow's CSV reader produces for a column: the column's own, or text for conversion."""
    return t if _flat(t) and not pa.types.is_binary(t) else pa.string()


# ---------------------------------------------------------------------------------------------
# Writing


def column_text(column: pa.Array, delimiter: str, null_text: str) -> pa.Array:
    """The column as text (nulls stay null)."""
    t = column.type
    if pa.types.is_string(t):
        return column
    if pa.types.is_binary(t):
        return pa.array([None if v is None else base64.b64encode(v).decode() for v in column.to_pylist()], pa.string())
    if pa.types.is_floating(t):  # as Flink's csv format (Jackson) writes them: 1.0, 1.0E7, NaN, Infinity
        return float_texts(column, quote_non_finite=False)
    if _flat(t):
        return pc.cast(column, pa.string())
    if pa.types.is_list(t) and _delimited(t):
        values = pc.fill_null(column_text(column.values, delimiter, null_text), null_text)
        lists = pa.ListArray.from_arrays(column.offsets, values, mask=column.is_null())
        return pc.binary_join(lists, delimiter)
    if _delimited(t):
        fields = [pc.fill_null(column_text(f, delimiter, null_text), null_text) for f in column.flatten()]
        joined = pc.binary_join_element_wise(*fields, delimiter)
        return pc.if_else(column.is_valid(), joined, pa.scalar(None, pa.string()))
    values = json_values(column, arrow_to_json(t, _JSON_DEFAULTS))
    return pa.array([None if v is None else orjson.dumps(v).decode() for v in values], pa.string())


# ---------------------------------------------------------------------------------------------
# Reading


def column_reader(t: pa.DataType, delimiter: str, null_text: str | None) -> ColumnReader | None:
    """How to turn the text column Arrow read into `t`; None when Arrow parsed it already."""
    if _flat(t) and not pa.types.is_binary(t):
        return None
    if pa.types.is_binary(t):
        return _per_row(lambda text: _parse_flat(text, t))
    if pa.types.is_list(t) and _delimited(t):
        return _per_row(lambda text: _parse_list(text, t, delimiter, null_text))
    if _delimited(t):
        return _per_row(lambda text: _parse_struct(text, t, delimiter, null_text))
    return _json_reader(t)


def _per_row(parse: Callable[[pa.Array], pa.Array]) -> ColumnReader:
    """Convert the whole column at once; when that fails, row by row to name the rows that fail."""

    def read(text: pa.Array) -> tuple[pa.Array, list[tuple[int, str]]]:
        try:
            return parse(text), []
        except _ERRORS:
            pieces, bad = [], []
            for row in range(len(text)):
                try:
                    pieces.append(parse(text.slice(row, 1)))
                except _ERRORS as e:
                    bad.append((row, str(e).split("\n")[0]))
                    pieces.append(None)
            kind = next((p.type for p in pieces if p is not None), None)
            if kind is None:
                return pa.nulls(len(text)), bad
            return pa.concat_arrays([pa.nulls(1, kind) if p is None else p for p in pieces]), bad

    return read


def _element_nulls(text: pa.Array, null_text: str | None) -> pa.Array:
    """Elements equal to the null literal (or empty, without one) are null."""
    marker = null_text if null_text is not None else ""
    return pc.if_else(pc.equal(text, marker), pa.scalar(None, pa.string()), text)


def _parse_flat(text: pa.Array, t: pa.DataType) -> pa.Array:
    if pa.types.is_binary(t):
        return pa.array([None if v is None else base64.b64decode(v, validate=True) for v in text.to_pylist()], t)
    if pa.types.is_boolean(t):
        lowered = pc.utf8_lower(text)
        ok = pc.or_(pc.equal(lowered, "true"), pc.equal(lowered, "false"))
        if not pc.all(pc.or_(ok, pc.is_null(text)), min_count=0).as_py():
            raise ValueError("expected true or false")
        return pc.equal(lowered, "true")
    return pc.cast(text, t)


def _parse_list(text: pa.Array, t: pa.ListType, delimiter: str, null_text: str | None) -> pa.Array:
    # An empty field is an empty array (splitting it would give one empty element).
    empty = pc.fill_null(pc.equal(text, ""), False)
    source = pc.if_else(empty, pa.scalar(None, pa.string()), text)
    parts = pc.split_pattern(source, delimiter)
    values = _parse_flat(_element_nulls(parts.values, null_text), t.value_type)
    lists = pa.ListArray.from_arrays(parts.offsets, values, type=t, mask=text.is_null())
    if pc.any(empty).as_py():
        lists = pc.if_else(empty, pa.scalar([], t), lists)
    return lists


def _parse_struct(text: pa.Array, t: pa.StructType, delimiter: str, null_text: str | None) -> pa.Array:
    parts = pc.split_pattern(text, delimiter)
    lengths = pc.fill_null(pc.list_value_length(parts), t.num_fields)
    if not pc.all(pc.equal(lengths, t.num_fields), min_count=0).as_py():
        raise ValueError(f"expected {t.num_fields} elements separated by '{delimiter}'")
    fields = [_parse_flat(_element_nulls(pc.list_element(parts, i), null_text), f.type) for i, f in enumerate(t)]
    return pa.StructArray.from_arrays(fields, fields=list(t), mask=text.is_null())


def _json_reader(t: pa.DataType) -> ColumnReader:
    convert, loads = json_to_arrow(t), json_loads_for(t)

    def read(text: pa.Array) -> tuple[pa.Array, list[tuple[int, str]]]:
        values, bad = [], []
        for row, v in enumerate(text.to_pylist()):
            try:
                values.append(None if v is None else convert(loads(v)))
            except _ERRORS as e:  # JSON errors are ValueErrors
                bad.append((row, f"not JSON of type {t}: {json_reason(e)}"))
                values.append(None)
        try:
            return pa.array(values, t), bad
        except _ERRORS:  # never seen: the converters check what Arrow refuses; find the rows all the same
            for row, v in enumerate(values):
                try:
                    pa.array([v], t)
                except _ERRORS as e:
                    bad.append((row, f"not JSON of type {t}: {e}"))
                    values[row] = None
            return pa.array(values, t), sorted(bad)

    return read
