"""`sink.delivery-guarantee` against the real broker: none and at-least-once write plainly; exactly-once writes
one transaction per task, and no record twice under task failures, retries, query restarts and replayed
micro-batches."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark_upsert_kafka.spark_internals import ADMISSION_CONTROL

from tests.support.checkpoints import uncommit
from tests.support.kafka_io import consume_all, log_ends, produce
from tests.support.read_helpers import fail_tasks
from tests.support.write_helpers import arrow_batch_rows, key_counts, task_markers, write
from tests.workers.failure_injection import ARROW_ROWS, OPEN_AFTER, fail_first_attempt, open_transaction_has_records

SCHEMA = "id INT, name STRING, price DOUBLE"
CHANGES = SCHEMA + ", _change_type STRING"


def exactly_once(prefix: str) -> dict[str, str]:
    return {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": prefix}


def all_offsets(bootstrap: str, topic: str) -> int:
    return sum(log_ends(bootstrap, topic).values())


@pytest.mark.parametrize("guarantee", ["none", "at-least-once"])
def test_none_and_at_least_once_write_every_row_without_transactions(spark, new_topic, options, bootstrap, guarantee):
    topic = new_topic()
    write(spark, options(topic, {"sink.delivery-guarantee": guarantee}), [(i, "a", 1.0) for i in range(5)], SCHEMA)

    assert key_counts(bootstrap, topic) == {i: 1 for i in range(5)}
    assert all_offsets(bootstrap, topic) == 5, "no transaction markers"


def test_unknown_delivery_guarantee_lists_the_valid_ones(spark, new_topic, options):
    opts = options(new_topic(), {"sink.delivery-guarantee": "twice"})
    with pytest.raises(Exception, match=r"'sink.delivery-guarantee' must be one of none, at-least-once, exactly-once"):
        write(spark, opts, [(1, "a", 1.0)], SCHEMA)


def test_exactly_once_without_a_transactional_id_prefix_names_the_option(spark, new_topic, options):
    opts = options(new_topic(), {"sink.delivery-guarantee": "exactly-once"})
    with pytest.raises(Exception, match=r"exactly-once needs option 'sink.transactional-id-prefix'"):
        write(spark, opts, [(1, "a", 1.0)], SCHEMA)


def test_transaction_timeout_above_the_brokers_maximum_fails_before_any_data(spark, new_topic, options, bootstrap):
    topic = new_topic()
    opts = options(topic, exactly_once(topic) | {"properties.transaction.timeout.ms": "3600000"})
    with pytest.raises(Exception, match=r"'properties.transaction.timeout.ms' \(3600000 ms\) exceeds the brokers' "):
        write(spark, opts, [(1, "a", 1.0)], SCHEMA)
    assert all_offsets(bootstrap, topic) == 0


def test_each_task_commits_its_records_and_its_marker_in_one_transaction(spark, new_topic, options, bootstrap):
    topic = new_topic(partitions=2)
    opts = options(topic, {"sink.semantic": "exactly-once", "sink.transactional-id-prefix": topic})
    spark.createDataFrame([(i, "a", float(i)) for i in range(20)], SCHEMA).repartition(2).write.format(
        "upsert-kafka"
    ).options(**opts).mode("append").save()

    assert key_counts(bootstrap, topic) == {i: 1 for i in range(20)}
    # Each task's transaction ends with a commit marker in each partition it wrote: offsets beyond the records.
    assert all_offsets(bootstrap, topic) > 20
    # ... and commits the task's write id and the fingerprint of its rows, in the consumer group named like its
    # transactional id: <prefix>-<scope of this write>-<task>.
    markers = task_markers(bootstrap, topic, topic)
    assert sorted(int(g.rsplit("-", 1)[1]) for g in markers) == [0, 1]
    assert len({g.rsplit("-", 1)[0] for g in markers}) == 1, "both tasks share the write's scope"
    for metadata in markers.values():
        write_id, fingerprint = metadata.rsplit("|", 1)
        assert write_id.startswith("write ") and fingerprint.split(":")[0] == "10", metadata


def test_failed_write_leaves_no_record_for_read_committed_readers(spark, new_topic, options, bootstrap):
    topic = new_topic(**{"max.message.bytes": "2000"})
    rows = [(1, "a", 1.0), (2, "x" * 5000, 2.0), (3, "c", 3.0)]
    with pytest.raises(Exception, match=r"first failed record's key: b'\{\"id\":2\}'"):
        write(spark, options(topic, exactly_once(topic)), rows, SCHEMA)
    assert consume_all(bootstrap, topic) == []


@pytest.mark.compat
def test_batch_write_with_failed_first_attempts_writes_every_row_exactly_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(partitions=3)
    failures = tmp_path / "failures"
    failures.mkdir()
    n = 4 * OPEN_AFTER * 2
    rows = spark.range(0, n, 1, numPartitions=2).selectExpr(
        "cast(id as int) as id", "concat('name-', id) as name", "cast(id as double) as price"
    )
    # Each task's first attempt dies 3/4 into its rows, with records in its open transaction.
    half = n // 2
    failing = rows.withColumn("name", fail_first_attempt(bootstrap, topic, half, half * 3 // 4, str(failures))("id"))
    with arrow_batch_rows(spark, ARROW_ROWS):
        failing.write.format("upsert-kafka").options(**options(topic, exactly_once(topic))).mode("append").save()

    assert sorted(f.name.split("-")[0] for f in failures.iterdir()) == ["open", "open"]
    assert key_counts(bootstrap, topic) == {i: 1 for i in range(n)}
    assert all_offsets(bootstrap, topic) > n + 2, "the failed attempts' records are in the log, aborted"


@pytest.mark.compat
def test_streaming_write_under_task_failures_restarts_and_a_replayed_batch_writes_each_record_once(
    spark, new_topic, options, bootstrap, tmp_path
):
    source, target = new_topic(), new_topic(partitions=2)
    failures, checkpoint = tmp_path / "failures", tmp_path / "checkpoint"
    failures.mkdir()
    # pyspark 4.0's streaming writer takes Arrow batches of 10,000 rows whatever maxRecordsPerBatch says (4.3's
    # take ARROW_ROWS): rows of 100 characters, a first attempt failing at row 12,000 of 16 has records in flight.
    per_batch = 16_000

    def produce_range(start: int, stop: int) -> None:
        produce(
            bootstrap,
            source,
            [
                (orjson.dumps({"id": i}), orjson.dumps({"id": i, "name": f"n{i}", "price": i}))
                for i in range(start, stop)
            ],
        )

    def run() -> list[int]:
        """The query run to the end of the source; returns the batch ids it ran. One AvailableNow run, or, where
        pyspark runs AvailableNow as one micro-batch (4.0/4.1: README, Spark versions), one run per batch."""
        ran: list[int] = []
        for _ in range(6):
            batches = run_once()
            ran += batches
            if ADMISSION_CONTROL or not batches:
                return sorted(set(ran))
        raise AssertionError(f"the source did not run dry in 6 runs: batches {ran}")

    def run_once() -> list[int]:
        changes = (
            spark.readStream.format("upsert-kafka")
            .options(**options(source, {"scan.max-records-per-batch": str(per_batch)}))
            .schema(CHANGES)
            .load()
        )
        # The first attempt of every micro-batch's task dies 3/4 into its rows.
        failing = changes.withColumn(
            "name", fail_first_attempt(bootstrap, target, per_batch, 12_000, str(failures), 3, chars=100)("price")
        )
        with arrow_batch_rows(spark, ARROW_ROWS):
            query = (
                failing.writeStream.format("upsert-kafka")
                .options(**options(target, exactly_once(target)))
                .option("checkpointLocation", str(checkpoint))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return sorted({p["batchId"] for p in query.recentProgress if p["numInputRows"]})

    produce_range(0, 3 * per_batch)
    assert run() == [0, 1, 2]
    # A crash after the sink committed batch 2 but before Spark logged it: the restart replays batch 2.
    uncommit(checkpoint, 2)
    produce_range(3 * per_batch, 4 * per_batch)
    assert run() == [2, 3]

    # Five failed first attempts: of batches 0 to 3, with records in their open transaction (unless the
    # machine was too slow to get them there in time), and of the replay of batch 2, which writes nothing.
    injected = Counter(f.name.split("-")[0] for f in failures.iterdir())
    assert sum(injected.values()) == 5 and injected["open"] >= 3, injected
    counts = key_counts(bootstrap, target)
    assert len(counts) == 4 * per_batch
    assert Counter(counts.values()) == {1: 4 * per_batch}, "some record was written twice"


# -- regressions: what silently lost or duplicated rows before --------------------------------------------


def test_a_user_group_id_does_not_move_the_exactly_once_markers(spark, new_topic, options, bootstrap):
    # properties.group.id once replaced every task's marker group: all tasks shared one marker, and each task
    # after the first found "its" write committed and skipped its rows (125 of 1,000 rows arrived).
    topic = new_topic(partitions=2)
    opts = options(topic, exactly_once(topic) | {"properties.group.id": "monitoring"})
    rows = spark.range(1000).selectExpr("cast(id as int) as id", "'a' as name", "1.0 as price").repartition(8)
    rows.write.format("upsert-kafka").options(**opts).mode("append").save()

    assert key_counts(bootstrap, topic) == {i: 1 for i in range(1000)}


def test_rerun_of_a_named_batch_write_completes_it_exactly_once(spark, new_topic, options, bootstrap, tmp_path):
    topic = new_topic(partitions=2)
    flag = tmp_path / "fail"
    flag.touch()
    rows = spark.range(0, 4000, 1, numPartitions=4).selectExpr(
        "cast(id as int) as id", "concat('n', id) as name", "1.0 as price"
    )
    # Tasks 2 and 3 fail on every attempt once tasks 0 and 1 have committed.
    failing = rows.withColumn("name", fail_tasks(bootstrap, topic, topic, {2, 3}, (0, 1), str(flag))("name"))
    opts = options(topic, exactly_once(topic) | {"sink.write-id": "nightly-2026-11-23"})
    with pytest.raises(Exception, match="injected failure in task"):
        failing.write.format("upsert-kafka").options(**opts).mode("append").save()
    assert len(key_counts(bootstrap, topic)) == 2000, "tasks 0 and 1 committed before the job failed"

    flag.unlink()
    failing.write.format("upsert-kafka").options(**opts).mode("append").save()

    counts = key_counts(bootstrap, topic)
    print(f"rerun of a named write: {sum(counts.values())} records for {len(counts)} keys")
    assert counts == {i: 1 for i in range(4000)}


def test_rerun_whose_rows_reach_other_tasks_fails_before_writing_anything(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(partitions=2)
    flag = tmp_path / "fail"
    flag.touch()
    rows = spark.range(0, 4000, 1, numPartitions=4).selectExpr(
        "cast(id as int) as id", "concat('n', id) as name", "1.0 as price"
    )
    opts = options(topic, exactly_once(topic) | {"sink.write-id": "nightly"})
    with pytest.raises(Exception, match="injected failure in task"):
        failing = rows.withColumn("name", fail_tasks(bootstrap, topic, topic, {2, 3}, (0, 1), str(flag))("name"))
        failing.write.format("upsert-kafka").options(**opts).mode("append").save()
    flag.unlink()

    # The rerun splits the same rows into 2 tasks: tasks 0 and 1 hold other rows than they committed.
    with pytest.raises(Exception, match=r"committed by an earlier attempt with other rows \(1000 then, 2000 now\)"):
        rows.coalesce(2).write.format("upsert-kafka").options(**opts).mode("append").save()

    assert key_counts(bootstrap, topic) == {i: 1 for i in range(2000)}, "nothing written twice, nothing more"


def test_two_queries_with_one_prefix_write_at_the_same_time_without_fencing_each_other(
    spark, new_topic, options, bootstrap, tmp_path
):
    # Transactional ids were <prefix>-<task>: the second query's task fenced the first one's open transaction.
    sources, target = [new_topic(), new_topic()], new_topic(partitions=2)
    for n, source in enumerate(sources):
        produce(bootstrap, source, [(orjson.dumps({"id": i}), orjson.dumps({"id": i})) for i in range(n, 600, 2)])
    barrier, retries = tmp_path / "barrier", tmp_path / "retries"
    barrier.mkdir()
    retries.mkdir()

    def meet(seq: int) -> str:
        """Both queries' tasks hold an open transaction with records when they meet here, at row 300."""
        import os
        import time

        from pyspark import TaskContext

        if TaskContext.get().attemptNumber() > 0:  # a task failed (fenced) and runs again
            open(os.path.join(str(retries), str(seq)), "w").close()
        if seq in (300, 301):  # one in each source
            open(os.path.join(str(barrier), str(seq)), "w").close()
            deadline = time.monotonic() + 60
            while len(os.listdir(str(barrier))) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
        return f"{seq:<200}"

    from pyspark.sql import functions as F

    slow = F.udf(meet, "string", useArrow=False).asNondeterministic()
    # Small Arrow batches: rows reach the writers (and their open transactions) while the UDF still runs.
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "50")
    queries = []
    for source in sources:
        stream = spark.readStream.format("upsert-kafka").options(**options(source))
        stream = stream.schema("id INT, _change_type STRING").load()
        stream = stream.withColumn("name", slow("id")).withColumn("price", F.lit(1.0))
        queries.append(
            stream.select("id", "name", "price", "_change_type")
            .writeStream.format("upsert-kafka")
            .options(**options(target, exactly_once(target) | {"sink.buffer-flush.max-rows": "0"}))
            .option("checkpointLocation", str(tmp_path / source))
            .trigger(availableNow=True)
            .start()
        )
    try:
        for query in queries:
            query.awaitTermination(240)
            assert query.exception() is None, query.exception()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")

    assert len(list(barrier.iterdir())) == 2, "the two transactions were open at the same time"
    assert not list(retries.iterdir()), "no task was fenced by the other query and run again"
    assert key_counts(bootstrap, target) == {i: 1 for i in range(600)}


