"""JSON objects built column-wise with Arrow compute, for the common flat rows: no Python object per value.

The text of every column is made at once (numbers and booleans cast to strings, strings escaped and
quoted, nulls as `null`), then one element-wise join lays the objects out: `{"id":1,"name":"a"}`. For a
row of six fields this runs several times faster than building a dict per row for orjson.

Only what has one JSON spelling takes this path: booleans, integers, floats (in Java's spelling, as Flink
writes them: formats/java_numbers.py), TIMEs (whole seconds: formats/time_text.py), and strings without control
characters (the only characters, besides `"` and `\\`, that JSON requires escaped) and beyond the Basic Multilingual
Plane (Jackson escapes those as surrogate pairs). Anything else (dates, decimals, nested types, ignore-null-fields)
returns None and the caller encodes row by row, to the same bytes: a record's bytes never depend on the rest
of its batch.
"""

from __future__ import annotations

import re

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ..java_numbers import float_text_parts
from ..time_text import time_texts

_CONTROL = "[\\x00-\\x1f]"
# orjson escapes control characters as \u001a, Jackson as \u001A: the escapes (a backslash not itself
# escaped, then u00xx), hex digits in upper case.
_LOWER_HEX_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})")
# Jackson (2.14, Flink's) writes a character beyond the Basic Multilingual Plane as its UTF-16 surrogate pair of
# escapes (`\uD83C\uDF0D`), orjson as its 4 UTF-8 bytes; those bytes occur inside JSON strings only.
_SUPPLEMENTARY = re.compile(rb"[\xf0-\xf4][\x80-\xbf]{3}")
_SUPPLEMENTARY_TEXT = "[\\x{10000}-\\x{10FFFF}]"


def _plain(t: pa.DataType) -> bool:
    plain: bool = (
        pa.types.is_boolean(t)
        or pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_time(t)
    )
    return plain


def supports(schema: pa.Schema) -> bool:
    """Whether rows of this schema can take the column-wise path (values may still send a batch back)."""
    return len(schema) > 0 and all(_plain(f.type) for f in schema)


def _text(column: pa.Array) -> list[pa.Array] | None:
    """The JSON text of every value (`null` for nulls), as columns to concatenate element-wise, or None when
    a value needs the row path."""
    t = column.type
    if pa.types.is_string(t):
        if pc.any(pc.match_substring_regex(column, _CONTROL)).as_py():
            return None
        if pc.any(pc.match_substring_regex(column, _SUPPLEMENTARY_TEXT)).as_py():
            return None
        escaped = pc.replace_substring(pc.replace_substring(column, "\\", "\\\\"), '"', '\\"')
        return [pc.fill_null(pc.binary_join_element_wise('"', escaped, '"', ""), "null")]
    if pa.types.is_time(t):  # whole seconds: the encoder refused a fraction before
        return [pc.fill_null(pc.binary_join_element_wise('"', time_texts(column, fraction=False), '"', ""), "null")]
    if pa.types.is_floating(t):
        first, *rest = float_text_parts(column, quote_non_finite=True)
        return [pc.fill_null(first, "null"), *(pc.fill_null(part, "") for part in rest)]
    return [pc.fill_null(pc.cast(column, pa.string()), "null")]


def encode_objects(batch: pa.RecordBatch) -> list[bytes] | None:
    """One JSON object per row (fields in schema order), or None when some value needs the row path."""
    parts: list[pa.Array | str] = []
    for i, (name, column) in enumerate(zip(batch.schema.names, batch.columns)):
        text = _text(column)
        if text is None:
            return None
        parts += [("{" if i == 0 else ",") + jackson_escapes([orjson.dumps(name)])[0].decode() + ":", *text]
    joined = pc.binary_join_element_wise(*parts, "}", "")
    payloads: list[bytes] = joined.cast(pa.binary()).to_pylist()
    return payloads


def jackson_escapes(payloads: list[bytes]) -> list[bytes]:
    """orjson's output with escapes spelled as Jackson (Flink) spells them: control characters' hex in upper case,
    characters beyond the Basic Multilingual Plane as surrogate pairs."""
    joined = b"".join(payloads)  # one vectorized scan of the batch for a 4-byte UTF-8 lead byte: rare
    if not joined.isascii() and np.frombuffer(joined, np.uint8).max() >= 0xF0:
        payloads = [_SUPPLEMENTARY.sub(_surrogate_pair, p) for p in payloads]
    return [p if b"\\u00" not in p else _LOWER_HEX_ESCAPE.sub(_upper_hex, p) for p in payloads]


def _surrogate_pair(m: re.Match[bytes]) -> bytes:
    code = ord(m.group().decode()) - 0x10000
    return b"\\u%04X\\u%04X" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))


def _upper_hex(m: re.Match[bytes]) -> bytes:
    return m.group(1) + b"\\u00" + m.group(2).upper()
