"""Column <-> text conversions of the csv format, column-wise with Arrow kernels where Arrow has them.

A column whose values Arrow's CSV reader parses itself (numbers, booleans, dates, timestamps, strings) needs
nothing here on reading; binary, decimals, TIME (formats/time_text.py), ARRAY / STRUCT of flat types and nested
types are read as text and converted by a ColumnReader, which names the rows it could not convert.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ..codec import CodecContext, Role
from ..decimals import decimals_from_text
from ..java_numbers import decimal_scale_texts, decimal_texts, float_texts
from ..json.codec import JsonCodec
from ..json.values import RECORD_ERRORS, arrow_to_json, json_loads_for, json_reason, json_to_arrow, json_values
from ..time_text import CSV_TIME, time_texts, times_from_text

# (converted column, [(row, reason)]) from a column of text.
ColumnReader = Callable[[pa.Array], tuple[pa.Array, list[tuple[int, str]]]]
_ERRORS = (pa.ArrowException, *RECORD_ERRORS)
# Nested values inside a CSV field are JSON written with the json format's defaults.
_JSON_DEFAULTS = JsonCodec({}, CodecContext(role=Role.VALUE))


def _flat(t: pa.DataType) -> bool:
    return not pa.types.is_nested(t)


def _delimited(t: pa.DataType) -> bool:
    """Written as elements joined by the array-element-delimiter (Flink's ARRAY / ROW in CSV)."""
    if pa.types.is_list(t):
        return _flat(t.value_type)
    return pa.types.is_struct(t) and all(_flat(f.type) for f in t)


def native_csv_type(t: pa.DataType) -> pa.DataType:
    """The type Arrow's CSV reader produces for a column: the column's own, or text for conversion (decimals too:
    Arrow refuses a value that needs rounding, which decimals_from_text rounds)."""
    return t if _native(t) else pa.string()


def _native(t: pa.DataType) -> bool:
    return _flat(t) and not pa.types.is_binary(t) and not pa.types.is_decimal(t) and not pa.types.is_time(t)


# ---------------------------------------------------------------------------------------------
# Writing


@dataclass(frozen=True)
class TextForm:
    """How the csv encoder writes values as text, from the codec's options."""

    delimiter: str  # array-element-delimiter
    null_literal: str | None
    decimal_scientific: bool  # write-bigdecimal-in-scientific-notation
    prefix: str  # of the option names in errors: 'value.csv.'

    @property
    def null_text(self) -> str:
        return self.null_literal if self.null_literal is not None else ""


def column_text(column: pa.Array, form: TextForm) -> pa.Array:
    """The column as text, as Flink 2.2.1's csv format writes it (nulls stay null). An ARRAY or STRUCT of flat values
    that would not read back as written raises ValueError, saying which option to change."""
    t = column.type
    if pa.types.is_string(t):
        return column
    if pa.types.is_binary(t):
        return pa.array([None if v is None else base64.b64encode(v).decode() for v in column.to_pylist()], pa.string())
    if pa.types.is_floating(t):  # as Flink's csv format (Jackson) writes them: 1.0, 1.0E7, NaN, Infinity
        return float_texts(column, quote_non_finite=False)
    if pa.types.is_decimal(t):  # Jackson 2.18 writes an ARRAY's elements as the column's values
        return decimal_texts(column, plain=False) if form.decimal_scientific else decimal_scale_texts(column)
    if pa.types.is_timestamp(t):
        return timestamp_text(column)
    if pa.types.is_time(t):  # ISO_LOCAL_TIME, as Flink's csv writes a TIME: `12:34:56.78`
        return time_texts(column, fraction=True)
    if _flat(t):
        return pc.cast(column, pa.string())
    if pa.types.is_list(t) and _delimited(t):
        offsets, values = _own_elements(column)
        raw = column_text(values, form)
        elements = pa.ListArray.from_arrays(offsets, raw, mask=column.is_null())
        filled = pa.ListArray.from_arrays(offsets, pc.fill_null(raw, form.null_text), mask=column.is_null())
        joined = pc.binary_join(filled, form.delimiter)
        _check_list(column, elements, filled, joined, form)
        return joined
    if _delimited(t):
        raw = [column_text(f, form) for f in column.flatten()]
        filled = [pc.fill_null(f, form.null_text) for f in raw]
        joined = pc.if_else(
            column.is_valid(), pc.binary_join_element_wise(*filled, form.delimiter), pa.scalar(None, pa.string())
        )
        _check_struct(column, raw, filled, joined, form)
        return joined
    values = json_values(column, arrow_to_json(t, _JSON_DEFAULTS))
    return pa.array([None if v is None else orjson.dumps(v).decode() for v in values], pa.string())


def timestamp_text(column: pa.Array) -> pa.Array:
    """`2024-05-06 07:08:09.12` (`...Z` with a time zone, in UTC) as Flink's csv format writes a TIMESTAMP(p) and a
    TIMESTAMP_LTZ(p) (ISO_LOCAL_TIME): the fraction without its trailing zeros, none for a whole second."""
    text = pc.cast(column, pa.string())  # Arrow writes all 6 fraction digits
    return pc.replace_substring_regex(text, r"(\.\d*[1-9])0+(Z?)$|\.0+(Z?)$", r"\1\2\3")


# Jackson's CsvEncoder (2.18, Flink 2.2.1's) quotes a text value, never a number or a boolean, when it is longer than
# 24 UTF-16 units or holds a character below the "safe" one (one past the largest of the field delimiter and the quote
# character), the quote character, or the escape character (a backslash without one).
_JACKSON_CHECKED_LENGTH = 24


def textual(t: pa.DataType) -> bool:
    """Written by Flink's csv format as text, which Jackson quotes by its rule (jackson_quotes), not as a number."""
    return not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t))


