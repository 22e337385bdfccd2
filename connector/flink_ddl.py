"""Flink's `CREATE TABLE ... WITH ('connector' = 'upsert-kafka', ...)` as it is, for Spark: `flink_table(ddl)`.

What the statement says maps onto this connector's options: the columns and their types (Flink's type names; a
timestamp's precision onto `flink.column-types`), `PRIMARY KEY (...) NOT ENFORCED` (or a column's own
`PRIMARY KEY NOT ENFORCED`) onto `key.fields` and NOT NULL key columns, `METADATA [FROM 'key'] [VIRTUAL]` columns
onto `metadata.columns` (virtual ones left out of writes), the `WITH` options as they are (the catalog takes Flink's
spellings; `csv.field-delimiter` unescaped as Flink unescapes it), and `WATERMARK FOR ts AS ts - INTERVAL 'n' UNIT`
onto Spark's `withWatermark` for stream reads. `COMMENT`s are documentation. What has no meaning here (a computed
column, `LIKE`, `AS SELECT`, `PARTITIONED BY`, another connector) is refused by name, never dropped.

Hand-written: Spark parses no Flink SQL and no maintained Python library parses Flink's DDL; the grammar read is
the part of Flink's CREATE TABLE a Kafka table uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.readwriter import DataFrameWriter
from pyspark.sql.streaming import DataStreamWriter
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
from .options.canonical import canonical_options
from .options.columns import metadata_fields, parse_column_options
from .options.ddl import ddl_text
from .options.tokens import TokenReader

FORMAT = "upsert-kafka"
COLUMN_TYPES = "flink.column-types"
_CONNECTORS = ("upsert-kafka", "kafka")
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
_SPARK_PRECISION = 6  # Spark's timestamps hold microseconds: Flink's TIMESTAMP(6), also its default precision
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
# The options whose value Flink passes through Java's unescaping (commons-lang3 StringEscapeUtils.unescapeJava in
# flink-csv's CsvFormatFactory and CsvCommons): `'\t'`, `'\u0001'` are the character, not the text.
_JAVA_UNESCAPED = re.compile(r"((key|value)\.)?csv\.field-delimiter")
_JAVA_ESCAPE = re.compile(r"\\(?:u+\+?(?P<hex>.{0,4})|(?P<octal>[0-3][0-7]{0,2}|[4-7][0-7]?)|(?P<char>.?))", re.S)
_JAVA_CHARS = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}  # any other escaped character is itself


@dataclass(frozen=True)
class FlinkTable:
    """A Flink table definition as this connector's options, and the reads and writes that mean the same."""

    name: str
    columns: StructType  # every column of the statement, in its order, with Flink's types as Spark's
    options: dict[str, str]  # for format("upsert-kafka"): the WITH options, key.fields, metadata.columns, schema
    virtual: frozenset[str] = frozenset()  # metadata columns a write leaves out
    metadata_types: dict[str, DataType] = field(default_factory=dict)  # the connector's type of each metadata column
    watermark: tuple[str, str] | None = None  # (column, delay) for withWatermark
    comments: dict[str, str] = field(default_factory=dict)

    def read(self, spark: SparkSession) -> DataFrame:
        """A batch read: the table's columns in the statement's order and types, a row per key (as Flink
        materializes an upsert-kafka table; this connector's option 'read.mode' can say otherwise)."""
        df = self._columns(spark.read.format(FORMAT).options(**self.options).load())
        return (
            df if self.options.get("read.mode", "table").strip().lower() != "table" else df.select(*self.columns.names)
        )

    def read_stream(self, spark: SparkSession) -> DataFrame:
        """A stream of the table's changes (with the change-type column), watermarked as the statement says.

        Spark watermarks only a TIMESTAMP (an instant), and Flink's common rowtime is a TIMESTAMP(3), a wall clock
        (TIMESTAMP_NTZ here). Such a rowtime column becomes a TIMESTAMP in this stream: the instant its wall clock
        names read as UTC, whatever `spark.sql.session.timeZone` is. So `F.window(rowtime, ...)` starts windows where
        Flink's TUMBLE / HOP on the TIMESTAMP(3) does (epoch-aligned wall clocks), and a window bound shows the wall
        clock in a session whose time zone is UTC (elsewhere, shifted by the zone's offset). A TIMESTAMP_LTZ rowtime
        is an instant already and stays as it is."""
        df = self._columns(spark.readStream.format(FORMAT).options(**self.options).load())
        if self.watermark is None:
            return df
        column, delay = self.watermark
        if isinstance(self.columns[column].dataType, TimestampNTZType):
            df = df.withColumn(column, _instant_in_utc(F.col(column)))
        return df.withWatermark(column, delay)

    def write(self, df: DataFrame) -> DataFrameWriter:
        """The writer of `df` into the table: its columns but the virtual ones, with the options set."""
        return self._writable(df).write.format(FORMAT).options(**self.write_options)

    def write_stream(self, df: DataFrame) -> DataStreamWriter:
        return self._writable(df).writeStream.format(FORMAT).options(**self.write_options)

    @property
    def write_options(self) -> dict[str, str]:
        """The options of a write: the virtual metadata columns are read only (Flink leaves them out of INSERTs)."""
        written = [c for c in self.metadata_types if c not in self.virtual]
        options = {k: v for k, v in self.options.items() if k != "metadata.columns"}
        pairs = dict(p.split("=", 1) for p in self.options.get("metadata.columns", "").split(",") if p)
        return options | ({"metadata.columns": ",".join(f"{c}={pairs[c]}" for c in written)} if written else {})

    def create_view(self, spark: SparkSession, view: str | None = None) -> None:
        """`CREATE TEMPORARY VIEW <view> USING upsert-kafka OPTIONS (...)`: the table for Spark SQL (a batch
        read; named as the Flink table unless `view` says otherwise)."""
        quoted = ", ".join(f"{_sql_text(k)} {_sql_text(v)}" for k, v in self.options.items())
        name = (view or self.name).replace("`", "``")
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` USING `{FORMAT}` OPTIONS ({quoted})")

    def _columns(self, df: DataFrame) -> DataFrame:
        """The statement's columns in its order and types (metadata columns come in the connector's types); a
        column already of its type is not cast (Spark casts no STRUCT to one with a NOT NULL field)."""
        names = {c.lower(): c for c in df.columns}
        given = {f.name.lower(): f.dataType for f in df.schema.fields}

        def typed(f: StructField) -> Column:
            column = F.col(names[f.name.lower()])
            same = given[f.name.lower()].simpleString() == f.dataType.simpleString()  # nullability aside
            return (column if same else column.cast(f.dataType)).alias(f.name)

        wanted = [typed(f) for f in self.columns]
        extra = [F.col(c) for c in df.columns if c.lower() not in {f.name.lower() for f in self.columns}]
        return df.select(*wanted, *extra)  # the change-type column of a changelog read comes last

    def _writable(self, df: DataFrame) -> DataFrame:
        """Without the virtual columns; metadata columns in the connector's types (Flink's TIMESTAMP(3) for the
        record timestamp is a TIMESTAMP here)."""
        virtual = {v.lower() for v in self.virtual}
        types = {c.lower(): t for c, t in self.metadata_types.items()}
        kept = [c for c in df.columns if c.lower() not in virtual]
        return df.select(*[F.col(c).cast(types[c.lower()]).alias(c) if c.lower() in types else F.col(c) for c in kept])


def _instant_in_utc(wall_clock: Column) -> Column:
    """The TIMESTAMP a TIMESTAMP_NTZ's wall clock names in UTC, from its parts: a cast would read it in the session's
    time zone (and skip the wall clocks a daylight-saving gap there has)."""
    parts = [F.year, F.month, F.dayofmonth, F.hour, F.minute]
    seconds = F.date_part(F.lit("SECOND"), wall_clock)  # with the fraction: DECIMAL(8, 6)
    return F.make_timestamp(*(part(wall_clock) for part in parts), seconds, F.lit("UTC"))


def _sql_text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def flink_table(ddl: str, options: dict[str, str] | None = None) -> FlinkTable:
    """The table a Flink `CREATE TABLE` statement defines, for this connector. `options` add to or replace the
    statement's WITH options (e.g. the brokers where the statement has Flink's documentation placeholder `...`)."""
    return _Statement(ddl).table(options or {})


class _Statement(TokenReader):
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

    def table(self, extra: dict[str, str]) -> FlinkTable:
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
        return _mapped(name, fields, metadata, virtual, comments, key, watermark, options | extra, self.flink_types)

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
        flink = f"{kind}({_SPARK_PRECISION if precision is None else precision})"
        if precision is None or precision == _SPARK_PRECISION:
            return
        if precision > _SPARK_PRECISION:
            self.fail(
                f"'{_path_text(path)}' is {flink}: Spark's timestamps hold microseconds, so its finer digits would be "
                f"lost: declare it {kind}(6) or coarser",
                at,
            )
        if in_collection:
            self.fail(
                f"'{_path_text(path)}' holds a {flink} inside an ARRAY or MAP, which option '{COLUMN_TYPES}' cannot "
                f"address yet (only columns and ROW fields), so the formats would take it as {kind}(6): declare it "
                f"{kind}(6) if the records hold microseconds, or leave the column out",
                at,
            )
        self.flink_types.append((path, flink))

    def optional_length(self) -> int | None:
        if not self.accept("("):
            return None
        length = self.number()
        self.expect(")")
        return length


def _path_text(path: tuple[str, ...]) -> str:
    """A column or ROW field path as option 'flink.column-types' reads it: `a.b`, a name in backticks unless plain."""
    return ".".join(p if _PLAIN_NAME.fullmatch(p) else "`" + p.replace("`", "``") + "`" for p in path)


