"""normalized_changelog: an upsert (or change-envelope) stream as the full changelog of its table, as Flink's
ChangelogNormalize gives it behind an upsert source.

Keyed state holds the last row of every key. A record of a new key is an `insert`; of a known key an
`update_preimage` (the last row) and an `update_postimage`; a delete (a tombstone, or a -D / -U envelope) of a
known key a `delete` carrying the whole last row; an update equal to the last row, and a delete of a key not
in the state, give nothing. With a state TTL (Flink's `table.exec.state.ttl`) a key's row is forgotten after that
long without a change, and, as in Flink, an equal update is then passed on as -U/+U (so that the state of the
operators after it does not expire early). Flink's rules: DeduplicateFunctionHelper.processLastRowOnChangelog.

The state lives in Spark's state store through its Python stateful operator (tables/operator_form.py:
`transformWithStateInPandas`, or the Row-based `transformWithState` when asked): it is checkpointed with each
micro-batch, so a restarted query goes on exactly where it stopped. Rows cross into Python as Spark's own JSON text
(tables/rows.py). Within a micro-batch, a key's records are applied in the order of `order_by` (the record's offset: a
key lives in one partition), since Spark's shuffle keeps no order.

Each key's last row is its own entry of a MapState (its order values and the text of its columns but the key's, which
the entry's key holds: the changes carry the key's text beside the row's), so a micro-batch reads and
writes the keys it touches and nothing else: its cost and the checkpoint's growth follow the changes, not the table
(a state entry is a row of its own in RocksDB). The entries are read and written many keys at a time
(tables/map_entries.py), and the operator is grouped by one of rows.GROUPS hash buckets of the key.
With a state TTL, Spark's TTL of each entry forgets a key idle that long. The grouping and the state variable are
the checkpoint's state layout: a checkpoint of another one is refused by Spark's own check when the query starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle, TimerValues
from pyspark.sql.types import IntegralType, LongType, StringType, StructField, StructType

from ..errors import OptionError, SchemaError
from ..kernel.change_kind import ChangeKind, kind_spellings
from ..options.kinds import Duration
from . import last_rows
from .map_entries import MapEntries
from .operator_form import Form, documented
from .rows import (
    as_long,
    as_text,
    from_long,
    from_text,
    require_columns,
    require_state_settings,
    require_text_safe,
    state_group,
)

HELPER = "normalized_changelog"
# Spark's Python stateful operator renames columns whose name starts with "__": these names are plain.
_ROW, _RETRACTS, _KIND, _KEY, _BUCKET = "uk_row", "uk_retracts", "uk_kind", "uk_key", "uk_bucket"
_VERSION, _LATE = "uk_version", "uk_late"
# The query progress's observedMetrics entry counting the records dropped for a version below their key's.
LATE_METRIC = "normalized_changelog_late_versions"
# Flink's rule: +I and +U (and an upsert) accumulate; -D and -U retract the key's row.
_RETRACTING = list(kind_spellings(ChangeKind.DELETE, ChangeKind.UPDATE_BEFORE))
_ACCUMULATING = list(kind_spellings(ChangeKind.INSERT, ChangeKind.UPDATE_AFTER, ChangeKind.UPSERT))


@documented
def normalized_changelog(
    changes: DataFrame,
    key: str | Sequence[str],
    *,
    order_by: str | Sequence[str] = "offset",
    state_ttl: str | None = None,
    change_column: str = "_change_type",
    version: str | None = None,
    operator_form: str = "pandas",
) -> DataFrame:
    """The full changelog of the table `changes` describes: the same columns, `change_column` now `insert`,
    `update_preimage`, `update_postimage` or `delete` (Spark's change data feed names; the upsert-kafka writer
    reads them), a delete carrying the key's last row.

    `key`: the primary key's columns. `order_by`: integer columns that order a key's records within a micro-batch
    (default: the record's offset, read with option `metadata.columns` = `offset`); they are not part of the
    comparison of a row with the last one. `state_ttl`: a duration ('1 h', '7 d'); unset, every key's last row is
    kept for ever. Needs the RocksDB state store provider (the error says how to set it).

    `version`: a column whose value orders a key's records instead of their arrival (integers, timestamps, dates,
    decimals of up to 18 digits): a record whose version is below the highest its key has seen is dropped (an equal
    one applies in `order_by` order), a delete's too, and a deleted key keeps its version in the state (with
    `state_ttl`, as long as a row), so an older version read after a delete resurrects nothing. A delete read from an
    upsert topic has no value columns: take the version from the record's timestamp or a header (`metadata.columns`),
    which a tombstone carries too; a record without a version fails the query. The records dropped are counted in
    the query's progress (`observedMetrics`, under LATE_METRIC)."""
    keys = require_columns(changes, [key] if isinstance(key, str) else list(key), "key column", HELPER)
    order = require_columns(changes, [order_by] if isinstance(order_by, str) else list(order_by), "order_by", HELPER)
    (change,) = require_columns(changes, [change_column], "change column", HELPER)
    if not keys:
        raise SchemaError(f"{HELPER}: give the primary key's columns (key=...)")
    for name in order:
        if not isinstance(changes.schema[name].dataType, IntegralType):
            raise SchemaError(
                f"{HELPER}: order_by column '{name}' is {changes.schema[name].dataType.simpleString()}; it orders a "
                "key's records, so it must be an integer column (the record's offset: option metadata.columns = "
                "'offset')"
            )
    ttl_ms = _ttl_ms(state_ttl)
    require_state_settings(changes.sparkSession, HELPER)
    compared = [c for c in changes.columns if c != change and c not in order]
    versions: list[Column] = []
    carried = None  # the version column, when the row carries it: beside the row's text, as its BIGINT
    if version is not None:
        carried, as_number = _version(changes, version)
        versions = [as_number.alias(_VERSION)]
        carried = carried if carried in compared else None
        compared = [c for c in compared if c != carried]
    require_text_safe(changes, list(dict.fromkeys([*keys, *compared])), HELPER)
    held = [c for c in compared if c not in keys]  # a row's key is its entry's key: its text holds the others

    prepared = changes.select(
        state_group(keys).alias(_BUCKET),
        as_text(keys).alias(_KEY),
        (as_text(held) if held else F.lit("{}")).alias(_ROW),
        _retracts(F.col(change), change).alias(_RETRACTS),
        *[F.col(o).cast(LongType()).alias(o) for o in order],
        *versions,
    )
    orders = [StructField(o, LongType()) for o in order] + [StructField(_VERSION, LongType())] * bool(versions)
    out = StructType([StructField(_KEY, StringType()), StructField(_ROW, StringType()), *orders,
                      StructField(_KIND, StringType())])  # fmt: skip
    form = Form.of(prepared, _BUCKET, operator_form, HELPER)
    processor = _LastRowPerKey(order, ttl_ms, version is not None, form)
    normalized = form.run(prepared, processor, out, "ProcessingTime" if ttl_ms else "None")
    parsed = [from_text(F.col(_KEY), changes.select(*keys).schema).alias("uk_k")]
    parsed += [from_text(F.col(_ROW), changes.select(*held).schema).alias("uk_r")] if held else []
    typed = {c: changes.schema[c].dataType for c in order}
    columns = {c: F.col(f"uk_r.{c}") for c in held} | {c: F.col(f"uk_k.{c}") for c in keys}
    columns |= {c: F.col(c).cast(typed[c]) for c in order}
    columns[change] = F.col(_KIND)
    if carried is not None:
        columns[carried] = from_long(F.col(_VERSION), changes.schema[carried].dataType)
    if version is not None:  # the dropped records' counts, one row a state group, into the query's progress
        late = F.when(F.col(_KIND) == _LATE, F.col(_ROW).cast(LongType())).otherwise(F.lit(0))
        normalized = normalized.observe(LATE_METRIC, F.sum(late).alias("records")).where(F.col(_KIND) != _LATE)
    kept = [_VERSION] if version is not None else []
    return normalized.select(*parsed, *order, *kept, _KIND).select(*[columns[c].alias(c) for c in changes.columns])


