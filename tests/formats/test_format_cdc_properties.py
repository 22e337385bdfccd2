"""Property tests of the change-envelope formats (no Kafka): rows of any schema written as envelopes read back
as the same rows and kinds; and the fast path (Arrow's JSON reader over a batch) reads every batch of envelopes,
well-formed or not, exactly as the per-envelope path (the reference) does."""

from __future__ import annotations

import orjson
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark_upsert_kafka.formats import DELETE, INSERT, CodecContext, make_codec

from tests.formats.test_format_fuzz import mutated
from tests.support.arrow_strategies import PRIMITIVES, SETTINGS, batches

FORMATS = ["debezium-json", "canal-json", "maxwell-json", "ogg-json"]
CONTEXT = CodecContext(role="value", topics=("t",))


def codec(name: str, **options: str):
    return make_codec(name, "value.format", options, CONTEXT)


@pytest.mark.parametrize("name", FORMATS)
@SETTINGS
@given(batch=batches(), data=st.data())
def test_rows_written_as_envelopes_read_back_as_the_same_rows_and_kinds(name, batch, data):
    deletes = data.draw(st.lists(st.booleans(), min_size=batch.num_rows, max_size=batch.num_rows))
    options = data.draw(
        st.sampled_from([{}, {"encode.decimal-as-plain-number": "true"}, {"encode.ignore-null-fields": "true"}])
    )
    fmt = codec(name, **options)
    payloads = fmt.encoder(batch.schema).encode_changes(batch, pa.array(deletes, pa.bool_()))
    changes = fmt.changelog_decoder(batch.schema).decode_changes(payloads)
    assert changes.failures == ()
    assert changes.batch.to_pylist() == batch.to_pylist()
    assert changes.kinds.to_pylist() == [DELETE if d else INSERT for d in deletes]
    assert changes.records.to_pylist() == list(range(batch.num_rows))


# -- the fast path reads what the per-envelope path reads ------------------------------------------------

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64()), ("ok", pa.bool_())])
TYPED = {
    "id": st.integers(-5, 5) | st.none(),
    "name": st.text(max_size=3) | st.none(),
    "score": st.floats(allow_nan=False, allow_infinity=False) | st.none(),
    "ok": st.booleans() | st.none(),
}
TEXT = {  # Canal's: every value a string
    "id": st.integers(-5, 5).map(str) | st.none(),
    "name": st.text(max_size=3) | st.none(),
    "score": st.floats(allow_nan=False, allow_infinity=False).map(str) | st.none(),
    "ok": st.sampled_from(["0", "1", "true"]) | st.none(),
}
WILD = {  # values of the wrong JSON type, text that is no number, out of range
    "id": TYPED["id"] | st.just("7") | st.just("0x10") | st.just(2**40),
    "name": TYPED["name"] | st.just(3),
    "score": TYPED["score"] | st.just("2.5") | st.just("x"),
    "ok": TYPED["ok"] | st.just("1") | st.just("yes"),
}


def rows(values: dict, partial: bool = False, clean: bool = True, nullable: bool = True) -> st.SearchStrategy:
    """Row images (partial: some fields left out), null (if nullable or not clean), or (unless clean) not an
    object."""
    fields = st.fixed_dictionaries({}, optional=values) if partial else st.fixed_dictionaries(values)
    if clean:
        return fields | st.none() if nullable else fields
    return fields | st.none() | st.just("not a row")


def _changed(draw, values: dict) -> dict:
    """The values of `old`'s changed fields: none null (the fast path reads them), or some or all null (a
    field that was null before: only the per-envelope path reads that exactly)."""
    kind = draw(st.sampled_from(["no nulls", "some nulls", "nulls"]))
    if kind == "nulls":
        return {k: st.none() for k in values}
    return values if kind == "some nulls" else {k: v.filter(lambda x: x is not None) for k, v in values.items()}


@st.composite
def debezium_events(draw, schema_include: bool) -> list:
    values, clean = draw(st.sampled_from([(TYPED, True), (WILD, False)]))
    source = st.fixed_dictionaries(
        {"ts_ms": st.integers(0, 2**41), "db": st.sampled_from(["inventory", "crm"]), "table": st.just("t")},
        optional={"schema": st.just("public"), "snapshot": st.sampled_from(["true", "false"])},
    )
    ops = st.sampled_from(["c", "r", "u", "d"]) if clean else st.sampled_from(["c", "u", "d", "t", "x"]) | st.none()
    event = st.fixed_dictionaries(
        {"op": ops, "before": rows(values, clean=clean), "after": rows(values, clean=clean)},
        optional={"source": source | st.none(), "ts_ms": st.integers(0, 2**41) | st.none()},
    )
    events = draw(st.lists(event, max_size=6))
    return [{"schema": {"type": "struct"}, "payload": e} for e in events] if schema_include else events


