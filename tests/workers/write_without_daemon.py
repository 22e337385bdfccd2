"""A child Spark application for tests/write/test_write_exactly_once.py: an exactly-once batch write whose Python
workers run without PySpark's daemon (`spark.python.use.daemon=false`, where the worker code runs as
`__main__`), and whose tasks' first attempts fail upstream of the writer in the middle of their input.

    python -m tests.workers.write_without_daemon <bootstrap servers> <topic> <failures dir> <rows>
"""

from __future__ import annotations

import sys

from integration.spark_session import local_session
from tests.workers.failure_injection import ARROW_ROWS, fail_first_attempt


def main(bootstrap: str, topic: str, failures: str, n: int) -> None:
    conf = {"spark.python.use.daemon": "false", "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_ROWS)}
    spark = local_session("upsert-kafka-write-without-daemon", "local[2,2]", conf)
    rows = spark.range(0, n, 1, numPartitions=2).selectExpr(
        "cast(id as int) as id", "concat('name-', id) as name", "cast(id as double) as price"
    )
    half = n // 2
    failing = rows.withColumn("name", fail_first_attempt(bootstrap, topic, half, half * 3 // 4, failures)("id"))
    options = {
        "topic": topic,
        "properties.bootstrap.servers": bootstrap,
        "key.fields": "id",
        "sink.delivery-guarantee": "exactly-once",
        "sink.transactional-id-prefix": topic,
    }
    failing.write.format("upsert-kafka").options(**options).mode("append").save()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
