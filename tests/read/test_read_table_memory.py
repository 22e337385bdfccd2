"""Table mode (and a compacted changelog, and overwrite's scan of the live keys; change envelopes too) in bounded
memory: the latest record per key is kept in Arrow within scan.table.memory-budget and spilled to local disk
beyond it (read/latest_per_key.py). A read over a tiny budget must spill, and give what the same read with the
default budget and the latest-per-key computed here give."""

from __future__ import annotations

import logging
import random
import re

import orjson
import pyarrow as pa
import pytest
from pyspark_upsert_kafka.errors import OptionError
from pyspark_upsert_kafka.formats.json.values import json_bytes  # right-sized: the data sets are held in memory
from pyspark_upsert_kafka.options.catalog import option
from pyspark_upsert_kafka.overwrite import missing_keys
from pyspark_upsert_kafka.read.fetch import Records
from pyspark_upsert_kafka.read.latest_per_key import (
    FAN_IN,
    KEY,
    OFFSET,
    VALUE,
    LatestPerKey,
    key_identity,
    records_table,
)

from tests.support.kafka_io import produce
from tests.support.read_helpers import batch_reader, read_spec, rows_of
from tests.support.write_helpers import table, write

SCHEMA = "id INT, name STRING"
CHANGES = SCHEMA + ", _change_type STRING"
TINY = "64 kb"  # far below what each test's records take: every fetched chunk spills
_SPILL = re.compile(r"spilled (\d+) run\(s\)|(\d+) run\(s\), \d+ bytes, spilled to local disk")


def _history(keys: int, rounds: int, seed: int) -> list[tuple[bytes, bytes | None]]:
    """Every key written once per round in a shuffled order, some rounds' records deletes (so keys are
    deleted, then inserted again), values of varying length."""
    rng = random.Random(seed)
    out = []
    for r in range(rounds):
        for k in rng.sample(range(keys), keys):
            deleted = rng.random() < 0.15
            value = None if deleted else json_bytes({"id": k, "name": f"r{r}-{'x' * rng.randrange(40)}"})
            out.append((json_bytes({"id": k}), value))
    return out


def _latest(history: list[tuple[bytes, bytes | None]]) -> dict[int, tuple[int, str | None]]:
    """id -> (offset, name or None for a delete), in a one-partition topic."""
    latest = {}
    for offset, (key, value) in enumerate(history):
        latest[orjson.loads(key)["id"]] = (offset, value and orjson.loads(value)["name"])
    return latest


