"""The core of aggregate_changelog: the state of the groups a micro-batch touches (each group's own state entry) and
its signed rows of them in, those groups' state after and each touched group's results before and after out. numpy
and Arrow; Spark only calls it.

The groups' state is columns, and so is every step: the micro-batch's rows are folded per group (the net change of
its row count, of each aggregate's non-null count and sum), the touched groups' accumulators are gathered, changed and
compared, and their results come out as columns. Python visits no group one by one, except for a DECIMAL
result (rounded half up and checked as Python's decimals) and an AVG of integers whose sum no double holds exactly.
- Row counts and integer sums are kept in two 64-bit halves (high, low: the low 32 bits), so that no sum wraps; a
  SUM beyond BIGINT fails when it is the result, not on the way. DOUBLE sums add the held sum first and then the rows
  in order (numpy's bincount adds one at a time, as Flink's SUM does). DECIMAL sums are 75-digit Arrow decimals.
- MIN / MAX keep how many rows hold each value (as Flink's MinWithRetract / MaxWithRetract), in a table of
  (group, value, rows) per aggregate (in a group's entry: its values and their counts as two lists), so that the
  next best value is known when the best one's last row goes. Values are kept in forms that order as Flink does:
  integers, dates and timestamps as integers, a DOUBLE as its IEEE bits turned into an ordered integer (Java's
  Double.compareTo: -0.0 below 0.0, NaN above everything), a DECIMAL as an Arrow decimal, a STRING as itself (UTF-8
  byte order, Spark's).
"""

from __future__ import annotations

import decimal
import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# The state's layout: a group's entry written in another form (or for other aggregates) is refused, never misread.
LAYOUT = "aggregate_changelog/4"
DECIMALS = decimal.Context(prec=80)
_HELD_DIGITS = 75  # a held DECIMAL sum: Arrow's addition gives one digit more, within its 76
_LOW32 = np.int64(0xFFFFFFFF)
_CANONICAL_NAN = np.array([np.nan]).view(np.int64)[0]
_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)
_EXACT_DOUBLE = 2**53


class LayoutError(ValueError):
    """A group's state in a form this version does not read."""


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

    @property
    def result(self) -> str:
        """How the result comes out: "int" (int64), "float", "bool" or "text" (a DECIMAL, a STRING)."""
        if self.function == "count" or self.carried is None:
            return "int"
        if self.carried in ("decimal", "string"):
            return "text"
        if self.function in ("min", "max"):
            return self.carried
        return "float" if self.function == "avg" or self.carried == "float" else "int"


@dataclass(frozen=True)
class Rows:
    """A bucket's rows of one micro-batch: group texts, signs (+1 in, -1 out), and each aggregate's input values
    (a numpy column, or an object column of texts for decimals and strings) with its null mask."""

    groups: pa.Array  # string
    signs: np.ndarray  # int64
    values: list[np.ndarray | None]  # per spec; None for COUNT(*)
    nulls: list[np.ndarray | None]  # per spec: True where the value is null


@dataclass(frozen=True)
class Bucket:
    """A bucket's groups: one row per group (its text, row count, each aggregate's accumulators), and per MIN / MAX
    the rows holding each value (group, value, rows)."""

    groups: pa.Table
    values: dict[int, pa.Table]  # by the spec's index


@dataclass(frozen=True)
class Results:
    """One side (before or after) of each touched group: whether it has rows, and each aggregate's result column
    (int64, float64, bool or object texts) with its null mask."""

    present: np.ndarray
    values: list[np.ndarray]
    nulls: list[np.ndarray]


@dataclass(frozen=True)
class Changes:
    """The changelog rows of a micro-batch: per row the touched group's index, its kind (INSERT, DELETE,
    UPDATE_BEFORE, UPDATE_AFTER as 0..3) and its results (from the side the kind shows)."""

    groups: pa.Array
    index: np.ndarray
    kinds: np.ndarray
    values: list[np.ndarray]
    nulls: list[np.ndarray]


INSERT, DELETE, UPDATE_BEFORE, UPDATE_AFTER = range(4)


def empty(specs: list[Spec]) -> Bucket:
    return _empty(tuple(specs))


