"""The core of temporal_join: the versions of the keys a micro-batch touches and a state group's waiting stream rows,
and the micro-batch's rows of that group, in; the joined pairs, the keys' versions to write and the group's rows in
flight out, as Arrow and numpy kernels (no Python per row).

One table holds both while a step runs: a version is (key, time, row; a null row: deleted from that time on); a
waiting stream row is (key, time, arrival number, row). Flink's rules (TemporalRowTimeJoinOperator): a table change is
a version at its time, a later change (by order) at the same time replacing it; a stream row waits until the
watermark reaches its time, then takes the version of the greatest time not after its own (a row whose key has a null
takes none); once the watermark passed, a key's versions before the last one not after it are dropped. The
latest-value join keeps one version per key, at time 0, and waits for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

KEY, TIME, SEQ, ROW, WAITING = "key", "time", "seq", "row", "waiting"
LAYOUT = b"as_of_versions/2"
SCHEMA = pa.schema(
    [
        pa.field(KEY, pa.string()),  # null: a stream row whose key has a null (it matches no version)
        pa.field(TIME, pa.int64()),  # microseconds
        pa.field(SEQ, pa.int64()),  # a waiting row's arrival number; -1 for a version
        pa.field(ROW, pa.string()),  # null: a delete (a version without a row)
        pa.field(WAITING, pa.bool_()),
    ],
    metadata={b"layout": LAYOUT},
)


class LayoutError(ValueError):
    """A bucket's state in a form this version does not read."""


@dataclass(frozen=True)
class Changes:
    """A bucket's table changes of a micro-batch (skips left out), in any order: `orders` order them per key."""

    keys: pa.Array  # string, null: a key with a null (ignored)
    times: np.ndarray  # int64
    rows: pa.Array  # string, null: a delete
    orders: list[np.ndarray]


@dataclass(frozen=True)
class Arrivals:
    """A bucket's stream rows of a micro-batch."""

    keys: pa.Array  # string, null: a key with a null
    times: np.ndarray  # int64
    rows: pa.Array  # string


def encode(state: pa.Table, arrivals: int) -> bytes:
    sink = pa.BufferOutputStream()
    schema = state.schema.with_metadata({b"layout": LAYOUT, b"arrivals": str(arrivals).encode()})
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(state.cast(schema))
    blob: bytes = sink.getvalue().to_pybytes()
    return blob


def decode(blob: bytes | None) -> tuple[pa.Table, int]:
    """The bucket's state and its arrival count."""
    if blob is None:
        return SCHEMA.empty_table(), 0
    state = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
    metadata = state.schema.metadata or {}
    if metadata.get(b"layout") != LAYOUT or not state.schema.remove_metadata().equals(SCHEMA.remove_metadata()):
        raise LayoutError(f"a state bucket holds {state.schema}")
    return state.cast(SCHEMA), int(metadata[b"arrivals"])


def add_versions(state: pa.Table, changes: Changes, latest_only: bool) -> pa.Table:
    """The versions the changes make, replacing those at the same key and time (the last change by order wins)."""
    known = pc.invert(pc.is_null(changes.keys)).to_numpy(zero_copy_only=False)
    if not known.any():
        return state
    keys = changes.keys.filter(pa.array(known))
    times = np.zeros(int(known.sum()), np.int64) if latest_only else changes.times[known]
    orders = [o[known] for o in changes.orders]
    codes = pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False)
    order = np.lexsort((*reversed(orders), times, codes))
    code, time = codes[order], times[order]
    last = np.ones(len(order), bool)
    last[:-1] = (code[1:] != code[:-1]) | (time[1:] != time[:-1])
    chosen = pa.array(order[last])
    new = pa.Table.from_arrays(
        [
            keys.take(chosen),
            pa.array(time[last]),
            pa.array(np.full(len(chosen), -1, np.int64)),
            changes.rows.filter(pa.array(known)).take(chosen),
            pa.array(np.zeros(len(chosen), bool)),
        ],
        schema=SCHEMA,
    )
    if latest_only:
        new = new.filter(pc.is_valid(new[ROW]))  # a deleted key needs no version: no earlier one is held
        replaced = pc.is_in(state[KEY], value_set=keys)
    else:
        replaced = pc.is_in(_pairs(state[KEY], state[TIME]), value_set=_pairs(new[KEY], new[TIME]))
    keep = pc.or_(pc.invert(replaced), state[WAITING])
    return pa.concat_tables([state.filter(keep), new])


def _pairs(keys: pa.ChunkedArray | pa.Array, times: pa.ChunkedArray | pa.Array) -> pa.Array:
    """(key, time) as one comparable text, for set membership."""
    return pc.binary_join_element_wise(keys, pc.cast(times, pa.string()), "\x00")


