"""Flink's types as Spark's, read from a CREATE TABLE statement (flink/statement.py reads the rest): CHAR, DECIMAL,
TIMESTAMP[_LTZ], TIME, ARRAY, MAP, ROW and the simple types; a timestamp precision Spark's type does not carry recorded
per column path for option 'flink.column-types' (path_text), what would lose digits refused, and a type with no Spark
counterpart refused by name.
"""

from __future__ import annotations

import re

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

from ..formats.flink_types import SPARK_PRECISION
from ..options.catalog import FLINK_COLUMN_TYPES
from ..spark_internals import TimeType
from .lexer import FlinkTokens

COLUMN_TYPES = FLINK_COLUMN_TYPES.name
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
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


class FlinkTypes(FlinkTokens):
    """Reads Flink's types (`data_type`), keeping the Flink type of each column path whose Spark type carries less."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.flink_types: list[tuple[tuple[str, ...], str]] = []  # (column path, Flink type) where Spark's is less

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
            digits, scale = 10, 0  # the precision (digits in all) and scale
            if self.accept("("):
                digits = self.number()
                if self.accept(","):
                    scale = self.number()
                self.expect(")")
            return DecimalType(digits, scale)
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
