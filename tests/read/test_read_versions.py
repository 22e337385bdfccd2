"""A table read that keeps each key's record of the highest version (option scan.upsert.version), not its last one:
out-of-order upserts and tombstones, the version from the record's timestamp or a header, within any memory budget
(the reducer alone, against the rule computed here) and on the broker; a record without a version fails the read
naming it, and the option is refused where it means nothing."""

from __future__ import annotations

import random
import time

import orjson
import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark_upsert_kafka.errors import OptionError, RecordError
from pyspark_upsert_kafka.read.fetch import Records
from pyspark_upsert_kafka.read.latest_per_key import KEY, OFFSET, VALUE, VERSION, LatestPerKey, records_table

from tests.support.kafka_io import produce
from tests.support.read_helpers import batch_reader, read_spec, rows_of

SCHEMA = "id INT, name STRING"
TINY = "64 kb"  # every fetched chunk spills
NOW = int(time.time() * 1000)


def _highest(history: list[tuple]) -> dict:
    """Each key's record of the highest version (equal versions: the later record), tombstones removing the key."""
    best: dict = {}
    for offset, (key, value, version) in enumerate(history):
        if key not in best or version >= best[key][1]:
            best[key] = (value, version, offset)
    return {k: (v, o) for k, (v, _, o) in best.items() if v is not None}


@pytest.mark.parametrize("budget", [1 << 30, 256 << 10, 16 << 10], ids=["in memory", "a few runs", "many runs"])
def test_the_reducer_keeps_each_keys_record_of_the_highest_version_within_any_budget(budget):
    rng = random.Random(budget)
    history = [(b"k%d" % rng.randrange(5000), None if rng.random() < 0.15 else b"v%d" % i, rng.randrange(40))
               for i in range(60_000)]  # fmt: skip
    reducer = LatestPerKey(budget)
    for start in range(0, len(history), 5000):
        part = history[start : start + 5000]
        offsets = list(range(start, start + len(part)))
        table = records_table(Records([k for k, _, _ in part], [v for _, v, _ in part], offsets))
        reducer.add(table.append_column(VERSION, pa.array([n for _, _, n in part], pa.int64())))
    got = {k: (v, o) for t in reducer.results(False, 10_000)
           for k, v, o in zip(*(t[c].to_pylist() for c in (KEY, VALUE, OFFSET)))}  # fmt: skip
    assert got == _highest(history)
    assert reducer.runs > 0 or budget == 1 << 30


def _record(i: int, name: str | None, version: int, header: bool) -> tuple:
    """A record whose version is its timestamp, or its `v` header (then its timestamp runs the other way)."""
    key, value = orjson.dumps({"id": i}), None if name is None else orjson.dumps({"id": i, "name": name})
    stamp = NOW + (10_000 - version if header else version)  # near now: an ancient one falls to the retention
    return (key, value, None, stamp), [("v", str(version).encode())]


HISTORY = [(1, "a", 10), (1, "older", 5), (2, "x", 10), (2, None, 20), (2, "older", 15), (3, "p", 10),
           (3, None, 5), (4, "n", 7), (4, "n2", 7)]  # fmt: skip
EXPECTED = [(1, "a"), (3, "p"), (4, "n2")]  # 1: the older upsert ignored; 2: deleted at 20; 3: an older tombstone


def _produce(bootstrap: str, topic: str, header: bool) -> None:
    for i, name, version in HISTORY:  # one record a call: each its own headers
        record, headers = _record(i, name, version, header)
        produce(bootstrap, topic, [record], headers=headers if header else None)


@pytest.mark.parametrize("source", ["timestamp", "header:v"])
def test_a_table_read_keeps_each_keys_highest_version_upserts_and_tombstones(
    spark, new_topic, options, bootstrap, source
):
    topic = new_topic()
    _produce(bootstrap, topic, header=source != "timestamp")
    versioned = options(topic, {"scan.upsert.version": source})
    assert sorted(rows_of(spark, versioned, SCHEMA)) == EXPECTED
    assert sorted(rows_of(spark, versioned | {"scan.table.memory-budget": TINY}, SCHEMA)) == EXPECTED
    assert sorted(rows_of(spark, options(topic), SCHEMA)) == [(1, "older"), (2, "older"), (4, "n2")], (
        "without the option, the last record wins"
    )


def test_a_record_without_the_version_header_fails_the_read_naming_it(new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, [(b'{"id": 1}', b'{"id": 1, "name": "a"}')], headers=[("v", b"3")])
    produce(bootstrap, topic, [(b'{"id": 1}', None)])
    produce(bootstrap, topic, [(b'{"id": 2}', b'{"id": 2, "name": "b"}')], headers=[("v", b"three")])
    reader = batch_reader(options(topic, {"scan.upsert.version": "header:v"}), SCHEMA)
    with pytest.raises(RecordError, match=rf"record at topic '{topic}' partition 0 offset 1 has no header 'v'"):
        [b for p in reader.partitions() for b in reader.read(p)]
    only_bad = options(topic, {"scan.upsert.version": "header:v", "scan.startup.mode": "specific-offsets",
                               "scan.startup.specific-offsets": "partition:0,offset:2"})  # fmt: skip
    reader = batch_reader(only_bad, SCHEMA)
    with pytest.raises(RecordError, match=r"offset 2 has header 'v' = 'three', not an integer's text"):
        [b for p in reader.partitions() for b in reader.read(p)]


def test_the_option_is_refused_where_it_means_nothing(options):
    with pytest.raises(OptionError, match=r"must be 'timestamp' or 'header:<name>'"):
        read_spec(options("t", {"scan.upsert.version": "offset"}), SCHEMA)
    changelog = options("t", {"scan.upsert.version": "timestamp", "read.mode": "changelog"})
    with pytest.raises(OptionError, match=r"normalized_changelog\(..., version=...\)"):
        read_spec(changelog, SCHEMA + ", _change_type STRING")


def test_the_writers_version_headers_order_the_table_tombstones_included(spark, new_topic, options):
    """Rows written with their version in a header (the writer's `headers` column, on tombstones too), in an order
    that is not the versions': the table read by that header holds each key's highest version."""
    topic = new_topic()
    rows = [(1, "a", 2, "upsert"), (1, "older", 1, "upsert"), (2, "x", 1, "upsert"), (2, None, 3, "delete"),
            (2, "older", 2, "upsert"), (3, "p", 5, "upsert"), (3, None, 4, "delete")]  # fmt: skip
    df = spark.createDataFrame(rows, "id INT, name STRING, v BIGINT, _change_type STRING").coalesce(1)
    headers = F.create_map(F.lit("v"), F.col("v").cast("string").cast("binary"))
    written = df.withColumn("headers", headers).drop("v")
    written.write.format("upsert-kafka").options(**options(topic, {"metadata.columns": "headers"})).mode(
        "append"
    ).save()
    versioned = options(topic, {"scan.upsert.version": "header:v"})
    assert sorted(rows_of(spark, versioned, SCHEMA)) == [(1, "a"), (3, "p")]
