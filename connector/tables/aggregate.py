"""aggregate_changelog: COUNT, SUM, AVG, MIN and MAX per group over a table's full changelog, retracting as Flink's
GroupAggregate does (COUNT_RETRACT, SUM_RETRACT, ...): an update takes its before-image out and its after-image in, a
delete takes the row out, and a group that empties is deleted.

One stateful operator does every function, in one pass: Spark's own streaming aggregation (update mode) could count
and sum signed rows, but it cannot delete a group that empties (it shows a group of count 0 for ever), and MIN / MAX
need the group's values. Per group the state holds the count, each function's running sum and non-null count, and,
for MIN / MAX, how many rows hold each value (tables/extremes.py), so a retracted minimum is replaced by the next
one. A micro-batch's changes of a group give one result: `insert` for a new group, `update_preimage` and
`update_postimage` when a result changed (nothing when none did), `delete` (the last result) when the group empties.
The output is a changelog the upsert-kafka writer takes as it is (append mode).

Values cross Python in forms it holds exactly (a struct's fields: None stays apart from NaN; decimals as text,
timestamps as microseconds, dates as days), and the results go back as JSON text that Spark's from_json reads.
"""

from __future__ import annotations

import decimal
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
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
from .extremes import Extremes
from .rows import as_text, from_text, require_columns, require_rocksdb

