"""Bounded reads (batch reads, Trigger.AvailableNow) are planned by records, not by partitions: small partition
ranges are grouped into balanced tasks up to scan.coalesce.max-records with a floor of MIN_TASKS tasks, a large
range keeps a task of its own, and each range inside a group is read as its own task would read it (offset order,
metadata, data-loss checks, its own table reduction)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark_upsert_kafka.errors import DataLossError
from pyspark_upsert_kafka.read.range_calculator import MIN_TASKS, PartitionRange, RangeGroup, group_ranges
from pyspark_upsert_kafka.spark_internals import ReadAllAvailable

from tests.support.read_helpers import as_checkpointed, batch_reader, delete_before, load, rec, send, stream_reader

META = "id INT, name STRING, part INT, off BIGINT, _change_type STRING"


def ranges(*sizes: int) -> list[PartitionRange]:
    return [PartitionRange("t", p, 0, size) for p, size in enumerate(sizes)]


def parts(task) -> list[int]:
    return [r.partition for r in task.ranges] if isinstance(task, RangeGroup) else [task.partition]


def flat(tasks) -> list[PartitionRange]:
    return [r for t in tasks for r in (t.ranges if isinstance(t, RangeGroup) else [t])]


@pytest.mark.parametrize("partitions", [64, 512])
def test_the_task_count_follows_the_records_not_the_partitions(partitions):
    few = group_ranges(ranges(*[2] * partitions), 20_000, MIN_TASKS)
    assert len(few) == MIN_TASKS, "a few records: the floor of tasks, whatever the partitions"
    many = group_ranges(ranges(*[100] * partitions), 800, MIN_TASKS)
    assert len(many) == partitions * 100 // 800, "more records: a task per budget's worth"
    assert sorted(t.size for t in many) == [800] * len(many), "balanced"
    assert flat(few) == ranges(*[2] * partitions) and flat(many) == ranges(*[100] * partitions), "each range once"


def test_fewer_ranges_than_the_floor_are_a_task_each():
    assert [parts(t) for t in group_ranges(ranges(5, 5, 5), 20_000, MIN_TASKS)] == [[0], [1], [2]]
    assert group_ranges(ranges(5, 5), 0, MIN_TASKS) == ranges(5, 5), "max-records 0: a task per range"


def test_skew_keeps_the_large_partitions_apart_and_packs_the_small_ones():
    sizes = [20_000] * 4 + [39] * 508
    tasks = group_ranges(ranges(*sizes), 20_000, MIN_TASKS)
    assert [parts(t) for t in tasks[:4]] == [[0], [1], [2], [3]]
    small = tasks[4:]
    assert len(small) == MIN_TASKS - 4, "the small partitions fill the tasks the floor has left"
    assert max(t.size for t in small) - min(t.size for t in small) <= 39, "of near-equal records"
    assert flat(tasks) == ranges(*sizes)


def _fill(bootstrap: str, topic: str, sizes: dict[int, int]) -> None:
    send(bootstrap, topic, [rec(p * 1000 + i, f"p{p}", partition=p) for p, n in sizes.items() for i in range(n)])


def _tasks(spark, opts: dict, schema: str = META) -> list[list[tuple]]:
    """Each Spark task's rows (partition, offset, id, name), in the order the task produced them."""
    df = load(spark, {"metadata.columns": "part=partition, off=offset"} | opts, schema)
    return [[(r.part, r.off, r.id, r.name) for r in task] for task in df.rdd.glom().collect()]


def test_a_batch_read_of_many_small_partitions_runs_the_floor_of_tasks_keeping_each_partitions_order(
    spark, new_topic, options, bootstrap
):
    topic = new_topic(partitions=16)
    sizes = {p: 3 for p in range(16)}
    _fill(bootstrap, topic, sizes)
    tasks = _tasks(spark, options(topic, {"read.mode": "changelog"}))
    assert len(tasks) == MIN_TASKS
    for task in tasks:
        seen = [p for p, *_ in task]
        assert seen == sorted(seen), "a group reads its ranges one after the other"
        for p in set(seen):
            assert [(o, i) for q, o, i, _ in task if q == p] == [(o, p * 1000 + o) for o in range(3)], "per range"
    assert sorted(x[:2] for t in tasks for x in t) == [(p, o) for p in range(16) for o in range(3)]


def test_a_skewed_topic_reads_its_large_partitions_in_tasks_of_their_own(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=16)
    sizes = {0: 200, 9: 200} | {p: 2 for p in range(16) if p not in (0, 9)}
    _fill(bootstrap, topic, sizes)
    tasks = _tasks(spark, options(topic, {"read.mode": "changelog", "scan.coalesce.max-records": "100"}))
    partitions = [{p for p, *_ in task} for task in tasks]
    assert {0} in partitions and {9} in partitions
    assert len(tasks) == MIN_TASKS and all(len(t) <= 6 for t in tasks if not {0, 9} & {p for p, *_ in t})