def jackson_quote_pattern(delimiter: str, quote: str, escape: str | None) -> str:
    """The characters that make Jackson quote a text value (a regular expression of one character)."""
    safe = max(ord(delimiter), ord(quote)) + 1
    special = escape if escape is not None else "\\"
    return f"[\\x{{0}}-\\x{{{safe - 1:x}}}]|{re.escape(special)}"


def jackson_quotes(text: pa.Array, pattern: str) -> pa.Array:
    """Which values of a text column Jackson quotes, given jackson_quote_pattern (False for null)."""
    units = pc.utf8_length(text)
    needs = pc.greater(units, _JACKSON_CHECKED_LENGTH)
    # Java counts a character beyond the BMP as two units: only non-ASCII text near the limit needs counting them.
    near = pc.fill_null(pc.and_(pc.invert(needs), pc.greater(pc.binary_length(text), _JACKSON_CHECKED_LENGTH)), False)
    if pc.any(near).as_py():
        astral = pc.count_substring_regex(text.filter(near), "[\\x{10000}-\\x{10ffff}]")
        longer = pc.greater(pc.add(units.filter(near), astral), _JACKSON_CHECKED_LENGTH)
        needs = pc.replace_with_mask(needs, near, longer)
    return pc.fill_null(pc.or_(needs, pc.match_substring_regex(text, pattern)), False)


def _own_elements(column: pa.ListArray) -> tuple[pa.Array, pa.Array]:
    """The offsets from 0 and the elements of a list column's own rows: a slice of a batch (the write task
    encodes row by row to name a bad row) has offsets into all the batch's elements, and Arrow builds no list
    with a null mask from offsets that are a slice."""
    offsets = column.offsets
    start = offsets[0].as_py() if len(offsets) else 0
    end = offsets[-1].as_py() if len(offsets) else 0
    return pc.subtract(offsets, pa.scalar(start, offsets.type)), column.values.slice(start, end - start)


# Flink's csv format (Jackson) joins the elements of an ARRAY or STRUCT with the array-element-delimiter and
# splits the field on it when reading, escaping nothing; an element equal to the null text reads as null, and an
# empty field as an empty ARRAY. A value whose elements would read back otherwise is refused.


