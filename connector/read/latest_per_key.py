"""Executor side: the latest record per key of a partition range, in bounded memory (table mode, a compacted
changelog, overwrite's scan of the live keys).

The state is Arrow, never a Python dict: a binary `key` column, `value` (null: a tombstone), `offset` and any
other columns the caller carries (record metadata). Each fetched chunk is reduced to its latest record per key
bytes, then folded into the state, whose chunks drop the keys the newer rows overwrite; so memory follows the
distinct keys, not the records, and an overwritten value is held only until the next fold.

When the state outgrows a quarter of the budget (the rest is working room for folds, spills and merges) it is
spilled: its keys are identified (below), it is sorted by identity and written as an Arrow IPC run file under
Spark's local dir (SPARK_LOCAL_DIRS) or the system temp dir. At the end the key-sorted runs are merged k ways
(latest offset wins per identity), at most FAN_IN at a time, with a bounded batch of each in memory. A
compacted changelog must come out in offset order: its survivors are sorted by offset externally the same way
(runs sorted by offset, merged).

Allocations go to jemalloc (else the system allocator) where pyarrow takes a pool: pyarrow's default, mimalloc,
was measured to keep tens of MB of freed buffers resident in a worker.

Identity: `identify(table)` (record_decoder.py: decode the keys, Arrow-encode the decoded columns canonically with
`key_identity`) adds the column `ident`, so that two encodings of one logical key (JSON with other spacing) are
one key, in memory and across runs alike. Without it the key bytes are the identity (overwrite, which
compares keys as bytes as Kafka's compaction does).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from .fetch import Records

log = logging.getLogger("upsert_kafka")

KEY, VALUE, OFFSET, IDENT = "key", "value", "offset", "ident"
VERSION = "version"  # int64, present when a key's row is its record of the highest version (scan.upsert.version)
META_PREFIX = "meta:"
# The Arrow type of each per-record metadata kind the fetch collects (fetch._META_READERS).
# The `header-list` metadata: the record's headers in order, a repeated key kept each time.
HEADER_LIST = pa.list_(pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())]))
_META_TYPES = {
    "timestamp": pa.int64(),
    "timestamp-type": pa.string(),
    "headers": pa.map_(pa.string(), pa.binary()),
    "header-list": HEADER_LIST,
    "leader-epoch": pa.int32(),
}
FAN_IN = 16  # runs merged at once; more are merged in rounds
_COMPRESSION = "lz4" if pa.Codec.is_available("lz4") else None
_MIN_FOLD_BYTES = 1 << 20
_MIN_BATCH_BYTES = 64 << 10  # a run batch at least: a tiny budget must not make the merge go row by row


def _state_pool() -> pa.MemoryPool:
    """The allocator of the state: jemalloc (else the system's), not pyarrow's default mimalloc, which was measured
    to keep tens of MB of the folds' and spills' freed buffers in a worker's resident memory."""
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.system_memory_pool()


MEMORY_POOL = _state_pool()


def records_table(records: Records) -> pa.Table:
    """Fetched records (non-null keys) as the reducer's columns."""
    arrays = [
        pa.array(records.keys, pa.binary(), memory_pool=MEMORY_POOL),
        pa.array(records.values, pa.binary(), memory_pool=MEMORY_POOL),
        pa.array(records.offsets, pa.int64(), memory_pool=MEMORY_POOL),
    ]
    names = [KEY, VALUE, OFFSET]
    for kind, values in records.meta.items():
        arrays.append(pa.array(values, _META_TYPES[kind], memory_pool=MEMORY_POOL))
        names.append(META_PREFIX + kind)
    return pa.Table.from_arrays(arrays, names=names)


def table_records(table: pa.Table) -> Records:
    """The values, offsets and metadata of reduced rows, as the decode step takes them (keys are decoded)."""
    meta = {c[len(META_PREFIX) :]: table[c].to_pylist() for c in table.column_names if c.startswith(META_PREFIX)}
    return Records([None] * table.num_rows, table[VALUE].to_pylist(), table[OFFSET].to_pylist(), meta)


def key_identity(keys: pa.RecordBatch) -> pa.Array:
    """One binary value per row that equals another row's exactly when all the decoded key columns are equal:
    each column as text (nested types by their Python repr), length-prefixed, `N` for null, joined."""
    parts = []
    for column in keys.columns:
        text = _as_binary(column)
        length = pc.cast(pc.cast(pc.binary_length(text), pa.string()), pa.binary())
        prefixed = pc.binary_join_element_wise(length, text, b":")
        parts.append(pc.if_else(pc.is_null(column), pa.scalar(b"N", pa.binary()), prefixed))
    if not parts:  # no key column at all: every key is the same
        return pa.repeat(pa.scalar(b"", pa.binary()), keys.num_rows)
    return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, b"|")


