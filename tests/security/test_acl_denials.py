"""ACL denials on the secured broker (StandardAuthorizer): each fails with one clear error that names the resource
and the permission to grant, without a retry, and never shows the password. The user always holds
every other ACL the mode needs (tests/security/acls.py), so the missing one is the only cause."""

from __future__ import annotations

import logging
import re
import uuid

import pytest
from pyspark_upsert_kafka.errors import DataLossError, KafkaAuthorizationError
from pyspark_upsert_kafka.spark_internals import ReadAllAvailable

from tests.security.acls import exactly_once_grants, read_grants
from tests.security.failures import TIMEOUT_OPTIONS, assert_no_secret, failure_of
from tests.support.checkpoints import planned_offsets
from tests.support.read_helpers import Collector, as_checkpointed, stream_reader, wait_for
from tests.support.secure_fixtures import SASL_SSL, Grant

SCHEMA = "id INT, name STRING"
CHANGES = SCHEMA + ", _change_type STRING"
RECORDS = [(b'{"id":1}', b'{"id":1,"name":"a"}'), (b'{"id":2}', b'{"id":2,"name":"b"}')]


def read(spark, opts: dict):
    return lambda: spark.read.format("upsert-kafka").options(**opts).schema(CHANGES).load().collect()


def write(spark, opts: dict, partitions: int = 1):
    df = spark.createDataFrame([(i, f"n{i}") for i in range(4)], SCHEMA).repartition(partitions)
    return lambda: df.write.format("upsert-kafka").options(**opts).mode("append").save()


def connector_error(message: str) -> str:
    """The connector's own error line (its class and text), as the Python traceback Spark carries shows it."""
    found = re.search(r"pyspark_upsert_kafka\.errors\.\w+: [^\n]*", message)
    return found.group(0) if found else message.splitlines()[0]


def test_read_without_read_on_the_topic_names_the_topic_and_the_grant(
    spark, secure_kafka, secure_topic, kafka_user, spark_logs, caplog
):
    topic = secure_topic()
    secure_kafka.produce(topic, RECORDS)
    user = kafka_user(Grant("TOPIC", topic, ("DESCRIBE",)))

    failure = failure_of(read(spark, secure_kafka.options(user, topic, SASL_SSL, **TIMEOUT_OPTIONS)))

    failure.assert_asks_to_grant("READ", f"topic '{topic}'")
    failure.assert_failed_as(KafkaAuthorizationError)
    assert_no_secret(user.password, failure.message, spark_logs.text(), caplog.text)


def test_read_without_describe_on_the_topic_fails_planning_naming_the_topic_and_the_grant(
    spark, secure_kafka, secure_topic, kafka_user, spark_logs, caplog
):
    topic, other = secure_topic(), secure_topic()
    user = kafka_user(*read_grants(other))  # authenticated, and may read another topic only

    failure = failure_of(read(spark, secure_kafka.options(user, topic, SASL_SSL, **TIMEOUT_OPTIONS)))

    failure.assert_asks_to_grant("DESCRIBE", f"topic '{topic}'")
    failure.assert_says("authori[sz]")
    failure.assert_failed_as(KafkaAuthorizationError)
    assert_no_secret(user.password, failure.message, spark_logs.text(), caplog.text)


def test_write_without_write_on_the_topic_gives_the_same_clear_error_every_time(
    spark, secure_kafka, secure_topic, kafka_user, spark_logs, caplog
):
    topic = secure_topic(2)
    user = kafka_user(Grant("TOPIC", topic, ("DESCRIBE",)))
    opts = secure_kafka.options(user, topic, SASL_SSL, **TIMEOUT_OPTIONS)

    # The idempotent producer's producer-id request fails fatally here; a race once turned that into a SystemError.
    failures = [failure_of(write(spark, opts, partitions=2)) for _ in range(2)]

    for failure in failures:
        failure.assert_asks_to_grant("WRITE", f"topic '{topic}'")
        assert "SystemError" not in failure.message
        failure.assert_failed_as(KafkaAuthorizationError)
    assert connector_error(failures[0].message) == connector_error(failures[1].message)
    assert secure_kafka.consume_all(topic) == []
    assert_no_secret(user.password, *(f.message for f in failures), spark_logs.text(), caplog.text)


def test_group_offsets_startup_without_read_on_the_group_names_the_group_and_the_grant(
    spark, secure_kafka, secure_topic, kafka_user, spark_logs, caplog
):
    topic, group = secure_topic(), f"group-{uuid.uuid4().hex[:8]}"
    secure_kafka.produce(topic, RECORDS)
    user = kafka_user(*read_grants(topic))
    startup = {"properties.group.id": group, "scan.startup.mode": "group-offsets"}
    opts = secure_kafka.options(user, topic, SASL_SSL, **TIMEOUT_OPTIONS, **startup)

    failure = failure_of(read(spark, opts))

    failure.assert_asks_to_grant("READ", f"group '{group}'")
    assert "brokers are up" not in failure.message
    failure.assert_failed_as(KafkaAuthorizationError)
    assert_no_secret(user.password, failure.message, spark_logs.text(), caplog.text)


