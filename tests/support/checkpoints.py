"""A streaming query's checkpoint as the tests look into it, read by the connector's own reader of Spark's files
(connector/spark_internals.py): the micro-batches planned and committed, the offsets a batch planned, the query's
id; and the crash the replay tests stage (a batch written by the sink but not logged as committed)."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark_upsert_kafka.spark_internals import (
    checkpoint_offset_batches,
    checkpoint_query_id,
    checkpoint_source_offsets,
)


def planned_batches(checkpoint: str | Path) -> list[int]:
    """The ids of the micro-batches in the offset log, in order."""
    return sorted(int(p.name) for p in checkpoint_offset_batches(Path(checkpoint)))


def committed_batches(checkpoint: str | Path) -> list[int]:
    """The ids of the micro-batches in the commit log, in order."""
    folder = Path(checkpoint, "commits")
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else []


def planned_offsets(checkpoint: str | Path, batch: int) -> dict:
    """The offsets micro-batch `batch` planned for the query's one source: {topic: {partition: offset}, ...} and
    the connector's own `@` keys."""
    sources = checkpoint_source_offsets(Path(checkpoint, "offsets", str(batch)))
    assert sources is not None, f"batch {batch}'s offset log file is of a version the connector does not read"
    (source,) = sources
    return json.loads(source)


def planned_at(checkpoint: str | Path, batch: int) -> float:
    """When micro-batch `batch` was planned, in epoch seconds: its offset log's `batchTimestampMs`, which Spark reads
    from its clock after the sources' latestOffset() returned."""
    lines = Path(checkpoint, "offsets", str(batch)).read_text().splitlines()
    assert lines and lines[0] == "v1", f"batch {batch}'s offset log file is of a version the tests do not read"
    return json.loads(lines[1])["batchTimestampMs"] / 1000


def query_id(checkpoint: str | Path) -> str:
    found = checkpoint_query_id(str(checkpoint))
    assert found is not None, f"no query id in {checkpoint}/metadata"
    return found


def uncommit(checkpoint: str | Path, batch: int | None = None) -> int:
    """A crash after the sink wrote micro-batch `batch` (default: the last planned) but before Spark logged it as
    committed: the next run replays that batch with the same offsets. Returns its id."""
    batch = planned_batches(checkpoint)[-1] if batch is None else batch
    for name in (str(batch), f".{batch}.crc"):
        Path(checkpoint, "commits", name).unlink(missing_ok=True)
    return batch
