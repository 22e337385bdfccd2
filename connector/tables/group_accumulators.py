"""The core of aggregate_changelog: a state bucket's groups and a micro-batch's signed rows of that bucket in, each
touched group's result before and after out. Pure Python and numpy; Spark only calls it.

A micro-batch's rows are folded as columns, never one by one: per group, the net change of its row count, of each
aggregate's non-null count and sum (numpy's bincount adds in row order, as Flink's SUM adds one row at a time;
integers are summed in two 32-bit halves so that no 64-bit sum wraps; decimals exactly, as 76-digit Arrow decimals),
and for MIN / MAX the net change of each value's count (as Flink's MinWithRetract / MaxWithRetract keep a count per
value, so that the next best value is known when the best one's last row goes). Only then does Python visit each
touched group once, and each distinct value of a MIN / MAX once, to apply those net changes and write the results.

A group's accumulators: `[rows, per aggregate: [count] | [count, sum] | [best, {value: n}]]`. Values are
kept as keys that order as Spark does: integers, dates and timestamps as integers, a DOUBLE as its IEEE bits
turned into an ordered integer (Java's Double.compareTo: -0.0 below 0.0, NaN above everything; Flink's order), a
DECIMAL as Spark's text of it, a STRING as itself.
"""

from __future__ import annotations

import decimal
import json
import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# The state's layout: a checkpoint's bucket written in another form is refused, never misread.
LAYOUT = "aggregate_changelog/2"
DECIMALS = decimal.Context(prec=80)
_MAX_LONG = 2**63 - 1
_LOW32 = np.int64(0xFFFFFFFF)
_CANONICAL_NAN = np.array([np.nan]).view(np.int64)[0]
_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)


class LayoutError(ValueError):
    """A bucket's state in a form this version does not read."""


class GroupError(ValueError):
    """A group whose rows cannot be aggregated (more rows out than in, a result beyond its type)."""


@dataclass(frozen=True)
class Spec:
    """One aggregate as the core sees it: its result name, function, and how its input values arrive."""

    name: str
    function: str  # count, sum, avg, min, max
    carried: str | None  # None: COUNT(*); "int", "float", "bool", "decimal" or "string"
    scale: int = 0  # a DECIMAL result's scale (SUM: the column's, AVG: its own)
    precision: int = 0  # a DECIMAL result's precision
    long_result: bool = False  # a SUM whose result is BIGINT: beyond it, an error
    given_scale: int = 0  # a DECIMAL input's scale


@dataclass(frozen=True)
class Rows:
    """A bucket's rows of one micro-batch: group texts, signs (+1 in, -1 out), and each aggregate's input values
    (a numpy column, or an object column of texts for decimals and strings) with its null mask."""

    groups: pa.Array  # string
    signs: np.ndarray  # int64
    values: list[np.ndarray | None]  # per spec; None for COUNT(*)
    nulls: list[np.ndarray | None]  # per spec: True where the value is null


def decode(blob: bytes | None) -> dict[str, list]:
    if blob is None:
        return {}
    try:
        layout, groups = pickle.loads(blob)
    except Exception:
        layout = None
    if layout != LAYOUT:
        raise LayoutError("a state bucket in another layout")
    return groups


def encode(groups: dict[str, list]) -> bytes:
    return pickle.dumps((LAYOUT, groups), protocol=4)


def apply(groups: dict[str, list], rows: Rows, specs: list[Spec]) -> list[tuple[str, str | None, str | None]]:
    """Fold a micro-batch's rows into `groups` (changed in place: emptied groups removed); each touched group's
    (text, results before, results after), a result None where the group did not exist."""
    encoded = pc.dictionary_encode(rows.groups)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    names = encoded.dictionary.to_pylist()
    held = [groups.get(g) for g in names]
    before = [_results(specs, acc) for acc in held]
    count = len(names)
    row_deltas = _sum_ints(codes, rows.signs, count)
    deltas = [_deltas(s, codes, rows, i, count, held) for i, s in enumerate(specs)]
    out = []
    for g, name in enumerate(names):
        acc = held[g] or [0, *[_empty(s) for s in specs]]
        acc[0] += int(row_deltas[g])
        if acc[0] < 0:
            raise GroupError(f"group {name} has more rows taken out than put in: is the input a full changelog?")
        for s, state, delta in zip(specs, acc[1:], deltas):
            _fold(s, state, delta, g)
        after = _results(specs, acc) if acc[0] > 0 else None
        if after is None:
            groups.pop(name, None)
        else:
            groups[name] = acc
        out.append((name, before[g], after))
    return out


def _empty(s: Spec) -> list:
    if s.function in ("min", "max"):
        return [None, {}]
    if s.function == "count":
        return [0]
    return [0, decimal.Decimal(0) if s.carried == "decimal" else (0.0 if s.carried == "float" else 0)]


def _sum_ints(codes: np.ndarray, values: np.ndarray, count: int) -> list[int]:
    """Each group's exact sum of int64 values: the two 32-bit halves summed apart (no 64-bit sum wraps below 2**31
    rows a group), joined as Python integers."""
    high, low = np.zeros(count, np.int64), np.zeros(count, np.int64)
    np.add.at(high, codes, values >> 32)
    np.add.at(low, codes, values & _LOW32)
    return [(h << 32) + lo for h, lo in zip(high.tolist(), low.tolist())]


