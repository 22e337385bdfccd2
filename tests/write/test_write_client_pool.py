"""Write tasks borrow their producer from the worker's pool (kafka/pool.py), against the real broker: the tasks of
one process share one producer per configuration, a producer whose task failed is closed, a transactional
producer is reused only for its own transactional id, and one fenced while it was pooled is replaced before
it sends anything, so no record is lost or written twice. In Spark, a streaming query's micro-batches reuse
their workers' consumers and producers."""

from __future__ import annotations

import subprocess
import sys
import uuid

import orjson
import pyarrow as pa
import pytest
from confluent_kafka import Producer
from pyspark.sql.types import DoubleType, IntegerType, StringType, StructField, StructType
from pyspark_upsert_kafka.errors import RecordError
from pyspark_upsert_kafka.kafka.pool import CLIENT_POOL
from pyspark_upsert_kafka.write.exactly_once import ExactlyOnce, ExactlyOnceTask, WriteIdentity
from pyspark_upsert_kafka.write.plan import WritePlan
from pyspark_upsert_kafka.write.producer import Sender
from pyspark_upsert_kafka.write.spec import parse_write_spec
from pyspark_upsert_kafka.write.target import WriteTarget
from pyspark_upsert_kafka.write.task import RecordWriter

from tests.support.kafka_io import consume_all
from tests.support.read_helpers import rec, send, stream, wait_for
from tests.support.write_helpers import key_counts, task_marker

SCHEMA = StructType(
    [StructField("id", IntegerType()), StructField("name", StringType()), StructField("price", DoubleType())]
)


def plan(options: dict, topic: str, max_message_bytes: int | None = None) -> WritePlan:
    # A client.id of its own: this test's producers are not shared with other tests of the session.
    opts = {"properties.client.id": f"pool-test-{uuid.uuid4().hex[:8]}", **options}
    return WritePlan(parse_write_spec(opts, SCHEMA), WriteTarget((topic,), max_message_bytes, None))


def rows(ids: range, name: str = "n") -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {"id": list(ids), "name": [name] * len(ids), "price": [1.0] * len(ids)},
        schema=pa.schema([("id", pa.int32()), ("name", pa.string()), ("price", pa.float64())]),
    )


def task(write_plan: WritePlan, batch: pa.RecordBatch, partition: int = 0):
    return RecordWriter(write_plan, partition, None).write(iter([batch]))


def test_write_tasks_in_one_process_share_one_producer(new_topic, options, bootstrap):
    topic = new_topic(partitions=2)
    write_plan = plan(options(topic), topic)
    made, again = CLIENT_POOL.made["producer"], CLIENT_POOL.lent_again["producer"]

    for i in range(3):
        assert task(write_plan, rows(range(10 * i, 10 * i + 10)), partition=i).records == 10

    assert key_counts(bootstrap, topic) == {i: 1 for i in range(30)}
    assert CLIENT_POOL.made["producer"] - made == 1, "one producer made"
    assert CLIENT_POOL.lent_again["producer"] - again == 2, "and lent again to the next two tasks"


def test_producers_with_other_settings_are_not_shared(new_topic, options, bootstrap):
    topic = new_topic()
    client_id = f"pool-test-{uuid.uuid4().hex[:8]}"
    made = CLIENT_POOL.made["producer"]
    for linger in ("20", "5", "20"):
        opts = options(topic, {"properties.linger.ms": linger, "properties.client.id": client_id})
        task(plan(opts, topic), rows(range(3)))
    assert CLIENT_POOL.made["producer"] - made == 2, "one per configuration; the third task reused the first"
    assert key_counts(bootstrap, topic) == {0: 3, 1: 3, 2: 3}


def test_a_producer_whose_task_failed_is_closed_not_lent_again(new_topic, options, bootstrap):
    topic = new_topic(**{"max.message.bytes": "2000"})
    write_plan = plan(options(topic), topic, max_message_bytes=2000)
    task(write_plan, rows(range(2)))
    made = CLIENT_POOL.made["producer"]

    with pytest.raises(RecordError, match="larger than the topic accepts"):
        task(write_plan, rows(range(2, 3), name="x" * 5000))
    task(write_plan, rows(range(3, 5)))

    assert CLIENT_POOL.made["producer"] - made == 1, "the failed task's producer was closed, the next task made one"
    assert key_counts(bootstrap, topic) == {0: 1, 1: 1, 3: 1, 4: 1}


