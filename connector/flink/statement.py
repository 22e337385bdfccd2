"""Flink's `CREATE TABLE` statement read token by token (for `flink_table`, flink/ddl.py): its columns with Flink's
types as Spark's (flink/types.py), its primary key (table- or column-level), metadata columns, watermark and WITH
options; what it declares that has no meaning here (a computed column, `LIKE`, `AS SELECT`, `PARTITIONED BY`) refused
by name. Its tokens, names and quoted strings are flink/lexer.py's.

Hand-written: Spark parses no Flink SQL and no maintained Python library parses Flink's DDL; the grammar read is
the part of Flink's CREATE TABLE a Kafka table uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql.types import StructField

from .lexer import JAVA_UNESCAPED
from .types import FlinkTypes

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


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


class FlinkStatement(FlinkTypes):
    """Reads one CREATE TABLE statement: `table()` gives what it declares, refusing by name what has no meaning here."""

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
            options[key] = self.java_unescaped(key, value, at) if JAVA_UNESCAPED.fullmatch(key) else value
            # A missing comma between two options (a typo in Flink's own 1.13 release notes) reads the same.
            self.accept(",")
        self.expect(")")
        return options
