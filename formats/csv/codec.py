"""CSV, one row per record without a header, as Flink's `csv` format; columns by position.

Both directions are column-wise in Arrow: a batch's records are parsed together by Arrow's CSV reader
(joined by newlines; a batch that Arrow refuses is parsed record by record to name the bad ones), and
written by turning each column into text with Arrow kernels and joining the columns per row.

Text forms, as Flink 2.2.1's csv format (Jackson 2.18) writes them (proved on its bytes: tests/formats/golden/flink/):
numbers `1.0E7`, NaN, Infinity; decimals plain with their scale's digits (`12.30`), or without trailing zeros
(`1.5`, `1E+2`) with `write-bigdecimal-in-scientific-notation=true`; DATE `2024-05-06`; TIMESTAMP
`2024-05-06 07:08:09.12Z` (the fraction's trailing zeros dropped), TIMESTAMP_NTZ the same without `Z`; BINARY base64.
An ARRAY or STRUCT of non-nested types is its elements joined by `array-element-delimiter` (Flink's way); a MAP or
anything nested deeper is its JSON text. Text is quoted where Jackson quotes it (text.jackson_quotes), numbers
where they would not read back otherwise. A null field is empty (or `null-literal`); an empty string is empty with a
`null-literal` (as Flink), else `""` (Flink's empty field would read back as null). A value that would not read back
as written (an element holding the delimiter, an empty string element that only a null literal tells from null, years
outside 0001 to 9999) fails the write, naming the column and what to change.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from ...kernel.errors import FormatOptionError
from ...kernel.option_kinds import FORMAT, Char, Flag, Option, Text
from ..codec import (
    IGNORE_PARSE_ERRORS,
    STRING_KEYED_TYPES,
    Codec,
    CodecContext,
    Decoded,
    Decoder,
    Encoder,
    batch_from_records,
    empty_batch,
    nested_type_has,
)
from ..json.values import datetime_out_of_range, is_datetime, outside_datetime_range
from .text import (
    ColumnReader,
    TextForm,
    column_reader,
    column_text,
    jackson_quote_pattern,
    jackson_quotes,
    native_csv_type,
    textual,
)

FIELD_DELIMITER = Option(
    "field-delimiter", ",", FORMAT, "The field separator, one character (`\\t` for a tab).", kind=Char()
)
QUOTE_CHARACTER = Option("quote-character", '"', FORMAT, "The character that quotes a field.", kind=Char())
DISABLE_QUOTE_CHARACTER = Option("disable-quote-character", "false", FORMAT, "Never quote fields.", kind=Flag())
ALLOW_COMMENTS = Option("allow-comments", "false", FORMAT, "Skip lines starting with `#`.", kind=Flag())
ARRAY_ELEMENT_DELIMITER = Option(
    "array-element-delimiter", ";", FORMAT, "The separator of an ARRAY's elements.", kind=Text()
)
ESCAPE_CHARACTER: Option[str | None] = Option(
    "escape-character", None, FORMAT, "The escape character (none by default).", kind=Char()
)
NULL_LITERAL: Option[str | None] = Option(
    "null-literal", None, FORMAT, "The text of a null field (none by default: empty).", kind=Text()
)
WRITE_BIGDECIMAL_IN_SCIENTIFIC_NOTATION = Option(
    "write-bigdecimal-in-scientific-notation",
    "false",
    FORMAT,
    "`true`: a DECIMAL without trailing zeros, in scientific notation where Java's `BigDecimal.toString` uses "
    "it (`1E+2`); `false`: plain, with all the scale's digits (`100.00`). Flink declares `true` as its default "
    "but writes plain unless the option is set: so does this.",
    kind=Flag(),
)


class CsvCodec(Codec):
    name = "csv"
    declared_options = (
        FIELD_DELIMITER,
        QUOTE_CHARACTER,
        DISABLE_QUOTE_CHARACTER,
        ALLOW_COMMENTS,
        IGNORE_PARSE_ERRORS,
        ARRAY_ELEMENT_DELIMITER,
        ESCAPE_CHARACTER,
        NULL_LITERAL,
        WRITE_BIGDECIMAL_IN_SCIENTIFIC_NOTATION,
    )
    column_types = STRING_KEYED_TYPES  # a MAP is a field of JSON text

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        prefix, values = self.prefix, self.option_values
        self.delimiter = values.value(FIELD_DELIMITER)
        self.quote: str | None = values.value(QUOTE_CHARACTER)
        if values.value(DISABLE_QUOTE_CHARACTER):
            if values.given(QUOTE_CHARACTER):
                raise FormatOptionError(
                    f"options '{prefix}{DISABLE_QUOTE_CHARACTER.name}' and '{prefix}{QUOTE_CHARACTER.name}' cannot be "
                    "set together"
                )
            self.quote = None
        self.escape = values.value(ESCAPE_CHARACTER)
        self.allow_comments = values.value(ALLOW_COMMENTS)
        self.element_delimiter = values.value(ARRAY_ELEMENT_DELIMITER)
        if not self.element_delimiter:
            raise FormatOptionError(f"option '{prefix}{ARRAY_ELEMENT_DELIMITER.name}' must not be empty")
        self.null_literal = values.value(NULL_LITERAL)
        if self.null_literal is not None and self.escape is not None and self.escape in self.null_literal:
            raise FormatOptionError(  # the reader takes the escape away before it compares with the literal
                f"option '{prefix}{NULL_LITERAL.name}' must not hold the '{prefix}{ESCAPE_CHARACTER.name}' "
                f"'{self.escape}'"
            )
        self.decimal_scientific = values.value(WRITE_BIGDECIMAL_IN_SCIENTIFIC_NOTATION)
        specials = [c for c in (self.delimiter, self.quote, self.escape) if c is not None]
        if len(set(specials)) != len(specials):
            raise FormatOptionError(
                f"options '{prefix}{FIELD_DELIMITER.name}', '{prefix}{QUOTE_CHARACTER.name}' and "
                f"'{prefix}{ESCAPE_CHARACTER.name}' must differ"
            )

    def decoder(self, schema: pa.Schema) -> Decoder:
        return CsvDecoder(schema, self)

    def encoder(self, schema: pa.Schema) -> Encoder:
        return CsvEncoder(schema, self)


# ---------------------------------------------------------------------------------------------
# Decoding


class CsvDecoder(Decoder):
    def __init__(self, schema: pa.Schema, codec: CsvCodec) -> None:
        self.schema = schema
        self.codec = codec
        self.readers: list[ColumnReader | None] = [
            column_reader(f.type, codec.element_delimiter, codec.null_literal) for f in schema
        ]
        types = {f.name: native_csv_type(f.type) for f in schema}
        self._read_options = pa_csv.ReadOptions(column_names=schema.names, block_size=1 << 26)
        self._parse_options = pa_csv.ParseOptions(
            delimiter=codec.delimiter,
            quote_char=codec.quote or False,
            double_quote=True,  # Flink doubles a quote, with an escape character too (older writes escaped it)
            escape_char=codec.escape or False,
            ignore_empty_lines=False,
        )
        nulls = [""] if codec.null_literal is None else [codec.null_literal]
        self._convert_options = pa_csv.ConvertOptions(
            column_types=types,
            null_values=nulls,
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            true_values=["true", "TRUE", "True"],
            false_values=["false", "FALSE", "False"],
        )

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        if not payloads:
            return Decoded(empty_batch(self.schema))
        if not len(self.schema):  # no columns: the encoder writes an empty record
            refused = tuple((i, "expected an empty record: no columns") for i, p in enumerate(payloads) if p)
            return Decoded(batch_from_records([{}] * (len(payloads) - len(refused)), self.schema), refused)
        failures: dict[int, str] = {}
        lines = list(payloads)
        if self.codec.allow_comments:
            for i, payload in enumerate(payloads):
                if payload.startswith(b"#") or b"\n#" in payload:
                    line = _without_comments(payload)
                    if line is None:
                        failures[i] = "the record holds only comment lines, no row"
                    else:
                        lines[i] = line
        kept = [i for i in range(len(lines)) if i not in failures]
        table = self._parse_bulk([lines[i] for i in kept]) if kept else None
        if table is None:
            parsed = []
            for i in kept:
                try:
                    table = self._parse(lines[i])
                except (pa.ArrowException, ValueError) as e:
                    failures[i] = _arrow_reason(e)
                    continue
                if table.num_rows == 1:
                    parsed.append(table)
                else:  # e.g. a line break outside quotes
                    failures[i] = f"expected one CSV row, got {table.num_rows}"
            kept = [i for i in kept if i not in failures]
            table = pa.concat_tables(parsed) if parsed else None
        if table is None:
            return Decoded(empty_batch(self.schema), tuple(sorted(failures.items())))
        return self._finish(table.combine_chunks(), kept, failures)

    def _parse_bulk(self, lines: list[bytes]) -> pa.Table | None:
        joined = b"\n".join(lines)
        if b"\r" in joined or joined.count(b"\n") != len(lines) - 1:
            return None  # a record spans lines: only record by record keeps rows aligned
        try:
            table = self._parse(joined)
        except (pa.ArrowException, ValueError):
            return None
        return table if table.num_rows == len(lines) else None

    def _parse(self, data: bytes) -> pa.Table:
        return pa_csv.read_csv(
            io.BytesIO(data + b"\n"),
            read_options=self._read_options,
            parse_options=self._parse_options,
            convert_options=self._convert_options,
        )

    def _finish(self, table: pa.Table, kept: list[int], failures: dict[int, str]) -> Decoded:
        """Columns Arrow cannot parse itself (binary, nested) arrive as text: convert them here."""
        columns, bad_rows = [], set()
        for name, reader in zip(self.schema.names, self.readers):
            column = table.column(name).combine_chunks() if table.num_rows else table.column(name)
            if reader is not None:
                column, bad = reader(column)
            else:
                bad = []
            for row, reason in bad:
                bad_rows.add(row)
                failures.setdefault(kept[row], f"column '{name}': {reason}")
            columns.append(column)
        columns = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
        batch = pa.RecordBatch.from_arrays(columns, schema=self.schema)
        if bad_rows:
            batch = batch.filter(pa.array([r not in bad_rows for r in range(batch.num_rows)]))
        return Decoded(batch, tuple(sorted(failures.items())))


def _without_comments(payload: bytes) -> bytes | None:
    lines = [line for line in payload.split(b"\n") if not line.startswith(b"#")]
    return b"\n".join(lines) if lines else None


def _arrow_reason(e: Exception) -> str:
    text = str(e).split("\n")[0]
    return re.sub(r"^In CSV column #(\d+): ", r"column \1: ", text)


# ---------------------------------------------------------------------------------------------
# Encoding


class CsvEncoder(Encoder):
    def __init__(self, schema: pa.Schema, codec: CsvCodec) -> None:
        self.schema = schema
        self.codec = codec
        self.form = TextForm(codec.element_delimiter, codec.null_literal, codec.decimal_scientific, codec.prefix)
        self.null_text = self.form.null_text
        self.datetimes = [i for i, f in enumerate(schema) if nested_type_has(f.type, is_datetime)]
        self.textual = [textual(f.type) for f in schema]
        specials = [codec.delimiter, "\r", "\n"] + [c for c in (codec.quote, codec.escape) if c]
        alternatives = [re.escape(c) for c in specials]
        self._jackson = None
        if codec.quote is not None:
            # Quoted, the null literal (or, without one, an empty string) reads back as a string, not as null. Flink
            # writes an empty string unquoted, as a null without a null literal: a value it cannot tell from null.
            alternatives.append(f"^{re.escape(codec.null_literal)}$" if codec.null_literal else "^$")
            self._jackson = jackson_quote_pattern(codec.delimiter, codec.quote, codec.escape)
        self._needs_quoting = "|".join(alternatives)

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        if batch.num_columns == 0:
            return [b""] * batch.num_rows
        for i in self.datetimes:  # Python's datetime, which reads them, holds the years 0001 to 9999 only
            found = datetime_out_of_range(batch.column(i))
            if found:
                raise outside_datetime_range(self.schema.names[i], found, "csv")
        texts = []
        for name, column, is_text in zip(self.schema.names, batch.columns, self.textual):
            try:
                texts.append(self._quoted(column, column_text(column, self.form), is_text))
            except ValueError as e:
                raise ValueError(f"column '{name}': {e}") from None
        rows = pc.binary_join_element_wise(
            *texts, self.codec.delimiter, null_handling="replace", null_replacement=self.null_text
        )
        payloads: list[bytes] = rows.cast(pa.binary()).to_pylist()
        return payloads

    def _quoted(self, column: pa.Array, text: pa.Array, is_text: bool) -> pa.Array:
        """The column's text, quoted where Flink's csv format (Jackson) quotes it, and wherever it would not read back
        as written otherwise (a number holding the delimiter, an empty string without a null literal)."""
        codec = self.codec
        if codec.quote is None:
            # Unquoted, a value written as the null text (an empty string or ARRAY, or the null literal) is null.
            as_null = pc.fill_null(pc.equal(text, self.null_text), False)
            if pc.any(as_null).as_py():
                value = column[pc.index(as_null, True).as_py()].as_py()
                quote = f"drop '{codec.prefix}{DISABLE_QUOTE_CHARACTER.name}'"
                literal = "(e.g. \\N)" if codec.null_literal is None else "to text the column does not hold"
                fix = quote if value == [None] else f"set '{codec.prefix}{NULL_LITERAL.name}' {literal}, or {quote}"
                raise ValueError(
                    f"the value {value!r} is written as {self.null_text!r}, which reads back as null without a quote "
                    f"character: {fix}"
                )
        needs = pc.fill_null(pc.match_substring_regex(text, self._needs_quoting), False)
        if is_text and self._jackson is not None:
            needs = pc.or_(needs, jackson_quotes(text, self._jackson))
        if not pc.any(needs).as_py():
            return text
        if codec.quote is None:  # escape the special characters instead
            escape = codec.escape
            if escape is None:
                row = pc.index(needs, True).as_py()
                raise ValueError(
                    f"the value {text[row].as_py()!r} holds the delimiter or a line break, and quoting is "
                    f"disabled: set {ESCAPE_CHARACTER.name}"
                )
            escaped = pc.replace_substring_regex(
                text, f"([{re.escape(escape + codec.delimiter)}\\r\\n])", f"{_re_repl(escape)}\\1"
            )
            return pc.if_else(needs, escaped, text)
        # Inside quotes Jackson doubles the quote character and escapes only the escape character (with itself).
        inner = pc.replace_substring(text, codec.quote, codec.quote * 2)
        if codec.escape is not None:
            inner = pc.replace_substring(inner, codec.escape, codec.escape * 2)
        quoted = pc.binary_join_element_wise(codec.quote, inner, codec.quote, "")
        return pc.if_else(needs, quoted, text)


def _re_repl(char: str) -> str:
    return char.replace("\\", "\\\\")