def _version(changes: DataFrame, name: str) -> tuple[str, Column]:
    """The version column's name, and its value as BIGINT ordered as the column's values are (rows.as_long); a record
    without one fails the query."""
    (column,) = require_columns(changes, [name], "version column", HELPER)
    given, value = changes.schema[column].dataType, F.col(column)
    as_number = as_long(value, given)
    if as_number is None:
        raise SchemaError(
            f"{HELPER}: version column '{column}' is {given.simpleString()}; a version is an integer, timestamp, "
            "date or decimal of up to 18 digits (cast it to one)"
        )
    missing = (
        f"{HELPER}: a record without a version in column '{column}' (a delete read from an upsert topic carries only "
        "its key: take the version from the record's timestamp or a header, with option metadata.columns)"
    )
    return column, F.when(value.isNotNull(), as_number).otherwise(F.raise_error(F.lit(missing)))


def _retracts(kind: Column, name: str) -> Column:
    """True for a change that removes the key's row; an unknown kind fails the query, naming the kinds."""
    lower = F.lower(kind)
    known = ", ".join(k.value for k in ChangeKind)
    return (
        F.when(lower.isin(_RETRACTING), F.lit(True))
        .when(lower.isin(_ACCUMULATING) | kind.isNull(), F.lit(False))
        .otherwise(F.raise_error(F.concat(F.lit(f"{HELPER}: column '{name}' has the change kind '"), kind, F.lit(
            f"'; use {known} (or Flink's +I, -U, +U, -D)"))))
    )  # fmt: skip


