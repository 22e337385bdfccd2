"""changelog_table and changelog_history: a changelog kept as rows becomes the table the topic is (SCD type 1) and
every version of every row with the offsets it held from and to (SCD type 2). On a real topic against the topic's
table read and a history worked out here record by record; change kinds, repeats, ties and exact values on small
frames. In a declarative pipeline: tests/pipelines/."""

from __future__ import annotations

import math
from collections import defaultdict

import orjson
import pytest
from pyspark.errors import AnalysisException
from pyspark_upsert_kafka import changelog_history, changelog_table

from tests.support.kafka_io import produce

SCHEMA = "id INT, name STRING, score DOUBLE"
KINDS = "id INT, name STRING, _change_type STRING, offset BIGINT"
# Per key, in order: updates, a repeat, deletes (of a known and of an unknown key), a key deleted and back.
RECORDS = [
    (1, "a", 1.0), (2, "b", 2.0), (1, "a2", 1.5), (3, "c", 3.0), (2, None, None), (1, "a2", 1.5),
    (4, None, None), (3, None, None), (3, "c", 3.0), (5, "e", None), (5, "e", None), (1, "a3", None),
]  # fmt: skip


def _changelog(spark, options: dict):
    more = {"read.mode": "changelog", "metadata.columns": "offset", "schema": SCHEMA}
    return spark.read.format("upsert-kafka").options(**(options | more)).load()


def _produce(bootstrap: str, topic: str) -> None:
    records = []
    for i, name, score in RECORDS:
        value = None if name is None else orjson.dumps({"id": i, "name": name, "score": score})
        records.append((orjson.dumps({"id": i}), value))
    produce(bootstrap, topic, records)


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_the_table_is_the_topics_table(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=3)
    _produce(bootstrap, topic)
    table = changelog_table(_changelog(spark, options(topic)), "id")
    read = spark.read.format("upsert-kafka").options(**options(topic)).option("schema", SCHEMA).load()
    assert table.columns == ["id", "name", "score"]
    assert _rows(table) == _rows(read.drop("_change_type"))
    assert sorted(r.id for r in table.collect()) == [1, 3, 5]  # 2 deleted, 4 never held a row


def test_the_history_holds_every_version_with_the_offsets_it_held(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=3)
    _produce(bootstrap, topic)
    changelog = _changelog(spark, options(topic))
    # Worked out here: a key's records in offset order; a new version where the row differs from the key's row.
    versions: dict[int, list] = defaultdict(list)
    for r in sorted(changelog.collect(), key=lambda r: (r.id, r.offset)):
        held = versions[r.id][-1] if versions[r.id] and versions[r.id][-1][-1] is None else None
        if held is not None and r._change_type == "upsert" and repr(held[1:3]) == repr((r.name, r.score)):
            continue  # a repeat
        if held is not None:
            versions[r.id][-1] = (*held[:-1], r.offset)
        if r._change_type == "upsert":
            versions[r.id].append((r.id, r.name, r.score, r.offset, None))
    expected = sorted((v for vs in versions.values() for v in vs), key=repr)

    history = changelog_history(changelog, "id")
    assert history.columns == ["id", "name", "score", "__START_AT", "__END_AT"]
    assert repr(_rows(history)) == repr(expected)
    assert [v[1] for v in expected if v[0] == 1] == ["a", "a2", "a3"]  # the repeat of a2 made no version
    assert [v[4] is None for v in expected if v[0] == 3] == [False, True]  # deleted, then back


def test_before_images_are_dropped_and_flinks_kinds_are_read(spark):
    rows = [
        (1, "a", "+I", 0), (1, "a", "-U", 1), (1, "b", "+U", 1), (2, "x", "insert", 2), (2, "x", "-D", 3),
        (3, "y", "UPSERT", 4), (3, "y", "update_preimage", 5), (3, "z", "update_postimage", 5), (4, "w", None, 6),
    ]  # fmt: skip
    changes = spark.createDataFrame(rows, KINDS)
    assert _rows(changelog_table(changes, "id")) == [(1, "b"), (3, "z"), (4, "w")]
    assert _rows(changelog_history(changes, "id")) == [
        (1, "a", 0, 1), (1, "b", 1, None), (2, "x", 2, 3), (3, "y", 4, 5), (3, "z", 5, None), (4, "w", 6, None),
    ]  # fmt: skip


def test_values_are_compared_exactly_maps_and_nulls_included(spark):
    schema = "id INT, score DOUBLE, tags MAP<STRING, INT>, _change_type STRING, offset BIGINT"
    rows = [
        (1, 0.0, {"a": 1}, "upsert", 0), (1, -0.0, {"a": 1}, "upsert", 1), (1, -0.0, {"a": 1}, "upsert", 2),
        (1, math.nan, {"a": 1}, "upsert", 3), (1, math.nan, {"a": 1}, "upsert", 4), (1, None, {"a": 1}, "upsert", 5),
        (1, None, {"a": 2}, "upsert", 6), (1, None, None, "upsert", 7),
    ]  # fmt: skip
    history = changelog_history(spark.createDataFrame(rows, schema), "id")
    starts = [r["__START_AT"] for r in history.orderBy("__START_AT").collect()]
    assert starts == [0, 1, 3, 5, 6, 7]  # -0.0 is not 0.0, NaN is NaN, null is not NaN; repeats make none


def test_two_different_records_of_a_key_at_one_position_fail_the_query(spark):
    changes = spark.createDataFrame([(1, "a", "upsert", 7), (1, "b", "upsert", 7)], KINDS)
    for helper in (changelog_table, changelog_history):
        with pytest.raises(Exception, match="two different records of one key at one position of order_by"):
            helper(changes, "id").collect()
    same = spark.createDataFrame([(1, "a", "upsert", 7), (1, "a", "upsert", 7)], KINDS)
    assert _rows(changelog_table(same, "id")) == [(1, "a")]  # the same record read twice is one


def test_an_unknown_change_kind_fails_the_query_naming_the_kinds(spark):
    changes = spark.createDataFrame([(1, "a", "upsert", 0), (1, "b", "replace", 1)], KINDS)
    with pytest.raises(Exception, match="unknown change kind 'replace'; use insert, update_preimage"):
        changelog_table(changes, "id").collect()


def test_a_missing_column_is_sparks_error_naming_it(spark):
    changes = spark.createDataFrame([(1, "a", "upsert", 0)], KINDS)
    with pytest.raises(AnalysisException, match=r"UNRESOLVED_COLUMN\.\w+\].*`seq`"):
        changelog_table(changes, "id", order_by="seq").collect()