def add_waiting(state: pa.Table, arrivals: Arrivals, first: int) -> tuple[pa.Table, int]:
    """Stream rows appended to the waiting ones, numbered in arrival order (by time within one micro-batch)."""
    n = len(arrivals.keys)
    if not n:
        return state, first
    order = np.argsort(arrivals.times, kind="stable")
    taken = pa.array(order)
    waiting = pa.Table.from_arrays(
        [
            arrivals.keys.take(taken),
            pa.array(arrivals.times[order]),
            pa.array(np.arange(first, first + n, dtype=np.int64)),
            arrivals.rows.take(taken),
            pa.array(np.ones(n, bool)),
        ],
        schema=SCHEMA,
    )
    return pa.concat_tables([state, waiting]), first + n


def join_due(state: pa.Table, watermark: int) -> tuple[pa.Table, pa.Array, pa.Array]:
    """The waiting rows the watermark reached, in arrival order, each with the row of the version as of its time
    (null: none); the state without them and without the versions no waiting row can need any more."""
    waiting = state[WAITING].to_numpy(zero_copy_only=False)
    times = state[TIME].to_numpy()
    due_mask = waiting & (times <= watermark)
    versions = state.filter(pa.array(~waiting))
    due = state.filter(pa.array(due_mask))
    due = due.take(pa.array(np.argsort(due[SEQ].to_numpy(), kind="stable")))
    matched = as_of(versions, due[KEY], due[TIME].to_numpy())
    rest = pa.concat_tables([_behind_dropped(versions, watermark), state.filter(pa.array(waiting & ~due_mask))])
    return rest, due[ROW].combine_chunks(), matched


def as_of(versions: pa.Table, keys: pa.ChunkedArray | pa.Array, times: np.ndarray) -> pa.Array:
    """Per (key, time): the row of the key's version of the greatest time not after it (null: none, or a delete)."""
    n, v = len(times), versions.num_rows
    if not n or not v:
        return pa.nulls(n, pa.string())
    everything = pc.dictionary_encode(pa.concat_arrays([versions[KEY].combine_chunks(), _array(keys)]))
    codes = everything.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    version_times = versions[TIME].to_numpy()
    _, ranks = np.unique(np.concatenate([version_times, times]), return_inverse=True)
    composite = codes * (len(ranks) + 1) + ranks.astype(np.int64)
    order = np.argsort(composite[:v], kind="stable")
    sorted_versions = composite[:v][order]
    found = np.searchsorted(sorted_versions, composite[v:], side="right") - 1
    at = np.maximum(found, 0)
    same_key = codes[v:] >= 0
    same_key &= (found >= 0) & (codes[:v][order][at] == codes[v:])
    rows = versions[ROW].combine_chunks().take(pa.array(order[at]))
    return pc.if_else(pa.array(same_key), rows, pa.nulls(n, pa.string()))