def _check_list(
    column: pa.Array, elements: pa.ListArray, filled: pa.ListArray, joined: pa.Array, form: TextForm
) -> None:
    counts = pc.list_value_length(filled)
    # One element written as nothing: an empty field, which reads back as an empty ARRAY.
    lost = pc.fill_null(pc.and_(pc.equal(joined, ""), pc.equal(counts, 1)), False)
    if pc.any(lost).as_py():
        value = _value(column, pc.index(lost, True).as_py())
        fix = (
            f"set '{form.prefix}null-literal' so that a null element is written"
            if value == [None]
            else "Flink's csv format has no text for an ARRAY of one empty string"
        )
        raise ValueError(f"the ARRAY {_show(value)} is written as an empty field, which reads back as []: {fix}")
    values, rows = _elements(elements)
    _check_nulls(column, values, rows, form)
    # Split back as the reader splits: the same elements, or the delimiter is ambiguous for this value.
    nonempty = pc.fill_null(pc.not_equal(joined, ""), False)
    split = pc.split_pattern(joined, form.delimiter)
    differs = pc.fill_null(pc.and_(nonempty, pc.not_equal(pc.list_value_length(split), counts)), False)
    if pc.any(differs).as_py():
        _refuse_split(column, pc.index(differs, True).as_py(), "ARRAY", form)
    ours, ours_rows = _elements(filled.filter(nonempty))
    wrong = pc.fill_null(pc.not_equal(ours, split.filter(nonempty).flatten()), False)
    if pc.any(wrong).as_py():
        compared = pc.indices_nonzero(nonempty)
        _refuse_split(column, compared[ours_rows[pc.index(wrong, True).as_py()].as_py()].as_py(), "ARRAY", form)


def _elements(lists: pa.ListArray) -> tuple[pa.Array, pa.Array]:
    """The elements of the non-null lists, and the index of the list each comes from (a null list may
    still span elements, which flatten skips and list_parent_indices counts: leave null lists out first)."""
    valid = lists.is_valid()
    compact = lists.filter(valid)
    return compact.flatten(), pc.take(pc.indices_nonzero(valid), pc.list_parent_indices(compact))


def _check_struct(
    column: pa.Array, raw: list[pa.Array], filled: list[pa.Array], joined: pa.Array, form: TextForm
) -> None:
    for field in raw:
        _check_nulls(column, field, None, form)
    split = pc.split_pattern(joined, form.delimiter)
    differs = pc.not_equal(pc.list_value_length(split), len(filled))
    if not pc.any(pc.fill_null(differs, False)).as_py():
        for i, f in enumerate(filled):
            differs = pc.or_(differs, pc.not_equal(pc.list_element(split, i), f))
    differs = pc.fill_null(differs, False)
    if pc.any(differs).as_py():
        _refuse_split(column, pc.index(differs, True).as_py(), "STRUCT", form)


def _check_nulls(column: pa.Array, values: pa.Array, rows: pa.Array | None, form: TextForm) -> None:
    """An element (not null) written as the null text reads back as null. `rows`: the row of each value."""
    same = pc.fill_null(pc.equal(values, form.null_text), False)
    if not pc.any(same).as_py():
        return
    at = pc.index(same, True).as_py()
    value = _value(column, at if rows is None else rows[at].as_py())
    if form.null_literal is None:
        raise ValueError(
            f"the value {_show(value)} has an empty string element, which reads back as null: set "
            f"'{form.prefix}null-literal' (e.g. \\N) so that empty and null elements differ"
        )
    raise ValueError(
        f"the value {_show(value)} has an element equal to the null literal {form.null_literal!r}, which reads "
        f"back as null: set '{form.prefix}null-literal' to text no element holds"
    )


def _refuse_split(column: pa.Array, row: int, kind: str, form: TextForm) -> None:
    raise ValueError(
        f"the {kind} {_show(_value(column, row))} cannot be written: an element holds the array-element-delimiter "
        f"{form.delimiter!r} (or, next to it, part of it), so it would read back as other elements; set "
        f"'{form.prefix}array-element-delimiter' to text no element holds"
    )


def _value(column: pa.Array, row: int) -> object:
    return column[row].as_py()


def _show(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# Reading


def column_reader(t: pa.DataType, delimiter: str, null_text: str | None) -> ColumnReader | None:
    """How to turn the text column Arrow read into `t`; None when Arrow parsed it already."""
    if _native(t):
        return None
    if pa.types.is_binary(t) or pa.types.is_decimal(t) or pa.types.is_time(t):
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
    if pa.types.is_decimal(t):
        return decimals_from_text(text, t)
    if pa.types.is_time(t):
        return times_from_text(text, CSV_TIME)
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
