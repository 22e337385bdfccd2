"""A Spark Connect client in its own process, as users run one (no classic session beside it, so PySpark builds
Connect columns): an upsert-kafka stream normalized by normalized_changelog, written as Parquet with
Trigger.AvailableNow.

    python -m tests.pipelines.connect_normalize '<JSON config>'

Config: url (sc://...), options (the topic's upsert-kafka options), schema, path, checkpoint. Exits 0 when the query
ends without error, 1 otherwise (the error on stderr)."""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession
from pyspark_upsert_kafka.tables.normalize import normalized_changelog
from pyspark_upsert_kafka.tables.rows import ROCKSDB


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    spark = SparkSession.builder.remote(config["url"]).getOrCreate()
    try:
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        spark.conf.set("spark.sql.shuffle.partitions", "2")
        changes = (
            spark.readStream.format("upsert-kafka")
            .options(**config["options"])
            .option("schema", config["schema"])
            .load()
        )
        query = (
            normalized_changelog(changes, "id")
            .drop("offset")
            .writeStream.format("parquet")
            .option("path", config["path"])
            .option("checkpointLocation", config["checkpoint"])
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        failed = query.exception()
        if failed is not None or query.isActive:
            query.stop()
            print(failed or "the query did not stop within 120 s", file=sys.stderr)
            return 1
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