@st.composite
def canal_messages(draw) -> list:
    values, clean = draw(st.sampled_from([(TYPED, True), (TEXT, True), (WILD, False)]))

    def message(kind: str, data: list, old: list | None, db: str, ddl: bool) -> dict:
        return {"data": data, "old": old, "type": kind, "database": db, "table": "products", "isDdl": ddl,
                "pkNames": ["id"], "ts": 1, "es": 2}  # fmt: skip

    changed = _changed(draw, values)
    data = st.lists(rows(values, clean=clean, nullable=False), min_size=0, max_size=3)
    old = st.lists(rows(changed, partial=True, clean=clean, nullable=False), max_size=3)
    data, old = (data, old) if clean else (data | st.none(), old | st.none())
    kinds = ["INSERT", "UPDATE", "DELETE"] * 3 + ["CREATE", "ALTER"] + ([] if clean else ["TRUNCATE", "QUERY"])
    dbs = st.sampled_from(["inventory"] * 3 + ["crm"])
    return draw(st.lists(st.builds(message, st.sampled_from(kinds), data, old, dbs, st.booleans()), max_size=6))


@st.composite
def maxwell_messages(draw) -> list:
    values, clean = draw(st.sampled_from([(TYPED, True), (WILD, False)]))
    kinds = ["insert", "update", "delete", "bootstrap-insert", "bootstrap-start"] + ([] if clean else ["x"])
    required = {"database": st.just("test"), "table": st.just("e"), "type": st.sampled_from(kinds)}
    optional = {"ts": st.integers(0, 2**31), "primary_key_columns": st.just(["id"])}
    changed = _changed(draw, values)
    data, old = rows(values, clean=clean, nullable=not clean), rows(changed, partial=True, clean=clean)
    if clean:
        required["data"] = data
    else:
        optional["data"] = data
    message = st.fixed_dictionaries(required, optional={**optional, "old": old})
    return draw(st.lists(message, max_size=6))


@st.composite
def ogg_messages(draw) -> list:
    values, clean = draw(st.sampled_from([(TYPED, True), (WILD, False)]))
    ops = st.sampled_from(["I", "U", "D"]) if clean else st.sampled_from(["I", "U", "D", "T", "x"]) | st.none()
    times = st.sampled_from(["2020-05-13 15:40:06.000000", "2020-05-13T15:40:07.123456", "2020-05-13 15:40:06"])
    message = st.fixed_dictionaries(
        {"op_type": ops, "before": rows(values, clean=clean), "after": rows(values, clean=clean)},
        optional={
            "table": st.just("OGG.T"),
            "primary_keys": st.just(["id"]),
            "op_ts": times if clean else times | st.just("x") | st.none(),
            "current_ts": times | st.none(),
        },
    )
    return draw(st.lists(message, max_size=6))


CASES = {
    "debezium-json": (debezium_events(False), {}, ["ingestion-timestamp", "source.timestamp", "source.table"]),
    "debezium-json+schema": (debezium_events(True), {"schema-include": "true"}, ["source.database"]),
    "canal-json": (canal_messages(), {"database.include": "inv.*"}, ["table", "pk-names", "event-timestamp"]),
    "maxwell-json": (maxwell_messages(), {}, ["database", "ingestion-timestamp", "primary-key-columns"]),
    "ogg-json": (ogg_messages(), {}, ["table", "primary-keys", "event-timestamp", "ingestion-timestamp"]),
}


def _same_changes(a, b) -> None:
    assert a.batch.to_pylist() == b.batch.to_pylist()
    assert a.kinds.to_pylist() == b.kinds.to_pylist()
    assert a.records.to_pylist() == b.records.to_pylist()
    assert {k: v.to_pylist() for k, v in a.metadata.items()} == {k: v.to_pylist() for k, v in b.metadata.items()}
    assert a.failures == b.failures


@pytest.mark.parametrize("case", CASES)
@SETTINGS
@given(data=st.data())
def test_the_fast_path_reads_any_envelopes_exactly_as_the_per_envelope_path(case, data):
    envelopes, options, metadata = CASES[case]
    messages = data.draw(envelopes)
    fmt = codec(case.split("+")[0], **options)
    decoder = fmt.changelog_decoder(SCHEMA, metadata)
    payloads = [orjson.dumps(m) for m in messages]
    _same_changes(decoder.decode_changes(payloads), decoder._decode_each(payloads))


