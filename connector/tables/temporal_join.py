"""temporal_join: each row of a stream enriched with the row a table (an upsert topic's changelog) held for its key at
the row's event time, as Flink's `JOIN table FOR SYSTEM_TIME AS OF stream.time` (TemporalRowTimeJoinOperator), or,
without a time, with the table's latest row (a lookup of the current state; Flink refuses that join on a versioned
table: "Processing-time temporal join is not supported yet.").

Spark's Python stateful operator takes one input on pyspark 4.0, so both sides go in as one union, tagged by side and
grouped by the join key. Per key the state holds the table's versions (a map: version time -> row, a delete being a
version without a row) and the stream rows waiting for the watermark. Flink's rules, event time:
- a stream row waits until the watermark (Spark's: the least of both inputs' watermarks) reaches its time, then it is
  joined with the version of the greatest time not after its own; a deleted version, or none, is no match (LEFT: the
  row with nulls; inner: nothing);
- a table change is a version at its row's time; a later change at the same time replaces it (Flink's MapState.put),
  an `update_preimage` is ignored (Flink's plan asks ChangelogNormalize for none), a delete is a version without row;
- once the watermark passed, the versions before the last one not after it are dropped (no waiting row can need them);
- a late stream row (its time already behind the watermark) is not dropped: Flink buffers it and joins it at the next
  watermark with the versions still held; here it is joined at once with the versions still held.
Rows cross Python as Spark's own JSON text (tables/rows.py).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from operator import itemgetter

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import IntegralType, LongType, StringType, StructField, StructType, TimestampType

from ..errors import SchemaError
from ..formats.change_kind import ChangeKind, UpsertAction, spellings
from .rows import as_text, from_text, require_columns, require_rocksdb, require_text_safe

HELPER = "temporal_join"
# Spark's Python stateful operator renames columns whose name starts with "__": these names are plain.
_SIDE, _TIME, _ROW, _ACTION, _LEFT, _RIGHT = "uk_side", "uk_time", "uk_row", "uk_action", "uk_left", "uk_right"
_STREAM, _TABLE = 0, 1
_VERSION, _DELETE, _SKIP = 0, 1, 2  # what a table change does to the key's versions
_JOINS = ("left", "inner")


def temporal_join(
    stream: DataFrame,
    table: DataFrame,
    on: str | Sequence[str],
    *,
    stream_time: str | None,
    table_time: str | None = None,
    how: str = "left",
    order_by: str | Sequence[str] = "offset",
    change_column: str = "_change_type",
) -> DataFrame:
    """`stream` joined with the row `table` held for the same `on` columns at each stream row's `stream_time`:
    Flink's `stream [LEFT] JOIN table FOR SYSTEM_TIME AS OF stream.stream_time ON stream.k = table.k`.

    `table`: a changelog (this source's stream read of an upsert topic, or normalized_changelog's) whose `on` columns
    are its primary key; a version's time is its `table_time` (e.g. the record's timestamp: `metadata.columns`). Both
    DataFrames need a watermark (withWatermark) on their time column. `how`: 'left' (a row without a version gets
    nulls) or 'inner'. `order_by`: integer columns ordering a key's table changes within a micro-batch (the record's
    offset). Columns: the stream's, then the table's but its `on`, order and change columns.

    `stream_time=None`: the latest-value join: each stream row, as it arrives, gets the table's latest row for its
    key (a micro-batch's table changes apply before its stream rows); no watermark needed. Needs the RocksDB state
    store provider (the error says how to set it)."""
    keys = require_columns(stream, [on] if isinstance(on, str) else list(on), "join column (stream)", HELPER)
    table_keys = require_columns(table, keys, "join column (table)", HELPER)
    if not keys:
        raise SchemaError(f"{HELPER}: give the join columns (on=...), the table's primary key")
    if how not in _JOINS:
        raise SchemaError(f"{HELPER}: how={how!r}; use 'left' or 'inner' (Flink's temporal joins)")
    for k, t in zip(keys, table_keys):
        if stream.schema[k].dataType != table.schema[t].dataType:
            given = f"{stream.schema[k].dataType.simpleString()} and {table.schema[t].dataType.simpleString()}"
            raise SchemaError(f"{HELPER}: join column '{k}' is {given} on the two sides; cast one to the other's type")
    event_time = stream_time is not None
    order = require_columns(table, [order_by] if isinstance(order_by, str) else list(order_by), "order_by", HELPER)
    (change,) = require_columns(table, [change_column], "change column", HELPER)
    for name in order:
        if not isinstance(table.schema[name].dataType, IntegralType):
            raise SchemaError(f"{HELPER}: order_by column '{name}' must be an integer column (the record's offset)")
    times = (None, None)
    if event_time:
        if table_time is None:
            raise SchemaError(f"{HELPER}: give table_time, the column holding each table version's time")
        times = (
            _time_column(stream, stream_time, "stream_time"),
            _time_column(table, table_time, "table_time"),
        )
    carried = [c for c in table.columns if c not in (*table_keys, *order, change)]
    clash = {c.lower() for c in carried} & {c.lower() for c in stream.columns}
    if clash:
        raise SchemaError(
            f"{HELPER}: columns {sorted(clash)} are on both sides: rename one side's (the output holds both)"
        )
    require_rocksdb(stream.sparkSession, HELPER)
    require_text_safe(stream, stream.columns, HELPER)
    require_text_safe(table, carried, HELPER)

    key_columns = [f"uk_key{i}" for i in range(len(keys))]
    left = stream.select(
        *[F.col(k).alias(n) for k, n in zip(keys, key_columns)],
        F.lit(_STREAM).alias(_SIDE),
        _micros(times[0]).alias(_TIME),
        as_text(stream.columns).alias(_ROW),
        F.lit(_VERSION).alias(_ACTION),
        *[F.lit(None).cast(LongType()).alias(f"uk_order{i}") for i in range(len(order))],
    )
    right = table.select(
        *[F.col(k).alias(n) for k, n in zip(table_keys, key_columns)],
        F.lit(_TABLE).alias(_SIDE),
        _micros(times[1]).alias(_TIME),
        as_text(carried).alias(_ROW),
        _action(F.col(change), change).alias(_ACTION),
        *[F.col(o).cast(LongType()).alias(f"uk_order{i}") for i, o in enumerate(order)],
    )
    out = StructType([StructField(_LEFT, StringType()), StructField(_RIGHT, StringType())])
    joined = (
        left.unionByName(right)
        .groupBy(*key_columns)
        .transformWithStateInPandas(
            statefulProcessor=_AsOfJoin(len(order), how == "left", event_time),
            outputStructType=out,
            outputMode="Append",
            timeMode="EventTime" if event_time else "None",
        )
    )
    right_schema = table.select(*carried).schema
    return joined.select(
        from_text(F.col(_LEFT), stream.schema).alias("uk_l"), from_text(F.col(_RIGHT), right_schema).alias("uk_r")
    ).select(*[F.col(f"uk_l.{c}").alias(c) for c in stream.columns], *[F.col(f"uk_r.{c}").alias(c) for c in carried])


def _time_column(df: DataFrame, name: str, role: str) -> str:
    (column,) = require_columns(df, [name], role, HELPER)
    given = df.schema[column].dataType
    if not isinstance(given, TimestampType):
        raise SchemaError(
            f"{HELPER}: {role} '{column}' is {given.simpleString()}; it must be a TIMESTAMP with a watermark "
            "(withWatermark; Spark watermarks no other type)"
        )
    if not _watermarked(df):
        raise SchemaError(
            f"{HELPER}: the {role.split('_')[0]} side has no watermark: add .withWatermark('{column}', '<delay>') "
            "(a stream row waits until both sides' watermarks pass its time)"
        )
    return column


def _watermarked(df: DataFrame) -> bool:
    """Whether the plan has a watermark (a Spark Connect DataFrame shows no plan here: taken as watermarked)."""
    try:
        return "EventTimeWatermark" in df._jdf.queryExecution().logical().toString()
    except Exception:  # no JVM plan to read (Spark Connect)
        return True


def _micros(column: str | None) -> Column:
    if column is None:
        return F.lit(None).cast(LongType())
    return F.when(F.col(column).isNotNull(), F.unix_micros(F.col(column))).otherwise(
        F.raise_error(F.lit(f"{HELPER}: a row without a time in column '{column}' (a delete read from an upsert "
                            "topic carries only its key: take the time from the record's timestamp, or put "
                            "normalized_changelog(...) before the join)"))
    )  # fmt: skip


def _action(kind: Column, name: str) -> Column:
    lower = F.lower(kind)
    known = ", ".join(k.value for k in ChangeKind)
    return (
        F.when(lower.isin(list(spellings(UpsertAction.VALUE))) | kind.isNull(), F.lit(_VERSION))
        .when(lower.isin(list(spellings(UpsertAction.TOMBSTONE))), F.lit(_DELETE))
        .when(lower.isin(list(spellings(UpsertAction.SKIP))), F.lit(_SKIP))
        .otherwise(F.raise_error(F.concat(F.lit(f"{HELPER}: column '{name}' has the change kind '"), kind, F.lit(
            f"'; use {known} (or Flink's +I, -U, +U, -D)"))))
    )  # fmt: skip


class _AsOfJoin(StatefulProcessor):
    """Per join key: the table's versions and the stream rows waiting for the watermark (event time), or the latest
    row (stream_time None)."""

    def __init__(self, orders: int, outer: bool, event_time: bool) -> None:
        self._orders = [f"uk_order{i}" for i in range(orders)]
        self._outer = outer
        self._event_time = event_time

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        # time (micros) -> the table's row at that time; a null row: deleted from that time on
        self._versions = handle.getMapState("versions", "time BIGINT", "row STRING")
        # stream rows waiting for the watermark: (time, arrival number, row)
        self._waiting = handle.getListState("waiting", "time BIGINT, seq BIGINT, row STRING")
        self._arrivals = handle.getValueState("arrivals", "n BIGINT")

    def handleInputRows(
        self, key: tuple, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        frames = list(rows)
        records = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        comparable = not any(k is None for k in key)  # a null never equals anything: no version to join
        watermark_ms = timerValues.getCurrentWatermarkInMs()
        watermark = watermark_ms * 1000
        changes = records[records[_SIDE] == _TABLE]
        if comparable and len(changes):
            if len(changes) > 1:
                changes = changes.sort_values(self._orders, kind="stable")
            for time, row, action in zip(changes[_TIME].tolist(), changes[_ROW].tolist(), changes[_ACTION].tolist()):
                if action == _SKIP:
                    continue
                time = int(time) if self._event_time else 0  # latest value: one version
                self._versions.updateValue((time,), (row if action == _VERSION else None,))
                if self._event_time and time > watermark:
                    self._handle.registerTimer(_timer_ms(time))  # the versions are cleaned up behind the watermark
        arrived = records[records[_SIDE] == _STREAM]
        if not self._event_time:
            latest = self._versions.getValue((0,)) if comparable else None
            row = latest[0] if latest is not None else None
            yield from self._joined([(r, row) for r in arrived[_ROW].tolist()])
            return
        if len(arrived):
            arrived = arrived.sort_values(_TIME, kind="stable")
            held = self._arrivals.get()
            first = held[0] if held is not None else 0
            new = [(int(t), first + i, r) for i, (t, r) in enumerate(zip(arrived[_TIME].tolist(), arrived[_ROW]))]
            self._waiting.appendList(new)
            self._arrivals.update((first + len(new),))
            for time in {t for t, _, _ in new if t > watermark}:  # a late row is joined now
                self._handle.registerTimer(_timer_ms(time))
        yield from self._ready(comparable, watermark_ms)

    def handleExpiredTimer(
        self, key: tuple, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        yield from self._ready(not any(k is None for k in key), timerValues.getCurrentWatermarkInMs())

    def _ready(self, comparable: bool, watermark_ms: int) -> Iterator[pd.DataFrame]:
        """Flink's emitResultAndCleanUpState: the waiting rows the watermark passed, joined; old versions dropped."""
        watermark = watermark_ms * 1000
        waiting = list(self._waiting.get())
        # in arrival order, as Flink: by micro-batch, and by time within one (Spark's shuffle keeps no order)
        due = sorted((w for w in waiting if w[0] <= watermark), key=lambda w: w[1])
        versions = sorted((k[0], v[0]) for k, v in self._versions.iterator()) if comparable else []
        if due:
            rest = [w for w in waiting if w[0] > watermark]
            if rest:
                self._waiting.put(rest)
            else:
                self._waiting.clear()
            yield from self._joined([(row, _as_of(versions, time)) for time, _, row in due])
        # keep the last version not after the watermark and every later one
        passed = [t for t, _ in versions if t <= watermark]
        for time in passed[:-1]:
            self._versions.removeKey((time,))

    def _joined(self, pairs: list[tuple]) -> Iterator[pd.DataFrame]:
        out = [(left, right) for left, right in pairs if right is not None or self._outer]
        if out:
            yield pd.DataFrame(out, columns=[_LEFT, _RIGHT])

    def close(self) -> None:
        pass


def _as_of(versions: list[tuple], time: int) -> str | None:
    """The row of the version of the greatest time not after `time` (None: no version, or a delete); `versions` are
    sorted by time."""
    i = bisect_right(versions, time, key=itemgetter(0))
    return versions[i - 1][1] if i else None


def _timer_ms(micros: int) -> int:
    return -(-micros // 1000)  # a timer in milliseconds not before the time
