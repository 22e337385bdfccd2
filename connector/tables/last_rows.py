"""The columnar core of normalized_changelog: the rows its state holds for a micro-batch's keys of one state group and
that micro-batch's records of those keys in, the changes they make and what to write back to the state out, as Arrow
and numpy kernels (no Python per record).

Flink's rules (DeduplicateFunctionHelper.processLastRowOnChangelog), per key, over its records in order: an
accumulating record (+I, +U, upsert) of a key without a row is an `insert`; of a key with a row an `update_preimage`
(the row held) and an `update_postimage`, unless it equals the row held and no state TTL is set (then nothing, and
the row held stays, its order values too); a retracting record (-D, -U, tombstone) of a key with a row is a `delete`
carrying the row held, of a key without one nothing.

Each record's "row held" is its key's state after the record before it. Sorted by (key, order), that is the
previous record's (a retract leaves none, an accumulate its row), or for a key's first record the state's. The one
chain is an equal row, which keeps the older row's order values: a forward fill of the last record that was not
such a repeat finds them.

What goes back to the state is per key: the last row of a key whose records changed it (with a state TTL, of every
key a record accumulated, since a write restarts the key's TTL), and the removal of a held key whose last record
retracted it. Keys the micro-batch did not touch are neither read nor written.

With versions (`apply_versioned`), a key's records apply in the order of their versions: a record whose version is
below the highest one its key has seen (held, a deleted key's too, or of its earlier records) is dropped, an equal
one applies in order. The state then keeps every touched key's version, a deleted key's as an entry without a row,
so that an older version arriving after a delete resurrects nothing. The version is part of the row (two rows are
equal when their texts and versions are) but travels beside its text, as a number: a timestamp in the row's text
costs Spark a formatted write and a parse per row.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..kernel.change_kind import ChangeKind

KEY, ROW, VERSION = "key", "row", "version"
_INSERT, _BEFORE, _AFTER, _DELETE = range(4)
_KIND_NAMES = np.array(
    [ChangeKind.INSERT.value, ChangeKind.UPDATE_BEFORE.value, ChangeKind.UPDATE_AFTER.value, ChangeKind.DELETE.value],
    dtype=object,
)


@dataclass(frozen=True)
class Records:
    """A state group's records of one micro-batch: key and row texts, whether each retracts, and its order values."""

    keys: pa.Array  # string
    rows: pa.Array  # string
    retracts: np.ndarray  # bool
    orders: list[np.ndarray]  # int64 each
    versions: np.ndarray | None = None  # int64: each record's version (apply_versioned)


@dataclass(frozen=True)
class Changes:
    """What a micro-batch did to a state group: the changes emitted, and what to write back to its state."""

    keys: pa.Array  # string: each change's key
    rows: pa.Array  # string: each change's row
    orders: list[np.ndarray]  # int64: each change's order values
    kinds: np.ndarray  # object: each change's kind
    written: pa.Table  # keys whose row is new, with it (a table of `held_schema`)
    removed: pa.Array  # string: held keys whose row is gone
    late: int = 0  # records dropped: a version below their key's (apply_versioned)
    versions: np.ndarray | None = None  # int64: each change's version (apply_versioned)


def held_schema(order: list[str], versioned: bool = False) -> pa.Schema:
    """A key's entry: its row (null: a deleted key's version kept), its order values, and its version if versioned."""
    fields = [pa.field(KEY, pa.string()), pa.field(ROW, pa.string()), *[pa.field(o, pa.int64()) for o in order]]
    return pa.schema(fields + ([pa.field(VERSION, pa.int64())] if versioned else []))