def _joined_utf16(units: str) -> str:
    """UTF-16 code units as Java holds them: a surrogate pair is one character."""
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _mapped(
    name: str,
    fields: list[StructField],
    metadata: dict[str, str],
    virtual: set[str],
    comments: dict[str, str],
    key: list[str] | None,
    watermark: tuple[str, str] | None,
    given: dict[str, str],
    flink_types: list[tuple[tuple[str, ...], str]],
) -> FlinkTable:
    options = dict(given)
    connector = options.pop("connector", None)
    if connector is None or connector.strip().lower() not in _CONNECTORS:
        raise OptionError(
            f"Flink DDL: table '{name}' has 'connector' = {connector!r}: this connector reads and writes the tables "
            f"of Flink's {' and '.join(_CONNECTORS)} connectors"
        )
    if key is not None:
        # A `kafka` table may have both (its key format's columns and its primary key): here both are the key.
        given = [k.strip() for k in options.get("key.fields", ";".join(key)).split(";") if k.strip()]
        if given != key:
            raise OptionError(
                f"Flink DDL: table '{name}' has PRIMARY KEY ({', '.join(key)}) and option 'key.fields' = "
                f"'{options['key.fields']}': here the key format's columns are the primary key, so give the same "
                "columns in the same order, or only one of them"
            )
        unknown = [k for k in key if k not in {f.name for f in fields}]
        if unknown:
            raise OptionError(f"Flink DDL: the PRIMARY KEY of table '{name}' names '{unknown[0]}', which is no column")
        options["key.fields"] = ";".join(key)
        # Flink makes a primary key's columns NOT NULL (its docs on PRIMARY KEY; the Avro schemas it derives).
        fields = [StructField(f.name, f.dataType, False, f.metadata) if f.name in key else f for f in fields]
    elif "key.fields" not in options:
        raise OptionError(
            f"Flink DDL: table '{name}' has no PRIMARY KEY (... ) NOT ENFORCED and no 'key.fields': an upsert-kafka "
            "table is keyed, so declare its primary key"
        )
    if metadata:
        options["metadata.columns"] = ",".join(f"{c}={k}" for c, k in metadata.items())
    data = StructType([f for f in fields if f.name not in metadata])
    options["schema"] = ddl_text(data)
    if watermark is not None and watermark[0] not in {f.name for f in fields}:
        raise OptionError(f"Flink DDL: WATERMARK FOR '{watermark[0]}' names no column of table '{name}'")
    types = {f.name: f.dataType for f in metadata_fields(parse_column_options(canonical_options(options)))}
    if flink_types and COLUMN_TYPES not in given:  # the given options replace the statement's
        options[COLUMN_TYPES] = ", ".join(f"{_path_text(path)} {flink}" for path, flink in flink_types)
    return FlinkTable(name, StructType(fields), options, frozenset(virtual), types, watermark, comments)
