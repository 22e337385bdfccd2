"""A Spark driver the fault tests kill: an exactly-once stream from an upsert-kafka topic to another, run
with Trigger.AvailableNow in its own process (its own SparkSession in local mode).

    python -m tests.faults.driver_query '<JSON config>'

Config: bootstrap, source, target, checkpoint, rows_per_batch, arrow_rows, pids (a file where the driver
writes {"python": pid, "jvm": pid} once its session is up), and optionally block: {"batch": b, "rows":
{partition: row}, "signal_dir": dir} to hold tasks of micro-batch b at those rows
(tests.faults.hooks.block_first_attempt). Exits 0 when the query ends without error, 1 otherwise."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from integration.spark_session import local_session
from tests.faults.helpers import CHANGES, guarantee_options
from tests.faults.hooks import block_first_attempt


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    spark = local_session(
        "upsert-kafka-driver-kill",
        "local[2,2]",
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "512m",
            "spark.sql.execution.arrow.maxRecordsPerBatch": str(config["arrow_rows"]),
        },
    )
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    pids = Path(config["pids"])
    pids.with_suffix(".tmp").write_text(json.dumps({"python": os.getpid(), "jvm": int(jvm_pid)}))
    pids.with_suffix(".tmp").rename(pids)

    common = {"properties.bootstrap.servers": config["bootstrap"], "key.fields": "id"}
    block = config.get("block") or {"batch": -1, "rows": {}, "signal_dir": config["checkpoint"]}
    hold = block_first_attempt(block["batch"], {int(p): r for p, r in block["rows"].items()}, block["signal_dir"])
    query = (
        spark.readStream.format("upsert-kafka")
        .options(**common, topic=config["source"], **{"scan.max-records-per-batch": str(config["rows_per_batch"])})
        .schema(CHANGES)
        .load()
        .withColumn("name", hold("id"))
        .writeStream.format("upsert-kafka")
        .options(**common, topic=config["target"], **guarantee_options("exactly-once", config["target"]))
        .option("checkpointLocation", config["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    except Exception as e:
        print(f"driver_query: the query failed: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
