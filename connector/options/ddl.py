"""The option 'schema': Spark's DDL for a table's columns (`id INT, name STRING NOT NULL`), parsed here.

A Python data source has no JVM at hand when Spark asks for its schema, and a DDL string handed back to
Spark is parsed by the JVM only after our checks, so a typo there would reach the user as a JVM parse
error. This parser reads the same column grammar (names plain or in backticks, `name: type`, NOT NULL,
COMMENT, and every Spark type name) into a StructType, and names what it cannot read.
"""

from __future__ import annotations

import re

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CalendarIntervalType,
    CharType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VarcharType,
    VariantType,
    YearMonthIntervalType,
)

from ..errors import SchemaError, did_you_mean
from ..spark_internals import TimeType
from .tokens import TokenReader

_SIMPLE: dict[str, type[DataType]] = {
    "boolean": BooleanType,
    "tinyint": ByteType,
    "byte": ByteType,
    "smallint": ShortType,
    "short": ShortType,
    "int": IntegerType,
    "integer": IntegerType,
    "bigint": LongType,
    "long": LongType,
    "float": FloatType,
    "real": FloatType,
    "double": DoubleType,
    "date": DateType,
    "timestamp": TimestampType,
    "timestamp_ltz": TimestampType,
    "timestamp_ntz": TimestampNTZType,
    "binary": BinaryType,
    "void": NullType,
    "variant": VariantType,
}
_WITH_ARGUMENTS = ("string", "char", "character", "varchar", "decimal", "dec", "numeric", "time", "interval")
_COMPLEX = ("array", "map", "struct")
TYPE_NAMES = sorted(name.upper() for name in (*_SIMPLE, *_WITH_ARGUMENTS, *_COMPLEX))
_YEAR_MONTH = ("year", "month")
_DAY_TIME = ("day", "hour", "minute", "second")

_TOKEN = re.compile(
    r"\s*(?:(?P<quoted>`(?:[^`]|``)*`)|(?P<text>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<word>[A-Za-z0-9_]+)|(?P<punct>[,:<>()]))"
)
_EXAMPLE = "`id INT, name STRING`"


