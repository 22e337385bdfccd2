"""JSON (orjson / Arrow's JSON reader), readable and writable by Flink's `json` format.

Decoding takes the fast path first: the batch's payloads joined by newlines go through
`pyarrow.json.read_json` with an explicit schema (several times faster than per-record Python). Any
surprise there (a payload with a newline, a type Arrow cannot parse, a row count that does not match)
sends the batch down the per-record path, which is lenient where Flink is (numbers into strings)
and names each record that fails.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ...kernel.errors import FormatOptionError
from ...kernel.option_kinds import FORMAT, Choice, Flag, Option, Text
from ..codec import (
    IGNORE_PARSE_ERRORS,
    STRING_KEYED_TYPES,
    Codec,
    CodecContext,
    Decoded,
    Decoder,
    Encoder,
    empty_batch,
    nested_type_has,
)
from ..decimals import decimals_fit
from ..time_text import JSON_TIME, fraction_refusal, times_from_text, with_fraction
from . import vector
from .values import (
    NANOS,
    RECORD_ERRORS,
    arrow_to_json,
    datetime_out_of_range,
    is_datetime,
    json_bytes,
    json_loads_for,
    json_reason,
    json_to_arrow,
    json_values,
    outside_datetime_range,
    rows_to_batch,
)

FAIL_ON_MISSING_FIELD = Option(
    "fail-on-missing-field",
    "false",
    FORMAT,
    "A field absent from the JSON object fails the record (a `null` field does not).",
    kind=Flag(),
)
TIMESTAMP_FORMAT_STANDARD = Option(
    "timestamp-format.standard",
    "SQL",
    FORMAT,
    "How TIMESTAMP columns are written (either form is read): `SQL` (`2024-05-06 07:08:09.12`) or `ISO-8601` "
    "(`2024-05-06T07:08:09.12`); `Z` is added for `TIMESTAMP` (with time zone), not for `TIMESTAMP_NTZ`.",
    kind=Choice(("SQL", "ISO-8601")),
)
MAP_NULL_KEY_MODE = Option(
    "map-null-key.mode",
    "FAIL",
    FORMAT,
    "A MAP's null key on write: `FAIL`, `DROP` the entry, or write `LITERAL` (`map-null-key.literal`); Spark "
    "maps hold no null key, so this is for Flink compatibility.",
    kind=Choice(("FAIL", "DROP", "LITERAL")),
)
MAP_NULL_KEY_LITERAL = Option(
    "map-null-key.literal", "null", FORMAT, "The key written for a null MAP key in LITERAL mode.", kind=Text()
)
ENCODE_DECIMAL_AS_PLAIN_NUMBER = Option(
    "encode.decimal-as-plain-number",
    "false",
    FORMAT,
    "Write DECIMALs as plain numbers (`100`, `0.000000027`), never in scientific notation (`1E+2`).",
    kind=Flag(),
)
ENCODE_IGNORE_NULL_FIELDS = Option(
    "encode.ignore-null-fields",
    "false",
    FORMAT,
    "Leave null columns out of written objects (a change envelope's null image too, as Flink does).",
    kind=Flag(),
)


class JsonCodec(Codec):
    name = "json"
    declared_options: ClassVar[tuple[Option[Any], ...]] = (
        FAIL_ON_MISSING_FIELD,
        IGNORE_PARSE_ERRORS,
        TIMESTAMP_FORMAT_STANDARD,
        MAP_NULL_KEY_MODE,
        MAP_NULL_KEY_LITERAL,
        ENCODE_DECIMAL_AS_PLAIN_NUMBER,
        ENCODE_IGNORE_NULL_FIELDS,
    )
    column_types = STRING_KEYED_TYPES

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        prefix, values = self.prefix, self.option_values  # a changelog format's row JSON: its own name
        # A changelog format's row JSON does not declare it (an envelope's rows are whole).
        self.fail_on_missing_field = FAIL_ON_MISSING_FIELD.name in self.option_names and values.value(
            FAIL_ON_MISSING_FIELD
        )
        if self.fail_on_missing_field and self.ignore_parse_errors:
            raise FormatOptionError(
                f"options '{prefix}{FAIL_ON_MISSING_FIELD.name}' and '{prefix}{IGNORE_PARSE_ERRORS.name}' cannot both "
                "be true"
            )
        self.iso8601 = values.value(TIMESTAMP_FORMAT_STANDARD) == "ISO-8601"
        self.map_null_key_mode = values.value(MAP_NULL_KEY_MODE)
        self.map_null_key_literal = values.value(MAP_NULL_KEY_LITERAL)
        self.decimal_plain = values.value(ENCODE_DECIMAL_AS_PLAIN_NUMBER)
        self.ignore_null_fields = values.value(ENCODE_IGNORE_NULL_FIELDS)

    def decoder(self, schema: pa.Schema) -> Decoder:
        return JsonDecoder(schema, self.fail_on_missing_field)

    def encoder(self, schema: pa.Schema) -> Encoder:
        return JsonEncoder(schema, self)


# ---------------------------------------------------------------------------------------------
# Decoding


def _arrow_readable(t: pa.DataType) -> bool:
    """Types Arrow's JSON reader parses exactly as Flink's json format writes them."""
    if pa.types.is_struct(t):
        return all(_arrow_readable(f.type) for f in t)
    if pa.types.is_list(t):
        return _arrow_readable(t.value_type)
    readable: bool = (
        pa.types.is_boolean(t)
        or pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_decimal(t)
        or pa.types.is_timestamp(t)
    )
    return readable


def arrow_reads_exactly(schema: pa.Schema) -> bool:
    """Whether Arrow's JSON reader parses every column exactly as Flink's json format writes it (a TIME column read as
    its text, then parsed column-wise: time_text.py)."""
    return all(_arrow_readable(f.type) or pa.types.is_time(f.type) for f in schema)


_STARTS_WITH_OBJECT = re.compile(rb"[ \t\r\n]*\{")


def _has_nanos(joined: bytes) -> bool:
    """Whether a timestamp text in the batch's bytes has fraction digits past microseconds: one RE2 scan over
    the bytes as they are (several times faster than Python's re here)."""
    whole = pa.Array.from_buffers(
        pa.large_binary(), 1, [None, pa.array([0, len(joined)], pa.int64()).buffers()[1], pa.py_buffer(joined)]
    )
    found: bool = pc.match_substring_regex(whole, NANOS.pattern)[0].as_py()
    return found


class JsonDecoder(Decoder):
    def __init__(self, schema: pa.Schema, fail_on_missing_field: bool) -> None:
        self.schema = schema
        self.fail_on_missing_field = fail_on_missing_field
        self.fast = not fail_on_missing_field and arrow_reads_exactly(schema)
        # A TIME column is read as its text by Arrow, then parsed column-wise (time_text.py).
        self._times = [i for i, f in enumerate(schema) if pa.types.is_time(f.type)]
        read_schema = pa.schema([f.with_type(pa.string()) if pa.types.is_time(f.type) else f for f in schema])
        self._parse_options = pa_json.ParseOptions(explicit_schema=read_schema, unexpected_field_behavior="ignore")
        self._converters = [(f.name, json_to_arrow(f.type)) for f in schema]
        self._decimals = [i for i, f in enumerate(schema) if nested_type_has(f.type, pa.types.is_decimal)]
        self._loads = json_loads_for(pa.struct(list(schema)))

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        if not payloads:
            return Decoded(empty_batch(self.schema))
        if self.fast:
            batch = self._decode_bulk(payloads)
            if batch is not None:
                return Decoded(batch)
        return self._decode_each(payloads)

    def _decode_bulk(self, payloads: Sequence[bytes]) -> pa.RecordBatch | None:
        batch = read_json_lines(payloads, self._parse_options)
        if batch is not None and self._decimals and not all(decimals_fit(batch.column(i)) for i in self._decimals):
            return None  # a number too wide for its DECIMAL: the per-record path names the record
        if batch is not None and self._times:
            columns = batch.columns
            try:
                for i in self._times:
                    columns[i] = times_from_text(columns[i], JSON_TIME)
            except (ValueError, pa.ArrowException):
                return None  # a value that is no time: the per-record path names the record
            batch = pa.RecordBatch.from_arrays(columns, schema=self.schema)
        return batch

    def _decode_each(self, payloads: Sequence[bytes]) -> Decoded:
        rows: list[list[Any]] = []
        failures: list[tuple[int, str]] = []
        for i, payload in enumerate(payloads):
            try:
                rows.append(self._convert_record(payload))
            except RECORD_ERRORS as e:
                failures.append((i, json_reason(e)))
        batch, unfit = rows_to_batch(rows, self.schema)
        if unfit:  # never seen: the converters check what Arrow would refuse; name the records all the same
            good = [i for i in range(len(payloads)) if i not in dict(failures)]
            failures = sorted([*failures, *((good[j], reason) for j, reason in unfit)])
        return Decoded(batch, tuple(failures))

    def _convert_record(self, payload: bytes) -> list[Any]:
        obj = self._loads(payload)
        if not isinstance(obj, dict):
            raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
        row: list[Any] = []
        for name, convert in self._converters:
            value = obj.get(name)
            if value is None:
                if self.fail_on_missing_field and name not in obj:
                    raise ValueError(f"field '{name}' is missing")
                row.append(None)
            else:
                try:
                    row.append(convert(value))
                except RECORD_ERRORS as e:
                    raise ValueError(f"field '{name}': {json_reason(e)}") from None
        return row


def read_json_lines(payloads: Sequence[bytes], parse_options: pa_json.ParseOptions) -> pa.RecordBatch | None:
    """One JSON object per payload, read by Arrow's JSON reader into one batch (schema and field handling in
    `parse_options`), or None when only a per-record path can keep rows and payloads aligned."""
    joined = b"\n".join(payloads)
    if joined.count(b"\n") != len(payloads) - 1:
        return None  # some payload spans lines: only the per-record path keeps rows aligned
    if not _STARTS_WITH_OBJECT.match(joined):
        return None  # Arrow's reader crashes the process on input that starts with `null` (apache/arrow#47409)
    try:
        joined.decode()  # Arrow skips the UTF-8 check in fields it ignores; the per-record path does not
    except UnicodeDecodeError:
        return None
    schema = parse_options.explicit_schema
    if schema is not None and any(nested_type_has(f.type, is_datetime) for f in schema) and _has_nanos(joined):
        return None  # Arrow drops fraction digits past microseconds: the per-record path names the record
    try:
        table = pa_json.read_json(
            io.BytesIO(joined),
            read_options=pa_json.ReadOptions(block_size=max(1 << 20, len(joined) + 1)),
            parse_options=parse_options,
        )
    except pa.ArrowException:
        return None
    if table.num_rows != len(payloads):
        return None  # an empty payload or two objects in one payload
    return table.combine_chunks().to_batches(max_chunksize=len(payloads))[0]


# ---------------------------------------------------------------------------------------------
# Encoding


class JsonEncoder(Encoder):
    def __init__(self, schema: pa.Schema, codec: JsonCodec) -> None:
        self.names = schema.names
        self.codec = codec
        self.converters = [arrow_to_json(f.type, codec) for f in schema]
        self.datetimes = [i for i, f in enumerate(schema) if nested_type_has(f.type, is_datetime)]
        self.times = [i for i, f in enumerate(schema) if nested_type_has(f.type, pa.types.is_time)]
        # Flat rows of numbers, booleans and strings are written column-wise (vector.py).
        self.column_wise = vector.supports(schema) and not codec.ignore_null_fields

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        for i in self.datetimes:  # Python's datetime, which writes them, holds the years 0001 to 9999 only
            found = datetime_out_of_range(batch.column(i))
            if found:
                raise outside_datetime_range(self.names[i], found, "json")
        for i in self.times:  # Flink's json writes and reads a TIME as whole seconds (formats/time_text.py)
            found = with_fraction(batch.column(i))
            if found:
                raise fraction_refusal(self.names[i], found, "json")
        if self.column_wise:
            encoded = vector.encode_objects(batch)
            if encoded is not None:
                return encoded
        columns = [json_values(column, convert) for column, convert in zip(batch.columns, self.converters)]
        names, dumps = self.names, json_bytes
        rows = zip(*columns) if columns else [()] * batch.num_rows  # no columns: `{}` per row
        if self.codec.ignore_null_fields:
            payloads = [dumps({n: v for n, v in zip(names, row) if v is not None}) for row in rows]
        else:
            payloads = [dumps(dict(zip(names, row))) for row in rows]
        return vector.jackson_escapes(payloads)
