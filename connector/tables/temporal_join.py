"""temporal_join: each row of a stream enriched with the row a table (an upsert topic's changelog) held for its key at
the row's event time, as Flink's `JOIN table FOR SYSTEM_TIME AS OF stream.time` (TemporalRowTimeJoinOperator), or,
without a time, with the table's latest row (a lookup of the current state; Flink refuses that join on a versioned
table: "Processing-time temporal join is not supported yet.").

Spark's Python stateful operator takes one input on pyspark 4.0, so both sides go in as one union, tagged by side and
grouped by one of rows.GROUPS hash buckets of the join key. Each key's versions (a delete being a version without a
row) are its own state entry, read and written only when a micro-batch (or a timer) touches the key, many at a time
(tables/map_entries.py); the stream rows waiting for the watermark, and a mark at each version's time the watermark
has not passed (when the key's older versions may go, Flink's timer per version), are one state value of the group,
which holds what is in flight, not what the table holds; one event-time timer per group, at the earliest of them.
The rows are joined as columns (tables/as_of_versions.py). Flink's rules, event time:
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

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import ArrayType, IntegralType, LongType, StringType, StructField, StructType, TimestampType

from ..errors import RecordError, SchemaError
from ..kernel.change_kind import ChangeKind, UpsertAction, spellings
from . import as_of_versions as versions
from .map_entries import MapEntries
from .operator_form import Form, documented
from .rows import as_text, from_text, require_columns, require_state_settings, require_text_safe, state_group

HELPER = "temporal_join"
# Spark's Python stateful operator renames columns whose name starts with "__": these names are plain.
_SIDE, _TIME, _ROW, _ACTION, _LEFT, _RIGHT = "uk_side", "uk_time", "uk_row", "uk_action", "uk_left", "uk_right"
_KEY, _BUCKET = "uk_key", "uk_bucket"
_STREAM, _TABLE = 0, 1
_VERSION, _DELETE, _SKIP = 0, 1, 2  # what a table change does to the key's versions
_JOINS = ("left", "inner")


@documented
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
    operator_form: str = "pandas",
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
    times: tuple[str | None, str | None] = (None, None)
    if stream_time is not None:  # event_time, with stream_time a str
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
    require_state_settings(stream.sparkSession, HELPER)
    require_text_safe(stream, stream.columns, HELPER)
    require_text_safe(table, carried, HELPER)

    def keyed(df: DataFrame, names: list[str]) -> list[Column]:
        """The bucket, and the key as text (null where a key column is null: such a key matches nothing)."""
        any_null = F.greatest(*[F.col(k).isNull() for k in names]) if len(names) > 1 else F.col(names[0]).isNull()
        text = F.when(any_null, F.lit(None).cast(StringType())).otherwise(as_text(names))
        return [state_group(names).alias(_BUCKET), text.alias(_KEY)]

    left = stream.select(
        *keyed(stream, keys),
        F.lit(_STREAM).alias(_SIDE),
        _micros(times[0]).alias(_TIME),
        as_text(stream.columns).alias(_ROW),
        F.lit(_VERSION).alias(_ACTION),
        *[F.lit(0).cast(LongType()).alias(f"uk_order{i}") for i in range(len(order))],
    )
    right = table.select(
        *keyed(table, table_keys),
        F.lit(_TABLE).alias(_SIDE),
        _micros(times[1]).alias(_TIME),
        as_text(carried).alias(_ROW),
        _action(F.col(change), change).alias(_ACTION),
        *[F.col(o).cast(LongType()).alias(f"uk_order{i}") for i, o in enumerate(order)],
    )
    out = StructType([StructField(_LEFT, StringType()), StructField(_RIGHT, StringType())])
    united = left.unionByName(right)
    form = Form.of(united, _BUCKET, operator_form, HELPER)
    processor = _AsOfJoin(len(order), how == "left", event_time, form)
    joined = form.run(united, processor, out, "EventTime" if event_time else "None")
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
        return F.lit(0).cast(LongType())  # the latest-value join: one version per key
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
    """Per state group: each key's versions its own entry, and the stream rows waiting for the watermark with the
    marks of versions it has not passed (event time); or each key's latest row (stream_time None)."""

    def __init__(self, orders: int, outer: bool, event_time: bool, form: Form) -> None:
        self._form = form
        self._orders = [f"uk_order{i}" for i in range(orders)]
        self._outer = outer
        self._event_time = event_time

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        entry = StructType([StructField(f.name, ArrayType(StringType() if f.name == "rows" else LongType()))
                            for f in versions.ENTRY])  # fmt: skip
        # the name every earlier layout used (a map per key, a value per bucket): Spark refuses their checkpoints
        self._versions = MapEntries(handle, "versions", "key", entry)
        self._in_flight = handle.getValueState("in_flight", "state BINARY")

    def handleInputRows(self, key: tuple[object, ...], rows: Iterator[Any], timerValues: TimerValues) -> Iterator[Any]:
        given = self._form.table(rows)
        side = given[_SIDE]
        changes, change = given.filter(pc.and_(pc.equal(side, _TABLE), pc.not_equal(given[_ACTION], _SKIP))), None
        if changes.num_rows:
            deleted = pc.equal(changes[_ACTION], _DELETE)
            change = versions.Changes(
                changes[_KEY].combine_chunks(),
                changes[_TIME].to_numpy(),
                pc.if_else(deleted, pa.scalar(None, pa.string()), changes[_ROW]).combine_chunks(),
                [changes[o].to_numpy() for o in self._orders],
            )
        arrived = given.filter(pc.equal(side, _STREAM))
        waiting = None
        if arrived.num_rows:
            keys, rows_ = arrived[_KEY].combine_chunks(), arrived[_ROW].combine_chunks()
            waiting = versions.Arrivals(keys, arrived[_TIME].to_numpy(), rows_)
        yield from self._step(change, waiting, timerValues)

    def handleExpiredTimer(
        self, key: tuple[object, ...], timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[Any]:
        yield from self._step(None, None, timerValues)

    def _step(
        self, changes: versions.Changes | None, arrived: versions.Arrivals | None, timerValues: TimerValues
    ) -> Iterator[Any]:
        """Flink's processElement and emitResultAndCleanUpState on the keys this call touches: the waiting rows the
        watermark passed joined, the versions no waiting row can need dropped."""
        watermark = timerValues.getCurrentWatermarkInMs() * 1000 if self._event_time else None
        in_flight, arrivals = self._load()
        keys = versions.needed(in_flight, changes, arrived, watermark)
        held = versions.versions_of(keys, self._versions.held(keys))
        done = versions.step(held, in_flight, arrivals, changes, arrived, watermark)
        self._versions.write(done.put, done.entries, done.removed)
        if done.in_flight.num_rows:
            self._in_flight.update((versions.encode(done.in_flight, done.arrivals),))
            self._handle.registerTimer(_timer_ms(pc.min(done.in_flight[versions.TIME]).as_py()))
        elif in_flight.num_rows:
            self._in_flight.clear()
        yield from self._joined(done.left, done.right)

    def _load(self) -> tuple[pa.Table, int]:
        stored = self._in_flight.get()
        try:
            return versions.decode(None if stored is None else stored[0])
        except versions.LayoutError:
            raise RecordError(
                f"{HELPER}: the checkpoint holds a state this version of {HELPER} cannot read: start the query from "
                "a new checkpoint"
            ) from None

    def _joined(self, left: pa.Array, right: pa.Array) -> Iterator[Any]:
        if not self._outer:
            matched = pc.is_valid(right)
            left, right = left.filter(matched), right.filter(matched)
        if len(left):
            yield from self._form.emit({_LEFT: left, _RIGHT: right})

    def close(self) -> None:
        pass


def _timer_ms(micros: int) -> int:
    return -(-micros // 1000)  # a timer in milliseconds not before the time