@functools.cache
def _empty(specs: tuple[Spec, ...]) -> Bucket:
    fields = [pa.field("g", pa.string()), pa.field("rows", pa.int64())]
    for i, s in enumerate(specs):
        fields += [pa.field(n, t) for n, t in _accumulators(s, i)]
    values = {
        i: pa.schema([("g", pa.string()), ("k", _key_type(s)), ("n", pa.int64())]).empty_table()
        for i, s in enumerate(specs)
        if _extreme(s)
    }
    return Bucket(pa.schema(fields).empty_table(), values)


def entry_schema(specs: list[Spec]) -> pa.Schema:
    return _entry_schema(tuple(specs))


@functools.cache  # a query's aggregates are fixed: their entries' schema and signature are made once
def _entry_schema(specs: tuple[Spec, ...]) -> pa.Schema:
    """A group's state entry: its accumulators (a DECIMAL as text), per MIN / MAX its values and how many rows hold
    each (as lists: the group's multiset read and written with it), and the layout's signature."""
    fields = [pa.field(f.name, _held_type(f.type)) for f in empty(list(specs)).groups.schema if f.name != "g"]
    for i, s in enumerate(specs):
        if _extreme(s):
            fields += [pa.field(f"v{i}", pa.list_(_held_type(_key_type(s)))), pa.field(f"n{i}", pa.list_(pa.int64()))]
    return pa.schema([*fields, pa.field("layout", pa.string())])


def _held_type(kind: pa.DataType) -> pa.DataType:
    return pa.string() if pa.types.is_decimal(kind) else kind


@functools.cache
def _signature(specs: tuple[Spec, ...]) -> str:
    """The layout and the aggregates' state kinds: an entry written for others is refused, never misread."""
    kinds = ";".join(f"{s.function}:{s.carried}:{s.given_scale}" for s in specs)
    return f"{LAYOUT}/" + hashlib.sha1(kinds.encode()).hexdigest()[:10]


def held(groups: Sequence[str], entries: Sequence[tuple[object, ...]], specs: list[Spec]) -> Bucket:
    """The groups' state from their entries (entry_schema's fields in order); LayoutError for an entry of another
    layout or of other aggregates."""
    base = empty(specs)
    if not groups:
        return base
    schema = entry_schema(specs)
    try:
        if any(len(e) != len(schema) for e in entries):
            raise ValueError("another number of fields")
        columns = {f.name: pa.array(c, f.type) for f, c in zip(schema, zip(*entries))}
    except (ValueError, TypeError, pa.ArrowException):
        raise LayoutError("a state entry in another layout") from None
    if not pc.all(pc.equal(columns["layout"], _signature(tuple(specs)))).as_py():
        raise LayoutError("a state entry in another layout")
    names = pa.array(groups, pa.string())
    table = pa.table({"g": names} | {f.name: columns[f.name].cast(f.type) for f in base.groups.schema if f.name != "g"})
    values = {}
    for i, kept in base.values.items():
        lengths = pc.list_value_length(columns[f"v{i}"]).to_numpy(zero_copy_only=False)
        values[i] = pa.table(
            {
                "g": names.take(pa.array(np.repeat(np.arange(len(groups)), lengths))),
                "k": pc.list_flatten(columns[f"v{i}"]).cast(kept.schema.field("k").type),
                "n": pc.list_flatten(columns[f"n{i}"]),
            }
        )
    return Bucket(table.cast(base.groups.schema), values)


def entries(bucket: Bucket, specs: list[Spec]) -> tuple[list[str], list[tuple[object, ...]]]:
    """Each group's name and entry (entry_schema's fields in order)."""
    groups, schema = bucket.groups, entry_schema(specs)
    count = groups.num_rows
    columns = {f.name: groups[f.name].cast(f.type) for f in schema if f.name in groups.column_names}
    for i, kept in bucket.values.items():
        at = pc.index_in(kept["g"], value_set=groups["g"])
        assert at.null_count == 0, "a MIN / MAX value of a group that holds no rows"
        index = at.to_numpy(zero_copy_only=False)
        order = pa.array(np.argsort(index, kind="stable"))
        offsets = pa.array(np.concatenate([[0], np.cumsum(np.bincount(index, minlength=count))]), pa.int32())
        for name, column in ((f"v{i}", kept["k"]), (f"n{i}", kept["n"])):
            flat = column.combine_chunks().take(order).cast(schema.field(name).type.value_type)
            columns[name] = pa.ListArray.from_arrays(offsets, flat)
    columns["layout"] = pa.array([_signature(tuple(specs))] * count, pa.string())
    return groups["g"].to_pylist(), list(zip(*[columns[f.name].to_pylist() for f in schema]))


