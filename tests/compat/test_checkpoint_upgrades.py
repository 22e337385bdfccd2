"""A streaming query's checkpoint resumes across pyspark versions and across this connector's offset forms:
fixtures in tests/compat/checkpoints/, each written by make_fixture.py (a query that read 10 records in batches
of 4, 4 and 2, its last batch left uncommitted) under the pyspark its folder names; `-unversioned` by this
connector before its offsets carried a form version. Run on every supported pyspark, so each fixture is
resumed by older and newer pysparks than the one that wrote it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark_upsert_kafka.spark_internals import ADMISSION_CONTROL

from tests.compat.checkpoints.make_fixture import FIXTURE_TOPIC, RECORDS, ROWS, records
from tests.support.checkpoints import planned_offsets
from tests.support.read_helpers import Collector, run_available_now, send, stream

CHECKPOINTS = Path(__file__).parent / "checkpoints"
FIXTURES = sorted(p for p in CHECKPOINTS.iterdir() if p.is_dir() and p.name.startswith("pyspark-"))


def _checkpoint_for(fixture: Path, topic: str, to: Path) -> str:
    """The fixture's checkpoint reading `topic` instead of the fixture's topic."""
    shutil.copytree(fixture, to)
    for path in to.rglob("*"):
        if path.is_file():
            path.write_text(path.read_text().replace(FIXTURE_TOPIC, topic))
    return str(to)


def _run_dry(df, checkpoint: str) -> list[Collector]:
    """AvailableNow runs until the source is read to its end (one run; on pyspark 4.0/4.1, one per batch)."""
    runs = []
    for _ in range(6):
        runs.append(run_available_now(df, checkpoint))
        if ADMISSION_CONTROL or not runs[-1].rows:
            return runs
    raise AssertionError("the source did not run dry in 6 runs")


def test_the_fixtures_cover_the_pysparks_and_forms_they_claim():
    assert {p.name for p in FIXTURES} >= {
        "pyspark-4.0.5",
        "pyspark-4.2.1",
        "pyspark-4.3.0",
        "pyspark-4.3.0-unversioned",
    }
    for fixture in FIXTURES:
        last = planned_offsets(fixture, 2)
        assert ("@format" in last) == (not fixture.name.endswith("-unversioned")), fixture.name
        assert not (fixture / "commits" / "2").exists(), "its last batch is left uncommitted"


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_a_checkpoint_resumes_with_its_uncommitted_batch_replayed_and_nothing_read_twice(
    spark, new_topic, options, bootstrap, tmp_path, fixture
):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, records(0, RECORDS))  # what the fixture's query read
    send(bootstrap, topic, records(RECORDS, RECORDS + 5))  # and what came since
    checkpoint = _checkpoint_for(fixture, topic, tmp_path / "checkpoint")
    runs = _run_dry(stream(spark, options(topic, {"maxOffsetsPerTrigger": "4"}), ROWS), checkpoint)

    batches = {b: sorted(r[0] for r in run.by_batch[b]) for run in runs for b in run.batches}
    # Batch 2 (ids 8 and 9, the last offset of each partition) is replayed as the fixture planned it; the
    # records since come in new batches within the limit; batches 0 and 1 are not read again.
    assert batches[2] == [8, 9]
    assert min(batches) == 2
    later = [batches[b] for b in sorted(batches) if b > 2]
    assert all(len(ids) <= 4 for ids in later)
    assert sorted(i for ids in later for i in ids) == list(range(RECORDS, RECORDS + 5))


def test_offsets_of_a_later_form_than_this_connector_reads_are_refused_saying_what_to_do(
    spark, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic(partitions=2)
    send(bootstrap, topic, records(0, RECORDS))
    checkpoint = _checkpoint_for(CHECKPOINTS / "pyspark-4.3.0", topic, tmp_path / "checkpoint")
    last = Path(checkpoint, "offsets", "2")
    last.write_text(last.read_text().replace('"@format": 1', '"@format": 99'))
    df = stream(spark, options(topic, {"maxOffsetsPerTrigger": "4"}), ROWS)
    query = df.writeStream.foreachBatch(Collector()).option("checkpointLocation", checkpoint)
    query = query.trigger(availableNow=True).start()
    with pytest.raises(Exception, match="offsets of form 99, written by a newer pyspark-upsert-kafka"):
        query.awaitTermination(120)
    query.stop()
