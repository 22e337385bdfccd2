"""The tables/ helpers need Spark's RocksDB state store: set for the queries a test starts (a streaming query copies
the session's configuration when it starts), and put back afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark_upsert_kafka.tables.rows import ROCKSDB

PROVIDER = "spark.sql.streaming.stateStore.providerClass"


@pytest.fixture
def rocksdb(spark) -> Iterator[None]:
    before = spark.conf.get(PROVIDER, None)
    spark.conf.set(PROVIDER, ROCKSDB)
    yield
    if before is None:
        spark.conf.unset(PROVIDER)
    else:
        spark.conf.set(PROVIDER, before)
