"""Flink's `CREATE TABLE ... WITH ('connector' = 'upsert-kafka', ...)` as it is, for Spark: `flink_table(ddl)`.

What the statement says maps onto this connector's options: the columns and their types (Flink's type names),
`PRIMARY KEY (...) NOT ENFORCED` onto `key.fields`, `METADATA [FROM 'key'] [VIRTUAL]` columns onto
`metadata.columns` (virtual ones left out of writes), the `WITH` options as they are (the catalog takes Flink's
spellings), and `WATERMARK FOR ts AS ts - INTERVAL 'n' UNIT` onto Spark's `withWatermark` for stream reads.
`COMMENT`s are documentation. What has no meaning here (a computed column, `LIKE`, `PARTITIONED BY`, another
connector) is refused by name, never dropped.

Hand-written: Spark parses no Flink SQL and no maintained Python library parses Flink's DDL; the grammar read is
the part of Flink's CREATE TABLE a Kafka table uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
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
_CONNECTORS = ("upsert-kafka", "kafka")
_TOKEN = re.compile(
    r"\s*(?:--[^\n]*|/\*.*?\*/|(?P<name>`(?:[^`]|``)*`)|(?P<text>'(?:[^']|'')*')"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_$]*|[0-9]+)|(?P<punct>\.\.\.|[,()<>=;.\-+*/]))",
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
    "timestamp_ltz": TimestampType(),
}
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


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
        """A stream of the table's changes (with the change-type column), watermarked as the statement says."""
        df = self._columns(spark.readStream.format(FORMAT).options(**self.options).load())
        return df.withWatermark(*self.watermark) if self.watermark else df

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
        names = {c.lower(): c for c in df.columns}
        wanted = [F.col(names[f.name.lower()]).cast(f.dataType).alias(f.name) for f in self.columns]
        extra = [F.col(c) for c in df.columns if c.lower() not in {f.name.lower() for f in self.columns}]
        return df.select(*wanted, *extra)  # the change-type column of a changelog read comes last

    def _writable(self, df: DataFrame) -> DataFrame:
        """Without the virtual columns; metadata columns in the connector's types (Flink's TIMESTAMP(3) for the
        record timestamp is a TIMESTAMP here)."""
        virtual = {v.lower() for v in self.virtual}
        types = {c.lower(): t for c, t in self.metadata_types.items()}
        kept = [c for c in df.columns if c.lower() not in virtual]
        return df.select(*[F.col(c).cast(types[c.lower()]).alias(c) if c.lower() in types else F.col(c) for c in kept])


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

    def near(self, position: int) -> str:
        return " ".join(self.text[position : position + 40].split())  # a statement spans lines

    def error(self, problem: str, where: str, hint: str) -> Exception:
        return OptionError(f"Flink DDL: {problem} ({where})")

    def name(self) -> str:
        kind, value = self.take()
        if kind == "name":
            return value[1:-1].replace("``", "`")
        if kind != "word":
            self.i -= 1
            self.fail("expected a name")
        return value

    def text_value(self) -> str:
        kind, value = self.take()
        if kind != "text":
            self.i -= 1
            self.fail("expected a quoted string")
        return value[1:-1].replace("''", "'")

    # -- the statement -----------------------------------------------------------------------------------

    def table(self, extra: dict[str, str]) -> FlinkTable:
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
            if self.peek() in ("primary", "constraint"):
                if self.accept("constraint"):
                    self.name()
                key = self.primary_key()
            elif self.peek() == "watermark":
                watermark = self.watermark()
            elif self.peek() == "like":
                self.fail("LIKE copies another Flink table's definition, which Spark does not have: write its columns")
            else:
                column = self.name()
                if self.peek() == "as":
                    self.fail(
                        f"'{column}' is a computed column, which this connector cannot compute: leave it out and add "
                        "it with withColumn(...) after the read"
                    )
                data_type, nullable = self.data_type(), True
                if self.accept("not", "null"):
                    nullable = False
                else:
                    self.accept("null")
                if self.accept("metadata"):
                    metadata[column] = self.text_value() if self.accept("from") else column
                    if self.accept("virtual"):
                        virtual.add(column)
                if self.accept("comment"):
                    comments[column] = self.text_value()
                fields.append(StructField(column, data_type, nullable))
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
        return _mapped(name, fields, metadata, virtual, comments, key, watermark, options | extra)

    def primary_key(self) -> list[str]:
        self.expect("primary", "key")
        self.expect("(")
        names = [self.name()]
        while self.accept(","):
            names.append(self.name())
        self.expect(")")
        if not self.accept("not", "enforced"):
            self.fail("Flink takes only PRIMARY KEY (...) NOT ENFORCED")
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
            if self.accept("..."):  # Flink's documentation placeholder: the options given to flink_table
                self.accept(",")
                continue
            key = self.text_value()
            self.expect("=")
            options[key] = self.text_value()
            # A missing comma between two options (a typo in Flink's own 1.13 release notes) reads the same.
            self.accept(",")
        self.expect(")")
        return options

    # -- Flink's types -----------------------------------------------------------------------------------

    def data_type(self) -> DataType:
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
        if word == "timestamp":
            self.optional_length()
            if self.accept("with", "local", "time", "zone"):
                return TimestampType()
            self.accept("without", "time", "zone")
            return TimestampNTZType()
        if word == "timestamp_ltz":
            self.optional_length()
            return TimestampType()
        if word == "array":
            self.expect("<")
            element = self.data_type()
            self.accept("not", "null")
            self.expect(">")
            return ArrayType(element)
        if word == "map":
            self.expect("<")
            key = self.data_type()
            self.accept("not", "null")
            self.expect(",")
            value_type = self.data_type()
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
                field_type, nullable = self.data_type(), not self.accept("not", "null")
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

    def optional_length(self) -> None:
        if self.accept("("):
            self.number()
            self.expect(")")


def _mapped(
    name: str,
    fields: list[StructField],
    metadata: dict[str, str],
    virtual: set[str],
    comments: dict[str, str],
    key: list[str] | None,
    watermark: tuple[str, str] | None,
    given: dict[str, str],
) -> FlinkTable:
    options = dict(given)
    connector = options.pop("connector", None)
    if connector is None or connector.strip().lower() not in _CONNECTORS:
        raise OptionError(
            f"Flink DDL: table '{name}' has 'connector' = {connector!r}: this connector reads and writes the tables "
            f"of Flink's {' and '.join(_CONNECTORS)} connectors"
        )
    if key is not None:
        if "key.fields" in options:
            raise OptionError(f"Flink DDL: table '{name}' has a PRIMARY KEY and option 'key.fields': give one of them")
        options["key.fields"] = ";".join(key)
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
    return FlinkTable(name, StructType(fields), options, frozenset(virtual), types, watermark, comments)
