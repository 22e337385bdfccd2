"""One real Kafka broker and one SparkSession per test session; a fresh topic per test."""

from __future__ import annotations

import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.support.kafka_io import create_topic

pytest_plugins = ["tests.support.servers", "tests.support.registry_fixtures", "tests.support.secure_fixtures"]

# Property tests: random exploration locally; in CI (CI=true) the same examples on every run, from a fixed
# seed, with no example database and no timing checks (a shared CI machine is slow at random moments).
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("dev"), derandomize=True, database=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Spark's Python workers must run this interpreter (the one with the project installed).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def bootstrap() -> Iterator[str]:
    """KAFKA_BOOTSTRAP_SERVERS when set, else a broker started for this session."""
    given = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if given:
        yield given
        return
    from integration.kafka import KafkaBroker
    from tests.support.servers import started  # a plugin (below): imported once pytest loaded it

    with started("Kafka broker", KafkaBroker()) as broker:
        yield broker.bootstrap_servers


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    from tests.support.registration import register_source

    # local[2,2]: two cores, and a failed task is retried once (as on a cluster), which the exactly-once
    # tests need; plain local[N] never retries.
    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("upsert-kafka-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register_source(session)
    yield session
    session.stop()


@pytest.fixture
def new_topic(bootstrap: str, request: pytest.FixtureRequest) -> Callable[..., str]:
    """Create a topic named after the test; call again for more topics."""

    def make(partitions: int = 1, **config: str) -> str:
        base = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[:60]
        return create_topic(bootstrap, f"{base}-{uuid.uuid4().hex[:8]}", partitions, config)

    return make


@pytest.fixture
def options(bootstrap: str) -> Callable[..., dict[str, str]]:
    """The connector options for a topic, keyed by `id`: `options(topic, {"read.mode": "changelog"})`."""

    def make(topic: str, more: dict[str, str] | None = None) -> dict[str, str]:
        return {"topic": topic, "properties.bootstrap.servers": bootstrap, "key.fields": "id"} | (more or {})

    return make
