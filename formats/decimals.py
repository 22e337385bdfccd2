"""Decimal values fitted to a DECIMAL(p, s) column, as Flink's formats and Spark's `from_json` read them: a value
with more fraction digits than the column's scale is rounded half-up to the scale; one whose integer digits
exceed the precision (before or after rounding) is the record's error (skipped and counted with
ignore-parse-errors, never a silent null). Writes never round: a column's values already fit it.

Arrow's readers and casts refuse a value that needs rounding, so the batch paths try Arrow first and round only
the values it refuses."""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

_DECIMALS = Context(prec=80)  # wider than any DECIMAL(38, s) quantized: fit_decimal bounds the digits first


def sql_name(t: pa.Decimal128Type) -> str:
    return f"DECIMAL({t.precision},{t.scale})"


def fit_decimal(d: Decimal, t: pa.Decimal128Type, show: Callable[[], str] | None = None) -> Decimal:
    """`d` at the column's scale, rounded half-up; ValueError when it has more integer digits than `t` holds or
    is not finite. `show`: the value as the record gave it, for the error (called only then)."""
    shown = show or (lambda: str(d))
    if not d.is_finite():
        raise ValueError(f"{shown()} is not a finite number")
    integer_digits = t.precision - t.scale
    if d and d.adjusted() >= integer_digits:
        raise ValueError(f"{shown()} does not fit {sql_name(t)}: more than {integer_digits} digit(s) before the point")
    rounded = d.quantize(Decimal(1).scaleb(-t.scale), rounding=ROUND_HALF_UP, context=_DECIMALS)
    if rounded and rounded.adjusted() >= integer_digits:  # 999.9995 in DECIMAL(6,3) rounds to 1000.000
        raise ValueError(f"{shown()} does not fit {sql_name(t)}: rounded to {t.scale} decimal place(s) it is {rounded}")
    return rounded


def decimals_from_text(text: pa.Array, t: pa.Decimal128Type) -> pa.Array:
    """A text column as DECIMAL `t`: Arrow's cast when every value is exact at the scale, else value by value
    (rounded half-up). ValueError for a value that is no number or does not fit."""
    try:
        column = pc.cast(text, t)
    except pa.ArrowInvalid:
        column = None
    if column is not None and decimal_overflow(column) is None:
        return column
    values: list[Decimal | None] = []
    for v in text.to_pylist():
        if v is None:
            values.append(None)
            continue
        try:
            d = Decimal(v)
        except InvalidOperation:
            raise ValueError(f"'{v}' is not a decimal number") from None
        values.append(fit_decimal(d, t, partial(repr, v)))
    return pa.array(values, t)


def rounded_values(value: Any, t: pa.DataType) -> Any:
    """A Python value (a record's field, as fastavro gives it) with every Decimal at any depth fitted to its
    column's type (fit_decimal); other values unchanged."""
    if value is None:
        return None
    if pa.types.is_decimal(t) and isinstance(value, Decimal):
        return fit_decimal(value, t)
    if pa.types.is_struct(t) and isinstance(value, dict):
        return {f.name: rounded_values(value.get(f.name), f.type) for f in t} | {
            k: v for k, v in value.items() if t.get_field_index(k) < 0
        }
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and isinstance(value, list):
        return [rounded_values(v, t.value_type) for v in value]
    if pa.types.is_map(t):
        pairs = value.items() if isinstance(value, dict) else value
        return [(rounded_values(k, t.key_type), rounded_values(v, t.item_type)) for k, v in pairs]
    return value


def decimal_overflow(column: pa.Array) -> pa.Array | None:
    """Which values of a decimal column have more digits than its precision (Arrow's JSON and CSV readers
    fill DECIMAL(5,2) with 1000.00 without a word); None when all fit."""
    t = column.type
    largest = pa.scalar(Decimal(f"{10**t.precision - 1}E-{t.scale}"), t)  # exact: no context rounding
    over = pc.fill_null(pc.or_(pc.greater(column, largest), pc.less(column, pc.negate(largest))), False)
    return over if pc.any(over).as_py() else None


def decimals_fit(array: pa.Array) -> bool:
    """Whether every decimal in `array`, at any depth, fits its type's precision."""
    t = array.type
    if pa.types.is_decimal(t):
        return decimal_overflow(array) is None
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return decimals_fit(array.values)
    if pa.types.is_map(t):
        return decimals_fit(array.keys) and decimals_fit(array.items)
    if pa.types.is_struct(t):
        return all(decimals_fit(child) for child in array.flatten())
    return True