def transactional_task(write_plan: WritePlan, txn_id: str, write_id: str, ids: range, topic: str) -> Sender:
    """What RecordWriter does for one exactly-once task (which it only does inside a Spark worker)."""
    exactly_once = task_of(write_plan, txn_id, write_id)
    sender = Sender(write_plan.spec, write_plan.target, exactly_once)
    clean = False
    try:
        assert sender.begin() is None, "not written before"
        keys = [orjson.dumps({"id": i}) for i in ids]
        sender.produce(topic, keys, [orjson.dumps({"id": i, "name": "n", "price": 1.0}) for i in ids])
        exactly_once.count(keys, 0)
        sender.finish()
        clean = True
    except BaseException:
        sender.fail()
        raise
    finally:
        sender.release(clean)
    return sender


def task_of(write_plan: WritePlan, txn_id: str, write_id: str) -> ExactlyOnceTask:
    """An exactly-once task with the given transactional id and write id."""
    return ExactlyOnceTask(write_plan.transactions, txn_id, WriteIdentity("q", write_id), 0)


def exactly_once_plan(options, topic: str, prefix: str) -> WritePlan:
    opts = options(topic, {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": prefix})
    opts["properties.client.id"] = f"pool-test-{uuid.uuid4().hex[:8]}"
    spec, target = parse_write_spec(opts, SCHEMA), WriteTarget((topic,), None, 60_000)
    return WritePlan(spec, target, ExactlyOnce(spec, target, "fresh"))


def test_a_transactional_producer_is_reused_only_for_its_own_transactional_id(new_topic, options, bootstrap):
    topic = new_topic()
    prefix = f"pool-{uuid.uuid4().hex[:8]}"
    write_plan = exactly_once_plan(options, topic, prefix)
    made, again = CLIENT_POOL.made["producer"], CLIENT_POOL.lent_again["producer"]

    first = transactional_task(write_plan, f"{prefix}-q-0", "batch 1", range(0, 5), topic)
    other = transactional_task(write_plan, f"{prefix}-q-1", "batch 1", range(5, 10), topic)
    reused = transactional_task(write_plan, f"{prefix}-q-0", "batch 2", range(10, 15), topic)

    assert other.client is not first.client, "another transactional id, another producer"
    assert reused.client is first.client, "the same id reuses its producer (without init_transactions again)"
    assert (CLIENT_POOL.made["producer"] - made, CLIENT_POOL.lent_again["producer"] - again) == (2, 1)
    assert key_counts(bootstrap, topic) == {i: 1 for i in range(15)}
    assert task_marker(bootstrap, prefix, 0, topic).startswith("batch 2|"), "the reused producer's marker"


def test_a_pooled_transactional_producer_fenced_meanwhile_is_replaced_before_it_sends(new_topic, options, bootstrap):
    topic = new_topic()
    prefix = f"pool-{uuid.uuid4().hex[:8]}"
    txn_id = f"{prefix}-q-0"
    write_plan = exactly_once_plan(options, topic, prefix)
    pooled = transactional_task(write_plan, txn_id, "batch 1", range(0, 5), topic)

    # The task runs in another worker meanwhile: its producer fences the pooled one.
    elsewhere = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    elsewhere.init_transactions(30)
    elsewhere.begin_transaction()
    elsewhere.produce(topic, orjson.dumps({"id": 100}), orjson.dumps({"id": 100, "name": "x", "price": 1.0}))
    elsewhere.commit_transaction(30)
    made = CLIENT_POOL.made["producer"]

    again = transactional_task(write_plan, txn_id, "batch 2", range(5, 10), topic)

    assert again.client is not pooled.client, "the fenced producer was not used"
    assert CLIENT_POOL.made["producer"] - made == 1, "a new producer took its place"
    assert key_counts(bootstrap, topic) == {**{i: 1 for i in range(10)}, 100: 1}, "nothing lost, nothing twice"
    assert task_marker(bootstrap, prefix, 0, topic).startswith("batch 2|")
    # The replacement is pooled for the id now: the next task reuses it.
    assert transactional_task(write_plan, txn_id, "batch 3", range(10, 12), topic).client is again.client


def test_a_transactional_producer_that_found_its_write_committed_is_reused(new_topic, options, bootstrap):
    topic = new_topic()
    prefix = f"pool-{uuid.uuid4().hex[:8]}"
    txn_id = f"{prefix}-q-0"
    write_plan = exactly_once_plan(options, topic, prefix)
    first = transactional_task(write_plan, txn_id, "batch 1", range(0, 5), topic)

    replay = Sender(write_plan.spec, write_plan.target, task_of(write_plan, txn_id, "batch 1"))
    assert replay.begin() is not None, "the replay finds its write committed and opens no transaction"
    replay.release(clean=True)
    assert replay.client is first.client

    assert transactional_task(write_plan, txn_id, "batch 2", range(5, 8), topic).client is first.client
    assert key_counts(bootstrap, topic) == {i: 1 for i in range(8)}


def test_a_streaming_querys_micro_batches_reuse_their_workers_consumers_and_producers(
    spark, new_topic, options, bootstrap, tmp_path
):
    source, target = new_topic(partitions=4), new_topic(partitions=4)
    probe = "tests.workers.pool_probe:PoolProbeCodec"
    read = options(source, {"value.format": probe, "value.fields-include": "EXCEPT_KEY"})
    changes = stream(spark, read, "id INT, probe STRING, _change_type STRING")
    query = (
        changes.writeStream.format("upsert-kafka")
        .options(**options(target, {"value.format": probe}))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="0 seconds")
        .start()
    )
    try:
        # Spark lends its idle Python workers in turn, so a worker serves every few tasks: enough micro-batches
        # that some worker serves several (more than the workers a local[2] session keeps).
        rounds = 12
        for r in range(rounds):
            send(bootstrap, source, [rec(10 * r + p, partition=p) for p in range(4)])
            wait_for(lambda r=r: len(consume_all(bootstrap, target)) >= 4 * (r + 1), f"round {r} written")
    finally:
        query.stop()

    values = [orjson.loads(v) for _, _, _, v in consume_all(bootstrap, target)]
    assert sorted(v["id"] for v in values) == sorted(10 * r + p for r in range(rounds) for p in range(4))
    batches = {v["batch"] for v in values}
    for role in ("probe", "writer"):  # the reading workers' consumers, the writing workers' producers
        made_by_worker: dict[str, set[str]] = {}
        for v in values:
            pid, made = v[role].split(":")
            made_by_worker.setdefault(pid, set()).add(made)
        # A worker's count of clients made never grew while it served this query: one client each ...
        assert all(len(m) == 1 for m in made_by_worker.values()), f"{role}: a worker made a second client"
        # ... and fewer workers than micro-batches: some worker reused its client in a later micro-batch.
        assert len(made_by_worker) < len(batches), (role, len(made_by_worker), len(batches))


def test_a_process_forked_while_producers_are_pooled_starts_cleanly(new_topic, options, bootstrap):
    """A child forked with Python's fork handlers (subprocess with preexec_fn, as pyspark starts its JVM) must
    not touch the parent's librdkafka clients: dropping them there crashed the child."""
    topic = new_topic()
    task(plan(options(topic), topic), rows(range(3)))
    prefix = f"pool-{uuid.uuid4().hex[:8]}"
    transactional_task(exactly_once_plan(options, topic, prefix), f"{prefix}-q-0", "batch 1", range(3, 6), topic)
    assert CLIENT_POOL.idle() >= 2
    child = subprocess.run([sys.executable, "-c", "print('started')"], preexec_fn=lambda: None, capture_output=True)
    assert (child.returncode, child.stdout.strip()) == (0, b"started")