def apply(held: pa.Table, records: Records, order: list[str], ttl: bool) -> Changes:
    """Apply a state group's records to the rows `held` for their keys (a table of `held_schema`; a key without a
    row is absent). `ttl`: the state forgets idle keys, so an equal row is passed on and written again."""
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
    versions = before_versions = None
    if records.versions is not None:  # a row's version is part of it: the row before a record is of its version
        versions = records.versions[perm]
        held_versions = held[VERSION].to_numpy() if h else np.zeros(1, np.int64)
        before_versions = np.where(first, held_versions[np.maximum(slot, 0)], np.roll(versions, 1))
        equal &= before_versions == versions
    repeat = accumulates & had & equal if not ttl else np.zeros(n, bool)

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
    changes_versions = None
    if versions is not None and before_versions is not None:
        changes_versions = np.where(held_before, before_versions[emitted], versions[emitted])

    # a key's last record decides what its state becomes: a row written when any of its records changed it (with a
    # TTL, when any accumulated: a write restarts its TTL), the key removed when it was held and is retracted
    key_ends = np.flatnonzero(last)
    changed = (
        np.add.reduceat((accumulates if ttl else ~repeat & (accumulates | had)).astype(np.int64), np.flatnonzero(first))
        > 0
    )
    write = key_ends[accumulates[key_ends] & changed]
    remove = key_ends[~accumulates[key_ends] & (slot[key_ends] >= 0)]
    columns = [encoded.dictionary.take(pa.array(code[write])), rows.take(pa.array(write))]
    if versions is not None:  # every touched key's entry: its row after (null: deleted) and its version
        write, remove = key_ends, np.zeros(0, np.int64)
        after_rows = pc.if_else(
            pa.array(accumulates[write]), rows.take(pa.array(write)), pa.nulls(len(write), pa.string())
        )
        columns = [encoded.dictionary.take(pa.array(code[write])), after_rows]
        columns += [pa.array(a[write]) for a in after_orders] + [pa.array(versions[write])]
        schema = held_schema(order, versioned=True)
    else:
        columns = [encoded.dictionary.take(pa.array(code[write])), rows.take(pa.array(write))]
        columns += [pa.array(a[write]) for a in after_orders]
        schema = held.schema
    written = pa.Table.from_arrays(columns, schema=schema)
    removed = encoded.dictionary.take(pa.array(code[remove]))
    changes_keys = encoded.dictionary.take(pa.array(code[emitted]))
    return Changes(
        changes_keys, changes_rows, changes_orders, _KIND_NAMES[kind], written, removed, versions=changes_versions
    )


def apply_versioned(held: pa.Table, records: Records, order: list[str], ttl: bool) -> Changes:
    """`apply` with each key's records in version order: `held` a table of `held_schema(order, versioned=True)` (a
    deleted key's entry without a row), `records.versions` set. The records below their key's highest version are
    dropped (counted in `late`); every key a kept record touches is written with its row after and its version."""
    assert records.versions is not None
    keep = _in_version_order(held, records)
    if not keep.any():
        empty = held_schema(order, versioned=True).empty_table()
        none, no = pa.array([], pa.string()), np.zeros(0, np.int64)
        return Changes(none, none, [no for _ in order], _KIND_NAMES[:0], empty, none, len(keep), no)
    kept = records  # the usual case, nothing late: no copy of the rows
    if not keep.all():
        mask = pa.array(keep)
        kept = Records(
            records.keys.filter(mask),
            records.rows.filter(mask),
            records.retracts[keep],
            [o[keep] for o in records.orders],
            records.versions[keep],
        )
    rows = held.filter(pc.is_valid(held[ROW]))
    changes = apply(rows, kept, order, ttl)
    return dataclasses.replace(changes, late=int((~keep).sum()))


def _in_version_order(held: pa.Table, records: Records) -> np.ndarray:
    """Per record: whether its version is at least the highest its key saw before it (its held version, and those
    of its earlier records by order; the records in Records order)."""
    assert records.versions is not None
    n = len(records.keys)
    encoded = pc.dictionary_encode(records.keys)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    perm = np.lexsort((*reversed(records.orders), codes))
    code = codes[perm]
    at = (
        pc.index_in(encoded.dictionary, value_set=held[KEY].combine_chunks())
        .fill_null(-1)
        .to_numpy(zero_copy_only=False)
    )
    held_versions = held[VERSION].to_numpy() if held.num_rows else np.zeros(0, np.int64)
    # versions as ranks (0..r-1) among every version in sight; a key's running highest as the running maximum of
    # (key, rank) pairs, which, keys being sorted, stays within the key
    _, ranks = np.unique(np.concatenate([held_versions, records.versions[perm]]), return_inverse=True)
    width = len(ranks) + 1
    held_rank = np.where(at >= 0, ranks[: len(held_versions)][np.maximum(at, 0)] if len(held_versions) else 0, -1)
    rank = ranks[len(held_versions) :]
    running = np.maximum.accumulate(code * width + rank + 1) - code * width - 1  # within the key: its records' highest
    first = np.ones(n, bool)
    first[1:] = code[1:] != code[:-1]
    before = np.where(first, -1, np.roll(running, 1))  # the highest of the key's earlier records
    keep_sorted = rank >= np.maximum(before, held_rank[code])
    keep = np.empty(n, bool)
    keep[perm] = keep_sorted
    return keep
