"""One column as the record's bytes, as Flink's `raw` format: a string in `charset`, binary as is, or a
number / boolean in its fixed-width binary form (`endianness`, big-endian by default, as Java writes).

A record with a null value is a tombstone, so a raw value column cannot hold null: reading a tombstone
gives a delete row, and writing an upsert whose raw value is null is an error (write it as a delete).
"""

from __future__ import annotations

import array
import codecs
from collections.abc import Mapping, Sequence

import pyarrow as pa

from ..kernel.errors import FormatOptionError
from ..kernel.option_kinds import FORMAT, Choice, Invalid, Kind, Option
from .codec import (
    IGNORE_PARSE_ERRORS,
    Codec,
    CodecContext,
    ColumnTypes,
    Decoded,
    Decoder,
    Encoder,
    empty_batch,
)

# Fixed-width types: (width in bytes, the `array` module's type code).
_FIXED: dict[pa.DataType, tuple[int, str]] = {
    pa.int8(): (1, "b"),
    pa.int16(): (2, "h"),
    pa.int32(): (4, "i"),
    pa.int64(): (8, "q"),
    pa.float32(): (4, "f"),
    pa.float64(): (8, "d"),
    pa.bool_(): (1, "B"),
}


class Charset(Kind[str]):
    """A text charset Python knows (its name as given, stripped)."""

    type_name = "charset"

    def parse(self, raw: str) -> str:
        name = raw.strip()
        try:
            info = codecs.lookup(name)
        except LookupError:
            raise Invalid(f": unknown charset '{name}' (e.g. UTF-8, ISO-8859-1)") from None
        if not info._is_text_encoding:  # e.g. base64 or zlib: bytes to bytes, no text
            raise Invalid(f": '{name}' is not a text charset")
        return name


CHARSET = Option("charset", "UTF-8", FORMAT, "The charset of a STRING column's bytes.", kind=Charset())
ENDIANNESS = Option(
    "endianness",
    "big-endian",
    FORMAT,
    "The byte order of numbers: `big-endian` or `little-endian`.",
    kind=Choice(("big-endian", "little-endian")),
)


class RawCodec(Codec):
    name = "raw"
    declared_options = (CHARSET, ENDIANNESS, IGNORE_PARSE_ERRORS)
    column_types = ColumnTypes(
        ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "BINARY"), columns=1
    )

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        self.charset = self.option_values.value(CHARSET)
        self.utf8 = codecs.lookup(self.charset).name == "utf-8"
        endianness = self.option_values.value(ENDIANNESS)
        self.swap = (endianness == "big-endian") == (array.array("H", [1]).tobytes() == b"\x01\x00")

    def _field(self, schema: pa.Schema) -> pa.Field:
        if len(schema) != self.column_types.columns:
            raise FormatOptionError(
                f"the raw {self.context.role} format holds exactly one column, got {len(schema)} "
                f"({', '.join(schema.names)}); use json, csv or avro for several"
            )
        field = schema.field(0)
        if self.column_types.unfit(field.type):
            raise FormatOptionError(
                f"the raw format cannot hold column '{field.name}' of type {field.type}: use one of "
                f"{self.column_types.describe()}"
            )
        return field

    def decoder(self, schema: pa.Schema) -> Decoder:
        return RawDecoder(schema, self._field(schema), self)

    def encoder(self, schema: pa.Schema) -> Encoder:
        return RawEncoder(self._field(schema), self)


class RawDecoder(Decoder):
    def __init__(self, schema: pa.Schema, field: pa.Field, codec: RawCodec) -> None:
        self.schema, self.field, self.codec = schema, field, codec

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        if not payloads:
            return Decoded(empty_batch(self.schema))
        t = self.field.type
        if t in _FIXED:
            width = _FIXED[t][0]
            failures = [
                (i, f"expected {width} byte(s) for {t}, got {len(p)}")
                for i, p in enumerate(payloads)
                if len(p) != width
            ]
            good = [p for p in payloads if len(p) == width] if failures else payloads
            column = self._fixed(b"".join(good), len(good))
        elif pa.types.is_binary(t):
            column, failures = pa.array(payloads, pa.binary()), []
        else:
            column, failures = self._text(payloads)
        return Decoded(pa.RecordBatch.from_arrays([column], schema=self.schema), tuple(failures))

    def _fixed(self, data: bytes, n: int) -> pa.Array:
        t = self.field.type
        width, code = _FIXED[t]
        if self.codec.swap and width > 1:
            data = _byteswapped(data, code)
        if pa.types.is_boolean(t):  # one byte each; any non-zero byte is true, as Java's readBoolean
            return pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(data)]).cast(pa.bool_())
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(data)])

    def _text(self, payloads: Sequence[bytes]) -> tuple[pa.Array, list[tuple[int, str]]]:
        if self.codec.utf8:
            try:  # Arrow validates UTF-8 for the whole batch at once
                return pa.array(payloads, pa.binary()).cast(pa.string()), []
            except pa.ArrowInvalid:
                pass
        values, failures = [], []
        for i, payload in enumerate(payloads):
            try:
                values.append(payload.decode(self.codec.charset))
            except UnicodeError as e:  # some codecs (idna) raise the base class, without a position
                where = f" at byte {e.start}" if isinstance(e, UnicodeDecodeError) else ""
                failures.append((i, f"not valid {self.codec.charset}: {getattr(e, 'reason', e)}{where}"))
        return pa.array(values, pa.string()), failures


class RawEncoder(Encoder):
    def __init__(self, field: pa.Field, codec: RawCodec) -> None:
        self.field, self.codec = field, codec

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        column = batch.column(0)
        if column.null_count:
            raise ValueError(
                f"column '{self.field.name}' is null, and the raw {self.codec.context.role} format writes no "
                "null: a record with a null value is a tombstone. Write the row as a delete (change type "
                "'delete') or give the column a value"
            )
        t = self.field.type
        if pa.types.is_boolean(t):
            return [b"\x01" if v else b"\x00" for v in column.to_pylist()]
        if t in _FIXED:
            return self._fixed(column)
        if pa.types.is_binary(t) or self.codec.utf8:
            payloads: list[bytes] = column.cast(pa.binary()).to_pylist()
            return payloads
        charset = self.codec.charset
        try:
            return [v.encode(charset) for v in column.to_pylist()]
        except UnicodeError as e:  # some codecs (idna) raise the base class, without a position
            what = (
                f"the character {e.object[e.start]!r} (U+{ord(e.object[e.start]):04X}) of the value {_shown(e.object)}"
                if isinstance(e, UnicodeEncodeError)
                else f"a value ({e})"
            )
            raise ValueError(
                f"column '{self.field.name}': charset '{charset}' cannot encode {what}; set "
                f"'{self.codec.context.role}.raw.charset' to one that holds every character written, e.g. UTF-8"
            ) from None

    def _fixed(self, column: pa.Array) -> list[bytes]:
        width, code = _FIXED[column.type]
        start = column.offset * width
        data = column.buffers()[1].to_pybytes()[start : start + len(column) * width]
        if self.codec.swap and width > 1:
            data = _byteswapped(data, code)
        return [data[i : i + width] for i in range(0, len(data), width)]


def _shown(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _byteswapped(data: bytes, code: str) -> bytes:
    values = array.array(code)
    values.frombytes(data)
    values.byteswap()
    return values.tobytes()