def apply(bucket: Bucket, rows: Rows, specs: list[Spec]) -> tuple[Bucket, Changes]:
    """Fold a micro-batch's rows into the bucket: the bucket after (groups that emptied removed) and the changes."""
    encoded = pc.dictionary_encode(rows.groups)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    names = encoded.dictionary
    count = len(names)
    held = bucket.groups
    at = pc.index_in(names, value_set=held["g"])
    existed = at.is_valid().to_numpy(zero_copy_only=False)
    old = held.take(at)  # the touched groups' accumulators; nulls for new groups

    rows_before = _ints(old["rows"])
    rows_after = rows_before + _group_sum(codes, rows.signs, count)
    if (rows_after < 0).any():
        name = names[int(np.argmax(rows_after < 0))].as_py()
        raise GroupError(f"group {name} has more rows taken out than put in: is the input a full changelog?")
    present = rows_after > 0
    new = {"g": names, "rows": pa.array(rows_after)}
    values = dict(bucket.values)
    before, after = Results(existed, [], []), Results(present, [], [])
    for i, s in enumerate(specs):
        if s.carried is None:
            _emit(before, rows_before, np.zeros(count, bool))
            _emit(after, rows_after, np.zeros(count, bool))
            continue
        column, nulls = rows.values[i], rows.nulls[i]
        assert column is not None and nulls is not None  # None only for COUNT(*), whose carried is None
        taken = ~nulls
        where, signs, given = codes[taken], rows.signs[taken], column[taken]
        counted = _ints(old[f"c{i}"]) + _group_sum(where, signs, count)
        new[f"c{i}"] = pa.array(counted)
        if s.function == "count":
            _emit(before, _ints(old[f"c{i}"]), np.zeros(count, bool))
            _emit(after, counted, np.zeros(count, bool))
        elif _extreme(s):
            values[i], best = _fold_values(s, bucket.values[i], names, where, signs, given)
            new[f"b{i}"] = best
            _emit(before, *_best_result(s, old[f"b{i}"]))
            _emit(after, *_best_result(s, best))
        else:
            _fold_sum(s, i, old, new, counted, where, signs, given, before, after)
    groups = pa.table(new, schema=held.schema).filter(present)
    if not present.all():  # an emptied group's values go with it (a full changelog takes them all out anyway)
        gone = names.filter(pa.array(~present))
        values = {i: v.filter(pc.invert(pc.is_in(v["g"], value_set=gone))) for i, v in values.items()}
    untouched = held.filter(pc.invert(pc.is_in(held["g"], value_set=names)))
    return Bucket(pa.concat_tables([untouched, groups]), values), _changes(names, before, after)


def _accumulators(s: Spec, i: int) -> list[tuple[str, pa.DataType]]:
    if s.carried is None:
        return []
    if s.function == "count":
        return [(f"c{i}", pa.int64())]
    if _extreme(s):
        return [(f"c{i}", pa.int64()), (f"b{i}", _key_type(s))]
    if s.carried == "float":
        return [(f"c{i}", pa.int64()), (f"s{i}", pa.float64())]
    if s.carried == "decimal":
        return [(f"c{i}", pa.int64()), (f"s{i}", pa.decimal256(_HELD_DIGITS, s.given_scale))]
    return [(f"c{i}", pa.int64()), (f"h{i}", pa.int64()), (f"l{i}", pa.int64())]


def _extreme(s: Spec) -> bool:
    return s.carried is not None and s.function in ("min", "max")


def _key_type(s: Spec) -> pa.DataType:
    if s.carried == "string":
        return pa.string()
    return pa.decimal256(76, s.given_scale) if s.carried == "decimal" else pa.int64()


