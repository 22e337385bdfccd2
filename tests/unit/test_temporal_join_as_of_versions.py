"""temporal_join's columnar core (tables/as_of_versions.py) against Flink's TemporalRowTimeJoinOperator written row by
row: for any micro-batches of table changes (versions, deletes, a change replacing another at the same time) and
stream rows (late ones too) over a few keys, under a rising watermark, the same rows joined with the same versions,
in arrival order, each step reading only the keys it names and keeping in flight only what the watermark has not
passed; the in-flight state's bytes round-trip and another layout is refused."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark_upsert_kafka.tables.as_of_versions import (
    Arrivals,
    Changes,
    LayoutError,
    add_versions,
    as_of,
    decode,
    encode,
    needed,
    step,
    versions_of,
)


class _FlinksRules:
    """The operator's rules one row at a time: versions per key (time -> row), rows waiting with arrival numbers."""

    def __init__(self) -> None:
        self.versions: dict = {}
        self.waiting: list = []
        self.arrivals = 0

    def batch(self, changes: list, arrivals: list, watermark: int) -> list:
        for key, time, row, _ in sorted(changes, key=lambda c: c[3]):
            if key is not None:
                self.versions.setdefault(key, {})[time] = row
        for key, time, row in sorted(arrivals, key=lambda a: a[1]):
            self.waiting.append((time, self.arrivals, key, row))
            self.arrivals += 1
        due = sorted((w for w in self.waiting if w[0] <= watermark), key=lambda w: w[1])
        self.waiting = [w for w in self.waiting if w[0] > watermark]
        out = [(row, self._as_of(key, time)) for time, _, key, row in due]
        for held in self.versions.values():
            passed = sorted(t for t in held if t <= watermark)
            for t in passed[:-1]:
                del held[t]
        return out

    def _as_of(self, key, time: int):
        held = sorted(self.versions.get(key, {}).items()) if key is not None else []
        i = bisect_right([t for t, _ in held], time)
        return held[i - 1][1] if i else None


def _columnar(entries: dict, in_flight: pa.Table, arrivals: int, changes: list, rows: list, watermark: int):
    """A step as the operator takes it: the entries of the keys it needs read from `entries` (key -> entry, as
    Spark's MapState keeps them), the changed ones written back, the in-flight state through its bytes."""
    batch = None
    if changes:
        batch = Changes(
            pa.array([c[0] for c in changes], pa.string()),
            np.array([c[1] for c in changes], np.int64),
            pa.array([c[2] for c in changes], pa.string()),
            [np.array([c[3] for c in changes], np.int64)],
        )
    waiting = None
    if rows:
        waiting = Arrivals(
            pa.array([a[0] for a in rows], pa.string()), np.array([a[1] for a in rows], np.int64),
            pa.array([a[2] for a in rows], pa.string()),
        )  # fmt: skip
    keys = needed(in_flight, batch, waiting, watermark)
    done = step(versions_of(keys, [entries.get(k) for k in keys]), in_flight, arrivals, batch, waiting, watermark)
    for k in done.removed:
        del entries[k]
    entries.update(zip(done.put, done.entries))
    assert all(t > watermark for t in done.in_flight["time"].to_pylist())  # nothing the watermark passed stays
    in_flight, arrivals = decode(encode(done.in_flight, done.arrivals))
    return in_flight, arrivals, list(zip(done.left.to_pylist(), done.right.to_pylist()))


keys = st.sampled_from(["k1", "k2", None])
batches = st.lists(
    st.tuples(
        st.lists(st.tuples(keys, st.integers(0, 6), st.sampled_from(["a", "b", None]))),
        st.lists(st.tuples(keys, st.integers(0, 6))),
        st.integers(0, 3),
    ),
    max_size=5,
)


@given(batches)
def test_the_columnar_core_joins_as_flinks_temporal_join_does(steps):
    rules, entries, (in_flight, arrivals), watermark, offset = _FlinksRules(), {}, decode(None), -1, 0
    for n, (changes, rows, rise) in enumerate(steps):
        watermark += rise
        changes = [(k, t, r, offset + i) for i, (k, t, r) in enumerate(changes)]
        offset += len(changes)
        rows = [(k, t, f"s{n}.{i}") for i, (k, t) in enumerate(rows)]
        in_flight, arrivals, got = _columnar(entries, in_flight, arrivals, changes, rows, watermark)
        assert got == rules.batch(changes, rows, watermark)
        held = {k: dict(zip(*e)) for k, e in entries.items()}
        assert held == {k: v for k, v in rules.versions.items() if v}  # each key's entry: the versions Flink keeps


def test_the_latest_value_join_keeps_one_version_a_key_and_none_for_a_deleted_key():
    state, _ = decode(None)
    changes = Changes(pa.array(["k1", "k1", "k2", "k2"]), np.array([5, 1, 1, 2]), pa.array(["a", "b", "c", None]),
                      [np.array([1, 2, 3, 4])])  # fmt: skip
    state = add_versions(state, changes, latest_only=True)
    assert state.num_rows == 1
    assert as_of(state, pa.array(["k1", "k2", None]), np.zeros(3, np.int64)).to_pylist() == ["b", None, None]


def test_a_bucket_in_another_layout_is_refused():
    with pytest.raises(LayoutError):
        decode(encode(pa.table({"key": ["k"]}), 0))


VERSIONS = [(10, "a"), (20, None), (30, "c"), (40, "d")]  # None: the key was deleted at 20


@pytest.mark.parametrize(
    ("time", "row"),
    [(9, None), (10, "a"), (19, "a"), (20, None), (29, None), (30, "c"), (39, "c"), (40, "d"), (10**15, "d")],
)
def test_a_row_takes_the_version_of_the_greatest_time_not_after_its_own(time, row):
    state, _ = decode(None)
    changes = Changes(pa.array(["k"] * 4), np.array([t for t, _ in VERSIONS]), pa.array([r for _, r in VERSIONS]),
                      [np.arange(4)])  # fmt: skip
    versions = add_versions(state, changes, latest_only=False)
    assert as_of(versions, pa.array(["k", "other"]), np.array([time, time])).to_pylist() == [row, None]