def _as_binary(column: pa.Array) -> pa.Array:
    t = column.type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        return pc.cast(column, pa.binary())
    if not pa.types.is_nested(t):
        try:
            return pc.cast(pc.cast(column, pa.string()), pa.binary())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            pass
    return pa.array([None if v is None else repr(v).encode() for v in column.to_pylist()], pa.binary())


def latest(table: pa.Table, by: str) -> pa.Table:
    """The row with the highest offset of each distinct `by` (offsets are unique within a partition), in `by`
    order; with a VERSION column, of the highest version and then offset. By sorting, not Acero's group_by: its hash
    tables come from pyarrow's default allocator, whose freed memory was measured to stay resident."""
    if table.num_rows < 2:
        return table
    newest = [(VERSION, "descending")] if VERSION in table.column_names else []
    order = pc.sort_indices(table, [(by, "ascending"), *newest, (OFFSET, "descending")], memory_pool=MEMORY_POOL)
    values = pc.take(table[by], order, memory_pool=MEMORY_POOL)
    values = values.combine_chunks(memory_pool=MEMORY_POOL) if isinstance(values, pa.ChunkedArray) else values
    n = len(values)
    # The first row of each run of equal values (nulls never occur: keys and identities are not null).
    first = pc.not_equal(values.slice(1), values.slice(0, n - 1), memory_pool=MEMORY_POOL)
    if pc.all(first).as_py():
        return table
    keep = pc.filter(order, pa.concat_arrays([pa.array([True]), first]), memory_pool=MEMORY_POOL)
    return pc.take(table, keep, memory_pool=MEMORY_POOL)


def spill_root() -> str | None:
    """Spark's local dir for this worker (Spark sets SPARK_LOCAL_DIRS for Python workers), else the system's."""
    dirs = [d for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(",") if d and os.path.isdir(d)]
    return dirs[0] if dirs else None


