"""The column-wise JSON writer (formats/json/vector.py) writes the same bytes as the row path, and a record's
bytes depend on its row alone, never on the rest of its batch. Pure logic: no Kafka."""

from __future__ import annotations

import math

import orjson
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark_upsert_kafka.formats import CodecContext, make_codec
from pyspark_upsert_kafka.formats.json.vector import encode_objects, supports

FLAT = {
    pa.bool_(): st.booleans(),
    pa.int8(): st.integers(-(2**7), 2**7 - 1),
    pa.int32(): st.integers(-(2**31), 2**31 - 1),
    pa.int64(): st.integers(-(2**63), 2**63 - 1),
    # NaN, the infinities, -0.0, subnormals and integral values included
    pa.float32(): st.floats(width=32) | st.integers(-(2**24), 2**24).map(float),
    pa.float64(): st.floats() | st.integers(-(2**53), 2**53).map(float),
    pa.string(): st.text(alphabet=st.characters(exclude_categories=("Cs",))),  # control characters too
}


@st.composite
def flat_batches(draw) -> pa.RecordBatch:
    types = draw(st.lists(st.sampled_from(list(FLAT)), min_size=1, max_size=5))
    names = draw(st.lists(st.text(min_size=1, max_size=6), min_size=len(types), max_size=len(types), unique=True))
    rows = draw(st.integers(0, 6))
    columns = [pa.array([draw(st.none() | FLAT[t]) for _ in range(rows)], t) for t in types]
    return pa.RecordBatch.from_arrays(columns, names=names)


def json_encoder(schema: pa.Schema):
    return make_codec("json", "value.format", {}, CodecContext("value", ("t",))).encoder(schema)


def _values(payloads: list[bytes], schema: pa.Schema) -> list[pa.Array]:
    """Parse the objects back, column by column in the schema's types. JSON has one number type: an integral
    float comes back as a Python int, which Arrow refuses for float32 beyond 2^24 (it would round)."""
    rows = [orjson.loads(p) for p in payloads]

    def value(v, t):
        if v is None or not pa.types.is_floating(t):
            return v
        return float(v) if not isinstance(v, str) else {"NaN": math.nan, "Infinity": math.inf}.get(v, -math.inf)

    return [pa.array([value(r[f.name], f.type) for r in rows], f.type) for f in schema]


def sent_to_the_row_path(batch: pa.RecordBatch) -> bool:
    """Whether the batch holds what the column-wise path declines (its module says so): a string with a control
    character, or with a character beyond the Basic Multilingual Plane (Jackson writes those escaped)."""
    return any(
        isinstance(v, str) and any(ord(c) < 0x20 or ord(c) > 0xFFFF for c in v)
        for column in batch.columns
        for v in column.to_pylist()
    )


@given(flat_batches())
@example(pa.RecordBatch.from_pydict({"f": pa.array([16777218.0], pa.float32())}))
@example(pa.RecordBatch.from_pydict({"s": ["ok", "\U0001f30d"]}))
def test_column_wise_objects_read_back_as_the_batchs_values(batch):
    assert supports(batch.schema)
    vector = encode_objects(batch)
    assert (vector is None) == sent_to_the_row_path(batch), "declined only what the row path must write"
    if vector is None:  # the row path's bytes are the next test's
        return
    assert [_comparable(c) for c in _values(vector, batch.schema)] == [_comparable(c) for c in batch.columns]
    assert all(list(orjson.loads(p)) == batch.schema.names for p in vector), "fields keep the schema's order"


def _comparable(column: pa.Array) -> list:
    """The values, with NaN equal to NaN and -0.0 distinct from 0.0 (the bytes tell them apart)."""
    return ["NaN" if isinstance(v, float) and math.isnan(v) else repr(v) for v in column.to_pylist()]


@given(flat_batches())
def test_column_wise_path_and_row_path_write_the_same_bytes(batch):
    encoder = json_encoder(batch.schema)
    vector = encode_objects(batch)
    encoder.column_wise = False  # force the row path
    assert (vector is None) == sent_to_the_row_path(batch), "declined only what the row path must write"
    assert vector is None or vector == encoder.encode(batch)


@given(flat_batches())
@example(pa.RecordBatch.from_pydict({"k": [1.0, math.nan]}))
@example(pa.RecordBatch.from_pydict({"k": [1.0], "s": ["\x01"]}))
def test_a_records_bytes_are_the_same_alone_and_in_any_batch(batch):
    encoder = json_encoder(batch.schema)
    together = encoder.encode(batch)
    alone = [encoder.encode(batch.slice(i, 1))[0] for i in range(batch.num_rows)]
    assert together == alone


def test_a_double_key_is_written_alike_alone_and_next_to_a_nan():
    encoder = json_encoder(pa.schema([("k", pa.float64())]))
    alone = encoder.encode(pa.RecordBatch.from_pydict({"k": [1.0]}))
    with_nan = encoder.encode(pa.RecordBatch.from_pydict({"k": [1.0, math.nan]}))
    assert alone == [b'{"k":1.0}']
    assert with_nan == [b'{"k":1.0}', b'{"k":"NaN"}']


def test_quotes_backslashes_and_unicode_are_escaped_exactly():
    batch = pa.RecordBatch.from_pydict({'a"b\\': ['say "hi" \\ there', "ünï €"]})
    assert encode_objects(batch) == [orjson.dumps(r) for r in batch.to_pylist()]


def test_control_characters_take_the_row_path_and_other_types_are_not_column_wise():
    assert encode_objects(pa.RecordBatch.from_pydict({"s": ["ok", "line\nbreak"]})) is None
    assert encode_objects(pa.RecordBatch.from_pydict({"x": [1.0, math.nan]})) == [b'{"x":1.0}', b'{"x":"NaN"}']
    assert not supports(pa.schema([("d", pa.date32())]))
    assert not supports(pa.schema([("l", pa.list_(pa.int32()))]))


def test_control_characters_are_escaped_with_upper_case_hex_as_jackson_writes_them():
    batch = pa.RecordBatch.from_pydict({"s\x1b": ["\x1a\x0b\n\\u001a", "\\\x1f"]})
    assert json_encoder(batch.schema).encode(batch) == [
        b'{"s\\u001B":"\\u001A\\u000B\\n\\\\u001a"}',
        b'{"s\\u001B":"\\\\\\u001F"}',
    ]


@settings(max_examples=300)
@given(st.floats(width=32) | st.floats())
def test_any_float_is_written_as_json_that_reads_back_to_it(value):
    for t in (pa.float32(), pa.float64()):
        column = pa.array([value], t)
        batch = pa.RecordBatch.from_arrays([column], names=["f"])
        payloads = json_encoder(batch.schema).encode(batch)
        assert _comparable(_values(payloads, batch.schema)[0]) == _comparable(column)