def _ttl_ms(state_ttl: str | None) -> int | None:
    if state_ttl is None:
        return None
    try:
        return max(1, round(Duration().parse(str(state_ttl)) * 1000))
    except ValueError as e:
        raise OptionError(f"{HELPER}: state_ttl {e}") from None


class _LastRowPerKey(StatefulProcessor):
    """Flink's processLastRowOnChangelog per key, applied to a state group's records of a micro-batch as columns
    (tables/last_rows.py): the rows of the keys they touch read, the changed ones written back."""

    def __init__(self, order: list[str], ttl_ms: int | None, versioned: bool, form: Form) -> None:
        self._form = form
        self._order = order
        self._ttl_ms = ttl_ms
        self._versioned = versioned
        self._schema = last_rows.held_schema(order, versioned)
        # a key's entry (its held row but the key): the version, the order values, then the row's text. Earlier layouts
        # had the text first (and the key's columns in it), or the version last (and in the text): Spark refuses
        # their checkpoints by the value's types, since their texts would never equal a record's now
        self._values = [last_rows.VERSION] * versioned + order + [last_rows.ROW]

    def init(self, handle: StatefulProcessorHandle) -> None:
        value = StructType([StructField(n, StringType() if n == last_rows.ROW else LongType()) for n in self._values])
        # the name every earlier layout used (a ValueState, or grouped by another key): Spark refuses their checkpoints
        self._rows = MapEntries(handle, "last_row", last_rows.KEY, value, self._ttl_ms)

    def handleInputRows(self, key: tuple[object, ...], rows: Iterator[Any], timerValues: TimerValues) -> Iterator[Any]:
        given = self._form.table(rows)
        records = last_rows.Records(
            given[_KEY].combine_chunks(),
            given[_ROW].combine_chunks(),
            given[_RETRACTS].to_numpy(),
            [given[o].to_numpy() for o in self._order],
            given[_VERSION].to_numpy() if self._versioned else None,
        )
        apply = last_rows.apply_versioned if self._versioned else last_rows.apply
        changes = apply(self._held(records.keys), records, self._order, self._ttl_ms is not None)
        self._write(changes.written, changes.removed)
        versions = {} if changes.versions is None else {_VERSION: changes.versions}
        if len(changes.kinds):
            out = {_KEY: changes.keys, _ROW: changes.rows} | dict(zip(self._order, changes.orders)) | versions
            yield from self._form.emit(out | {_KIND: changes.kinds})
        if changes.late:
            zeros = {o: [0] for o in [*self._order, *versions]}
            yield from self._form.emit({_KEY: [None], _ROW: [str(changes.late)]} | zeros | {_KIND: [_LATE]})

    def _held(self, keys: pa.Array) -> pa.Table:
        """The state's rows of these keys (a key without one absent)."""
        distinct = pc.unique(keys).to_pylist()
        found = [(k, *v) for k, v in zip(distinct, self._rows.held(distinct)) if v is not None]
        if not found:
            return self._schema.empty_table()
        columns = dict(zip([last_rows.KEY, *self._values], zip(*found)))
        return pa.Table.from_arrays([pa.array(columns[f.name], f.type) for f in self._schema], schema=self._schema)

    def _write(self, written: pa.Table, removed: pa.Array) -> None:
        values = list(zip(*[written[c].to_pylist() for c in self._values]))
        self._rows.write(written[last_rows.KEY].to_pylist(), values, removed.to_pylist())

    def close(self) -> None:
        pass
