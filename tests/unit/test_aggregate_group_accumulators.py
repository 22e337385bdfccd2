"""aggregate_changelog's core (tables/group_accumulators.py) against the aggregates computed afresh from every row
each group holds: for any sequence of micro-batches of rows in and out, each touched group's results before and
after are COUNT, SUM, AVG, MIN and MAX of the rows it holds then; the exact cases (64-bit extremes, decimals, NaN and
-0.0 as Flink orders them) one by one; the state's bytes round-trip and another layout is refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark_upsert_kafka.tables.group_accumulators import GroupError, LayoutError, Rows, Spec, apply, decode, encode

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


def _afresh(held: list, specs: list[Spec]) -> str | None:
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
    return json.dumps(out)


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
        assert got == [(g, before[g], _afresh(holding[g], INTS)) for g in dict.fromkeys(g for g, _, _ in batch)]
        state = decode(encode(state))


def test_sums_of_64_bit_extremes_are_exact_and_a_sum_beyond_bigint_fails():
    state: dict = {}
    big = [("g", 1, 2**63 - 1), ("g", 1, 2**63 - 1), ("g", 1, -(2**63))]  # past BIGINT on the way, not at the end
    ((_, _, after),) = apply(state, _rows(big, INTS), INTS)
    assert json.loads(after)["s"] == 2**63 - 2
    with pytest.raises(GroupError, match=r"s = 9223372036854775808 is beyond BIGINT"):
        apply(state, _rows([("g", 1, 2)], INTS), INTS)
    out_and_in = [("g", -1, -(2**63)), ("g", 1, -(2**63))]  # -1 * -2**63 must not wrap
    ((_, _, after),) = apply({}, _rows(big + out_and_in, INTS), INTS)
    assert json.loads(after)["s"] == 2**63 - 2


def test_float_sums_add_in_row_order_and_a_group_emptied_keeps_no_residue():
    state: dict = {}
    apply(state, _rows([("g", 1, 0.1), ("g", 1, 0.2)], FLOATS), FLOATS)
    ((_, _, after),) = apply(state, _rows([("g", 1, 0.3)], FLOATS), FLOATS)
    assert json.loads(after)["s"] == (0.1 + 0.2) + 0.3
    apply(state, _rows([("g", -1, 0.1), ("g", -1, 0.2), ("g", -1, 0.3)], FLOATS), FLOATS)
    ((_, before, after),) = apply(state, _rows([("g", 1, 1.0)], FLOATS), FLOATS)
    assert before is None and json.loads(after)["s"] == 1.0


def test_min_and_max_order_doubles_as_java_does_nan_above_all_and_minus_zero_below_zero():
    state: dict = {}
    ((_, _, after),) = apply(state, _rows([("g", 1, 0.0), ("g", 1, -0.0), ("g", 1, math.nan)], FLOATS), FLOATS)
    results = json.loads(after)
    assert math.copysign(1, results["lo"]) == -1 and math.isnan(results["hi"])
    ((_, _, after),) = apply(state, _rows([("g", -1, math.nan), ("g", -1, -0.0)], FLOATS), FLOATS)
    results = json.loads(after)
    assert math.copysign(1, results["lo"]) == 1 and math.copysign(1, results["hi"]) == 1


def test_decimals_sum_exactly_and_average_half_up_to_the_result_scale():
    specs = [
        Spec("s", "sum", "decimal", scale=18, precision=38, given_scale=18),
        Spec("a", "avg", "decimal", scale=22, precision=38, given_scale=18),
        Spec("hi", "max", "decimal"),
    ]
    rows = [("g", 1, "0.000000000000000001"), ("g", 1, "1234567890.000000000000000000"), ("g", 1, "0E-18")]
    ((_, _, after),) = apply({}, _rows(rows, specs), specs)
    assert json.loads(after) == {
        "s": "1234567890.000000000000000001",
        "a": "411522630.0000000000000000003333",
        "hi": "1234567890.000000000000000000",
    }


def test_a_group_with_more_rows_out_than_in_fails_and_another_layout_is_refused():
    with pytest.raises(GroupError, match="group g has more rows taken out than put in"):
        apply({}, _rows([("g", -1, 1)], INTS), INTS)
    with pytest.raises(LayoutError):
        decode(b'{"rows": 1}')
