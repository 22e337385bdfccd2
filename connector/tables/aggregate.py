"""aggregate_changelog: COUNT, SUM, AVG, MIN and MAX per group over a table's full changelog, retracting as Flink's
GroupAggregate does (COUNT_RETRACT, SUM_RETRACT, ...): an update takes its before-image out and its after-image in, a
delete takes the row out, and a group that empties is deleted.

One stateful operator does every function, in one pass: Spark's own streaming aggregation (update mode) could count
and sum signed rows, but it cannot delete a group that empties (it shows a group of count 0 for ever), and MIN / MAX
need the group's values. Per group the state holds the count, each function's running sum and non-null count, and,
for MIN / MAX, how many rows hold each value, so a retracted minimum is replaced by the next one. A micro-batch's
changes of a group give one result: `insert` for a new group, `update_preimage` and `update_postimage` when a result
changed (nothing when none did), `delete` (the last result) when the group empties. The output is a changelog the
upsert-kafka writer takes as it is (append mode).

Each group's state is its own entry of a MapState (its accumulators and, for MIN / MAX, its values and their counts),
read and written only when a micro-batch touches the group, many at a time (tables/map_entries.py): a micro-batch
costs what it changes, not what the table holds, and the checkpoint grows with the touched groups. A MIN / MAX group's
entry holds its distinct values, so it is rewritten whole when the group changes (Flink keeps a row per value): cheap
for the usual few thousand values a group, dear for a group of millions. The operator is grouped by one of rows.GROUPS
hash buckets of the group, and each group's rows are folded, its results computed and compared as columns
(tables/group_accumulators.py). Values cross into Python in forms it holds exactly (integers,
dates and timestamps as BIGINT with a null mask; floating point as DOUBLE with a null mask, so NaN stays apart from
null; decimals and strings as text), and the results come back as columns of the same kinds, each with a state
column (a value, null, or NaN, which pandas would turn into null on its way to Arrow).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle, TimerValues
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ..errors import RecordError, SchemaError
from ..kernel.change_kind import ChangeKind, kind_spellings
from . import group_accumulators as core
from .map_entries import MapEntries
from .operator_form import Form, documented
from .rows import as_long, as_text, from_long, from_text, require_columns, require_state_settings, state_group

HELPER = "aggregate_changelog"
_FUNCTIONS = ("count", "sum", "avg", "min", "max")
_CALL = re.compile(r"^\s*(\w+)\s*\(\s*(\*|`[^`]+`|[^\s()`]+)\s*\)\s*$")
_GROUP, _SIGN, _KIND, _BUCKET = "uk_group", "uk_sign", "uk_kind", "uk_bucket"
_COMING_IN = list(kind_spellings(ChangeKind.INSERT, ChangeKind.UPDATE_AFTER))
_GOING_OUT = list(kind_spellings(ChangeKind.DELETE, ChangeKind.UPDATE_BEFORE))
# the core's change codes (INSERT, DELETE, UPDATE_BEFORE, UPDATE_AFTER) as the changelog's kinds
_KINDS = np.array(
    [k.value for k in (ChangeKind.INSERT, ChangeKind.DELETE, ChangeKind.UPDATE_BEFORE, ChangeKind.UPDATE_AFTER)], object
)


@dataclass(frozen=True)
class _Aggregate:
    name: str  # the result column
    function: str  # count, sum, avg, min, max
    column: str | None  # None: COUNT(*)
    given: DataType | None  # the input column's type
    result: DataType  # Spark's type of the result


@documented
def aggregate_changelog(
    changelog: DataFrame, group_by: str | Sequence[str], *, operator_form: str = "pandas", **aggregates: str
) -> DataFrame:
    """The changelog of `SELECT <group_by>, <aggregates> ... GROUP BY <group_by>` over `changelog` (a full
    changelog: normalized_changelog's, or a change-envelope format's), e.g.
    `aggregate_changelog(orders, "category", num="COUNT(*)", total="SUM(price)", low="MIN(price)")`.

    Columns: the group's, then each aggregate, then `_change_type`. Result types are Spark's (COUNT BIGINT; SUM of
    integers BIGINT, of DOUBLE / FLOAT DOUBLE, of DECIMAL(p, s) DECIMAL(min(38, p + 10), s); AVG DOUBLE, of a DECIMAL
    DECIMAL(min(38, p + 4), min(38, s + 4)); MIN / MAX the column's). A SUM beyond BIGINT or its DECIMAL fails the query
    rather than wrap. Needs the RocksDB state store provider (the error says how to set it)."""
    groups = require_columns(changelog, [group_by] if isinstance(group_by, str) else list(group_by), "group_by", HELPER)
    (change,) = require_columns(changelog, ["_change_type"], "change column", HELPER)
    if not aggregates:
        raise SchemaError(f"{HELPER}: give the aggregates, e.g. num='COUNT(*)', total='SUM(price)'")
    specs = [_parse(changelog, name, text) for name, text in aggregates.items()]
    clash = {s.name.lower() for s in specs} & {g.lower() for g in groups}
    if clash or len({s.name.lower() for s in specs}) < len(specs):
        raise SchemaError(f"{HELPER}: each aggregate needs its own name, apart from the group columns")
    require_state_settings(changelog.sparkSession, HELPER)

    prepared = changelog.select(
        state_group(groups).alias(_BUCKET),
        as_text(groups).alias(_GROUP),
        _sign(F.col(change)).alias(_SIGN),
        *[
            c
            for i, s in enumerate(specs)
            if s.column is not None and s.given is not None  # both None for COUNT(*) only
            for c in _crossing(F.col(s.column), s.given, i)
        ],
    )
    core_specs = [_core_spec(s) for s in specs]
    out = StructType(
        [StructField(_GROUP, StringType()), StructField(_KIND, StringType())]
        + [f for i, c in enumerate(core_specs) for f in _result_fields(c, i)]
    )
    form = Form.of(prepared, _BUCKET, operator_form, HELPER)
    aggregated = form.run(prepared, _GroupAggregates(core_specs, form), out, "None")
    group_schema = changelog.select(*groups).schema
    return aggregated.select(
        from_text(F.col(_GROUP), group_schema).alias("uk_g"),
        *[_result(s, i) for i, s in enumerate(specs)],
        F.col(_KIND),
    ).select(
        *[F.col(f"uk_g.{g}").alias(g) for g in groups],
        *[F.col(s.name) for s in specs],
        F.col(_KIND).alias("_change_type"),
    )


def _parse(df: DataFrame, name: str, text: str) -> _Aggregate:
    match = _CALL.match(str(text))
    function = match.group(1).lower() if match else ""
    if match is None or function not in _FUNCTIONS:
        raise SchemaError(
            f"{HELPER}: aggregate {name}={text!r} is not one of COUNT(*), COUNT(c), SUM(c), AVG(c), MIN(c), MAX(c)"
        )
    argument = match.group(2).strip("`")
    if argument == "*":
        if function != "count":
            raise SchemaError(f"{HELPER}: aggregate {name}={text!r}: only COUNT takes *")
        return _Aggregate(name, function, None, None, LongType())
    (column,) = require_columns(df, [argument], f"aggregate {name}'s column", HELPER)
    given = df.schema[column].dataType
    numeric = isinstance(given, (IntegralType, FloatType, DoubleType, DecimalType))
    orderable = numeric or isinstance(given, (StringType, DateType, TimestampType, TimestampNTZType, BooleanType))
    if (function in ("sum", "avg") and not numeric) or (function in ("min", "max") and not orderable):
        raise SchemaError(f"{HELPER}: aggregate {name}={text!r}: {function.upper()} of a {given.simpleString()} column")
    return _Aggregate(name, function, column, given, _result_type(function, given))


def _result_type(function: str, given: DataType) -> DataType:
    if function == "count":
        return LongType()
    if function in ("min", "max"):
        return given
    if isinstance(given, DecimalType):
        if function == "sum":
            return DecimalType(min(38, given.precision + 10), given.scale)
        return DecimalType(min(38, given.precision + 4), min(38, given.scale + 4))
    if function == "avg" or isinstance(given, (FloatType, DoubleType)):
        return DoubleType()
    return LongType()


def _sign(kind: Column) -> Column:
    """+1 for a row coming in, -1 for a row going out; an upsert (not yet normalized) or an unknown kind fails."""
    lower = F.lower(kind)
    return (
        F.when(lower.isin(_COMING_IN), F.lit(1))
        .when(lower.isin(_GOING_OUT), F.lit(-1))
        .otherwise(F.raise_error(F.concat(F.lit(f"{HELPER}: change kind '"), F.coalesce(kind, F.lit("null")), F.lit(
            "' is not one of a full changelog (insert, update_preimage, update_postimage, delete): an upsert stream "
            "needs normalized_changelog(...) first, to know what each upsert replaces"))))
    )  # fmt: skip


# How a value crosses into Python exactly and back: integers, dates and timestamps as BIGINT (microseconds, days),
# floating point as DOUBLE, each with a null mask (pandas would make a null NaN, or an integer column float64);
# decimals and strings as text.
def _carried_as(given: DataType | None) -> str | None:
    if given is None:
        return None
    if isinstance(given, (IntegralType, DateType, TimestampType, TimestampNTZType)):
        return "int"
    if isinstance(given, BooleanType):
        return "bool"
    if isinstance(given, (FloatType, DoubleType)):
        return "float"
    return "decimal" if isinstance(given, DecimalType) else "string"


def _crossing(column: Column, given: DataType, i: int) -> list[Column]:
    carried = _carried_as(given)
    if carried in ("decimal", "string"):
        value = column.cast(StringType())
    elif carried == "float":
        value = F.coalesce(column.cast(DoubleType()), F.lit(0.0))
    else:  # integers, dates and timestamps as rows.as_long gives them; booleans as 0 and 1
        as_number = as_long(column, given) if carried == "int" else None
        value = F.coalesce(column.cast(LongType()) if as_number is None else as_number, F.lit(0))
    return [value.alias(f"uk_v{i}"), column.isNull().alias(f"uk_n{i}")]


def _core_spec(s: _Aggregate) -> core.Spec:
    return core.Spec(
        s.name,
        s.function,
        _carried_as(s.given),
        scale=s.result.scale if isinstance(s.result, DecimalType) else 0,
        precision=s.result.precision if isinstance(s.result, DecimalType) else 0,
        long_result=s.function == "sum" and isinstance(s.result, LongType),
        given_scale=s.given.scale if isinstance(s.given, DecimalType) else 0,
    )


# How a result crosses back: as its core column (BIGINT, DOUBLE, BOOLEAN or text) and a state: 0 a value, 1 null, 2 NaN
# (pandas' way to Arrow makes every NaN of a DOUBLE column null); then typed as Spark's result.
_CARRIERS = {"int": LongType(), "float": DoubleType(), "bool": BooleanType(), "text": StringType()}
_VALUE, _NULL, _NAN = 0, 1, 2


def _result_fields(c: core.Spec, i: int) -> list[StructField]:
    return [StructField(f"uk_r{i}", _CARRIERS[c.result]), StructField(f"uk_s{i}", IntegerType())]


def _result(s: _Aggregate, i: int) -> Column:
    value, state = F.col(f"uk_r{i}"), F.col(f"uk_s{i}")
    if isinstance(s.result, (TimestampType, TimestampNTZType, DateType)):
        value = from_long(value, s.result)
    typed = F.when(state == _VALUE, value.cast(s.result))
    if isinstance(s.result, (DoubleType, FloatType)):
        typed = typed.when(state == _NAN, F.lit(float("nan")).cast(s.result))
    return typed.alias(s.name)


def _columns(changes: core.Changes, specs: list[core.Spec]) -> dict[str, object]:
    columns = {
        _GROUP: changes.groups.take(pa.array(changes.index)).to_numpy(zero_copy_only=False),
        _KIND: _KINDS[changes.kinds],
    }
    for i, (c, values, nulls) in enumerate(zip(specs, changes.values, changes.nulls)):
        state = np.where(nulls, _NULL, _VALUE).astype(np.int32)
        if c.result == "float":
            nan = np.isnan(values) & ~nulls
            state[nan] = _NAN
            values = np.where(nan, 0.0, values)
        columns[f"uk_r{i}"], columns[f"uk_s{i}"] = values, state
    return columns


class _GroupAggregates(StatefulProcessor):
    """A state group's aggregate groups, each its own entry; a micro-batch's changes of each group in, one result change
    out."""

    def __init__(self, specs: list[core.Spec], form: Form) -> None:
        self._specs = specs
        self._form = form

    def init(self, handle: StatefulProcessorHandle) -> None:
        fields = [StructField(f.name, _SPARK_TYPES[str(f.type)]) for f in core.entry_schema(self._specs)]
        # the name every earlier layout used (a ValueState per group or per bucket): Spark refuses their checkpoints
        self._groups = MapEntries(handle, "accumulators", "group", StructType(fields))

    def handleInputRows(self, key: tuple[object, ...], rows: Iterator[Any], timerValues: TimerValues) -> Iterator[Any]:
        given = self._form.table(rows)
        present = [s.carried is not None for s in self._specs]
        batch = core.Rows(
            given[_GROUP].combine_chunks(),
            given[_SIGN].to_numpy().astype(np.int64),
            [given[f"uk_v{i}"].to_numpy() if p else None for i, p in enumerate(present)],
            [given[f"uk_n{i}"].to_numpy() if p else None for i, p in enumerate(present)],
        )
        touched = pc.unique(batch.groups).to_pylist()
        found = [(g, e) for g, e in zip(touched, self._groups.held(touched)) if e is not None]
        try:
            held = core.held([g for g, _ in found], [e for _, e in found], self._specs)
        except core.LayoutError:
            raise RecordError(
                f"{HELPER}: the checkpoint holds aggregate_changelog state in another form (an earlier version's, or "
                "of other aggregates), which this query cannot go on from: start it from a new checkpoint"
            ) from None
        try:
            after, changes = core.apply(held, batch, self._specs)
        except core.GroupError as e:
            raise RecordError(f"{HELPER}: {e}") from None
        groups, entries = core.entries(after, self._specs)
        emptied = set(touched) - set(groups)
        self._groups.write(groups, entries, [g for g, _ in found if g in emptied])
        if len(changes.index):
            yield from self._form.emit(_columns(changes, self._specs))

    def close(self) -> None:
        pass


# a group entry's Arrow types (group_accumulators.entry_schema) as Spark's
_SPARK_TYPES = {
    "int64": LongType(),
    "double": DoubleType(),
    "string": StringType(),
    "list<item: int64>": ArrayType(LongType()),
    "list<item: string>": ArrayType(StringType()),
}
