"""The lost-deletes rule (read/lost_deletes.py), as pure logic: a partition is at risk exactly when its topic is
compacted (or its configuration unknown) and its stamp is delete.retention.ms old, less the margin; a stream's marks
never stamp a position later than the rule's proof allows, and a stream that keeps up is stamped at its last
planning."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark_upsert_kafka.read.lost_deletes import (
    MARGIN_MS,
    Cleanup,
    advance,
    at_risk,
    frontier,
    margin_ms,
    message,
    risks,
    stamp,
)
from pyspark_upsert_kafka.read.offsets import BatchPlan, StreamOffset

DAY = 86_400_000
COMPACTED = Cleanup(True, True, DAY)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"cleanup.policy": "compact", "delete.retention.ms": "1000"}, Cleanup(True, True, 1000)),
        ({"cleanup.policy": "compact,delete", "delete.retention.ms": "86400000"}, Cleanup(True, True, DAY)),
        ({"cleanup.policy": "delete", "delete.retention.ms": "86400000"}, Cleanup(True, False, DAY)),
        ({"cleanup.policy": "compact", "delete.retention.ms": None}, Cleanup(False)),  # hidden
        (None, Cleanup(False)),  # describe_configs denied
    ],
)
def test_a_topics_cleanup_is_read_from_its_configuration_and_unknown_when_hidden(config, expected):
    assert Cleanup.from_config(config) == expected


def test_a_compacted_partition_is_at_risk_from_delete_retention_less_the_margin():
    since = 1_700_000_000_000
    fires_at = since + DAY - MARGIN_MS
    assert not at_risk(COMPACTED, since, fires_at - 1)
    assert at_risk(COMPACTED, since, fires_at)
    short = Cleanup(True, True, 1000)  # a tenth of a short retention, not a minute
    assert margin_ms(1000) == 100
    assert not at_risk(short, since, since + 899) and at_risk(short, since, since + 900)
    assert at_risk(Cleanup(True, True, 0), since, since), "tombstones may go at once"


def test_a_topic_that_is_not_compacted_is_never_at_risk_and_an_unknown_one_always_is():
    since = 1_700_000_000_000
    assert not at_risk(Cleanup(True, False, 0), 0, since + 10 * DAY)
    assert at_risk(Cleanup(False), since, since)


def test_a_stream_that_keeps_up_is_stamped_at_its_last_planning():
    position, marks, last = 0, ((0, 1_000),), 1_000  # batch 0 planned at 1 s
    for planned_at, log_end in [(2_000, 10), (3_000, 25), (4_000, 26), (5_000, 40)]:
        marks = advance([*marks, (log_end, planned_at)], position)
        assert stamp(marks, position) == last, "the planning that saw the log end at this position"
        assert len(marks) == 2
        position, last = log_end, planned_at  # each batch reads up to the log end it saw


def test_a_position_without_a_mark_is_stamped_at_the_epoch():
    assert stamp((), 5) == 0
    assert stamp(((10, 7),), 5) == 0
    assert stamp(((10, 7),), 10) == 7


def test_only_partitions_read_in_the_batch_are_checked_and_each_is_named():
    old, now = 1_000, 1_000 + DAY
    marks = {"t": {0: ((5, old),), 1: ((3, old),), 2: ((0, now - 1),)}}
    found = risks({"t": {0: 5, 1: 3, 2: 0}}, {"t": {0: 9, 1: 3, 2: 4}}, marks, {"t": COMPACTED}, now)
    assert [(r.topic, r.partition, r.offset) for r in found] == [("t", 0, 5)]  # 1 reads nothing, 2 is fresh
    text = message(found, now)
    assert "topic 't' partition 0 from offset 5" in text and "86400000 ms" in text and "1970-01-01T00:00:01" in text
    unknown = message(risks({"t": {0: 5}}, {"t": {0: 6}}, marks, {"t": Cleanup(False)}, old), old)
    assert "grant this client's user DESCRIBE_CONFIGS on the topic" in unknown


def test_a_dominated_mark_is_dropped():
    assert frontier([(5, 10), (3, 20), (8, 15), (9, 30)]) == ((3, 20), (9, 30))


@st.composite
def _runs(draw):
    """A partition whose records become stable (readable, cleanable) over time, and a stream planning batches of
    at most `limit` records at increasing times, looking up the log end each time."""
    gaps = draw(st.lists(st.integers(0, 50), min_size=1, max_size=60))
    stable_at = []  # stable_at[i]: when record i became stable
    t = 0
    for g in gaps:
        t += g
        stable_at.append(t)
    plans = sorted(draw(st.lists(st.integers(0, t + 100), min_size=1, max_size=40)))
    limit = draw(st.integers(1, 20))
    ahead = draw(st.integers(1, 5))
    return stable_at, plans, limit, ahead


@given(_runs())
def test_marks_never_stamp_a_position_later_than_its_records_could_be_cleaned(run):
    """The proof's bound: for position o, no record at or after o that the stream will read was cleanable before
    max(first planning, when record o became stable); the marks' stamp is never later."""
    stable_at, plans, limit, ahead = run
    first = plans[0]
    position, marks = 0, ((0, first),)
    for planned_at in plans:
        log_end = sum(1 for s in stable_at if s <= planned_at)
        end = min(log_end, position + limit)
        marks = advance([*marks, (log_end, planned_at)], position, ahead)
        if position < len(stable_at):
            assert stamp(marks, position) <= max(first, stable_at[position])
        assert len(marks) <= ahead + 1
        position = end


def test_the_offset_carries_marks_and_accepted_partitions_in_its_canonical_form():
    offset = StreamOffset(
        {"t": {1: 9, 0: 4}},
        plan=BatchPlan(lost_deletes=frozenset({("t", 1)})),
        marks={"t": {1: ((7, 1_700_000_000_000), (9, 1_700_000_001_000)), 0: ((4, 1_700_000_001_000),)}},
    )
    assert offset.text == (
        '{"@format": 1, "@plan": {"lost-deletes": {"t": [1]}, "split": {}}, '
        '"@uncleaned": {"t": {"0": [[4, 1700000001000]], "1": [[7, 1700000000000], [9, 1700000001000]]}}, '
        '"t": {"0": 4, "1": 9}}'
    )
    again = StreamOffset.from_json(offset.text)
    assert again == offset and again.marks == offset.marks and again.plan == offset.plan
    assert StreamOffset.from_json({"t": {"0": 4}}).marks is None, "an older offset records no marks"