def _read_in_process(opts: dict, ddl: str, caplog) -> tuple[list[tuple], int]:
    """The read as Spark's tasks run it, here in this process: its rows and the runs it spilled."""
    reader = batch_reader(opts, ddl)
    with caplog.at_level(logging.INFO, logger="upsert_kafka"):
        caplog.clear()
        rows = [tuple(r.values()) for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    runs = sum(int(a or b) for a, b in _SPILL.findall(caplog.text))
    return rows, runs


# -- against the broker --------------------------------------------------------------------------------


def test_table_read_over_its_budget_spills_and_equals_the_latest_value_per_key(
    spark, new_topic, options, bootstrap, caplog
):
    topic = new_topic()
    history = _history(keys=3000, rounds=8, seed=1)  # 24,000 records, three fetched chunks and more
    produce(bootstrap, topic, history)
    expected = sorted((k, name) for k, (_, name) in _latest(history).items() if name is not None)
    assert 1000 < len(expected) < 3000, "the history leaves some keys deleted"
    small = options(topic, {"scan.table.memory-budget": TINY})

    rows, runs = _read_in_process(small, SCHEMA, caplog)

    assert runs >= 3, "the reduction spilled, more than once"
    assert sorted(rows) == expected
    assert sorted(rows_of(spark, small, SCHEMA)) == expected
    assert sorted(rows_of(spark, options(topic), SCHEMA)) == expected, "the default budget, no spill"


def test_two_encodings_of_one_key_are_one_key_across_spill_runs(spark, new_topic, options, bootstrap, caplog):
    topic = new_topic()  # one partition: the two encodings of a key hash to different partitions otherwise
    filler = [(json_bytes({"id": i}), json_bytes({"id": i, "name": "f"})) for i in range(100, 12_100)]
    value = lambda i, name: json_bytes({"id": i, "name": name})  # noqa: E731
    produce(
        bootstrap,
        topic,
        [
            (b'{"id": 1}', value(1, "old")),
            (b'{"id":2}', value(2, "old")),
            (b'{"id":3}', value(3, "old")),
            (b'{"id":4}', value(4, "first")),
            *filler,  # more than a fetched chunk: the encodings below land in later spill runs
            (b'{"id":1}', value(1, "new")),
            (b'{ "id" : 2 }', value(2, "new")),
            (b'{"id":  3}', None),  # deleted under another encoding
            (b'{"id": 4}', None),
            *filler[:11_000],
            (b'{"id":4}', value(4, "again")),  # inserted again under the first encoding
        ],
    )
    expected = sorted([(1, "new"), (2, "new"), (4, "again"), *((i, "f") for i in range(100, 12_100))])
    small = options(topic, {"scan.table.memory-budget": TINY})

    rows, runs = _read_in_process(small, SCHEMA, caplog)

    assert runs >= 2
    assert sorted(rows) == expected
    assert sorted(rows_of(spark, small, SCHEMA)) == expected
    assert sorted(rows_of(spark, options(topic), SCHEMA)) == expected


def test_compact_changelog_over_its_budget_keeps_offset_order(spark, new_topic, options, bootstrap, caplog):
    topic = new_topic()
    history = _history(keys=2500, rounds=6, seed=2)
    produce(bootstrap, topic, history)
    latest = sorted((offset, k, name) for k, (offset, name) in _latest(history).items())
    expected = [(k, name, "delete" if name is None else "upsert") for _, k, name in latest]
    small = options(topic, {"read.mode": "changelog", "changelog.compact": "true", "scan.table.memory-budget": TINY})

    rows, runs = _read_in_process(small, CHANGES, caplog)

    assert runs >= 3
    assert rows == expected
    assert rows_of(spark, small, CHANGES) == expected
    assert rows_of(spark, options(topic, {"read.mode": "changelog", "changelog.compact": "true"}), CHANGES) == expected


def _as_maxwell(history: list[tuple[bytes, bytes | None]]) -> list[tuple[bytes, bytes]]:
    """The history as Maxwell's change envelopes: a delete names the deleted row, any other record inserts."""
    out = []
    for key, value in history:
        row = orjson.loads(value) if value is not None else {**orjson.loads(key), "name": "gone"}
        out.append((b"shop/customers", json_bytes({"type": "delete" if value is None else "insert", "data": row})))
    return out


def test_change_envelope_table_and_compacted_reads_over_their_budget_spill_and_keep_the_latest_row_per_key(
    spark, new_topic, options, bootstrap, caplog
):
    topic = new_topic()
    history = _history(keys=2500, rounds=6, seed=5)
    produce(bootstrap, topic, _as_maxwell(history))
    latest = sorted((offset, k, name) for k, (offset, name) in _latest(history).items())
    live = sorted((k, name) for _, k, name in latest if name is not None)
    compacted = [(k, name, "delete" if name is None else "upsert") for _, k, name in latest]
    maxwell = {"value.format": "maxwell-json", "scan.table.memory-budget": TINY}
    table_read = options(topic, {**maxwell, "read.mode": "table"})
    compact_read = options(topic, {**maxwell, "read.mode": "changelog", "changelog.compact": "true"})

    rows, runs = _read_in_process(table_read, SCHEMA, caplog)
    assert runs >= 2, "the reduction spilled, more than once"
    assert sorted(rows) == live
    assert sorted(rows_of(spark, table_read, SCHEMA)) == live

    rows, runs = _read_in_process(compact_read, CHANGES, caplog)
    assert runs >= 2
    assert rows == compacted, "the latest row per key, deletes kept, in record order"
    assert rows_of(spark, {**compact_read, "scan.table.memory-budget": "256 mb"}, CHANGES) == compacted


def test_overwrite_finds_the_live_keys_partition_by_partition_over_its_budget(
    spark, new_topic, options, bootstrap, caplog
):
    topic = new_topic(partitions=2)
    history = _history(keys=6000, rounds=3, seed=3)
    produce(bootstrap, topic, history)
    # Offsets per partition differ from the history's positions, but each key's records keep their order.
    live = {k for k, (_, name) in _latest(history).items() if name is not None}
    kept = sorted(random.Random(4).sample(range(6000), 500))  # live and deleted keys alike
    opts = options(topic, {"scan.table.memory-budget": TINY})
    spec = read_spec(opts, SCHEMA)
    written = pa.array([json_bytes({"id": k}) for k in kept], pa.binary())

    with caplog.at_level(logging.INFO, logger="upsert_kafka"):
        missing = [orjson.loads(k)["id"] for block in missing_keys(spec.kafka, topic, written, 64 << 10) for k in block]

    assert sorted(missing) == sorted(live - set(kept))
    assert sum(int(a or b) for a, b in _SPILL.findall(caplog.text)) >= 2, "the scan of the live keys spilled"

    write(spark, opts, [(k, f"kept-{k}") for k in kept], SCHEMA, mode="overwrite")

    assert table(spark, options(topic), SCHEMA) == [(k, f"kept-{k}") for k in kept]


# -- the reducer alone (pure logic) ---------------------------------------------------------------------


def _feed(reducer: LatestPerKey, keys: list[bytes], values: list[bytes | None], step: int) -> None:
    for start in range(0, len(keys), step):
        end = min(len(keys), start + step)
        reducer.add(records_table(Records(keys[start:end], values[start:end], list(range(start, end)))))


@pytest.mark.parametrize(
    ("budget", "runs"), [(1 << 30, range(0, 1)), (1 << 20, range(1, FAN_IN)), (16 << 10, range(FAN_IN + 1, 999))]
)
def test_the_reducer_keeps_the_latest_record_per_key_within_any_budget(budget, runs):
    rng = random.Random(budget)
    keys = [b"k%d" % rng.randrange(20_000) for _ in range(150_000)]
    values = [None if rng.random() < 0.1 else b"v%d" % i * rng.randrange(1, 6) for i in range(len(keys))]
    expected = {k: (v, i) for i, (k, v) in enumerate(zip(keys, values))}

    table_mode = LatestPerKey(budget)
    _feed(table_mode, keys, values, 7000)
    got = [
        row for t in table_mode.results(False, 10_000) for row in zip(*(t[c].to_pylist() for c in (KEY, VALUE, OFFSET)))
    ]
    compact = LatestPerKey(budget)
    _feed(compact, keys, values, 7000)
    offsets = [o for t in compact.results(True, 10_000) for o in t[OFFSET].to_pylist()]

    assert len(got) == len({k for k, _, _ in got}), "one row per key"
    assert {k: (v, o) for k, v, o in got} == {k: x for k, x in expected.items() if x[0] is not None}
    assert offsets == sorted(o for _, o in expected.values()), "compacted: every key's last record, offset order"
    assert table_mode.runs in runs, "none, a few, or (a tiny budget) more than are merged at once"


def test_the_reducer_takes_the_later_of_two_encodings_by_identity_across_runs():
    def identify(t: pa.Table) -> pa.Table:  # the logical key: the bytes without spaces
        stripped = [k.replace(b" ", b"") for k in t[KEY].to_pylist()]
        return t.append_column("ident", pa.array(stripped, pa.binary()))

    keys = [b"a b", *(b"f%d" % i for i in range(5000)), b"ab", b"c", *(b"g%d" % i for i in range(5000)), b" c"]
    values = [b"old", *([b"x"] * 5000), b"new", b"c1", *([b"y"] * 5000), None]
    reducer = LatestPerKey(16 << 10, identify)
    _feed(reducer, keys, values, 1000)

    rows = {i: v for t in reducer.results(False, 4096) for i, v in zip(t["ident"].to_pylist(), t[VALUE].to_pylist())}

    assert reducer.runs >= 2
    assert rows[b"ab"] == b"new" and b"c" not in rows and len(rows) == 10_001


def test_the_reducer_gives_nothing_when_no_key_decodes():
    def identify(t: pa.Table) -> pa.Table:  # every key failed to decode and was skipped (ignore-parse-errors)
        return t.slice(0, 0).append_column("ident", pa.array([], pa.binary()))

    reducer = LatestPerKey(16 << 10, identify)
    _feed(reducer, [b"k%d" % i for i in range(3000)], [b"v"] * 3000, 1000)
    assert list(reducer.results(False, 4096)) == []


def test_key_identity_is_equal_exactly_when_the_decoded_keys_are():
    batch = pa.RecordBatch.from_pydict(
        {"a": ["x", "xy", "x", None, "N", "x"], "b": ["yz", "z", "yz", "q", "q", None]},
    )
    ident = key_identity(batch).to_pylist()
    assert ident[0] == ident[2]
    assert len(set(ident)) == 5, "column boundaries and nulls tell keys apart"
    nested = pa.RecordBatch.from_pydict({"s": [{"x": 1}, {"x": 1}, {"x": 2}]})
    assert len(set(key_identity(nested).to_pylist())) == 2


@pytest.mark.parametrize(
    ("given", "expected"),
    [("256 mb", 256 << 20), ("64m", 64 << 20), ("1 GB", 1 << 30), ("512kb", 512 << 10), ("4096", 4096)],
)
def test_the_memory_budget_takes_flinks_memory_sizes(given, expected):
    assert option("scan.table.memory-budget").parse(given) == expected


def test_the_memory_budget_default_is_the_catalogs():
    assert option("scan.table.memory-budget").default_value() == 256 << 20


@pytest.mark.parametrize("given", ["lots", "0", "12 parsecs", "-5 mb"])
def test_a_bad_memory_budget_names_the_expected_form(given):
    with pytest.raises(OptionError, match=r"option 'scan.table.memory-budget' must be a positive memory size"):
        option("scan.table.memory-budget").parse(given)


def test_every_metadata_kind_a_fetch_collects_has_a_type_in_the_table_state():
    """A table read keeps each record's metadata in its Arrow state: a kind the fetch reads but the state has
    no type for fails every table read that asks for it (seen: header-list)."""
    from pyspark_upsert_kafka.read import fetch, latest_per_key

    assert set(fetch._META_READERS) == set(latest_per_key._META_TYPES)