HELPER = "aggregate_changelog"
_FUNCTIONS = ("count", "sum", "avg", "min", "max")
_CALL = re.compile(r"^\s*(\w+)\s*\(\s*(\*|`[^`]+`|[^\s()`]+)\s*\)\s*$")
_GROUP, _SIGN, _VALUES, _RESULT, _KIND = "uk_group", "uk_sign", "uk_values", "uk_result", "uk_kind"
_MAX_LONG = 2**63 - 1
_COMING_IN = list(kind_spellings(ChangeKind.INSERT, ChangeKind.UPDATE_AFTER))
_GOING_OUT = list(kind_spellings(ChangeKind.DELETE, ChangeKind.UPDATE_BEFORE))
_DECIMALS = decimal.Context(prec=80)
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

    inputs = [s for s in specs if s.column is not None]
    prepared = changelog.select(
        *[F.col(g).alias(f"uk_key{i}") for i, g in enumerate(groups)],
        as_text(groups).alias(_GROUP),
        _sign(F.col(change)).alias(_SIGN),
        F.struct(*[_exact(F.col(s.column), s.given).alias(f"v{i}") for i, s in enumerate(inputs)] or [F.lit(0)]).alias(
            _VALUES
        ),
    )
    out = StructType(
        [StructField(_GROUP, StringType()), StructField(_RESULT, StringType()), StructField(_KIND, StringType())]
    )
    aggregated = prepared.groupBy(*[f"uk_key{i}" for i in range(len(groups))]).transformWithStateInPandas(
        statefulProcessor=_GroupAggregates(specs),
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


# How a value crosses into Python exactly and back: decimals as text, timestamps as microseconds, dates as days.
def _exact(column: Column, given: DataType) -> Column:
    if isinstance(given, DecimalType):
        return column.cast(StringType())
    if isinstance(given, (TimestampType, TimestampNTZType)):
        return F.unix_micros(column) if isinstance(given, TimestampType) else _NTZ_MICROS(column)
    if isinstance(given, DateType):
        return F.unix_date(column)
    return column


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
    """Each group's accumulators; a micro-batch's changes of the group in, one result change out."""

    def __init__(self, specs: list[_Aggregate]) -> None:
        self._specs = specs
        inputs = [s for s in specs if s.column is not None]
        self._slot = {s.name: f"v{i}" for i, s in enumerate(inputs)}
        self._decimal = {s.name: isinstance(s.given, DecimalType) for s in specs}
        self._order = {s.name: _decimal_order if self._decimal[s.name] else _order for s in specs}
        self._extreme_orders = {
            s.name: (s.function, self._order[s.name]) for s in specs if s.function in ("min", "max")
        }

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._acc = handle.getValueState("accumulators", "acc STRING")
        self._extremes = Extremes(handle, self._extreme_orders)

    def handleInputRows(
        self, key: tuple, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        group = None
        stored = self._acc.get()
        acc = json.loads(stored[0]) if stored is not None else None
        if acc is not None and "log" not in acc:
            raise RecordError(
                f"{HELPER}: the checkpoint holds an older aggregate_changelog's state (MIN / MAX values kept in "
                "another form), which this version cannot go on from: start the query from a new checkpoint"
            )
        before = self._results(acc)
        acc = acc or {"rows": 0, "of": {s.name: self._empty(s) for s in self._specs}, "log": Extremes.empty_log()}
        # MIN / MAX: the micro-batch's net change of each value's count, applied to the state once per value
        deltas: dict[str, dict[str, int]] = {name: {} for name in self._extreme_orders}
        for frame in rows:
            group = group or frame[_GROUP].iloc[0]
            for sign, values in zip(frame[_SIGN].tolist(), frame[_VALUES].tolist()):
                acc["rows"] += sign
                for s in self._specs:
                    self._apply(s, acc, sign, None if s.column is None else values[self._slot[s.name]], deltas)
        self._extremes.apply(acc["of"], acc["log"], deltas)
        if acc["rows"] < 0:
            raise RecordError(
                f"{HELPER}: group {group} has more rows taken out than put in: is the input a full changelog?"
            )
        after = self._results(acc) if acc["rows"] > 0 else None
        if after is None:
            self._acc.clear()
            self._extremes.clear()
        else:
            self._acc.update((json.dumps(acc),))
        out = []
        if before is None and after is not None:
            out = [(group, after, ChangeKind.INSERT.value)]
        elif before is not None and after is None:
            out = [(group, before, ChangeKind.DELETE.value)]
        elif before is not None and before != after:
            out = [(group, before, ChangeKind.UPDATE_BEFORE.value), (group, after, ChangeKind.UPDATE_AFTER.value)]
        if out:
            yield pd.DataFrame(out, columns=[_GROUP, _RESULT, _KIND])

    def _empty(self, s: _Aggregate) -> dict:
        if s.function in ("min", "max"):
            return Extremes.empty()  # its non-null count is its held values' (none: no best)
        return {"count": 0} if s.function == "count" else {"sum": "0" if self._decimal[s.name] else 0, "count": 0}

    def _apply(self, s: _Aggregate, acc: dict, sign: int, value: Any, deltas: dict[str, dict[str, int]]) -> None:
        state = acc["of"][s.name]
        if s.column is not None and value is None:
            return  # a null takes no part (COUNT(c), SUM, AVG, MIN, MAX)
        if s.function in ("min", "max"):
            text = json.dumps(value)
            deltas[s.name][text] = deltas[s.name].get(text, 0) + sign
            return
        state["count"] += sign
        if s.function in ("sum", "avg") and state["count"] == 0:
            state["sum"] = self._empty(s)["sum"]  # the group's last value went: no rounding residue stays behind
        elif s.function in ("sum", "avg"):
            if self._decimal[s.name]:
                total = _DECIMALS.add(decimal.Decimal(state["sum"]), sign * decimal.Decimal(value))
                state["sum"] = str(total)
            else:
                state["sum"] = state["sum"] + sign * value

    def _results(self, acc: dict | None) -> str | None:
        """The group's results as the JSON text from_json reads (None: no group)."""
        if acc is None or acc["rows"] <= 0:
            return None
        return json.dumps({s.name: self._result(s, acc) for s in self._specs}, allow_nan=True)

    def _result(self, s: _Aggregate, acc: dict) -> Any:
        state = acc["of"][s.name]
        if s.column is None:
            return acc["rows"]
        if s.function == "count":
            return state["count"]
        if s.function in ("min", "max"):
            return state["best"]  # None: no non-null value
        if state["count"] == 0:
            return None  # no non-null value: SUM, AVG are null
        if self._decimal[s.name]:
            total = decimal.Decimal(state["sum"])
            value = total if s.function == "sum" else _DECIMALS.divide(total, state["count"])
            quantum = decimal.Decimal(1).scaleb(-s.result.scale)
            fitted = value.quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=_DECIMALS)
            if len(fitted.as_tuple().digits) > s.result.precision:
                raise RecordError(f"{HELPER}: {s.name} = {fitted} does not fit {s.result.simpleString()}")
            return str(fitted)
        if s.function == "avg":
            return state["sum"] / state["count"]
        if isinstance(s.result, LongType) and not -_MAX_LONG - 1 <= state["sum"] <= _MAX_LONG:
            raise RecordError(f"{HELPER}: {s.name} = {state['sum']} is beyond BIGINT (Spark's SUM of integers)")
        return state["sum"]


def _order(value: Any) -> tuple:
    """Spark's order of values: NaN above every number; otherwise the value's own order."""
    if isinstance(value, float):
        return (math.isnan(value), 0.0 if math.isnan(value) else value)
    return (False, value)


def _decimal_order(value: str) -> tuple:
    return (False, decimal.Decimal(value))