class LatestPerKey:
    """Feed `add` tables (key, value, offset, ...; rows in offset order, keys not null), then iterate `results`
    once; `close` removes the spill files (results does it when run to its end)."""

    def __init__(self, budget: int, identify: Callable[[pa.Table], pa.Table] | None = None) -> None:
        self.budget = budget
        self.identify = identify
        self.by = IDENT if identify is not None else KEY
        self._base: list[pa.Table] = []  # chunks of the state; no key in two of them
        self._base_bytes = 0
        self._pending: list[pa.Table] = []  # chunks reduced each on its own, not yet folded into the base
        self._pending_bytes = 0
        self._runs: list[Path] = []  # the state's spills, each sorted by identity
        self._dir: str | None = None
        self._files = 0
        self.runs = 0  # run files written (spills and merge rounds)
        self.spilled_bytes = 0

    @property
    def spilled(self) -> bool:
        return self.runs > 0

    def add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        chunk = latest(table, KEY)
        self._pending.append(chunk)
        self._pending_bytes += chunk.nbytes
        # The state (base and pending chunks) stays under a third of the budget: a fold copies the pending rows
        # twice (at most a twelfth of the budget), a spill sorts and identifies the base, a merge holds FAN_IN
        # batches and a block; each of these peaks is within the budget with the state.
        fold_at = min(max(self._base_bytes // 4, min(self.budget // 16, _MIN_FOLD_BYTES)), self.budget // 12)
        if self._pending_bytes > fold_at or self._base_bytes + self._pending_bytes > self.budget // 3:
            self._fold()
            if self._base_bytes > self.budget // 4:
                self._spill(self._take_base())

    def results(self, keep_deletes: bool, rows: int) -> Iterator[pa.Table]:
        """The latest row per identity, in tables of at most `rows` rows: tombstones dropped, or (keep_deletes,
        a compacted changelog) kept and all rows in offset order."""
        try:
            self._fold()
            state = self._take_base()
            if state is None and not self._runs:
                return
            if not self._runs:
                assert state is not None
                state = self._identified(state)
                yield from _slices(state, rows, order=OFFSET if keep_deletes else None, live=not keep_deletes)
                return
            if state is not None:
                self._spill(state)
            runs, self._runs = self._runs, []
            survivors = self._merge(runs, self.by, dedupe=True, ordered=False)
            if keep_deletes:
                yield from self._offset_order(survivors, rows)
            else:
                for block in survivors:
                    yield from _slices(block, rows, live=True)
        finally:
            self.close()

    def close(self) -> None:
        self._base, self._pending, self._runs = [], [], []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # -- the state -------------------------------------------------------------------------------

    def _fold(self) -> None:
        """Fold the pending chunks into the base: base rows whose key a pending row overwrites are dropped,
        one base chunk at a time (so a fold copies at most one chunk besides the pending rows). With versions, a
        base row of a higher version than its key's pending row stays, and that pending row goes instead."""
        if not self._pending:
            return
        newer = latest(pa.concat_tables(self._pending), KEY).combine_chunks(memory_pool=MEMORY_POOL)
        self._pending, self._pending_bytes = [], 0
        keys = newer[KEY]
        versions = newer[VERSION] if VERSION in newer.column_names else None
        kept: list[pa.Table] = []
        beaten: list[pa.Array] = []  # pending rows a base row of a higher version holds back
        for chunk in self._base:
            if versions is None:
                overwritten = pc.is_in(chunk[KEY], value_set=keys, memory_pool=MEMORY_POOL)
            else:  # a later record of an older version does not overwrite (equal versions: the later record does)
                at = pc.index_in(chunk[KEY], value_set=keys, memory_pool=MEMORY_POOL)
                holds = pc.fill_null(pc.greater(chunk[VERSION], versions.take(at), memory_pool=MEMORY_POOL), False)
                found = at.filter(holds)
                beaten += found.chunks if isinstance(found, pa.ChunkedArray) else [found]
                overwritten = pc.and_(pc.is_valid(at), pc.invert(holds))
            stays = pc.invert(overwritten)
            kept.append(pc.filter(chunk, stays, memory_pool=MEMORY_POOL) if pc.any(overwritten).as_py() else chunk)
        if beaten:
            lost = pc.is_in(pa.array(range(newer.num_rows), pa.int32()), value_set=pa.concat_arrays(beaten))
            newer = pc.filter(newer, pc.invert(lost), memory_pool=MEMORY_POOL)
        kept.append(newer)
        self._base = _coalesced([c for c in kept if c.num_rows])
        self._base_bytes = sum(c.nbytes for c in self._base)

    def _spill(self, state: pa.Table) -> None:
        identified = self._identified(state)
        if identified.num_rows:  # none when no key decoded (ignore-parse-errors)
            self._runs.append(self._write_run(identified, self.by))

    def _take_base(self) -> pa.Table | None:
        base = pa.concat_tables(self._base) if self._base else None
        self._base, self._base_bytes = [], 0
        return base

    def _identified(self, state: pa.Table) -> pa.Table:
        """The state with its identity column, one row per identity (two encodings of a key: the later)."""
        if self.identify is None:
            return state
        return latest(self.identify(state), IDENT)

    # -- runs ------------------------------------------------------------------------------------

    def _write_run(self, table: pa.Table, by: str) -> Path:
        """Write `table` sorted by `by` as a run file."""
        order = pc.sort_indices(table, [(by, "ascending")], memory_pool=MEMORY_POOL)
        step = self._batch_rows(table)
        parts = (pc.take(table, order.slice(s, step), memory_pool=MEMORY_POOL) for s in range(0, table.num_rows, step))
        return self._write_sorted(parts, by)

    def _batch_rows(self, table: pa.Table) -> int:
        """Rows per run batch: about 1/(8 FAN_IN) of the budget, so that a merge of FAN_IN runs holds an eighth
        of the budget in batches (and as much again in the block it reduces)."""
        rows: int = table.num_rows * max(_MIN_BATCH_BYTES, self.budget // (8 * FAN_IN)) // max(1, table.nbytes)
        return max(1, rows)

    def _write_sorted(self, tables: Iterable[pa.Table], by: str) -> Path:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="upsert-kafka-table-", dir=spill_root())
        path = Path(self._dir) / f"run-{self._files:05d}-{by}.arrow"
        self._files += 1
        options = pa.ipc.IpcWriteOptions(compression=_COMPRESSION)
        writer = None
        with pa.OSFile(str(path), "wb") as sink:
            for table in tables:
                if writer is None:
                    writer = pa.ipc.new_stream(sink, table.schema, options=options)
                writer.write_table(table, max_chunksize=self._batch_rows(table))
            if writer is not None:
                writer.close()
        self.runs += 1
        self.spilled_bytes += path.stat().st_size
        return path

    def _merge(self, runs: list[Path], by: str, dedupe: bool, ordered: bool = True) -> Iterator[pa.Table]:
        """Blocks of the runs' rows (the latest row per `by` only, with dedupe), each block sorted by `by` and
        all before the next block's when `ordered`. At most FAN_IN runs are open at once: more are first merged
        into new runs, FAN_IN at a time."""
        while len(runs) > FAN_IN:
            head, runs = runs[:FAN_IN], runs[FAN_IN:]
            runs.append(self._write_sorted(self._merge_open(head, by, dedupe, ordered=True), by))
        yield from self._merge_open(runs, by, dedupe, ordered)

    def _merge_open(self, runs: list[Path], by: str, dedupe: bool, ordered: bool) -> Iterator[pa.Table]:
        readers: list[pa.ipc.RecordBatchStreamReader | None] = [
            pa.ipc.open_stream(pa.OSFile(str(p), "rb"), memory_pool=MEMORY_POOL) for p in runs
        ]
        try:
            current: list[pa.Table | None] = [None] * len(readers)
            while True:
                for i, reader in enumerate(readers):
                    table = current[i]
                    while reader is not None and (table is None or not table.num_rows):
                        try:
                            table = pa.Table.from_batches([reader.read_next_batch()])
                        except StopIteration:
                            table = readers[i] = reader = None
                    current[i] = table
                live = [(i, t) for i, t in enumerate(current) if t is not None and t.num_rows]
                if not live:
                    return
                # Every row at or below the smallest of the batches' last values is in memory now: each run is
                # sorted, so its later batches hold only greater values.
                bound = min(t[by][-1].as_py() for _, t in live)
                parts = []
                for i, t in live:
                    n = pc.sum(pc.less_equal(t[by], pa.scalar(bound, t.schema.field(by).type))).as_py() or 0
                    parts.append(t.slice(0, n))
                    current[i] = t.slice(n)
                block = pa.concat_tables(parts)
                if dedupe:
                    block = latest(block, by)
                yield _sorted(block, by) if ordered else block
        finally:
            for p in runs:
                p.unlink(missing_ok=True)

    def _offset_order(self, survivors: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
        """An external sort of the survivors by offset: up to a third of the budget sorted in memory per run."""
        held: list[pa.Table] = []
        held_bytes = 0
        runs: list[Path] = []
        for block in survivors:
            held.append(block)
            held_bytes += block.nbytes
            if held_bytes > self.budget // 3:
                runs.append(self._write_run(pa.concat_tables(held), OFFSET))
                held, held_bytes = [], 0
        if not runs:
            if held:
                yield from _slices(pa.concat_tables(held), rows, order=OFFSET)
            return
        if held:
            runs.append(self._write_run(pa.concat_tables(held), OFFSET))
        for block in self._merge(runs, OFFSET, dedupe=False):
            yield from _slices(block, rows)


def _coalesced(chunks: list[pa.Table]) -> list[pa.Table]:
    """Neighbouring small chunks combined, so that folds do not leave ever more, ever smaller chunks behind;
    each combination copies at most an eighth of the state."""
    if len(chunks) <= 16:
        return chunks
    target = sum(c.nbytes for c in chunks) // 8
    out, group, size = [], [], 0
    for chunk in chunks:
        group.append(chunk)
        size += chunk.nbytes
        if size >= target:
            out.append(pa.concat_tables(group).combine_chunks(memory_pool=MEMORY_POOL) if len(group) > 1 else group[0])
            group, size = [], 0
    if group:
        out.append(pa.concat_tables(group).combine_chunks(memory_pool=MEMORY_POOL))
    return out


def _sorted(table: pa.Table, by: str) -> pa.Table:
    return (
        pc.take(table, pc.sort_indices(table, [(by, "ascending")], memory_pool=MEMORY_POOL), memory_pool=MEMORY_POOL)
        if table.num_rows > 1
        else table
    )


def _slices(table: pa.Table, rows: int, order: str | None = None, live: bool = False) -> Iterator[pa.Table]:
    """`table` in tables of at most `rows` rows, sorted by `order`, only rows with a value if `live`: a slice
    at a time, so that no second copy of the whole table is made."""
    indices = pc.sort_indices(table, [(order, "ascending")], memory_pool=MEMORY_POOL) if order is not None else None
    for start in range(0, table.num_rows, rows):
        part = (
            table.slice(start, rows)
            if indices is None
            else pc.take(table, indices.slice(start, rows), memory_pool=MEMORY_POOL)
        )
        if live and part[VALUE].null_count:
            part = pc.filter(part, pc.is_valid(part[VALUE]), memory_pool=MEMORY_POOL)
        if part.num_rows:
            yield part.combine_chunks(memory_pool=MEMORY_POOL)
