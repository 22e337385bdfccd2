"""normalized_changelog's columnar core (tables/last_rows.py) against Flink's rules written record by record: for any
bucket state and any micro-batch of upserts, repeats and deletes over a few keys, the same changes in each key's
order and the same rows left; the state's bytes round-trip and a bucket in another layout is refused."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark_upsert_kafka.tables.last_rows import (
    TOUCHED,
    LayoutError,
    Records,
    apply,
    decode,
    encode,
    held_schema,
)

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


def _columnar(held: dict, records: list, ttl: bool) -> tuple[dict, dict]:
    schema = held_schema(ORDER, ttl)
    columns = [list(held), [r for r, _ in held.values()], [o for _, o in held.values()]]
    table = pa.Table.from_arrays([pa.array(c, t.type) for c, t in zip(columns, schema)] + (
        [pa.array([100] * len(held), pa.int64())] if ttl else []), schema=schema)  # fmt: skip
    batch = Records(
        pa.array([r[0] for r in records], pa.string()),
        pa.array([r[1] for r in records], pa.string()),
        np.array([r[2] for r in records], bool),
        [np.array([r[3] for r in records], np.int64)],
    )
    changes = apply(decode(encode(table), schema), batch, ORDER, 1000 if ttl else None, 200)
    out: dict = {}
    keys = [row.split(":")[0] for row in changes.rows.to_pylist()]  # a row names its key, as a row text holds it
    for key, row, offset, kind in zip(keys, changes.rows.to_pylist(), changes.orders[0].tolist(), changes.kinds):
        out.setdefault(key, []).append((row, offset, kind))
    after = changes.held if changes.held is not None else table
    if ttl:
        assert set(after[TOUCHED].to_pylist()) <= {100, 200}
    state = {
        k: (r, o) for k, r, o in zip(after["key"].to_pylist(), after["row"].to_pylist(), after["offset"].to_pylist())
    }
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


def test_a_key_idle_longer_than_the_ttl_is_forgotten():
    schema = held_schema(ORDER, True)
    table = pa.Table.from_pydict({"key": ["k1"], "row": ["k1:a"], "offset": [1], TOUCHED: [100]}, schema=schema)
    batch = Records(pa.array(["k1"]), pa.array(["k1:a"]), np.array([False]), [np.array([2], np.int64)])
    assert list(apply(table, batch, ORDER, 50, 150).kinds) == ["insert"]  # 100 + 50 <= 150: expired
    assert list(apply(table, batch, ORDER, 51, 150).kinds) == ["update_preimage", "update_postimage"]


def test_a_bucket_in_another_layout_is_refused():
    other = pa.Table.from_pydict({"key": ["k1"], "row": ["x"]})
    with pytest.raises(LayoutError, match="a state bucket holds"):
        decode(encode(other), held_schema(ORDER, False))
