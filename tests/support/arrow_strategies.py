"""Random Arrow batches for the formats' property tests: columns of every Spark type (as Arrow), nested, with
nullable and required members, and rows of them."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=True)
PRIMITIVES = {
    pa.bool_(): st.booleans(),
    pa.int8(): st.integers(-(2**7), 2**7 - 1),
    pa.int16(): st.integers(-(2**15), 2**15 - 1),
    pa.int32(): st.integers(-(2**31), 2**31 - 1),
    pa.int64(): st.integers(-(2**63), 2**63 - 1),
    pa.float32(): FLOAT32,
    pa.float64(): st.floats(allow_nan=False, allow_infinity=True),
    pa.decimal128(10, 2): st.decimals(min_value=-(10**7), max_value=10**7, places=2, allow_nan=False),
    pa.decimal128(38, 10): st.decimals(min_value=-(10**27), max_value=10**27, places=10, allow_nan=False),
    pa.string(): st.text(),
    pa.binary(): st.binary(max_size=20),
    pa.date32(): st.dates(),
    pa.timestamp("us", tz="UTC"): st.datetimes(timezones=st.just(dt.timezone.utc)),
    pa.timestamp("us"): st.datetimes(),
}
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def types(depth: int = 2) -> st.SearchStrategy[pa.DataType]:
    """Any Spark column type (as Arrow), nested up to `depth`, with nullable and required members."""
    leaf = st.sampled_from(list(PRIMITIVES))
    if depth == 0:
        return leaf
    inner = types(depth - 1)
    field = st.tuples(inner, st.booleans())
    return st.one_of(
        leaf,
        field.map(lambda f: pa.list_(pa.field("element", f[0], nullable=f[1]))),
        field.map(lambda f: pa.map_(pa.string(), pa.field("value", f[0], nullable=f[1]))),
        st.lists(field, min_size=1, max_size=3).map(
            lambda fs: pa.struct([pa.field(f"f{i}", t, nullable=n) for i, (t, n) in enumerate(fs)])
        ),
    )


def values(t: pa.DataType) -> st.SearchStrategy:
    if pa.types.is_list(t):
        return st.lists(_maybe_null(t.value_field), max_size=3)
    if pa.types.is_map(t):
        pairs = st.dictionaries(st.text(max_size=5), _maybe_null(t.item_field), max_size=3)
        return pairs.map(lambda d: list(d.items()))
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: _maybe_null(f) for f in t})
    return PRIMITIVES[t]


def _maybe_null(f: pa.Field) -> st.SearchStrategy:
    return st.none() | values(f.type) if f.nullable else values(f.type)


@st.composite
def batches(draw, column_types: st.SearchStrategy[pa.DataType] | None = None, max_columns: int = 4):
    column = st.tuples(types() if column_types is None else column_types, st.booleans())
    fields = draw(st.lists(column, min_size=1, max_size=max_columns))
    schema = pa.schema([pa.field(f"c{i}", t, nullable=n) for i, (t, n) in enumerate(fields)])
    rows = draw(st.lists(st.tuples(*(_maybe_null(f) for f in schema)), max_size=8))
    columns = [pa.array([r[i] for r in rows], type=f.type) for i, f in enumerate(schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)
