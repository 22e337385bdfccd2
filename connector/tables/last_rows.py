"""The columnar core of normalized_changelog: a state bucket's last rows and a micro-batch's records of that bucket
in, the changes they make and the bucket's new last rows out, as Arrow and numpy kernels (no Python per record).

Flink's rules (DeduplicateFunctionHelper.processLastRowOnChangelog), per key, over its records in order: an
accumulating record (+I, +U, upsert) of a key without a row is an `insert`; of a key with a row an `update_preimage`
(the row held) and an `update_postimage`, unless it equals the row held and no state TTL is set (then nothing, and
the row held stays, its order values too); a retracting record (-D, -U, tombstone) of a key with a row is a `delete`
carrying the row held, of a key without one nothing.

Each record's "row held" is its key's state after the record before it. Sorted by (key, order), that is the
previous record's (a retract leaves none, an accumulate its row), or for a key's first record the bucket's. The one
chain is an equal row, which keeps the older row's order values: a forward fill of the last record that was not
such a repeat finds them.

A bucket's rows travel as one Arrow IPC stream (`encode` / `decode`): the state store holds one value per bucket,
read once and written once per micro-batch, instead of a state call per key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..kernel.change_kind import ChangeKind

KEY, ROW, TOUCHED = "key", "row", "touched_ms"
# The state's layout: a checkpoint's bucket written in another form is refused, never misread.
LAYOUT = b"last_rows/1"
_INSERT, _BEFORE, _AFTER, _DELETE = range(4)
_KIND_NAMES = np.array(
    [ChangeKind.INSERT.value, ChangeKind.UPDATE_BEFORE.value, ChangeKind.UPDATE_AFTER.value, ChangeKind.DELETE.value],
    dtype=object,
)


class LayoutError(ValueError):
    """A bucket's state in a form this version does not read."""


@dataclass(frozen=True)
class Records:
    """A bucket's records of one micro-batch: key and row texts, whether each retracts, and its order values."""

    keys: pa.Array  # string
    rows: pa.Array  # string
    retracts: np.ndarray  # bool
    orders: list[np.ndarray]  # int64 each


@dataclass(frozen=True)
class Changes:
    """What a micro-batch did to a bucket: the changes emitted, and the bucket's rows after it (None: unchanged)."""

    rows: pa.Array  # string: each change's row
    orders: list[np.ndarray]  # int64: each change's order values
    kinds: np.ndarray  # object: each change's kind
    held: pa.Table | None  # the bucket's new rows (empty: none left), None when nothing changed


def held_schema(order: list[str], ttl: bool) -> pa.Schema:
    fields = [pa.field(KEY, pa.string()), pa.field(ROW, pa.string()), *[pa.field(o, pa.int64()) for o in order]]
    return pa.schema(fields + ([pa.field(TOUCHED, pa.int64())] if ttl else []), metadata={b"layout": LAYOUT})


def encode(held: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, held.schema) as writer:
        writer.write_table(held)
    blob: bytes = sink.getvalue().to_pybytes()
    return blob


def decode(blob: bytes, schema: pa.Schema) -> pa.Table:
    held = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
    if (held.schema.metadata or {}).get(b"layout") != LAYOUT or not held.schema.equals(schema):
        raise LayoutError(f"a state bucket holds {held.schema}, expected {schema}")
    return held


def apply(held: pa.Table, records: Records, order: list[str], ttl_ms: int | None, now_ms: int) -> Changes:
    """Apply a bucket's records to its rows `held` (a table of `held_schema`)."""
    if ttl_ms is not None and held.num_rows:
        alive = pc.greater(pc.add(held[TOUCHED], ttl_ms), now_ms)  # Spark's TTL: expired once now >= touched + ttl
        held = held.filter(alive)
    n, h = len(records.keys), held.num_rows
    encoded = pc.dictionary_encode(records.keys)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    # a key's records together, in order (np.lexsort is stable: equal order values keep their arrival order)
    perm = np.lexsort((*reversed(records.orders), codes))
    code = codes[perm]
    first = np.ones(n, bool)
    first[1:] = code[1:] != code[:-1]
    last = np.ones(n, bool)
    last[:-1] = first[1:]
    rows = records.rows.take(pa.array(perm))
    orders = [o[perm] for o in records.orders]
    accumulates = ~records.retracts[perm]
    position = np.arange(n)

    # the row held before each record: the bucket's for a key's first record, else the record before
    in_held = pc.index_in(encoded.dictionary, value_set=held[KEY].combine_chunks()).fill_null(-1)
    in_held = in_held.to_numpy(zero_copy_only=False)
    slot = in_held[code]  # each record's key's row in `held`, -1: none
    had = np.where(first, slot >= 0, np.roll(accumulates, 1))
    both = pa.chunked_array([held[ROW].combine_chunks(), rows], pa.string()).combine_chunks()
    before = np.where(first, np.maximum(slot, 0), h + position - 1)  # in `both`
    equal = pc.equal(both.take(pa.array(before)), rows).to_numpy(zero_copy_only=False)
    repeat = accumulates & had & equal if ttl_ms is None else np.zeros(n, bool)

    # order values of the row after each record: its own, or for a repeat those of the row it repeated
    start = np.maximum.accumulate(np.where(first, position, 0))
    source = np.maximum.accumulate(np.where(repeat, -1, position))
    from_records = source >= start
    held_orders = [held[o].to_numpy() if h else np.zeros(0, np.int64) for o in order]
    after_orders = [
        np.where(from_records, o[np.maximum(source, 0)], ho[np.maximum(slot, 0)] if h else 0)
        for o, ho in zip(orders, held_orders)
    ]
    before_orders = [
        np.where(first, ho[np.maximum(slot, 0)] if h else 0, np.roll(a, 1)) for a, ho in zip(after_orders, held_orders)
    ]

    deletes = ~accumulates & had
    inserts = accumulates & ~had
    updates = accumulates & had & ~repeat
    count = deletes.astype(np.int64) + inserts + 2 * updates
    emitted = np.repeat(position, count)
    second = np.arange(len(emitted)) - np.repeat(np.cumsum(count) - count, count)  # 1: an update's after-image
    kind = np.select([deletes[emitted], inserts[emitted], second == 0], [_DELETE, _INSERT, _BEFORE], default=_AFTER)
    held_before = (kind == _DELETE) | (kind == _BEFORE)
    changes_rows = both.take(pa.array(np.where(held_before, before[emitted], h + emitted)))
    changes_orders = [np.where(held_before, b[emitted], o[emitted]) for b, o in zip(before_orders, orders)]

    # with a TTL every accumulate touches its key (Spark's TTL restarts on each update), so the bucket is written
    new_held = None
    if len(emitted) or (ttl_ms is not None and accumulates.any()):
        kept = held.filter(pc.invert(pc.is_in(held[KEY], value_set=encoded.dictionary)))
        final = last & accumulates
        columns = [encoded.dictionary.take(pa.array(code[final])), rows.filter(pa.array(final))]
        columns += [pa.array(a[final]) for a in after_orders]
        if ttl_ms is not None:
            columns.append(pa.array(np.full(int(final.sum()), now_ms, np.int64)))
        new_held = pa.concat_tables([kept, pa.Table.from_arrays(columns, schema=held.schema)])
    return Changes(changes_rows, changes_orders, _KIND_NAMES[kind], new_held)
