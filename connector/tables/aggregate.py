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

The operator is grouped by a hash bucket of the group (as normalized_changelog by a bucket of the key): a bucket's
groups are one state value, read and written once per micro-batch, and its rows are folded as columns
(tables/group_accumulators.py). Grouped by the group, each group cost a call from Spark and state round trips (1 M
groups: about 0.5 ms each); a bucket costs that once for all its groups. Values cross into Python in forms it holds
exactly (integers, dates and timestamps as BIGINT with a null mask; floating point as DOUBLE with a null mask, so NaN
stays apart from null; decimals and strings as text), and the results go back as JSON text that Spark's from_json
reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle, TimerValues
from pyspark.sql.types import (
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
from ..formats.change_kind import ChangeKind, kind_spellings
from . import group_accumulators as core
from .normalize import BUCKETS
from .rows import as_text, from_text, require_columns, require_rocksdb

HELPER = "aggregate_changelog"
_FUNCTIONS = ("count", "sum", "avg", "min", "max")
_CALL = re.compile(r"^\s*(\w+)\s*\(\s*(\*|`[^`]+`|[^\s()`]+)\s*\)\s*$")
_GROUP, _SIGN, _RESULT, _KIND, _BUCKET = "uk_group", "uk_sign", "uk_result", "uk_kind", "uk_bucket"
_COMING_IN = list(kind_spellings(ChangeKind.INSERT, ChangeKind.UPDATE_AFTER))
_GOING_OUT = list(kind_spellings(ChangeKind.DELETE, ChangeKind.UPDATE_BEFORE))
_EPOCH_NTZ = "1970-01-01 00:00:00"


@dataclass(frozen=True)
class _Aggregate:
    name: str  # the result column
    function: str  # count, sum, avg, min, max
    column: str | None  # None: COUNT(*)
    given: DataType | None  # the input column's type
    result: DataType  # Spark's type of the result


def aggregate_changelog(changelog: DataFrame, group_by: str | Sequence[str], **aggregates: str) -> DataFrame:
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
    require_rocksdb(changelog.sparkSession, HELPER)

    prepared = changelog.select(
        F.pmod(F.xxhash64(*groups), F.lit(BUCKETS)).alias(_BUCKET),
        as_text(groups).alias(_GROUP),
        _sign(F.col(change)).alias(_SIGN),
        *[c for i, s in enumerate(specs) if s.column is not None for c in _crossing(F.col(s.column), s.given, i)],
    )
    out = StructType(
        [StructField(_GROUP, StringType()), StructField(_RESULT, StringType()), StructField(_KIND, StringType())]
    )
    aggregated = prepared.groupBy(_BUCKET).transformWithStateInPandas(
        statefulProcessor=_GroupAggregates([_core_spec(s) for s in specs]),
        outputStructType=out,
        outputMode="Append",
        timeMode="None",
    )
    group_schema = changelog.select(*groups).schema
    carried = StructType([StructField(s.name, _carried(s.result)) for s in specs])
    return aggregated.select(
        from_text(F.col(_GROUP), group_schema).alias("uk_g"),
        from_text(F.col(_RESULT), carried).alias("uk_r"),
        F.col(_KIND),
    ).select(
        *[F.col(f"uk_g.{g}").alias(g) for g in groups],
        *[_typed(F.col(f"uk_r.{s.name}"), s.result).alias(s.name) for s in specs],
        F.col(_KIND).alias("_change_type"),
    )


def _parse(df: DataFrame, name: str, text: str) -> _Aggregate:
    match = _CALL.match(str(text))
    function = match.group(1).lower() if match else ""
    if function not in _FUNCTIONS:
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
    elif isinstance(given, TimestampType):
        value = F.coalesce(F.unix_micros(column), F.lit(0))
    elif isinstance(given, TimestampNTZType):
        value = F.coalesce(_NTZ_MICROS(column), F.lit(0))
    elif isinstance(given, DateType):
        value = F.coalesce(F.unix_date(column), F.lit(0)).cast(LongType())
    else:
        value = F.coalesce(column.cast(LongType()), F.lit(0))
    return [value.alias(f"uk_v{i}"), column.isNull().alias(f"uk_n{i}")]


def _core_spec(s: _Aggregate) -> core.Spec:
    decimal_result = isinstance(s.result, DecimalType)
    return core.Spec(
        s.name,
        s.function,
        _carried_as(s.given),
        scale=s.result.scale if decimal_result else 0,
        precision=s.result.precision if decimal_result else 0,
        long_result=s.function == "sum" and isinstance(s.result, LongType),
        given_scale=s.given.scale if isinstance(s.given, DecimalType) else 0,
    )


def _NTZ_MICROS(column: Column) -> Column:
    return F.timestamp_diff("MICROSECOND", F.lit(_EPOCH_NTZ).cast(TimestampNTZType()), column)


def _MICROS_NTZ(column: Column) -> Column:
    return F.timestamp_add("MICROSECOND", column, F.lit(_EPOCH_NTZ).cast(TimestampNTZType()))


def _carried(result: DataType) -> DataType:
    if isinstance(result, DecimalType):
        return StringType()
    if isinstance(result, (TimestampType, TimestampNTZType)):
        return LongType()
    if isinstance(result, DateType):
        return IntegerType()
    return result


def _typed(column: Column, result: DataType) -> Column:
    if isinstance(result, DecimalType):
        return column.cast(result)
    if isinstance(result, TimestampType):
        return F.timestamp_micros(column)
    if isinstance(result, TimestampNTZType):
        return _MICROS_NTZ(column)
    if isinstance(result, DateType):
        return F.date_from_unix_date(column)
    return column


class _GroupAggregates(StatefulProcessor):
    """A bucket's groups' accumulators; a micro-batch's changes of each group in, one result change out."""

    def __init__(self, specs: list[core.Spec]) -> None:
        self._specs = specs

    def init(self, handle: StatefulProcessorHandle) -> None:
        # the name the per-group layout used: Spark refuses its checkpoint (another key or value schema)
        self._bucket = handle.getValueState("accumulators", "groups BINARY")

    def handleInputRows(
        self, key: tuple, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        frames = list(rows)
        frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        stored = self._bucket.get()
        try:
            groups = core.decode(None if stored is None else stored[0])
        except core.LayoutError:
            raise RecordError(
                f"{HELPER}: the checkpoint holds an older aggregate_changelog's state (each group's accumulators kept "
                "in another form), which this version cannot go on from: start the query from a new checkpoint"
            ) from None
        present = [s.carried is not None for s in self._specs]
        batch = core.Rows(
            pa.array(frame[_GROUP].to_numpy(object), pa.string()),
            frame[_SIGN].to_numpy(np.int64),
            [frame[f"uk_v{i}"].to_numpy() if p else None for i, p in enumerate(present)],
            [frame[f"uk_n{i}"].to_numpy(bool) if p else None for i, p in enumerate(present)],
        )
        try:
            changes = core.apply(groups, batch, self._specs)
        except core.GroupError as e:
            raise RecordError(f"{HELPER}: {e}") from None
        if groups:
            self._bucket.update((core.encode(groups),))
        else:
            self._bucket.clear()
        out = []
        for group, before, after in changes:
            if before is None and after is not None:
                out.append((group, after, ChangeKind.INSERT.value))
            elif before is not None and after is None:
                out.append((group, before, ChangeKind.DELETE.value))
            elif before is not None and before != after:
                out += [(group, before, ChangeKind.UPDATE_BEFORE.value), (group, after, ChangeKind.UPDATE_AFTER.value)]
        if out:
            yield pd.DataFrame(out, columns=[_GROUP, _RESULT, _KIND])

    def close(self) -> None:
        pass
