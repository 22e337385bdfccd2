"""Which topics a read covers: `topic` lists, `topic-pattern`, Spark's `subscribe`/`subscribePattern`, and
the partitions and topics a stream discovers while it runs."""

from __future__ import annotations

import uuid

from confluent_kafka.admin import AdminClient, NewPartitions

from tests.support.kafka_io import create_topic
from tests.support.read_helpers import Collector, rec, rows_of, send, start_collecting, stream, wait_for

TOPIC_ROWS = "id INT, name STRING, src STRING"


def _base(bootstrap: str) -> dict:
    return {"properties.bootstrap.servers": bootstrap, "key.fields": "id", "metadata.columns": "src=topic"}


def _by_topic(rows: list[tuple]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, _, topic, *_ in rows:
        out.setdefault(topic, []).append(i)
    return {t: sorted(ids) for t, ids in sorted(out.items())}


def test_semicolon_topic_list_reads_every_listed_topic(spark, new_topic, bootstrap):
    a, b, other = new_topic(), new_topic(partitions=2), new_topic()
    send(bootstrap, a, [rec(1), rec(2)])
    send(bootstrap, b, [rec(3), rec(4)])
    send(bootstrap, other, [rec(5)])

    rows = rows_of(spark, _base(bootstrap) | {"topic": f"{a}; {b}"}, TOPIC_ROWS)
    assert _by_topic(rows) == {a: [1, 2], b: [3, 4]}


def test_spark_subscribe_takes_a_comma_list(spark, new_topic, bootstrap):
    a, b = new_topic(), new_topic()
    send(bootstrap, a, [rec(1)])
    send(bootstrap, b, [rec(2)])

    rows = rows_of(spark, _base(bootstrap) | {"subscribe": f"{a},{b}"}, TOPIC_ROWS)
    assert _by_topic(rows) == {a: [1], b: [2]}


def test_topic_pattern_reads_the_topics_whose_whole_name_matches(spark, bootstrap):
    base = f"pattern-{uuid.uuid4().hex[:8]}"
    a, b = create_topic(bootstrap, f"{base}-a"), create_topic(bootstrap, f"{base}-b", partitions=2)
    longer = create_topic(bootstrap, f"{base}-a-longer")  # matches only as a prefix: not read
    for i, topic in enumerate((a, b, longer)):
        send(bootstrap, topic, [rec(i)])

    for name in ("topic-pattern", "subscribePattern"):
        rows = rows_of(spark, _base(bootstrap) | {name: f"{base}-[ab]"}, TOPIC_ROWS)
        assert _by_topic(rows) == {a: [0], b: [1]}, name


def _start(spark, opts: dict, checkpoint: str, sink: Collector):
    return start_collecting(stream(spark, opts, TOPIC_ROWS + ", _change_type STRING"), checkpoint, sink)


def test_stream_reads_new_partitions_from_their_earliest_offset(spark, new_topic, bootstrap, tmp_path):
    topic, checkpoint = new_topic(partitions=1), str(tmp_path / "cp")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    send(bootstrap, topic, [rec(1, partition=0)])
    opts = _base(bootstrap) | {"topic": topic, "scan.topic-partition-discovery.interval": "300 ms"}
    sink = Collector()
    query = _start(spark, opts, checkpoint, sink)
    try:
        wait_for(lambda: len(sink.rows) >= 1, "the first record")
    finally:
        query.stop()

    # A partition added while the query was down holds records the checkpoint has never seen.
    admin.create_partitions([NewPartitions(topic, 2)])[topic].result(30)
    send(bootstrap, topic, [rec(i, partition=1) for i in (2, 3)])
    query = _start(spark, opts, checkpoint, sink)
    try:
        wait_for(lambda: len(sink.rows) >= 3, "the records of the partition added while stopped")
        # One added while the query runs is found at the next discovery.
        admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
        send(bootstrap, topic, [rec(4, partition=2)])
        wait_for(lambda: len(sink.rows) >= 4, "the record of the partition added while running")
    finally:
        query.stop()
    assert sorted(r[0] for r in sink.rows) == [1, 2, 3, 4]


def test_stream_reads_new_topics_matching_the_pattern_from_their_earliest_offset(spark, bootstrap, tmp_path):
    base, checkpoint = f"discover-{uuid.uuid4().hex[:8]}", str(tmp_path / "cp")
    first = create_topic(bootstrap, f"{base}-1")
    send(bootstrap, first, [rec(1)])
    opts = _base(bootstrap) | {"topic-pattern": f"{base}-.*", "scan.topic-partition-discovery.interval": "300 ms"}
    sink = Collector()
    query = _start(spark, opts, checkpoint, sink)
    try:
        wait_for(lambda: len(sink.rows) >= 1, "the record of the first topic")
    finally:
        query.stop()

    second = create_topic(bootstrap, f"{base}-2", partitions=2)
    send(bootstrap, second, [rec(2), rec(3)])
    query = _start(spark, opts, checkpoint, sink)
    try:
        wait_for(lambda: len(sink.rows) >= 3, "the records of the topic created while stopped")
        third = create_topic(bootstrap, f"{base}-3")
        send(bootstrap, third, [rec(4)])
        wait_for(lambda: len(sink.rows) >= 4, "the record of the topic created while running")
    finally:
        query.stop()
    assert _by_topic(sink.rows) == {first: [1], second: [2, 3], third: [4]}