def _deltas(s: Spec, codes: np.ndarray, rows: Rows, i: int, count: int, held: list) -> Any:
    """A micro-batch's net change of one aggregate, per group (indexed by the group's code)."""
    if s.carried is None:
        return None
    present = ~rows.nulls[i]
    where, signs = codes[present], rows.signs[present]
    counted = _sum_ints(where, signs, count)
    if s.function == "count":
        return counted
    values = rows.values[i][present]
    if s.function in ("sum", "avg"):
        if s.carried == "float":
            # held sums first, then the rows in order: bincount adds one at a time, as Flink's SUM does
            start = [acc[1 + i][1] if acc else 0.0 for acc in held]
            index = np.concatenate([np.arange(count), where])
            weights = np.concatenate([np.asarray(start, np.float64), signs * values])
            return counted, np.bincount(index, weights=weights, minlength=count).tolist()
        if s.carried == "decimal":
            return counted, _sum_decimals(where, signs, values, s.given_scale, count)
        # in and out summed apart: -1 * -2**63 would wrap
        ins, outs = (_sum_ints(where[sign], values[sign], count) for sign in (signs > 0, signs < 0))
        return counted, [a - b for a, b in zip(ins, outs)]
    return counted, _value_changes(s, where, signs, values)


def _sum_decimals(where: np.ndarray, signs: np.ndarray, texts: np.ndarray, scale: int, count: int) -> list:
    """Each group's exact sum of signed decimal texts, as 76-digit Arrow decimals."""
    sums = [decimal.Decimal(0)] * count
    if not len(where):
        return sums
    typed = pa.array(texts, pa.string()).cast(pa.decimal256(76, scale))
    signed = pc.if_else(pa.array(signs > 0), typed, pc.negate(typed))
    table = pa.table({"g": where, "v": signed}).group_by("g").aggregate([("v", "sum")])
    for g, total in zip(table["g"].to_pylist(), table["v_sum"].to_pylist()):
        sums[g] = total
    return sums


def _value_changes(s: Spec, where: np.ndarray, signs: np.ndarray, values: np.ndarray) -> dict[int, list]:
    """Per group, each value's net change of count: [(key, n), ...]."""
    if s.carried == "float":
        bits = values.astype(np.float64).view(np.int64)
        keys = pa.array(np.where(np.isnan(values), _CANONICAL_NAN, bits))
    elif s.carried in ("decimal", "string"):
        keys = pa.array(values, pa.string())
    else:
        keys = pa.array(values.astype(np.int64))
    table = pa.table({"g": where, "k": keys, "n": signs}).group_by(["g", "k"]).aggregate([("n", "sum")])
    changes: dict[int, list] = {}
    for g, k, n in zip(table["g"].to_pylist(), table["k"].to_pylist(), table["n_sum"].to_pylist()):
        if n:
            changes.setdefault(g, []).append((k, n))
    return changes


def _fold(s: Spec, state: list, delta: Any, g: int) -> None:
    if delta is None:
        return
    if s.function == "count":
        state[0] += delta[g]
        return
    counted, changes = delta
    if s.function in ("min", "max"):
        _fold_extreme(s, state, changes.get(g, ()))
        return
    state[0] += counted[g]
    if s.function in ("sum", "avg"):
        if state[0] == 0:
            state[1] = _empty(s)[1]  # the group's last value went: no rounding residue stays behind
        elif s.carried == "decimal":
            state[1] = DECIMALS.add(state[1], changes[g])
        elif s.carried == "float":
            state[1] = changes[g]  # held sum included
        else:
            state[1] += changes[g]


def _fold_extreme(s: Spec, state: list, changes: Any) -> None:
    """A MIN / MAX's held values changed by `changes`; its best value moved to the best one still held."""
    values: dict = state[1]
    order = _order_of(s)
    pick = min if s.function == "min" else max
    gained = []
    for key, n in changes:
        held = values.get(key, 0) + n
        if held > 0:
            values[key] = held
            if n > 0:
                gained.append(key)
        else:
            values.pop(key, None)
    best = state[0]
    if best is not None and best not in values:
        best = pick(values, key=order) if values else None  # the best value's last row went: as Flink's MapView scan
    elif gained:
        best = pick(gained if best is None else [best, *gained], key=order)
    state[0] = best


def _order_of(s: Spec) -> Any:
    if s.carried == "float":
        return lambda bits: bits if bits >= 0 else bits ^ int(_FLIP)  # Java's Double.compareTo order
    if s.carried == "decimal":
        return decimal.Decimal
    return None


def _results(specs: list[Spec], acc: list | None) -> str | None:
    """The group's results as the JSON text from_json reads (None: no group)."""
    if acc is None or acc[0] <= 0:
        return None
    return json.dumps({s.name: _result(s, acc[0], state) for s, state in zip(specs, acc[1:])}, allow_nan=True)


def _result(s: Spec, rows: int, state: list) -> Any:
    if s.carried is None:
        return rows
    if s.function == "count":
        return state[0]
    if s.function in ("min", "max"):
        return _value(s, state[0])
    if state[0] == 0:
        return None  # no non-null value: SUM, AVG are null
    if s.carried == "decimal":
        total = state[1]
        value = total if s.function == "sum" else DECIMALS.divide(total, state[0])
        quantum = decimal.Decimal(1).scaleb(-s.scale)
        fitted = value.quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=DECIMALS)
        if len(fitted.as_tuple().digits) > s.precision:
            raise GroupError(f"{s.name} = {fitted} does not fit DECIMAL({s.precision},{s.scale})")
        return str(fitted)
    if s.function == "avg":
        return state[1] / state[0]
    if s.long_result and not -_MAX_LONG - 1 <= state[1] <= _MAX_LONG:
        raise GroupError(f"{s.name} = {state[1]} is beyond BIGINT (Spark's SUM of integers)")
    return state[1]


def _value(s: Spec, key: Any) -> Any:
    """A held value's key as the JSON value of the result."""
    if key is None:
        return None
    if s.carried == "float":
        return float(np.int64(key).view(np.float64))
    if s.carried == "bool":
        return bool(key)
    return key