def _array(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _behind_dropped(versions: pa.Table, watermark: int) -> pa.Table:
    """A key's versions from the last one not after the watermark on (Flink's cleanup)."""
    passed = versions.filter(pc.less_equal(versions[TIME], watermark))
    if not passed.num_rows:
        return versions
    last = passed.group_by(KEY).aggregate([(TIME, "max")]).rename_columns([KEY, "uk_last"])
    joined = versions.join(last, KEY, join_type="left outer")
    keep = pc.or_kleene(pc.is_null(joined["uk_last"]), pc.greater_equal(joined[TIME], joined["uk_last"]))
    return joined.filter(pc.fill_null(keep, True)).select(SCHEMA.names)


# A key's versions are its own state entry (times and rows as two lists); the rows waiting for the watermark and a
# mark at each version's time (a version row in the waiting table: the time its key's older versions may be dropped,
# as Flink's timer per version) are the state group's in-flight table, which holds what the watermark has not passed,
# not what the table holds. A micro-batch reads the entries of the keys its changes, its arrivals and the due waiting
# rows and marks name, and writes back those whose versions changed.
ENTRY = pa.schema([pa.field("times", pa.list_(pa.int64())), pa.field("rows", pa.list_(pa.string()))])


@dataclass(frozen=True)
class Step:
    """A state group's micro-batch (or timer) done: the entries to put and remove, the in-flight table after, and the
    joined pairs (stream row, version row or null) in arrival order."""

    put: list[str]
    entries: list[tuple[object, ...]]
    removed: list[str]
    in_flight: pa.Table
    arrivals: int
    left: pa.Array
    right: pa.Array


def needed(in_flight: pa.Table, changes: Changes | None, arrived: Arrivals | None, watermark: int | None) -> list[str]:
    """The keys whose versions a step reads: its changes' and arrivals', and those of the rows and marks the
    watermark reached (None: the latest-value join, which keeps nothing in flight)."""
    parts = [c.keys for c in (changes, arrived) if c is not None]
    if watermark is not None:
        parts.append(in_flight.filter(pc.less_equal(in_flight[TIME], watermark))[KEY].combine_chunks())
    keys = pc.unique(pa.concat_arrays([p.cast(pa.string()) for p in parts])) if parts else pa.array([], pa.string())
    return [k for k in keys.to_pylist() if k is not None]


def versions_of(keys: list[str], entries: list[tuple[object, ...] | None]) -> pa.Table:
    """The versions held in these keys' entries (a key without one holds none)."""
    found = [(k, e) for k, e in zip(keys, entries) if e is not None]
    if not found:
        return SCHEMA.empty_table()
    lists = pa.Table.from_pylist([dict(zip(ENTRY.names, e)) for _, e in found], schema=ENTRY)
    times, rows = lists["times"].combine_chunks(), lists["rows"].combine_chunks()
    lengths = pc.list_value_length(times).to_numpy(zero_copy_only=False)
    count = int(lengths.sum())
    return pa.Table.from_arrays(
        [
            pa.array([k for k, _ in found], pa.string()).take(pa.array(np.repeat(np.arange(len(found)), lengths))),
            pc.list_flatten(times),
            pa.array(np.full(count, -1, np.int64)),
            pc.list_flatten(rows),
            pa.array(np.zeros(count, bool)),
        ],
        schema=SCHEMA,
    )


def step(
    held: pa.Table,
    in_flight: pa.Table,
    arrivals: int,
    changes: Changes | None,
    arrived: Arrivals | None,
    watermark: int | None,
) -> Step:
    """One call of the join on a state group: `held` the versions of the keys `needed` named, `watermark` None for
    the latest-value join (its arrivals joined at once, after the changes)."""
    state = pa.concat_tables([held, in_flight.filter(in_flight[WAITING])])
    if changes is not None:
        state = add_versions(state, changes, latest_only=watermark is None)
    if watermark is None:
        empty = pa.nulls(0, pa.string())
        matched = as_of(state, arrived.keys, np.zeros(len(arrived.keys), np.int64)) if arrived else empty
        left = arrived.rows if arrived else empty
        return _step(held, state, SCHEMA.empty_table(), 0, left, matched)
    if arrived is not None:
        state, arrivals = add_waiting(state, arrived, arrivals)
    rest, left, right = join_due(state, watermark)
    marks = in_flight.filter(pc.invert(in_flight[WAITING]))
    if changes is not None:
        known = pc.is_valid(changes.keys)
        new = pa.table({KEY: changes.keys.filter(known), TIME: pa.array(changes.times).filter(known)})
        marks = pa.concat_tables([marks, _marks(new)])
    marks = marks.filter(pc.greater(marks[TIME], watermark))
    waiting = rest.filter(rest[WAITING])
    return _step(held, rest, pa.concat_tables([waiting, marks]), arrivals if waiting.num_rows else 0, left, right)


def _marks(keyed: pa.Table) -> pa.Table:
    n = keyed.num_rows
    return pa.Table.from_arrays(
        [
            keyed[KEY],
            keyed[TIME],
            pa.array(np.full(n, -1, np.int64)),
            pa.nulls(n, pa.string()),
            pa.array(np.zeros(n, bool)),
        ],
        schema=SCHEMA,
    )


def _step(held: pa.Table, state: pa.Table, in_flight: pa.Table, arrivals: int, left: pa.Array, right: pa.Array) -> Step:
    """The entries of the keys whose versions changed (any change: a version added or replaced, older ones dropped)."""
    after = state.filter(pc.invert(state[WAITING]))
    before, now = _per_key(held), _per_key(after)
    changed = [k for k in before.keys() | now.keys() if before.get(k) != now.get(k)]
    put = [k for k in changed if k in now]
    removed = [k for k in changed if k not in now and k in before]
    return Step(put, [now[k] for k in put], removed, in_flight, arrivals, _array(left), _array(right))


def _per_key(versions: pa.Table) -> dict[str, tuple[list[int], list[str | None]]]:
    """Each key's versions as its entry: times ascending, rows alike."""
    ordered = versions.sort_by([(KEY, "ascending"), (TIME, "ascending")])
    lists = ordered.group_by(KEY, use_threads=False).aggregate([(TIME, "list"), (ROW, "list")])  # keeps the order
    return dict(zip(lists[KEY].to_pylist(), zip(lists[f"{TIME}_list"].to_pylist(), lists[f"{ROW}_list"].to_pylist())))
