"""Writes a checkpoint fixture for tests/compat/test_checkpoint_upgrades.py: a streaming query that read
FIXTURE_TOPIC (2 partitions, RECORDS records, `maxOffsetsPerTrigger` LIMIT) with Trigger.AvailableNow, whose
last micro-batch was then un-committed (as by a crash after the sink wrote it). Kept in the repository, one
folder per pyspark and offset form that wrote it; run with the pyspark to record:

    UPSERT_KAFKA_PYSPARK=4.2.1 integration/dev python -m tests.compat.checkpoints.make_fixture <folder>

It starts its own broker. Checksum (.crc) files are left out: the tests rename the topic inside the files.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from integration.kafka import KafkaBroker
from integration.spark_session import local_session
from tests.support.checkpoints import uncommit
from tests.support.kafka_io import create_topic
from tests.support.read_helpers import rec, run_available_now, send, stream

FIXTURE_TOPIC = "upsert-kafka-checkpoint-fixture"
RECORDS = 10
LIMIT = 4
ROWS = "id INT, name STRING, _change_type STRING"


def records(start: int, stop: int) -> list[tuple]:
    return [rec(i, partition=i % 2) for i in range(start, stop)]


def options(bootstrap: str, topic: str) -> dict[str, str]:
    return {
        "topic": topic,
        "properties.bootstrap.servers": bootstrap,
        "key.fields": "id",
        "maxOffsetsPerTrigger": str(LIMIT),
    }


def main(folder: str) -> None:
    out = Path(folder)
    broker = KafkaBroker()
    broker.start()
    spark = local_session("upsert-kafka-checkpoint-fixture")
    try:
        create_topic(broker.bootstrap_servers, FIXTURE_TOPIC, 2)
        send(broker.bootstrap_servers, FIXTURE_TOPIC, records(0, RECORDS))
        with tempfile.TemporaryDirectory() as work:
            checkpoint = str(Path(work) / "checkpoint")
            df = stream(spark, options(broker.bootstrap_servers, FIXTURE_TOPIC), ROWS)
            for _ in range(6):  # pyspark 4.0/4.1 run AvailableNow as one micro-batch: runs until one reads nothing
                if not run_available_now(df, checkpoint).rows:
                    break
            assert uncommit(checkpoint) == 2, "batches of 4, 4 and 2 records"
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(checkpoint, out, ignore=shutil.ignore_patterns("*.crc"))
    finally:
        spark.stop()
        broker.stop()


if __name__ == "__main__":
    main(sys.argv[1])
