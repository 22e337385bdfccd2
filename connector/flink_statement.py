"""Flink's `CREATE TABLE` statement read token by token (for `flink_table`, connector/flink_ddl.py): its columns with
Flink's types as Spark's, its primary key (table- or column-level), metadata columns, watermark and WITH options;
what it declares that has no meaning here (a computed column, `LIKE`, `AS SELECT`, `PARTITIONED BY`) refused by name.

Hand-written: Spark parses no Flink SQL and no maintained Python library parses Flink's DDL; the grammar read is
the part of Flink's CREATE TABLE a Kafka table uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from .errors import OptionError
from .formats.flink_types import SPARK_PRECISION
from .options.catalog import FLINK_COLUMN_TYPES
from .options.tokens import TokenReader
from .spark_internals import TimeType

COLUMN_TYPES = FLINK_COLUMN_TYPES.name
# `other`: any character Flink's expressions may hold (`||`, `%`, `!=`): a computed column or a query is refused by
# name where it starts, not by the tokenizer wherever its first unknown character is.
_TOKEN = re.compile(
    r"\s*(?:--[^\n]*|/\*.*?\*/|(?P<name>`(?:[^`]|``)*`)|(?P<unicode>[Uu]&'(?:[^']|'')*')|(?P<text>'(?:[^']|'')*')"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_$]*|[0-9]+)|(?P<punct>\.\.\.|[,()<>=;.\-+*/])|(?P<other>[^\s'`]))",
    re.S,
)
_SIMPLE: dict[str, DataType] = {
    "boolean": BooleanType(),
    "tinyint": ByteType(),
    "smallint": ShortType(),
    "int": IntegerType(),
    "integer": IntegerType(),
    "bigint": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "date": DateType(),
    "string": StringType(),
    "bytes": BinaryType(),
}
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
# The options whose value Flink passes through Java's unescaping (commons-lang3 StringEscapeUtils.unescapeJava in
# flink-csv's CsvFormatFactory and CsvCommons): `'\t'`, `'\u0001'` are the character, not the text.
_JAVA_UNESCAPED = re.compile(r"((key|value)\.)?csv\.field-delimiter")
_JAVA_ESCAPE = re.compile(r"\\(?:u+\+?(?P<hex>.{0,4})|(?P<octal>[0-3][0-7]{0,2}|[4-7][0-7]?)|(?P<char>.?))", re.S)
_JAVA_CHARS = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}  # any other escaped character is itself


@dataclass(frozen=True)
class DeclaredTable:
    """What a statement declares, as read: the columns (Spark's types), metadata columns (column -> key), virtual
    ones, comments, the primary key, the watermark (column, delay), the WITH options, and the Flink type of each
    column path whose Spark type carries less (its precision)."""

    name: str
    fields: list[StructField]
    metadata: dict[str, str]
    virtual: set[str]
    comments: dict[str, str]
    key: list[str] | None
    watermark: tuple[str, str] | None
    options: dict[str, str]
    flink_types: list[tuple[tuple[str, ...], str]]


class FlinkStatement(TokenReader):
    """Reads one CREATE TABLE statement: `table()` gives what it declares, refusing by name what has no meaning here."""

    ends_early = "the statement ends too early"

    def __init__(self, text: str) -> None:
        super().__init__(text, _TOKEN)
        self.flink_types: list[tuple[tuple[str, ...], str]] = []  # (column path, Flink type) where Spark's is less

    def unreadable(self, rest: str) -> str:
        return "a name in backticks is not closed" if rest[0] == "`" else "a quoted string is not closed"

    def near(self, position: int) -> str:
        return " ".join(self.text[position : position + 40].split())  # a statement spans lines

    def error(self, problem: str, where: str, hint: str) -> Exception:
        return OptionError(f"Flink DDL: {problem} ({where})")

    def at(self) -> int:
        """Where the next token starts, for an error found after reading past it."""
        return self.tokens[self.i][2] if self.i < len(self.tokens) else len(self.text)

    def name(self) -> str:
        kind, value = self.take()
        if kind == "name":
            return value[1:-1].replace("``", "`")
        if kind != "word":
            self.i -= 1
            self.fail("expected a name")
        return value

    def text_value(self) -> str:
        at = self.at()
        kind, value = self.take()
        if kind == "unicode":
            return self.unicode_text(value[3:-1].replace("''", "'"), at)
        if kind != "text":
            self.i -= 1
            self.fail("expected a quoted string")
        return value[1:-1].replace("''", "'")

    def unicode_text(self, body: str, at: int) -> str:
        """A `U&'...'` literal (Flink's CSV page writes `'csv.field-delimiter' = U&'\\0001'`), read as Calcite reads
        it: the escape character (`\\`, or the one `UESCAPE` names) and 4 hex digits are a UTF-16 unit, the escape
        character twice is itself."""
        escape = self.text_value() if self.accept("uescape") else "\\"
        if len(escape) != 1 or re.fullmatch(r"[0-9A-Fa-f+'\"\s]", escape):
            self.fail(f"UESCAPE '{escape}' is not one character other than a hex digit, +, a quote or a space", at)
        units, k = [], 0
        while k < len(body):
            if body[k] != escape:
                units.append(body[k])
                k += 1
            elif body[k + 1 : k + 2] == escape:
                units.append(escape)
                k += 2
            elif re.fullmatch(r"[0-9A-Fa-f]{4}", body[k + 1 : k + 5]):
                units.append(chr(int(body[k + 1 : k + 5], 16)))
                k += 5
            else:
                self.fail(f"'{escape}{body[k + 1 : k + 5]}' in a U&'...' string is not {escape} and 4 hex digits", at)
        return _joined_utf16("".join(units))

    # -- the statement -----------------------------------------------------------------------------------

    def table(self) -> DeclaredTable:
        self.refuse_other_sources()
        self.expect("create")
        self.accept("temporary")
        self.expect("table")
        self.accept("if", "not", "exists")
        name = self.name()
        while self.accept("."):  # catalog.database.table
            name = self.name()
        self.expect("(")
        fields: list[StructField] = []
        metadata: dict[str, str] = {}
        virtual: set[str] = set()
        comments: dict[str, str] = {}
        key: list[str] | None = None
        watermark: tuple[str, str] | None = None
        while True:
            at = self.at()
            found: list[str] | None = None
            if self.peek() in ("primary", "constraint"):
                if self.accept("constraint"):
                    self.name()
                found = self.primary_key(None)
            elif self.peek() == "watermark":
                watermark = self.watermark()
            elif self.peek() == "like":
                self.fail(self.like_refusal(self.i))
            else:
                column = self.name()
                if self.peek() == "as":
                    self.computed(column)
                typed = len(self.flink_types)
                data_type, nullable = self.data_type((column,)), True
                if self.accept("not", "null"):
                    nullable = False
                else:
                    self.accept("null")
                if self.accept("metadata"):
                    metadata[column] = self.text_value() if self.accept("from") else column
                    if self.accept("virtual"):
                        virtual.add(column)
                    del self.flink_types[typed:]  # the connector types metadata columns itself
                elif self.peek() in ("primary", "constraint"):
                    at = self.at()
                    if self.accept("constraint"):
                        self.name()
                    found = self.primary_key(column)
                if self.accept("comment"):
                    comments[column] = self.text_value()
                fields.append(StructField(column, data_type, nullable))
            if found is not None:
                if key is not None:
                    self.fail(
                        "a second PRIMARY KEY: a Flink table has one primary key; name all its columns in one "
                        "PRIMARY KEY (a, b) NOT ENFORCED",
                        at,
                    )
                key = found
            if not self.accept(","):
                break
        self.expect(")")
        if self.accept("comment"):
            self.text_value()
        if self.peek() == "partitioned":
            self.fail("PARTITIONED BY is for file systems: a Kafka table has no partition columns")
        self.expect("with")
        options = self.with_options()
        self.accept(";")
        if not self.at_end():
            self.fail("expected the end of the statement")
        return DeclaredTable(name, fields, metadata, virtual, comments, key, watermark, options, self.flink_types)

    def refuse_other_sources(self) -> None:
        """`LIKE other` after WITH (...) and `AS SELECT ...` (CREATE TABLE AS SELECT, [CREATE OR] REPLACE TABLE AS
        SELECT) take the table's columns from elsewhere: refused first, before any column or the query is read."""
        depth = 0
        for k, (kind, value, position) in enumerate(self.tokens):
            if kind == "punct":
                depth += {"(": 1, ")": -1}.get(value, 0)
                if depth == 0 and value == ";":
                    return
            elif depth == 0 and kind == "word" and value.lower() == "like":
                self.fail(self.like_refusal(k), position)
            elif depth == 0 and kind == "word" and value.lower() == "as":
                verb = "REPLACE" if "replace" in (self.peek(0), self.peek(2)) else "CREATE"
                self.fail(
                    f"{verb} TABLE ... AS SELECT fills the table with a query's rows, and Spark runs the query, not "
                    "this connector: create the table with its columns (CREATE TABLE t (id BIGINT, ..., PRIMARY KEY "
                    "(id) NOT ENFORCED) WITH (...)), then write the query's DataFrame with flink_table(...).write(df)",
                    position,
                )

    def like_refusal(self, like: int) -> str:
        """The refusal of the LIKE at token `like`, naming the table it copies."""
        source = self.tokens[like + 1][1] if like + 1 < len(self.tokens) else "?"
        return (
            f"LIKE {source} takes columns and options from another Flink table's definition, which Spark does not "
            "have: write the whole table in one statement (its columns, watermark, key and options), without LIKE"
        )

    def computed(self, column: str) -> None:
        at = self.at()
        self.expect("as")
        if self.accept("proctime", "(", ")"):
            self.fail(
                f"'{column}' AS PROCTIME() is Flink's processing time, which Spark has as current_timestamp(): leave "
                f"the column out and add it with withColumn('{column}', F.current_timestamp()) after the read",
                at,
            )
        self.fail(
            f"'{column}' is a computed column, which this connector cannot compute: leave it out and add it with "
            "withColumn(...) after the read",
            at,
        )

    def primary_key(self, column: str | None) -> list[str]:
        """`PRIMARY KEY (a, b) NOT ENFORCED` of the table, or `PRIMARY KEY NOT ENFORCED` after `column`'s type."""
        self.expect("primary", "key")
        if column is not None:
            if self.peek() == "(":
                self.fail(
                    f"a PRIMARY KEY after column '{column}' names no columns: write `{column} ... PRIMARY KEY NOT "
                    "ENFORCED`, or the table's PRIMARY KEY (a, b) NOT ENFORCED after the columns"
                )
            names = [column]
        else:
            self.expect("(")
            names = [self.name()]
            while self.accept(","):
                names.append(self.name())
            self.expect(")")
        if not self.accept("not", "enforced"):
            self.fail("Flink takes only PRIMARY KEY ... NOT ENFORCED")
        return names

    def watermark(self) -> tuple[str, str]:
        self.expect("watermark", "for")
        column = self.name()
        self.expect("as")
        start = self.i
        if self.name() == column:
            if self.peek() in (",", ")"):
                return column, "0 seconds"
            if self.accept("-", "interval"):
                amount = self.text_value().strip()
                unit = self.take()[1].lower().rstrip("s")
                if unit in _UNITS and re.fullmatch(r"[0-9]+(\.[0-9]+)?", amount):
                    return column, f"{amount} {unit}s"
        self.i = start
        self.fail(
            f"the watermark of '{column}' is not `{column}` or `{column} - INTERVAL 'n' SECOND|MINUTE|HOUR|DAY`: "
            "leave it out and call withWatermark(...) on the stream"
        )

    def with_options(self) -> dict[str, str]:
        self.expect("(")
        options: dict[str, str] = {}
        while self.peek() != ")":
            # Flink's documentation placeholders `...` and `. . .`: the options given to flink_table
            if self.accept("...") or self.accept(".", ".", "."):
                self.accept(",")
                continue
            key = self.text_value()
            self.expect("=")
            at = self.at()
            value = self.text_value()
            options[key] = self.java_unescaped(key, value, at) if _JAVA_UNESCAPED.fullmatch(key) else value
            # A missing comma between two options (a typo in Flink's own 1.13 release notes) reads the same.
            self.accept(",")
        self.expect(")")
        return options

    def java_unescaped(self, option: str, value: str, at: int) -> str:
        """`value` as commons-lang3's StringEscapeUtils.unescapeJava reads it: `\\t` `\\n` `\\r` `\\b` `\\f`, octal
        `\\0` to `\\377`, `\\uXXXX` (more u's and a + allowed), and a backslash before any other character is
        dropped."""

        def one(match: re.Match[str]) -> str:
            if match["hex"] is not None:
                if not re.fullmatch(r"[0-9A-Fa-f]{4}", match["hex"]):
                    self.fail(
                        f"option '{option}' = '{value}': Flink reads Java escapes in it, and '{match[0]}' is not \\u "
                        "and 4 hex digits: write e.g. '\\u0001'",
                        at,
                    )
                return chr(int(match["hex"], 16))
            if match["octal"] is not None:
                return chr(int(match["octal"], 8))
            return _JAVA_CHARS.get(match["char"], match["char"])

        return _joined_utf16(_JAVA_ESCAPE.sub(one, value))

    # -- Flink's types -----------------------------------------------------------------------------------

    def data_type(self, path: tuple[str, ...], in_collection: bool = False) -> DataType:
        """The Spark type of a Flink type; `path` names the column (and ROW fields) for flink.column-types."""
        at = self.at()
        kind, value = self.take()
        word = value.lower()
        if kind != "word":
            self.i -= 1
            self.fail("expected a type")
        if word in ("char", "varchar", "binary", "varbinary"):
            self.optional_length()
            return BinaryType() if "binary" in word else StringType()
        if word in ("decimal", "dec", "numeric"):
            precision, scale = 10, 0
            if self.accept("("):
                precision = self.number()
                if self.accept(","):
                    scale = self.number()
                self.expect(")")
            return DecimalType(precision, scale)
        if word == "double":
            self.accept("precision")
            return DoubleType()
        if word in ("timestamp", "timestamp_ltz"):
            precision = self.optional_length()
            local = word == "timestamp_ltz" or self.accept("with", "local", "time", "zone")
            if not local:
                self.accept("without", "time", "zone")
            self.timestamp(path, in_collection, "TIMESTAMP_LTZ" if local else "TIMESTAMP", precision, at)
            return TimestampType() if local else TimestampNTZType()
        if word == "time":
            return self.time(path, at)
        if word == "array":
            self.expect("<")
            element = self.data_type(path, True)
            self.accept("not", "null")
            self.expect(">")
            return ArrayType(element)
        if word == "map":
            self.expect("<")
            key = self.data_type(path, True)
            self.accept("not", "null")
            self.expect(",")
            value_type = self.data_type(path, True)
            self.accept("not", "null")
            self.expect(">")
            return MapType(key, value_type)
        if word == "row":
            close = ">" if self.accept("<") else ")"
            if close == ")":
                self.expect("(")
            fields = []
            while self.peek() != close:
                name = self.name()
                field_type, nullable = self.data_type((*path, name), in_collection), not self.accept("not", "null")
                if self.accept("comment"):
                    self.text_value()
                fields.append(StructField(name, field_type, nullable))
                if not self.accept(","):
                    break
            self.expect(close)
            return StructType(fields)
        if word in _SIMPLE:
            return _SIMPLE[word]
        self.i -= 1
        self.fail(f"type {value.upper()} has no Spark counterpart this connector reads or writes")

    def timestamp(self, path: tuple[str, ...], in_collection: bool, kind: str, precision: int | None, at: int) -> None:
        """Record a timestamp whose precision Spark's type does not carry (Flink's default is 6, Spark's too)."""
        flink = f"{kind}({SPARK_PRECISION if precision is None else precision})"
        if precision is None or precision == SPARK_PRECISION:
            return
        if precision > SPARK_PRECISION:
            self.fail(
                f"'{path_text(path)}' is {flink}: Spark's timestamps hold microseconds, so its finer digits would be "
                f"lost: declare it {kind}(6) or coarser",
                at,
            )
        if in_collection:
            self.fail(
                f"'{path_text(path)}' holds a {flink} inside an ARRAY or MAP, which option '{COLUMN_TYPES}' cannot "
                f"address yet (only columns and ROW fields), so the formats would take it as {kind}(6): declare it "
                f"{kind}(6) if the records hold microseconds, or leave the column out",
                at,
            )
        self.flink_types.append((path, flink))

    def time(self, path: tuple[str, ...], at: int) -> DataType:
        """Flink's TIME(p) (TIME is TIME(0)) as Spark's TIME(p): pyspark 4.1+. Flink's runtime holds milliseconds
        (its formats write at most those: formats/time_text.py), Spark's TIME microseconds."""
        precision = self.optional_length()
        self.accept("without", "time", "zone")
        flink = f"TIME({0 if precision is None else precision})"
        if TimeType is None:
            self.fail(
                f"'{path_text(path)}' is {flink}, and this pyspark has no TIME type (pyspark 4.1 or later has): "
                "upgrade pyspark, or declare the column STRING to read and write its text",
                at,
            )
        if precision is not None and precision > 6:
            self.fail(
                f"'{path_text(path)}' is {flink}: Spark's TIME holds microseconds, so its finer digits would be lost "
                "(Flink's own runtime holds milliseconds): declare it TIME(3) or coarser",
                at,
            )
        return TimeType(0 if precision is None else precision)

    def optional_length(self) -> int | None:
        if not self.accept("("):
            return None
        length = self.number()
        self.expect(")")
        return length


def path_text(path: tuple[str, ...]) -> str:
    """A column or ROW field path as option 'flink.column-types' reads it: `a.b`, a name in backticks unless plain."""
    return ".".join(p if _PLAIN_NAME.fullmatch(p) else "`" + p.replace("`", "``") + "`" for p in path)


def _joined_utf16(units: str) -> str:
    """UTF-16 code units as Java holds them: a surrogate pair is one character."""
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
