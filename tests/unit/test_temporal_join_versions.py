"""Which table version a stream row of temporal_join is joined with (pure logic; the join through Spark and Flink's
own rows: tests/tables/test_temporal_join.py)."""

from __future__ import annotations

import pytest
from pyspark_upsert_kafka.tables.temporal_join import _as_of

VERSIONS = [(10, "a"), (20, None), (30, "c"), (40, "d")]  # sorted by time; None: the key was deleted at 20


@pytest.mark.parametrize(
    ("time", "row"),
    [(9, None), (10, "a"), (19, "a"), (20, None), (29, None), (30, "c"), (39, "c"), (40, "d"), (10**15, "d")],
)
def test_a_row_takes_the_version_of_the_greatest_time_not_after_its_own(time, row):
    assert _as_of(VERSIONS, time) == row


def test_no_version_is_no_match():
    assert _as_of([], 5) is None