def test_exactly_once_transactions_time_out_after_a_minute_unless_configured(new_topic, bootstrap):
    # A crashed task's open transaction holds back read_committed readers until it times out: the default was the
    # brokers' maximum (15 minutes); now the Java producer's one minute, and the user's setting when given.
    from pyspark_upsert_kafka.kafka.spec import parse_kafka_spec
    from pyspark_upsert_kafka.write.target import describe_write_target

    topic = new_topic()
    kafka = parse_kafka_spec({"properties.bootstrap.servers": bootstrap})
    assert describe_write_target(kafka, (topic,), None, None).transaction_timeout_ms == 60_000
    assert describe_write_target(kafka, (topic,), None, 300_000).transaction_timeout_ms == 300_000


def test_a_rerun_fences_what_a_crashed_run_left_open(spark, new_topic, options, bootstrap):
    # A run's task 5 died with its transaction open: every read_committed reader of the partition is held back
    # until the timeout. The rerun fences every id of the write that ever committed before it writes.
    from confluent_kafka import Producer
    from pyspark_upsert_kafka.write.exactly_once import ExactlyOnce
    from pyspark_upsert_kafka.write.spec import parse_write_spec

    topic = new_topic()
    opts = options(topic, exactly_once(topic) | {"sink.write-id": "job"})
    spec = parse_write_spec(opts, spark.createDataFrame([], SCHEMA).schema)
    task_5 = f"{topic}-{ExactlyOnce(spec, None, '').identity(None).scope}-5"
    crashed = Producer({"bootstrap.servers": bootstrap, "transactional.id": task_5})
    crashed.init_transactions(10)
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": task_5})
    for value in (b"committed", b"left open"):  # the first transaction commits a marker, the second stays open
        crashed.begin_transaction()
        crashed.produce(topic, value, b'{"id":99}')
        crashed.flush(10)
        if value == b"committed":
            marker = TopicPartition(topic, 0, 0, metadata="write other to x|0:0:0:0")
            crashed.send_offsets_to_transaction([marker], group.consumer_group_metadata(), 10)
            crashed.commit_transaction(10)
    group.close()
    assert open_transaction_has_records(bootstrap, topic)

    write(spark, opts, [(1, "a", 1.0)], SCHEMA)

    assert key_counts(bootstrap, topic) == {99: 1, 1: 1}, "read_committed readers get past the fenced transaction"


