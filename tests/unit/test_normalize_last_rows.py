"""normalized_changelog's columnar core (tables/last_rows.py) against Flink's rules written record by record: for any
state and any micro-batch of upserts, repeats and deletes over a few keys, the same changes in each key's order and
the same rows left, written back for the keys whose row changed and for no other; with versions, the same rules on
the records at or above their key's highest version (a row's version part of it), the others dropped and counted,
every key's version kept."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from pyspark_upsert_kafka.tables.last_rows import Records, apply, apply_versioned, held_schema

ORDER = ["offset"]


def _flinks_rules(held: dict, records: list, ttl: bool) -> tuple[dict, dict]:
    """processLastRowOnChangelog per key, one record at a time (the rules the columnar core must give)."""
    state = dict(held)
    out: dict = {}
    for key, row, retracts, offset in sorted(records, key=lambda r: r[3]):
        last = state.get(key)
        emit = out.setdefault(key, [])
        if retracts:
            if last is not None:
                emit.append((*last, "delete"))
                state.pop(key)
            continue
        if last is None:
            emit.append((row, offset, "insert"))
        elif not ttl and last[0] == row:
            continue
        else:
            emit += [(*last, "update_preimage"), (row, offset, "update_postimage")]
        state[key] = (row, offset)
    return {k: v for k, v in out.items() if v}, state


def _table(held: dict) -> pa.Table:
    columns = [list(held), [r for r, _ in held.values()], [o for _, o in held.values()]]
    schema = held_schema(ORDER)
    return pa.Table.from_arrays([pa.array(c, t.type) for c, t in zip(columns, schema)], schema=schema)


def _columnar(held: dict, records: list, ttl: bool) -> tuple[dict, dict]:
    batch = Records(
        pa.array([r[0] for r in records], pa.string()),
        pa.array([r[1] for r in records], pa.string()),
        np.array([r[2] for r in records], bool),
        [np.array([r[3] for r in records], np.int64)],
    )
    # the state's rows of the micro-batch's keys, as the processor reads them
    changes = apply(_table({k: v for k, v in held.items() if k in {r[0] for r in records}}), batch, ORDER, ttl)
    out: dict = {}
    keys = changes.keys.to_pylist()
    assert keys == [row.split(":")[0] for row in changes.rows.to_pylist()]  # each change's key: its row's (named)
    for key, row, offset, kind in zip(keys, changes.rows.to_pylist(), changes.orders[0].tolist(), changes.kinds):
        out.setdefault(key, []).append((row, offset, kind))
    written = changes.written.to_pylist()
    removed = changes.removed.to_pylist()
    for w in written:  # only what changed is written (with a TTL: every key a record accumulated, its TTL restarts)
        assert ttl or held.get(w["key"]) != (w["row"], w["offset"])
    assert set(removed) <= set(held) and not set(removed) & {w["key"] for w in written}
    state = {k: v for k, v in held.items() if k not in removed} | {w["key"]: (w["row"], w["offset"]) for w in written}
    return out, state


keys = st.sampled_from(["k1", "k2", "k3"])
rows = st.sampled_from(["a", "b"])


@given(
    held=st.dictionaries(keys, st.tuples(rows, st.integers(0, 5))),
    records=st.lists(st.tuples(keys, rows, st.booleans()), min_size=1, max_size=12),
    ttl=st.booleans(),
)
def test_the_columnar_core_gives_flinks_changes_and_rows_record_by_record(held, records, ttl):
    held = {k: (f"{k}:{r}", o) for k, (r, o) in held.items()}
    batch = [(k, f"{k}:{r}", retracts, 10 + i) for i, (k, r, retracts) in enumerate(records)]
    assert _columnar(held, batch, ttl) == _flinks_rules(held, batch, ttl)


def test_equal_order_values_keep_their_arrival_order():
    """Two records of a key at one order value (not from one partition's offsets, but possible): arrival decides."""
    batch = [("k1", "k1:a", False, 5), ("k1", "k1:b", False, 5)]
    out, state = _columnar({}, batch, False)
    assert out == {"k1": [("k1:a", 5, "insert"), ("k1:a", 5, "update_preimage"), ("k1:b", 5, "update_postimage")]}
    assert state == {"k1": ("k1:b", 5)}


def test_a_repeat_keeps_the_order_values_of_the_row_it_repeats():
    batch = [("k1", "k1:a", False, 11), ("k1", "k1:a", False, 12), ("k1", "k1:b", False, 13)]
    out, _ = _columnar({"k1": ("k1:a", 3)}, batch, False)
    assert out == {"k1": [("k1:a", 3, "update_preimage"), ("k1:b", 13, "update_postimage")]}


def test_with_a_ttl_every_key_a_record_accumulated_is_written_again():
    """Spark's TTL of a key's entry restarts when it is written: a repeat (passed on as an update) is written too."""
    batch = Records(pa.array(["k1", "k2"]), pa.array(["k1:a", "k2:x"]), np.array([False, True]), [np.array([2, 3])])
    held = _table({"k1": ("k1:a", 1), "k2": ("k2:b", 1)})
    with_ttl, without = apply(held, batch, ORDER, True), apply(held, batch, ORDER, False)
    assert with_ttl.written.to_pylist() == [{"key": "k1", "row": "k1:a", "offset": 2}]
    assert without.written.num_rows == 0 and list(without.kinds) == ["delete"]
    assert with_ttl.removed.to_pylist() == without.removed.to_pylist() == ["k2"]


def _versioned_rules(held: dict, records: list, ttl: bool) -> tuple[dict, dict, int]:
    """The rules above on the records whose version is at least their key's highest so far (held: key -> (row or
    None for a deleted key, offset, version)); the others dropped and counted."""
    state, out, late = dict(held), {}, 0
    for key, row, retracts, offset, version in sorted(records, key=lambda r: r[3]):
        last = state.get(key)
        if last is not None and version < last[2]:
            late += 1
            continue
        # a row is its text and its version: two rows are equal when both are, a change carries both
        held_row = {key: ((last[0], last[2]), last[1])} if last is not None and last[0] is not None else {}
        emitted, after = _flinks_rules(held_row, [(key, (row, version), retracts, offset)], ttl)
        out.setdefault(key, []).extend((r, o, v, kind) for (r, v), o, kind in emitted.get(key, []))
        state[key] = (after[key][0][0], after[key][1], after[key][0][1]) if key in after else (None, offset, version)
    return {k: v for k, v in out.items() if v}, state, late


def _versioned_columnar(held: dict, records: list, ttl: bool) -> tuple[dict, dict, int]:
    batch = Records(
        pa.array([r[0] for r in records], pa.string()),
        pa.array([r[1] for r in records], pa.string()),
        np.array([r[2] for r in records], bool),
        [np.array([r[3] for r in records], np.int64)],
        np.array([r[4] for r in records], np.int64),
    )
    touched = {r[0] for r in records}
    schema = held_schema(ORDER, versioned=True)
    entries = [(k, *v) for k, v in held.items() if k in touched]
    table = pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(zip(*entries), schema)], schema=schema) \
        if entries else schema.empty_table()  # fmt: skip
    changes = apply_versioned(table, batch, ORDER, ttl)
    assert changes.versions is not None
    out: dict = {}
    keys = changes.keys.to_pylist()
    assert keys == [row.split(":")[0] for row in changes.rows.to_pylist()]
    emitted = zip(changes.rows.to_pylist(), changes.orders[0].tolist(), changes.versions.tolist(), changes.kinds)
    for key, change in zip(keys, emitted):
        out.setdefault(key, []).append(change)
    assert not len(changes.removed)  # a deleted key keeps its version: an entry without a row
    written = {w["key"]: (w["row"], w["offset"], w["version"]) for w in changes.written.to_pylist()}
    return out, held | written, changes.late