def test_streaming_read_keeps_reading_when_it_may_not_commit_to_its_group(
    spark, secure_kafka, secure_topic, kafka_user, tmp_path, caplog
):
    """The offsets a streaming read commits to `properties.group.id` are for monitoring only (Spark's checkpoint
    is what a query resumes from): without READ on the group the query goes on and delivers every record, while
    its commits are denied (the group holds no offset) with a warning naming the group and the grant."""
    topic, group = secure_topic(), f"group-{uuid.uuid4().hex[:8]}"
    user = kafka_user(*read_grants(topic))
    opts = secure_kafka.options(user, topic, SASL_SSL, **{"properties.group.id": group})
    checkpoint = str(tmp_path / "cp")
    sink = Collector()
    query = (
        spark.readStream.format("upsert-kafka").options(**opts).schema(CHANGES).load()
        .writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
        .trigger(processingTime="200 milliseconds").start()
    )  # fmt: skip
    try:
        secure_kafka.produce(topic, RECORDS[:1])
        wait_for(lambda: len(sink.rows) >= 1 or query.exception() is not None, "the first record")
        secure_kafka.produce(topic, RECORDS[1:])  # the next batch commits the first one's offsets: denied
        wait_for(lambda: len(sink.rows) >= 2 or query.exception() is not None, "the second record")
        assert query.exception() is None, query.exception()
        assert sorted(r[:2] for r in sink.rows) == [(1, "a"), (2, "b")]
    finally:
        query.stop()

    # Spark commits a batch to its source before it runs the next one: had the commit of the first record's batch
    # got through, the group would hold offset 1.
    assert secure_kafka.committed(group, topic) is None, "the group holds an offset"
    # That same commit, made here where its log is seen (the query's reader logs in Spark's Python process).
    (batch,) = [b for b in sink.batches if any(r[0] == 1 for r in sink.by_batch[b])]
    reader = stream_reader(opts, CHANGES)
    try:
        with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
            reader.commit(planned_offsets(checkpoint, batch))  # best effort: no error
    finally:
        reader.stop()
    warnings = [
        r.getMessage() for r in caplog.records if f"could not commit offsets to group '{group}'" in r.getMessage()
    ]
    assert len(warnings) == 1 and f"grant this client's user READ on consumer group '{group}'" in warnings[0], warnings


def test_stream_without_describe_configs_on_the_topic_fails_its_first_batch_naming_the_grant(
    secure_kafka, secure_topic, kafka_user, caplog
):
    """Without the topic's cleanup.policy and delete.retention.ms a stream cannot tell whether the log cleaner removed
    deletes it has not read: it fails closed, naming the grant and the option that accepts going on."""
    topic = secure_topic()
    secure_kafka.produce(topic, RECORDS)
    user = kafka_user(Grant("TOPIC", topic, ("READ",)))
    reader = stream_reader(secure_kafka.options(user, topic, SASL_SSL, **TIMEOUT_OPTIONS), CHANGES)
    try:
        start = as_checkpointed(reader.initialOffset())
        failure = failure_of(lambda: reader.latestOffset(start, ReadAllAvailable()))
        failure.assert_asks_to_grant("DESCRIBE_CONFIGS", f"topic '{topic}' partition 0 from offset 0")
        failure.assert_says(r"scan\.compaction-lost-deletes' to warn")
        failure.assert_failed_as(DataLossError)
    finally:
        reader.stop()
    assert_no_secret(user.password, failure.message, caplog.text)


# The ACL an exactly-once write lacks: (its resource type, the permission to grant, what the error says besides).
@pytest.mark.parametrize(
    ("resource", "permission", "says"),
    [
        ("TRANSACTIONAL_ID", "WRITE", ("transactional id", r"sink\.transactional-id-prefix")),
        ("GROUP", "READ", ("group",)),  # the marker groups
    ],
    ids=["write-on-the-transactional-ids", "read-on-the-marker-groups"],
)
def test_exactly_once_write_without_an_acl_names_the_resources_and_the_grant(
    spark, secure_kafka, secure_topic, kafka_user, spark_logs, caplog, resource, permission, says
):
    topic, prefix = secure_topic(), f"eos-{uuid.uuid4().hex[:8]}"
    grants = [g for g in exactly_once_grants(topic, prefix) if g.resource != resource]
    user = kafka_user(*grants)
    eos = {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": prefix}

    failure = failure_of(write(spark, secure_kafka.options(user, topic, SASL_SSL, **TIMEOUT_OPTIONS, **eos)))

    failure.assert_asks_to_grant(permission, prefix)
    failure.assert_says(*says)
    failure.assert_failed_as(KafkaAuthorizationError)
    assert secure_kafka.consume_all(topic) == []  # the transaction never committed
    assert_no_secret(user.password, failure.message, spark_logs.text(), caplog.text)
