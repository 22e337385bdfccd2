"""aggregate_changelog's core (tables/group_accumulators.py) against the aggregates computed afresh from every row
each group holds: for any sequence of micro-batches of rows in and out, each touched group's change (insert, delete,
update before and after, or none when no result changed) carries COUNT, SUM, AVG, MIN and MAX of the rows it holds
then; the exact cases (64-bit extremes, decimals, NaN and -0.0 as Flink orders them) one by one; the groups' state
entries round-trip and an entry of another layout is refused."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark_upsert_kafka.tables import group_accumulators as core
from pyspark_upsert_kafka.tables.group_accumulators import GroupError, LayoutError, Rows, Spec

INTS = [Spec("n", "count", None), Spec("c", "count", "int"), Spec("s", "sum", "int", long_result=True),
        Spec("lo", "min", "int"), Spec("hi", "max", "int")]  # fmt: skip
FLOATS = [Spec("s", "sum", "float"), Spec("a", "avg", "float"), Spec("lo", "min", "float"), Spec("hi", "max", "float")]


def _rows(changes: list[tuple], specs: list[Spec]) -> Rows:
    """Rows of (group, sign, value) with one input value for every aggregate but COUNT(*)."""
    values, nulls = [], []
    for s in specs:
        if s.carried is None:
            values.append(None)
            nulls.append(None)
            continue
        given = [v for _, _, v in changes]
        nulls.append(np.array([v is None for v in given]))
        if s.carried in ("decimal", "string"):
            values.append(np.array(given, dtype=object))
        else:
            kind = np.float64 if s.carried == "float" else np.int64
            values.append(np.array([0 if v is None else v for v in given], dtype=kind))
    return Rows(pa.array([g for g, _, _ in changes], pa.string()), np.array([n for _, n, _ in changes]), values, nulls)


KINDS = ("insert", "delete", "update_before", "update_after")


def apply(state: dict, rows: Rows, specs: list[Spec]) -> list[tuple[str, str, dict]]:
    """The core's apply on the touched groups' entries kept in `state` (group -> entry, as Spark's MapState keeps
    them): the changes as (group, kind, results); the entries written back, an emptied group's removed."""
    touched = [g for g in dict.fromkeys(rows.groups.to_pylist()) if g in state]
    after, changes = core.apply(core.held(touched, [state[g] for g in touched], specs), rows, specs)
    names, entries = core.entries(after, specs)
    for g in set(touched) - set(names):
        del state[g]
    state.update(zip(names, entries))
    groups = changes.groups.to_pylist()
    return [
        (groups[g], KINDS[k], {s.name: None if n[row] else _plain(v[row]) for s, v, n in
                              zip(specs, changes.values, changes.nulls)})
        for row, (g, k) in enumerate(zip(changes.index.tolist(), changes.kinds.tolist()))
    ]  # fmt: skip


def _plain(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _expected(group: str, before: dict | None, after: dict | None) -> list[tuple[str, str, dict]]:
    if before is None:
        return [] if after is None else [(group, "insert", after)]
    if after is None:
        return [(group, "delete", before)]
    return [] if before == after else [(group, "update_before", before), (group, "update_after", after)]


def _afresh(held: list, specs: list[Spec]) -> dict | None:
    """The group's results computed from the values it holds (None: no rows)."""
    if not held:
        return None
    present = [v for v in held if v is not None]
    out: dict = {}
    for s in specs:
        if s.carried is None:
            out[s.name] = len(held)
        elif s.function == "count":
            out[s.name] = len(present)
        elif s.function == "sum":
            out[s.name] = sum(present) if present else None
        elif s.function == "avg":
            out[s.name] = sum(present) / len(present) if present else None
        else:
            out[s.name] = (min if s.function == "min" else max)(present) if present else None
    return out


@given(
    st.lists(
        st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from([1, -1]), st.one_of(st.none(), st.integers(-3, 3)))),
        max_size=5,
    )
)
def test_results_are_the_aggregates_of_the_rows_each_group_holds(batches):
    state: dict = {}
    holding: dict = {"a": [], "b": []}
    for batch in batches:
        before = {g: _afresh(holding[g], INTS) for g in "ab"}
        kept = []
        for g, n, v in batch:  # out only what is in: a full changelog
            if n > 0 or v in holding[g]:
                holding[g].append(v) if n > 0 else holding[g].remove(v)
                kept.append((g, n, v))
        batch = kept
        if not batch:
            continue
        got = apply(state, _rows(batch, INTS), INTS)
        touched = dict.fromkeys(g for g, _, _ in batch)
        assert got == [change for g in touched for change in _expected(g, before[g], _afresh(holding[g], INTS))]


def test_sums_of_64_bit_extremes_are_exact_and_a_sum_beyond_bigint_fails():
    state: dict = {}
    big = [("g", 1, 2**63 - 1), ("g", 1, 2**63 - 1), ("g", 1, -(2**63))]  # past BIGINT on the way, not at the end
    *_, (_, _, after) = apply(state, _rows(big, INTS), INTS)
    assert after["s"] == 2**63 - 2
    with pytest.raises(GroupError, match=r"s = 9223372036854775808 is beyond BIGINT"):
        apply(state, _rows([("g", 1, 2)], INTS), INTS)
    out_and_in = [("g", -1, -(2**63)), ("g", 1, -(2**63))]  # -1 * -2**63 must not wrap
    *_, (_, _, after) = apply({}, _rows(big + out_and_in, INTS), INTS)
    assert after["s"] == 2**63 - 2