def _ints(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    ints: np.ndarray = pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    return ints


def _emit(side: Results, values: np.ndarray, nulls: np.ndarray) -> None:
    side.values.append(values)
    side.nulls.append(nulls)


def _fold_sum(
    s: Spec,
    i: int,
    old: pa.Table,
    new: dict[str, pa.Array],
    counted: np.ndarray,
    where: np.ndarray,
    signs: np.ndarray,
    given: np.ndarray,
    before: Results,
    after: Results,
) -> None:
    """SUM / AVG: the held sums changed by the micro-batch's, both sides' results."""
    counted_before, count = _ints(old[f"c{i}"]), len(counted)
    if s.carried == "float":
        held = pc.fill_null(old[f"s{i}"], 0.0).to_numpy(zero_copy_only=False)
        index = np.concatenate([np.arange(count), where])  # held sums first, then the rows in order
        sums = np.bincount(index, weights=np.concatenate([held, signs * given]), minlength=count)
        sums[counted == 0] = 0.0  # the group's last value went: no rounding residue stays behind
        new[f"s{i}"] = pa.array(sums)
        for side, n, total in ((before, counted_before, held), (after, counted, sums)):
            _emit(side, total / np.maximum(n, 1) if s.function == "avg" else total, n == 0)
    elif s.carried == "decimal":
        held = pc.fill_null(old[f"s{i}"], pa.scalar(0, old[f"s{i}"].type))
        typed = pa.array(given, pa.string()).cast(pa.decimal256(76, s.given_scale))
        signed = pc.if_else(pa.array(signs > 0), typed, pc.negate(typed))
        delta = pa.table({"g": where, "v": signed}).group_by("g").aggregate([("v", "sum")])
        at = pc.index_in(pa.array(np.arange(count)), value_set=delta["g"])
        sums = pc.fill_null(delta["v_sum"].combine_chunks().take(at).cast(held.type), pa.scalar(0, held.type))
        total = pc.add(held, sums).cast(held.type)
        total = pc.if_else(pa.array(counted == 0), pa.scalar(0, held.type), total)
        new[f"s{i}"] = total
        for side, n, t in ((before, counted_before, held), (after, counted, total)):
            _emit(side, _decimal_results(s, n, t), n == 0)
    else:
        high = _ints(old[f"h{i}"]) + _group_sum(where, signs * (given >> 32), count)
        low = _ints(old[f"l{i}"]) + _group_sum(where, signs * (given & _LOW32), count)
        high, low = high + (low >> 32), low & _LOW32  # low back to its 32 bits: the carry (or borrow) goes high
        high[counted == 0], low[counted == 0] = 0, 0
        new[f"h{i}"], new[f"l{i}"] = pa.array(high), pa.array(low)
        held = (_ints(old[f"h{i}"]), _ints(old[f"l{i}"]))
        for side, n, (h, lo) in ((before, counted_before, held), (after, counted, (high, low))):
            _emit(side, _integer_results(s, n, h, lo), n == 0)


def _group_sum(codes: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """Each group's exact int64 sum of `values`: signs, or an integer's 32-bit halves (below 2**32 in magnitude, no
    sum wraps below 2**31 rows a group)."""
    sums = np.zeros(count, np.int64)
    np.add.at(sums, codes, values)
    return sums


def _integer_results(s: Spec, n: np.ndarray, high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """A SUM of integers (BIGINT; beyond it, an error) or its AVG (a DOUBLE of the exact sum over the count)."""
    fits = (high >= -(2**31)) & (high < 2**31)
    exact: np.ndarray = (high << 32) + low  # right where it fits
    if s.function == "sum":
        beyond = (n > 0) & ~fits
        if beyond.any():
            first = int(np.argmax(beyond))
            raise GroupError(
                f"{s.name} = {(int(high[first]) << 32) + int(low[first])} is beyond BIGINT (Spark's SUM of integers)"
            )
        return exact
    averages: np.ndarray = exact / np.maximum(n, 1)
    for g in np.flatnonzero((n > 0) & ~(fits & (np.abs(exact) < _EXACT_DOUBLE))):  # a sum no double holds exactly
        averages[g] = ((int(high[g]) << 32) + int(low[g])) / int(n[g])
    return averages


def _decimal_results(s: Spec, n: np.ndarray, total: pa.Array) -> np.ndarray:
    """A DECIMAL SUM (the column's scale) or AVG (divided exactly, rounded half up to its scale), as Spark's text,
    checked against the result's precision."""
    quantum = decimal.Decimal(1).scaleb(-s.scale)
    texts = np.full(len(n), "", dtype=object)
    for g, value in enumerate(total.to_pylist()):
        if n[g] == 0:
            continue
        if s.function == "avg":
            value = DECIMALS.divide(value, int(n[g]))
        fitted = value.quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=DECIMALS)
        if len(fitted.as_tuple().digits) > s.precision:
            raise GroupError(f"{s.name} = {fitted} does not fit DECIMAL({s.precision},{s.scale})")
        texts[g] = str(fitted)
    return texts


def _keys(s: Spec, given: np.ndarray) -> pa.Array:
    """Values as keys that order as Flink orders them."""
    if s.carried == "float":
        bits = np.where(np.isnan(given), _CANONICAL_NAN, given.astype(np.float64).view(np.int64))
        return pa.array(np.where(bits >= 0, bits, bits ^ _FLIP))  # Java's Double.compareTo order
    if s.carried == "decimal":
        return pa.array(given, pa.string()).cast(_key_type(s))
    if s.carried == "string":
        return pa.array(given, pa.string())
    return pa.array(given.astype(np.int64))


def _fold_values(
    s: Spec, held: pa.Table, names: pa.Array, where: np.ndarray, signs: np.ndarray, given: np.ndarray
) -> tuple[pa.Table, pa.Array]:
    """A MIN / MAX's (group, value, rows) changed by the micro-batch; the touched groups' best values after."""
    change = pa.table({"g": names.take(pa.array(where)), "k": _keys(s, given), "n": pa.array(signs, pa.int64())})
    summed = pa.concat_tables([held, change]).group_by(["g", "k"]).aggregate([("n", "sum")])
    kept = summed.filter(pc.greater(summed["n_sum"], 0))
    values = pa.table({"g": kept["g"], "k": kept["k"], "n": kept["n_sum"]})
    touched = values.filter(pc.is_in(values["g"], value_set=names))
    best = touched.group_by("g").aggregate([("k", s.function)])
    at = pc.index_in(names, value_set=best["g"])
    return values, best[f"k_{s.function}"].combine_chunks().take(at).cast(_key_type(s))


def _best_result(s: Spec, best: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    nulls = best.is_null().to_numpy(zero_copy_only=False)
    if s.carried in ("decimal", "string"):
        texts = best.cast(pa.string()) if s.carried == "decimal" else best
        return np.array(pc.fill_null(texts, "").to_pylist(), dtype=object), nulls
    keys = _ints(best)
    if s.carried == "float":
        return np.where(keys >= 0, keys, keys ^ _FLIP).view(np.float64), nulls
    return (keys != 0 if s.carried == "bool" else keys), nulls


def _changes(names: pa.Array, before: Results, after: Results) -> Changes:
    """Each touched group's change: INSERT (new), DELETE (emptied: its last results), UPDATE_BEFORE and _AFTER when
    any result changed (a DOUBLE by its bits, every NaN alike), nothing when none did."""
    changed = np.zeros(len(names), bool)
    for b, a, bn, an in zip(before.values, after.values, before.nulls, after.nulls):
        if b.dtype.kind == "f":
            b, a = (np.where(np.isnan(x), _CANONICAL_NAN, x.view(np.int64)) for x in (b, a))
        changed |= (bn != an) | (~bn & (b != a))
    inserted, deleted = ~before.present & after.present, before.present & ~after.present
    updated = before.present & after.present & changed
    per_group = inserted.astype(np.int64) + deleted + 2 * updated
    index = np.repeat(np.arange(len(names)), per_group)
    second = np.zeros(len(index), bool)
    second[1:] = index[1:] == index[:-1]
    kinds = np.select([inserted[index], deleted[index], second], [INSERT, DELETE, UPDATE_AFTER], UPDATE_BEFORE).astype(
        np.int8
    )
    from_after = (kinds == INSERT) | (kinds == UPDATE_AFTER)
    values = [np.where(from_after, a[index], b[index]) for b, a in zip(before.values, after.values)]
    nulls = [np.where(from_after, a[index], b[index]) for b, a in zip(before.nulls, after.nulls)]
    return Changes(names, index, kinds, values, nulls)
