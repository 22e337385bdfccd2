"""Reads and writes through the connector on the secured broker, as a user holding only the ACLs the mode needs:
SCRAM-SHA-512 over SASL_SSL (the broker's certificate checked against the test CA, hostname included) and PLAIN
over SASL_PLAINTEXT. librdkafka's own setting names go in as `properties.*`."""

from __future__ import annotations

import uuid

import orjson
import pytest
from pyspark_upsert_kafka.kafka.spec import parse_kafka_spec
from pyspark_upsert_kafka.read.fetch import fetch_range
from pyspark_upsert_kafka.read.range_calculator import PartitionRange

from tests.security.acls import exactly_once_grants, read_grants, write_grants
from tests.support.secure_fixtures import PLAIN, SASL_PLAINTEXT, SASL_SSL, SCRAM

SCHEMA = "id INT, name STRING"
LISTENERS = [pytest.param(SASL_SSL, SCRAM, id="scram-over-sasl_ssl"), pytest.param(SASL_PLAINTEXT, PLAIN, id="plain")]


def table(spark, opts: dict) -> list[tuple]:
    df = spark.read.format("upsert-kafka").options(**opts, **{"read.mode": "table"}).schema(SCHEMA).load()
    return sorted(tuple(r) for r in df.collect())


def written(secure_kafka, topic: str) -> list[tuple[dict, dict | None]]:
    return [(orjson.loads(k), v and orjson.loads(v)) for *_, k, v in secure_kafka.consume_all(topic)]


@pytest.mark.parametrize(("protocol", "mechanism"), LISTENERS)
def test_batch_write_then_batch_read(spark, secure_kafka, secure_topic, kafka_user, protocol, mechanism):
    topic = secure_topic(2)
    user = kafka_user(*write_grants(topic), *read_grants(topic), mechanism=mechanism)
    opts = secure_kafka.options(user, topic, protocol)

    rows = [(1, "a"), (2, "b"), (3, None)]
    spark.createDataFrame(rows, SCHEMA).write.format("upsert-kafka").options(**opts).mode("append").save()

    assert sorted(written(secure_kafka, topic), key=lambda r: r[0]["id"]) == [
        ({"id": 1}, {"id": 1, "name": "a"}),
        ({"id": 2}, {"id": 2, "name": "b"}),
        ({"id": 3}, {"id": 3, "name": None}),
    ]
    assert table(spark, opts) == [(1, "a"), (2, "b"), (3, None)]


def test_a_read_needs_no_acl_on_any_consumer_group(secure_kafka, secure_topic, kafka_user):
    """The executors' range consumers never join or commit to a group: READ on the topic is all a read needs.
    Their coordinator look-up for the unused group, refused without DESCRIBE on it, arrives at a random moment
    (about one read in two here), so the executor's read of a range runs ten times."""
    topic = secure_topic()
    secure_kafka.produce(topic, [(b'{"id":1}', b'{"id":1,"name":"a"}'), (b'{"id":2}', b'{"id":2,"name":"b"}')])
    user = kafka_user(*read_grants(topic))
    spec = parse_kafka_spec(secure_kafka.options(user, topic, SASL_SSL))

    for _ in range(10):
        assert [o for records in fetch_range(spec, PartitionRange(topic, 0, 0, 2)) for o in records.offsets] == [0, 1]


@pytest.mark.parametrize(("protocol", "mechanism"), LISTENERS)
def test_streaming_read_into_streaming_write(
    spark, secure_kafka, secure_topic, kafka_user, tmp_path, protocol, mechanism
):
    source, target = secure_topic(2), secure_topic(1)
    user = kafka_user(*read_grants(source), *write_grants(target), mechanism=mechanism)
    secure_kafka.produce(source, [(b'{"id":1}', b'{"id":1,"name":"a"}'), (b'{"id":2}', b'{"id":2,"name":"b"}'),
                                  (b'{"id":1}', None)])  # fmt: skip

    query = (
        spark.readStream.format("upsert-kafka").options(**secure_kafka.options(user, source, protocol))
        .schema(SCHEMA + ", _change_type STRING").load()
        .writeStream.format("upsert-kafka").options(**secure_kafka.options(user, target, protocol))
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
    )  # fmt: skip
    try:
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
        assert not query.isActive
    finally:
        query.stop()

    # The changelog arrives as it was: key 1's upsert, then its delete as a tombstone; key 2's upsert.
    records = written(secure_kafka, target)  # one partition: in offset order
    assert [v for k, v in records if k == {"id": 1}] == [{"id": 1, "name": "a"}, None]
    assert [v for k, v in records if k == {"id": 2}] == [{"id": 2, "name": "b"}]


@pytest.mark.parametrize(("protocol", "mechanism"), LISTENERS)
def test_exactly_once_write(spark, secure_kafka, secure_topic, kafka_user, protocol, mechanism):
    topic = secure_topic(2)
    prefix = f"eos-{uuid.uuid4().hex[:8]}"
    user = kafka_user(*exactly_once_grants(topic, prefix), mechanism=mechanism)
    opts = secure_kafka.options(
        user, topic, protocol, **{"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": prefix}
    )

    rows = [(i, f"n{i}") for i in range(6)]
    spark.createDataFrame(rows, SCHEMA).repartition(2).write.format("upsert-kafka").options(**opts).mode(
        "append"
    ).save()

    # read_committed: every record is there once, in committed transactions.
    assert sorted(written(secure_kafka, topic), key=lambda r: r[0]["id"]) == [
        ({"id": i}, {"id": i, "name": f"n{i}"}) for i in range(6)
    ]
