"""A tables helper on a Spark Connect client's DataFrame (a client in its own process, tests/pipelines/
connect_normalize.py), run by the Connect server: an upsert topic normalized in the operator form its pyspark has by
default (the Row form here: pyspark 4.2+, tests/conftest.py), its changes those of a classic session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson

from tests.support.kafka_io import produce

ROOT = Path(__file__).resolve().parents[2]


def _order(i: int, category: str | None) -> tuple:
    value = None if category is None else orjson.dumps({"id": i, "category": category})
    return (orjson.dumps({"id": i}), value)


def test_an_upsert_topic_normalized_over_spark_connect(spark, connect_server, new_topic, options, bootstrap, tmp_path):
    topic = new_topic()
    # order 1 moves from a to b, order 2 is deleted, order 3 stays
    produce(bootstrap, topic, [_order(1, "a"), _order(2, "a"), _order(3, "b"), _order(1, "b"), _order(2, None)])
    config = {
        "url": connect_server.url,
        "options": options(topic, {"metadata.columns": "offset", "scan.startup.mode": "earliest-offset"}),
        "schema": "id INT, category STRING",
        "path": str(tmp_path / "table"),
        "checkpoint": str(tmp_path / "checkpoint"),
    }
    client = subprocess.run(
        [sys.executable, "-m", "tests.pipelines.connect_normalize", json.dumps(config)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert client.returncode == 0, client.stderr[-3000:]
    rows = sorted(tuple(r) for r in spark.read.parquet(config["path"]).collect())
    assert rows == [
        (1, "a", "insert"), (1, "a", "update_preimage"), (1, "b", "update_postimage"),
        (2, "a", "delete"), (2, "a", "insert"), (3, "b", "insert"),
    ]  # fmt: skip