def test_table_mode_across_grouped_partitions_equals_reading_partition_by_partition(
    spark, new_topic, options, bootstrap
):
    """A key found in two partitions (written before and after the topic grew): the table is reduced per
    partition, so it is a row per partition whether the two partitions share a task or not."""
    topic = new_topic(partitions=16)
    sizes = {p: 3 for p in range(16)}
    _fill(bootstrap, topic, sizes)
    extra = {0: rec(7, "in-0", partition=0), 1: rec(7, "in-1", partition=1), 5: rec(7, "in-5", partition=5)}
    extra |= {2: rec(2002, None, partition=2), 3: rec(3000, "again", partition=3)}  # a delete, an update
    send(bootstrap, topic, [extra.get(p, rec(p * 1000 + 100, "x", partition=p)) for p in range(16)])
    grouped = _tasks(spark, options(topic), "id INT, name STRING, part INT, off BIGINT")
    apart = _tasks(
        spark, options(topic, {"scan.coalesce.max-records": "0"}), "id INT, name STRING, part INT, off BIGINT"
    )
    assert len(grouped) == MIN_TASKS and len(apart) == 16
    together = [{p for p, *_ in t} for t in grouped]
    assert {0, 1} in together and {4, 5} in together, "partitions 0 and 1 share a task, 5 is in another"
    assert sorted(x for t in grouped for x in t) == sorted(x for t in apart for x in t)
    sevens = sorted((p, name) for t in grouped for p, _, i, name in t if i == 7)
    assert sevens == [(0, "in-0"), (1, "in-1"), (5, "in-5")]
    rows = {(p, i): name for t in grouped for p, _, i, name in t}
    assert (2, 2002) not in rows and rows[(3, 3000)] == "again"


def _read(reader, task) -> list[tuple]:
    batches = list(reader.read(task))
    table = pa.Table.from_batches(batches) if batches else None
    return [] if table is None else list(zip(*(table.column(c).to_pylist() for c in ("part", "off")), strict=True))


@pytest.mark.parametrize("fail", [True, False])
def test_data_loss_inside_a_group_applies_to_its_range_alone(spark, new_topic, options, bootstrap, fail):
    topic = new_topic(partitions=16)
    _fill(bootstrap, topic, {p: 10 for p in range(16)})
    opts = options(topic, {"read.mode": "changelog", "metadata.columns": "part=partition, off=offset"})
    reader = batch_reader(opts | {"scan.fail-on-data-loss": str(fail).lower()}, META)
    tasks = reader.partitions()
    assert parts(tasks[0]) == [0, 1]
    delete_before(bootstrap, topic, 8, partition=0)  # retention, after the read was planned
    if fail:
        with pytest.raises(DataLossError, match=r"offsets \[0, 8\) of topic '.*' partition 0 "):
            _read(reader, tasks[0])
        return
    assert _read(reader, tasks[0]) == [(0, 8), (0, 9)] + [(1, o) for o in range(10)]


def test_trigger_available_now_groups_by_records_and_a_replay_reads_the_same_groups(
    spark, new_topic, options, bootstrap
):
    topic = new_topic(partitions=16)
    _fill(bootstrap, topic, {p: 3 for p in range(16)})
    reader = stream_reader(options(topic))
    reader.prepareForTriggerAvailableNow()
    start = as_checkpointed(reader.initialOffset())
    end = as_checkpointed(reader.latestOffset(start, ReadAllAvailable()))
    assert end["@plan"]["split"] == {"coalesce": 20000, "min-tasks": MIN_TASKS}
    planned = reader.partitions(start, end)
    assert len(planned) == MIN_TASKS and all(len(parts(t)) == 2 for t in planned)

    # After a restart, with other options: the recorded plan, not the options, gives the groups.
    other = stream_reader(options(topic, {"scan.coalesce.max-records": "1"}))
    assert other.partitions(start, end) == planned


def test_overwrites_scan_of_live_keys_compares_many_small_partitions_in_one_block(spark, new_topic, options, bootstrap):
    """Save mode overwrite's scan (connector/overwrite.py): each partition's keys reduced on their own, the live keys
    of all the small partitions compared with the written ones in one block, not one comparison per partition."""
    import orjson
    from pyspark_upsert_kafka.overwrite import missing_keys

    topic = new_topic(partitions=16)
    _fill(bootstrap, topic, {p: 3 for p in range(16)})
    send(bootstrap, topic, [rec(7, "live", partition=0), rec(7, "x", partition=1), rec(7, None, partition=1)])
    send(bootstrap, topic, [rec(1000, None, partition=1)])  # deleted: not live
    kafka = batch_reader(options(topic), META).spec.kafka
    written = pa.array([orjson.dumps({"id": i}) for i in (0, 2001, 15002)], pa.binary())
    blocks = list(missing_keys(kafka, topic, written, 64 << 20))
    assert len(blocks) == 1
    live = {p * 1000 + i for p in range(16) for i in range(3)} - {1000, 0, 2001, 15002}
    assert sorted(orjson.loads(k)["id"] for k in blocks[0]) == sorted(live | {7}), "7 is live in partition 0"
