"""The Delta mirror (mirror_to_delta): a changelog stream merged into a real Delta table by delta-rs, one MERGE
per micro-batch, the table equal to the topic read as a table, a replayed batch skipped."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from pyspark_upsert_kafka import OptionError, RecordError, delta_mirror, mirror_to_delta
from pyspark_upsert_kafka.mirror import last_changes

from tests.support.checkpoints import planned_batches, query_id, uncommit
from tests.support.read_helpers import finish_available_now, rec, send, stream

SCHEMA = "id INT, name STRING, _change_type STRING"


def _delta_rows(path: Path) -> list[tuple]:
    # delta-rs's own reader (DataFusion): it applies the Delta log, and unlike to_pyarrow_table it scans no
    # files through a Python file object, whose pyarrow threads can abort the interpreter at exit.
    result = QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT id, name FROM t").read_all()
    return sorted(tuple(row.values()) for row in pa.table(result).to_pylist())


def _topic_as_table(spark, options, topic: str) -> list[tuple]:
    table = spark.read.format("upsert-kafka").options(**options(topic)).schema("id INT, name STRING").load()
    return sorted(tuple(row) for row in table.collect())


def _mirror(spark, options, topic: str, table: Path, checkpoint: Path, more: dict | None = None) -> None:
    finish_available_now(
        mirror_to_delta(
            stream(spark, options(topic, more), SCHEMA),
            str(table),
            "id",
            checkpoint_location=str(checkpoint),
            trigger={"availableNow": True},
        )
    )


def test_a_mirrored_changelog_equals_the_topic_read_as_a_table_and_a_replayed_batch_is_merged_once(
    spark, new_topic, options, bootstrap, tmp_path, caplog
):
    topic, table, checkpoint = new_topic(partitions=2), tmp_path / "users", tmp_path / "checkpoint"
    # One micro-batch: inserts, several updates of one key, a delete, a key inserted and deleted in the batch.
    send(bootstrap, topic, [rec(i, f"v{i}") for i in range(8)])
    send(bootstrap, topic, [rec(1, "v1b"), rec(1, "v1c"), rec(2, None), rec(8, "v8"), rec(8, None)])
    _mirror(spark, options, topic, table, checkpoint)
    assert _delta_rows(table) == _topic_as_table(spark, options, topic)
    assert len(planned_batches(checkpoint)) == 1

    # Several micro-batches of at most 3 records: updates, deletes, a deleted key back, deletes of absent keys.
    send(bootstrap, topic, [rec(3, "v3b"), rec(2, "v2 again"), rec(4, None), rec(9, None), rec(5, "v5b")])
    send(bootstrap, topic, [rec(5, "v5c"), rec(6, None), rec(10, "v10"), rec(3, "v3c")])
    _mirror(spark, options, topic, table, checkpoint, {"maxOffsetsPerTrigger": "3"})
    batches = planned_batches(checkpoint)
    assert len(batches) >= 3, batches
    assert _delta_rows(table) == _topic_as_table(spark, options, topic)
    versions = DeltaTable(str(table)).version()

    # Spark replays a batch it ran but did not log as committed (a crash right after the sink): the table
    # already records that batch of this query, so the replay merges nothing.
    replayed = uncommit(str(checkpoint))
    send(bootstrap, topic, [rec(7, "v7b"), rec(0, None)])
    with caplog.at_level(logging.INFO, logger="upsert_kafka"):
        _mirror(spark, options, topic, table, checkpoint)
    skipped = [r.getMessage() for r in caplog.records if "already in" in r.getMessage()]
    assert len(skipped) == 1 and f"batch {replayed} " in skipped[0], skipped
    new_batches = [b for b in planned_batches(checkpoint) if b not in batches]
    assert DeltaTable(str(table)).version() == versions + len(new_batches), "one Delta commit per new batch"
    assert DeltaTable(str(table)).transaction_version(query_id(checkpoint)) == max(new_batches)
    assert _delta_rows(table) == _topic_as_table(spark, options, topic)


def test_the_mirror_keeps_each_keys_last_change_and_drops_before_images():
    batch = pa.table(
        {
            "id": [1, 2, 1, 3, 2, 3],
            "name": ["a", "b", "a2", "c", None, "c2"],
            "_change_type": ["insert", "upsert", None, "update_preimage", "DELETE", "update_postimage"],
        }
    )
    last = last_changes(batch, ["id"], "_change_type").to_pylist()
    assert [(r["id"], r["name"], r["__upsert_kafka_delete"]) for r in last] == [
        (1, "a2", False),
        (2, None, True),
        (3, "c2", False),
    ]


@pytest.mark.parametrize(
    "batch, message",
    [
        (pa.table({"id": [1, None], "name": ["a", "b"], "_change_type": ["upsert"] * 2}), "null key column 'id'"),
        (pa.table({"id": [1], "name": ["a"], "_change_type": ["merge"]}), "unknown change kind 'merge'"),
    ],
    ids=["null-key", "unknown-kind"],
)
def test_the_mirror_refuses_a_change_it_cannot_apply(batch, message):
    with pytest.raises(RecordError, match=message):
        last_changes(batch, ["id"], "_change_type")


def test_the_mirror_outside_a_streaming_query_fails_before_writing(spark, tmp_path):
    # Without the query id a replayed batch could not be recognised: nothing is written.
    batch = spark.createDataFrame([(1, "a", "upsert")], SCHEMA)
    with pytest.raises(OptionError, match="foreachBatch function"):
        delta_mirror(str(tmp_path / "t"), "id")(batch, 0)
    assert not (tmp_path / "t").exists()