class _Parser(TokenReader):
    ends_early = "the column list ends too early"

    def __init__(self, text: str, option: str) -> None:
        self.option = option
        super().__init__(text, _TOKEN)

    def unreadable(self, rest: str) -> str:
        unclosed = {"`": "a name in backticks", "'": "a quoted comment", '"': "a quoted comment"}
        return f"{unclosed[rest[0]]} is not closed" if rest[0] in unclosed else f"unexpected '{rest[0]}'"

    def error(self, problem: str, where: str, hint: str) -> Exception:
        return SchemaError(
            f"option '{self.option}': cannot read the columns '{self.text}' {where}: {problem}.{hint} "
            f"Write them as {_EXAMPLE}"
        )

    # -- grammar -----------------------------------------------------------------------------------

    def columns(self) -> StructType:
        fields = [self.field()]
        while self.accept(","):
            fields.append(self.field())
        if self.i < len(self.tokens):
            self.fail("expected ',' before the next column")
        return StructType(fields)

    def field(self) -> StructField:
        if self.i >= len(self.tokens):
            self.fail("expected a column name")
        kind, value = self.take()
        if kind == "quoted":
            name = value[1:-1].replace("``", "`")
        elif kind == "word":
            name = value
        else:
            self.i -= 1
            self.fail("expected a column name")
        self.accept(":")
        if self.peek() in ("", ",", ">"):
            self.fail(f"column '{name}' has no type")
        data_type = self.data_type()
        nullable = True
        if self.accept("not"):
            if not self.accept("null"):
                self.fail("expected NULL after NOT")
            nullable = False
        metadata = {}
        if self.accept("comment"):
            kind, value = self.take()
            if kind != "text":
                self.i -= 1
                self.fail("expected a quoted comment after COMMENT")
            metadata["comment"] = value[1:-1]
        if self.peek() not in ("", ",", ">"):
            self.fail(f"column '{name}': expected ',' or the end after its type")
        return StructField(name, data_type, nullable, metadata)

    def data_type(self) -> DataType:
        kind, value = self.take()
        word = value.lower()
        if kind != "word":
            self.i -= 1
            self.fail("expected a type")
        if word in _SIMPLE:
            return _SIMPLE[word]()
        if word == "string":
            if self.accept("collate"):
                return StringType(self.take()[1])
            return StringType()
        if word in ("char", "character", "varchar"):
            self.expect("(")
            length = self.number("a length")
            self.expect(")")
            return VarcharType(length) if word == "varchar" else CharType(length)
        if word in ("decimal", "dec", "numeric"):
            return self.decimal()
        if word == "time":
            precision = 6
            if self.accept("("):
                precision = self.number("a precision")
                self.expect(")")
            if precision > 6:
                self.fail(f"TIME({precision}): the precision is at most 6")
            if TimeType is None:
                self.fail("TIME needs pyspark 4.1 or later (this pyspark has no TimeType)")
            return TimeType(precision)
        if word == "interval":
            return self.interval()
        if word == "array":
            self.expect("<")
            element = self.data_type()
            self.expect(">")
            return ArrayType(element)
        if word == "map":
            self.expect("<")
            key = self.data_type()
            self.expect(",")
            value_type = self.data_type()
            self.expect(">")
            return MapType(key, value_type)
        if word == "struct":
            self.expect("<")
            fields = []
            if self.peek() != ">":
                fields.append(self.field())
                while self.accept(","):
                    fields.append(self.field())
            self.expect(">")
            return StructType(fields)
        self.i -= 1
        self.fail(f"unknown type '{value}'", hint=did_you_mean(word.upper(), TYPE_NAMES))

    def decimal(self) -> DecimalType:
        precision, scale = 10, 0
        if self.accept("("):
            precision = self.number("a precision")
            if self.accept(","):
                scale = self.number("a scale")
            self.expect(")")
        if not 1 <= precision <= 38 or scale > precision:
            self.i -= 1
            self.fail(f"DECIMAL({precision},{scale}): the precision is 1 to 38 and the scale at most the precision")
        return DecimalType(precision, scale)

    def interval(self) -> DataType:
        start = self.peek()
        if start not in _YEAR_MONTH + _DAY_TIME:
            return CalendarIntervalType()
        self.i += 1
        end = start
        if self.accept("to"):
            end = self.peek()
            self.i += 1
        for units, kind in ((_YEAR_MONTH, YearMonthIntervalType), (_DAY_TIME, DayTimeIntervalType)):
            if start in units:
                if end not in units or units.index(end) < units.index(start):
                    self.i -= 1
                    self.fail(f"INTERVAL {start.upper()} TO {end.upper()} is not an interval type")
                return kind(units.index(start), units.index(end))
        raise AssertionError


def parse_ddl(text: str, option: str = "schema") -> StructType:
    """The columns of a DDL column list; a SchemaError naming the option and the place it cannot read."""
    if not text.strip():
        raise SchemaError(f"option '{option}' is empty: write the columns as {_EXAMPLE}")
    return _Parser(text, option).columns()


def ddl_text(schema: StructType) -> str:
    """A schema as DDL, e.g. for logs: "`id` int NOT NULL, `name` string, `r` struct<`x`: int NOT NULL>"; it
    parses back (parse_ddl) to the same schema, the NOT NULL fields of a STRUCT included."""
    return ", ".join(_field_text(f, " ") for f in schema.fields)


def _field_text(f: StructField, separator: str) -> str:
    return f"`{f.name.replace('`', '``')}`{separator}{_type_text(f.dataType)}{'' if f.nullable else ' NOT NULL'}"


def _type_text(t: DataType) -> str:
    if isinstance(t, StructType):
        return f"struct<{', '.join(_field_text(f, ': ') for f in t.fields)}>"
    if isinstance(t, ArrayType):
        return f"array<{_type_text(t.elementType)}>"
    if isinstance(t, MapType):
        return f"map<{_type_text(t.keyType)}, {_type_text(t.valueType)}>"
    return t.simpleString()
