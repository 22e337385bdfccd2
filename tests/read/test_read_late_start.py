"""A changelog that starts late is incomplete: a read starting at the latest offset, a timestamp or specific
offsets warns that keys whose last change came before are missing."""

from __future__ import annotations

import json
import logging

import pytest

from tests.support.read_helpers import CHANGES, batch_reader, rec, recent_minute, send, stream_reader

LATE = [
    {"scan.startup.mode": "latest-offset"},
    {"startingOffsets": "latest"},
    {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "TS"},
    {"startingTimestamp": "TS", "startingOffsetsByTimestampStrategy": "latest"},
    {"startingOffsetsByTimestamp": "BY_TS", "startingOffsetsByTimestampStrategy": "latest"},
    {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset:1"},
    {"startingOffsets": "OFFSETS"},
]


def _warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "not the whole table" in r.getMessage()
    ]


def _opts(options, topic: str, more: dict) -> dict:
    ts = str(recent_minute())
    values = {"TS": ts, "BY_TS": json.dumps({topic: {"0": int(ts)}}), "OFFSETS": json.dumps({topic: {"0": 1}})}
    return options(topic, {k: values.get(v, v) for k, v in more.items()})


@pytest.mark.parametrize("more", LATE, ids=lambda m: "-".join(m))
def test_a_table_read_starting_late_warns_that_keys_are_missing(spark, new_topic, options, bootstrap, caplog, more):
    topic = new_topic()
    send(bootstrap, topic, [rec(i, ts=recent_minute() + i) for i in range(3)])
    opts = _opts(options, topic, more)
    reader = batch_reader(opts, "id INT, name STRING")
    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        reader.partitions()
    found = _warnings(caplog)
    assert len(found) == 1 and "table read starts at" in found[0], found


def test_a_stream_starting_late_warns_once_when_it_first_starts(spark, new_topic, options, bootstrap, caplog):
    topic = new_topic()
    reader = stream_reader(options(topic, {"startingOffsets": "latest"}), CHANGES)
    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        reader.initialOffset()
        reader.initialOffset()  # Spark asks again when it runs batch 0: still one warning
    found = _warnings(caplog)
    assert len(found) == 1 and "changelog read starts at the latest offset" in found[0], found


@pytest.mark.parametrize("more", [{}, {"scan.startup.mode": "earliest-offset"}, {"startingOffsets": "earliest"}])
def test_a_read_from_the_earliest_offset_does_not_warn(spark, new_topic, options, bootstrap, caplog, more):
    topic = new_topic()
    reader = batch_reader(options(topic, more), "id INT, name STRING")
    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        reader.partitions()
    assert _warnings(caplog) == []