versions = st.integers(0, 3)


@given(
    held=st.dictionaries(keys, st.tuples(st.one_of(st.none(), rows), st.integers(0, 5), versions)),
    records=st.lists(st.tuples(keys, rows, st.booleans(), versions), min_size=1, max_size=12),
    ttl=st.booleans(),
)
def test_versions_order_a_keys_records_and_a_deleted_keys_version_stays(held, records, ttl):
    held = {k: (None if r is None else f"{k}:{r}", o, v) for k, (r, o, v) in held.items()}
    batch = [(k, f"{k}:{r}", retracts, 10 + i, v) for i, (k, r, retracts, v) in enumerate(records)]
    got, expected = _versioned_columnar(held, batch, ttl), _versioned_rules(held, batch, ttl)
    assert got[0] == expected[0] and got[2] == expected[2]
    # a deleted key's entry: its version (the order values of a row that is gone mean nothing)
    assert {k: (r, o if r else None, v) for k, (r, o, v) in got[1].items()} == {
        k: (r, o if r else None, v) for k, (r, o, v) in expected[1].items()
    }


def test_an_older_version_after_a_delete_resurrects_nothing_and_is_counted():
    held = {"k": ("k:a", 1, 5)}
    batch = [("k", "k:a", True, 10, 6), ("k", "k:b", False, 11, 4), ("k", "k:c", True, 12, 5)]
    out, state, late = _versioned_columnar(held, batch, ttl=False)
    assert out == {"k": [("k:a", 1, 5, "delete")]} and late == 2
    assert state["k"][0] is None and state["k"][2] == 6


def test_a_row_equal_but_of_a_higher_version_is_an_update_carrying_both_versions():
    held = {"k": ("k:a", 1, 5)}
    batch = [("k", "k:a", False, 10, 5), ("k", "k:a", False, 11, 7)]
    out, state, late = _versioned_columnar(held, batch, ttl=False)
    assert out == {"k": [("k:a", 1, 5, "update_preimage"), ("k:a", 11, 7, "update_postimage")]} and late == 0
    assert state["k"] == ("k:a", 11, 7)
