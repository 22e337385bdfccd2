"""Numbers and booleans given as text, as Canal writes every value ("111", "5.18", "1"). Both decoding paths
accept the same texts (checked with the same patterns), so they give the same value or both refuse it."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..json.values import Convert

_NUMBER = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?"
_INTEGER, _DECIMAL = r"^-?[0-9]+$", rf"^[+-]?{_NUMBER}$"
_FLOAT, _BOOLEAN = rf"^[+-]?(NaN|Infinity|{_NUMBER})$", r"^(?i:true|false|1|0)$"


def _pattern(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t):
        return _INTEGER
    if pa.types.is_floating(t):
        return _FLOAT
    if pa.types.is_decimal(t):
        return _DECIMAL
    return _BOOLEAN if pa.types.is_boolean(t) else None


def text_types(schema: pa.Schema) -> dict[str, pa.DataType]:
    """The columns read as text first (numbers and booleans), by name."""
    return {f.name: pa.string() for f in schema if _pattern(f.type)}


def text_fits(columns: list[pa.Array], schema: pa.Schema) -> bool:
    """Whether every text read for a number or boolean column is one the per-envelope path takes too (then
    Arrow's cast gives the same value)."""
    for column, f in zip(columns, schema):
        pattern = _pattern(f.type)
        if pattern and pa.types.is_string(column.type) and not _all_match(column, pattern):
            return False
    return True


def _all_match(column: pa.Array, pattern: str) -> bool:
    return bool(pc.all(pc.match_substring_regex(column, pattern), min_count=0).as_py())  # never null (min_count=0)


def text_converter(t: pa.DataType, convert: Convert) -> Convert:
    """`convert`, also taking the text of a number or boolean."""
    pattern = _pattern(t)
    if pattern is None:
        return convert
    matches = re.compile(pattern).fullmatch
    if pa.types.is_boolean(t):
        parse: Any = lambda s: s.lower() in ("true", "1")  # noqa: E731
    elif pa.types.is_integer(t):
        parse = int
    elif pa.types.is_floating(t):
        parse = float
    else:
        parse = str  # the decimal conversion reads text exactly

    def read(value: Any) -> Any:
        if isinstance(value, str):
            if not matches(value):
                raise ValueError(f"{value[:40]!r} is not a {t} value")
            value = parse(value)
        return convert(value)

    return read
