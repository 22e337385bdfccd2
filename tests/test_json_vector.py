"""The column-wise JSON writer (formats/json_vector.py) writes the same objects as orjson row by row, and
hands back every batch it cannot write exactly. Pure logic: no Kafka."""

from __future__ import annotations

import math

import orjson
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark_upsert_kafka.formats.json_vector import encode_objects, supports

FLAT = {
    pa.bool_(): st.booleans(),
    pa.int8(): st.integers(-(2**7), 2**7 - 1),
    pa.int32(): st.integers(-(2**31), 2**31 - 1),
    pa.int64(): st.integers(-(2**63), 2**63 - 1),
    pa.float32(): st.floats(width=32, allow_nan=False, allow_infinity=False),
    pa.float64(): st.floats(allow_nan=False, allow_infinity=False),
    pa.string(): st.text(alphabet=st.characters(min_codepoint=0x20, exclude_categories=("Cs",))),
}


@st.composite
def flat_batches(draw) -> pa.RecordBatch:
    types = draw(st.lists(st.sampled_from(list(FLAT)), min_size=1, max_size=5))
    names = draw(st.lists(st.text(min_size=1, max_size=6), min_size=len(types), max_size=len(types), unique=True))
    rows = draw(st.integers(0, 6))
    columns = [pa.array([draw(st.none() | FLAT[t]) for _ in range(rows)], t) for t in types]
    return pa.RecordBatch.from_arrays(columns, names=names)


def _values(payloads: list[bytes], schema: pa.Schema) -> list[pa.Array]:
    """Parse the objects back, column by column in the schema's types (float32 compares as float32)."""
    rows = [orjson.loads(p) for p in payloads]
    return [pa.array([r[f.name] for r in rows], f.type) for f in schema]


@settings(max_examples=200, deadline=None)
@given(flat_batches())
def test_column_wise_objects_equal_orjson_row_objects(batch):
    assert supports(batch.schema)
    vector = encode_objects(batch)
    assert vector is not None
    reference = [orjson.dumps(row) for row in batch.to_pylist()]
    assert _values(vector, batch.schema) == _values(reference, batch.schema)
    assert all(list(orjson.loads(p)) == batch.schema.names for p in vector), "fields keep the schema's order"


def test_quotes_backslashes_and_unicode_are_escaped_exactly():
    batch = pa.RecordBatch.from_pydict({'a"b\\': ['say "hi" \\ there', "ünï €"]})
    assert encode_objects(batch) == [orjson.dumps(r) for r in batch.to_pylist()]


def test_values_without_one_json_spelling_take_the_row_path():
    assert encode_objects(pa.RecordBatch.from_pydict({"x": [1.0, math.nan]})) is None
    assert encode_objects(pa.RecordBatch.from_pydict({"x": [1.0, math.inf]})) is None
    assert encode_objects(pa.RecordBatch.from_pydict({"s": ["ok", "line\nbreak"]})) is None
    assert not supports(pa.schema([("d", pa.date32())]))
    assert not supports(pa.schema([("l", pa.list_(pa.int32()))]))
