"""Arrow and JSON helpers of the change-envelope formats: fields of struct columns, pre-images from partial
`old` objects, metadata values as Flink's types have them."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ..time_text import JSON_TIME, times_from_text

TIMESTAMP_MS = pa.timestamp("ms", tz="UTC")  # Flink's TIMESTAMP_LTZ(3) metadata


def cast_columns(columns: list[pa.Array], schema: pa.Schema) -> list[pa.Array] | None:
    """The columns in the schema's types (Arrow's JSON reader makes nested fields nullable; Canal's text
    becomes numbers); None when a value does not fit."""
    out = []
    for column, f in zip(columns, schema):
        if column.type != f.type:
            try:
                if pa.types.is_time(f.type) and pa.types.is_string(column.type):  # a TIME read as its JSON text
                    column = times_from_text(column, JSON_TIME)
                else:
                    column = column.cast(f.type)
            except (ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                return None  # e.g. out of range, more decimal places than the column has, or no time
        out.append(column)
    return out


def struct_fields(array: pa.StructArray | pa.RecordBatch) -> dict[str, pa.Array]:
    """A struct's (or batch's) fields by name; a null struct makes its fields null."""
    if isinstance(array, pa.RecordBatch):
        return dict(zip(array.schema.names, array.columns))
    return {f.name: child for f, child in zip(array.type, array.flatten())}


def overlay(old: pa.StructArray, new: pa.StructArray) -> pa.StructArray:
    """The pre-image of a partial `old` (the changed fields only, as Canal and Maxwell give it): each field
    from `old` where it has a value, else from `new`. Exact only without explicit nulls in `old` (callers send
    those envelopes the per-envelope way)."""
    olds, news = struct_fields(old), struct_fields(new)
    children = [pc.if_else(olds[f.name].is_valid(), olds[f.name], news[f.name]) for f in new.type]
    return pa.StructArray.from_arrays(children, fields=list(new.type))


_NULL_OLD = re.compile(rb"\s*:\s*null")


def old_has_null(payload: bytes) -> bool:
    """Whether an update's payload may hold an explicit null among the changed fields of its `old` (Canal,
    Maxwell), which overlay() cannot tell from an unchanged field: conservatively, any `null` after the first
    `"old"` other than `"old": null` itself."""
    at = payload.find(b'"old"')
    if at < 0:
        return False
    rest = payload[at + 5 :]
    whole = _NULL_OLD.match(rest)
    return b"null" in (rest[whole.end() :] if whole else rest)


def equal_to(array: pa.Array, value: str) -> pa.BooleanArray:
    return pc.fill_null(pc.equal(array, value), False)


def millis_to_timestamp(array: pa.Array, factor: int = 1) -> pa.Array:
    millis = array.cast(pa.int64()) if factor == 1 else pc.multiply_checked(array.cast(pa.int64()), factor)
    return millis.cast(TIMESTAMP_MS)


def epoch_millis(value: Any, name: str) -> int | None:
    """A metadata timestamp given as epoch milliseconds (a number, or its text as Flink's map of strings has it)."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"'{name}' is not epoch milliseconds: {show(value)}")
    return value


def column_names(value: Any, name: str) -> list[str | None] | None:
    """A metadata array of column names (a table's primary key) as Flink's ARRAY<STRING> has it."""
    if value is not None and not isinstance(value, list):
        raise ValueError(f"'{name}' is not an array of column names")
    return None if value is None else [text(n) for n in value]


def text(value: Any) -> str | None:
    """A metadata value as Flink's STRING has it: strings as they are, anything else as its JSON text."""
    return value if value is None or isinstance(value, str) else orjson.dumps(value).decode()


def show(value: Any) -> str:
    """A JSON value, shortened, for error messages."""
    shown = orjson.dumps(value, default=str).decode()
    return shown if len(shown) <= 40 else shown[:37] + "..."