@pytest.mark.compat
def test_a_write_in_workers_without_the_daemon_still_tells_a_cut_short_input(new_topic, bootstrap, tmp_path):
    # Without PySpark's daemon the worker code runs as __main__: the truncated-input guard found no worker, only
    # warned, and committed the first attempts' partial input; the retries then skipped the rest (rows lost).
    topic = new_topic(partitions=2)
    failures = tmp_path / "failures"
    failures.mkdir()
    n = 4 * OPEN_AFTER * 2
    child = subprocess.run(
        [sys.executable, "-m", "tests.workers.write_without_daemon", bootstrap, topic, str(failures), str(n)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-3000:]

    counts = key_counts(bootstrap, topic)
    print(f"daemonless exactly-once write: {len(list(failures.iterdir()))} injected failures, {len(counts)} keys")
    assert sorted(f.name.split("-")[0] for f in failures.iterdir()) == ["open", "open"]
    assert counts == {i: 1 for i in range(n)}


@pytest.mark.compat
def test_an_exactly_once_task_whose_input_cannot_be_checked_commits_nothing(spark, new_topic, options, bootstrap):
    # Outside a PySpark worker nothing tells a complete input from one cut short: the task fails closed (it used
    # to warn and commit, and under exactly-once its marker then made the retry skip the rest of its rows).
    import pyarrow as pa
    from pyspark_upsert_kafka.errors import WriteTaskError
    from pyspark_upsert_kafka.write.plan import plan_write
    from pyspark_upsert_kafka.write.task import RecordWriter

    topic = new_topic()
    schema = spark.createDataFrame([], SCHEMA).schema
    plan = plan_write(options(topic, exactly_once(topic)), schema, overwrite=False)
    batch = pa.RecordBatch.from_pydict({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"], "price": [1.0, 2.0]})
    with pytest.raises(WriteTaskError, match="cannot tell whether Spark handed this task its whole input"):
        RecordWriter(plan, 0, None).write(iter([batch]))

    assert consume_all(bootstrap, topic) == []


@pytest.mark.compat
def test_an_exactly_once_stream_task_that_cannot_tell_its_micro_batch_writes_nothing(
    spark, new_topic, options, bootstrap
):
    # Without the micro-batch a replayed batch would look new and be written twice: the task fails closed (it
    # used to fall back to the job's fresh id).
    import pyarrow as pa
    from pyspark_upsert_kafka.errors import WriteTaskError
    from pyspark_upsert_kafka.write.plan import plan_write
    from pyspark_upsert_kafka.write.task import RecordWriter

    topic = new_topic()
    schema = spark.createDataFrame([], SCHEMA).schema
    plan = plan_write(options(topic, exactly_once(topic)), schema, overwrite=False, streaming=True)
    batch = pa.RecordBatch.from_pydict({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"], "price": [1.0, 2.0]})
    with pytest.raises(WriteTaskError, match="does not tell the task which streaming query and micro-batch"):
        RecordWriter(plan, 0, None).write(iter([batch]))
    assert consume_all(bootstrap, topic) == []