WELL_FORMED = {
    "debezium-json": [
        {"before": None, "after": {"id": 1, "name": "a", "score": 1.5, "ok": True}, "op": "c", "ts_ms": 1},
        {"before": {"id": 1, "name": "a"}, "after": {"id": 1, "name": "b"}, "op": "u", "ts_ms": 2},
        {"before": {"id": 1, "name": "b"}, "after": None, "op": "d", "ts_ms": 3},
    ],
    "canal-json": [
        {"data": [{"id": "1", "name": "a", "score": "1.5", "ok": "1"}], "old": None, "type": "INSERT", "isDdl": False},
        {"data": [{"id": "1", "name": "b", "score": "1.5", "ok": "1"}], "old": [{"name": "a"}], "type": "UPDATE"},
        {"data": None, "type": "ALTER", "isDdl": True},
        {"data": [{"id": "1", "name": "b", "score": "1.5", "ok": "0"}], "old": None, "type": "DELETE"},
    ],
    "maxwell-json": [
        {"type": "insert", "ts": 1, "data": {"id": 1, "name": "a", "score": 1.5, "ok": True}},
        {"type": "update", "ts": 2, "data": {"id": 1, "name": "b", "score": 1.5, "ok": True}, "old": {"name": "a"}},
        {"type": "delete", "ts": 3, "data": {"id": 1, "name": "b", "score": 1.5, "ok": True}},
    ],
    "ogg-json": [
        {"before": None, "after": {"id": 1, "name": "a", "score": 1.5, "ok": True}, "op_type": "I"},
        {"before": {"id": 1, "name": "a"}, "after": {"id": 1, "name": "b"}, "op_type": "U"},
        {"before": {"id": 1, "name": "b"}, "after": None, "op_type": "D", "op_ts": "2020-05-13 15:40:06.000000"},
    ],
}


@pytest.mark.parametrize("name", FORMATS)
def test_the_fast_path_reads_well_formed_envelopes_itself(name):
    """So that the equality above compares two paths, not the per-envelope path with itself."""
    decoder = codec(name).changelog_decoder(SCHEMA)
    payloads = [orjson.dumps(m) for m in WELL_FORMED[name]]
    fast = decoder._decode_fast(payloads)
    assert fast is not None and fast[1] == []
    _same_changes(fast[0], decoder._decode_each(payloads))
    assert fast[0].kinds.to_pylist() == ["insert", "update_preimage", "update_postimage", "delete"]


NULL_BEFORE = {
    "canal-json": {"data": [{"id": "1", "name": "b"}], "old": [{"name": None}], "type": "UPDATE"},
    "maxwell-json": {"type": "update", "data": {"id": 1, "name": "b"}, "old": {"name": None}},
}


@pytest.mark.parametrize("name", sorted(NULL_BEFORE))
def test_a_field_null_before_an_update_is_null_in_the_pre_image(name):
    """`old` lists the changed fields only; an explicit null there is the value before, not "unchanged"."""
    decoder = codec(name).changelog_decoder(SCHEMA)
    changes = decoder.decode_changes([orjson.dumps(m) for m in [WELL_FORMED[name][0], NULL_BEFORE[name]]])
    assert changes.kinds.to_pylist() == ["insert", "update_preimage", "update_postimage"]
    assert [r["name"] for r in changes.batch.to_pylist()] == ["a", None, "b"]


TEXT_TYPES = [t for t in PRIMITIVES if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_decimal(t)]
TEXT_TYPES += [pa.float32(), pa.float64()]


def _canal_text(t: pa.DataType, value) -> str:
    """A value as Canal writes it: MySQL's text of it."""
    if pa.types.is_boolean(t):
        return "1" if value else "0"
    return str(value)


@SETTINGS
@given(st.data())
def test_canal_reads_numbers_and_booleans_given_as_text_as_canal_writes_them(data):
    t = data.draw(st.sampled_from(TEXT_TYPES))
    values = (
        PRIMITIVES[t] if not pa.types.is_floating(t) else st.floats(allow_nan=False, allow_infinity=False, width=32)
    )
    rows = data.draw(st.lists(values | st.none(), min_size=1, max_size=8))
    schema = pa.schema([("v", t)])
    messages = [{"data": [{"v": None if v is None else _canal_text(t, v)}], "type": "INSERT"} for v in rows]
    decoder = codec("canal-json").changelog_decoder(schema)
    payloads = [orjson.dumps(m) for m in messages]
    fast = decoder._decode_fast(payloads)
    assert fast is not None and fast[1] == []  # Arrow reads the text and casts it
    assert fast[0].batch.column("v").to_pylist() == pa.array(rows, t).to_pylist()
    _same_changes(fast[0], decoder._decode_each(payloads))


@pytest.mark.parametrize("name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_any_bytes_give_rows_or_a_failure_of_their_record_the_same_alone_as_among_others(name, data):
    valid = [orjson.dumps(m) for m in WELL_FORMED[name]]
    payloads = data.draw(st.lists(st.sampled_from(valid) | mutated(valid) | st.binary(max_size=40), max_size=6))
    decoder = codec(name, **{"changelog-mode": "all"}).changelog_decoder(SCHEMA)
    together = decoder.decode_changes(payloads)
    failed = dict(together.failures)
    records = together.records.to_pylist()
    for i, payload in enumerate(payloads):
        alone = decoder.decode_changes([payload])
        assert (0 in dict(alone.failures)) == (i in failed)
        mine = pa.array([j for j, r in enumerate(records) if r == i], pa.int64())
        assert together.batch.take(mine).to_pylist() == alone.batch.to_pylist()
        assert together.kinds.take(mine).to_pylist() == alone.kinds.to_pylist()