def test_float_sums_add_in_row_order_and_a_group_emptied_keeps_no_residue():
    state: dict = {}
    apply(state, _rows([("g", 1, 0.1), ("g", 1, 0.2)], FLOATS), FLOATS)
    *_, (_, _, after) = apply(state, _rows([("g", 1, 0.3)], FLOATS), FLOATS)
    assert after["s"] == (0.1 + 0.2) + 0.3
    apply(state, _rows([("g", -1, 0.1), ("g", -1, 0.2), ("g", -1, 0.3)], FLOATS), FLOATS)
    ((_, kind, after),) = apply(state, _rows([("g", 1, 1.0)], FLOATS), FLOATS)
    assert kind == "insert" and after["s"] == 1.0


def test_min_and_max_order_doubles_as_java_does_nan_above_all_and_minus_zero_below_zero():
    state: dict = {}
    *_, (_, _, after) = apply(state, _rows([("g", 1, 0.0), ("g", 1, -0.0), ("g", 1, math.nan)], FLOATS), FLOATS)
    results = after
    assert math.copysign(1, results["lo"]) == -1 and math.isnan(results["hi"])
    *_, (_, _, after) = apply(state, _rows([("g", -1, math.nan), ("g", -1, -0.0)], FLOATS), FLOATS)
    results = after
    assert math.copysign(1, results["lo"]) == 1 and math.copysign(1, results["hi"]) == 1


def test_decimals_sum_exactly_and_average_half_up_to_the_result_scale():
    specs = [
        Spec("s", "sum", "decimal", scale=18, precision=38, given_scale=18),
        Spec("a", "avg", "decimal", scale=22, precision=38, given_scale=18),
        Spec("hi", "max", "decimal", given_scale=18),
    ]
    rows = [("g", 1, "0.000000000000000001"), ("g", 1, "1234567890.000000000000000000"), ("g", 1, "0E-18")]
    *_, (_, _, after) = apply({}, _rows(rows, specs), specs)
    assert after == {
        "s": "1234567890.000000000000000001",
        "a": "411522630.0000000000000000003333",
        "hi": "1234567890.000000000000000000",
    }


def test_a_group_with_more_rows_out_than_in_fails_and_another_layout_is_refused():
    with pytest.raises(GroupError, match="group g has more rows taken out than put in"):
        apply({}, _rows([("g", -1, 1)], INTS), INTS)
    state: dict = {}
    apply(state, _rows([("g", 1, 1)], INTS), INTS)
    assert core.held(["g"], [state["g"]], INTS).groups["rows"].to_pylist() == [1]
    with pytest.raises(LayoutError, match="another layout"):  # an entry of other aggregates
        core.held(["g"], [state["g"]], FLOATS)
    with pytest.raises(LayoutError, match="another layout"):  # same fields, other aggregates' signature
        core.held(["g"], [state["g"]], [*INTS[:2], Spec("s", "avg", "int"), *INTS[3:]])
    with pytest.raises(LayoutError, match="another layout"):  # the per-group layout's JSON text
        core.held(["g"], [('{"rows": 1}',)], INTS)


def _java_order(x: float) -> tuple:
    """Java's Double.compareTo: -0.0 below 0.0, NaN above every number (Flink's MIN / MAX order)."""
    return (math.isnan(x), 0.0 if math.isnan(x) else x, math.copysign(1, x))


FLOAT_VALUES = st.one_of(st.none(), st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -2.25, 1e300]))
TEXTS = [Spec("lo", "min", "string"), Spec("hi", "max", "string"), Spec("c", "count", "string")]
TEXT_VALUES = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "é", "Z", "\U0001f600"]))


@pytest.mark.parametrize(
    ("specs", "values"), [(FLOATS, FLOAT_VALUES), (TEXTS, TEXT_VALUES)], ids=["doubles", "strings"]
)
@given(data=st.data())
def test_min_max_of_many_groups_follow_each_groups_held_values(specs, values, data):
    """Many groups in one bucket, each micro-batch touching some: MIN / MAX in Flink's order (Java's for doubles,
    UTF-8 bytes for strings), counts, and DOUBLE sums added one row at a time in order (NaN and infinities too)."""
    groups = [f"g{i}" for i in range(6)]
    batches = data.draw(st.lists(st.lists(st.tuples(st.sampled_from(groups), st.sampled_from([1, -1]), values),
                                          max_size=12), max_size=6))  # fmt: skip
    state: dict = {}
    holding: dict = {g: [] for g in groups}
    order = _java_order if specs is FLOATS else (lambda t: t.encode())
    same = (lambda a, b: _java_order(a) == _java_order(b)) if specs is FLOATS else (lambda a, b: a == b)
    sums = dict.fromkeys(groups, 0.0)  # Flink's SUM: one row at a time, in order; nothing left when no value is
    for batch in batches:
        kept = []
        for g, n, v in batch:
            held = [i for i, h in enumerate(holding[g]) if (h is None) == (v is None) and (v is None or same(h, v))]
            if n > 0 or held:
                holding[g].append(v) if n > 0 else holding[g].pop(held[0])
                kept.append((g, n, v))
                sums[g] += 0.0 if v is None or specs is not FLOATS else n * v
        if not kept:
            continue
        last = {}
        for g, _, results in apply(state, _rows(kept, specs), specs):
            last[g] = results
        for g, _, _ in kept:
            sums[g] = sums[g] if any(v is not None for v in holding[g]) else 0.0
        for g, results in last.items():
            present = [v for v in holding[g] if v is not None]
            if not holding[g]:
                continue  # deleted: its last results were the ones before
            for s in specs:
                got = results[s.name]
                if s.function in ("min", "max"):
                    want = (min if s.function == "min" else max)(present, key=order) if present else None
                    assert (
                        (got is None and want is None) or _java_order(got) == _java_order(want)
                        if specs is FLOATS
                        else got == want
                    )
                elif s.function == "count":
                    assert got == len(present)
                elif s.function == "sum" and present:
                    assert _java_order(got) == _java_order(sums[g])
