"""One real Kafka broker and one SparkSession per test session; a fresh topic per test. Every test is put in one
group (a marker, registered in pyproject.toml; tests/README.md says how to run each): `faults` (tests/faults/),
`security` (tests/security/), `broker` (its fixtures reach a Kafka broker, the Schema Registry or the
SparkSession) or `unit` (pure logic: no JVM at all, which `_refuse_a_jvm` enforces while a unit test runs)."""

from __future__ import annotations

import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.kafka_io import create_topic

pytest_plugins = ["tests.support.servers", "tests.support.registry_fixtures", "tests.support.secure_fixtures"]

# Property tests: random exploration locally; in CI (CI=true) the same examples on every run, from a fixed
# seed, with no example database and no timing checks (a shared CI machine is slow at random moments).
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("dev"), derandomize=True, database=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# The session fixtures that start (or reach) a server or the SparkSession: a test whose fixtures include one, however
# indirectly, is a `broker` test.
SERVER_FIXTURES = frozenset({"bootstrap", "spark", "registry_url", "secure_kafka", "_own_broker", "connect_server"})
GROUPS = ("faults", "security", "broker", "unit")
_FOLDER_GROUPS = {"faults": "faults", "security": "security"}


def _folder(item: pytest.Item) -> str:
    """The folder of tests/ the test is in ("" for one outside it)."""
    path = Path(item.path)
    return path.relative_to(Path(__file__).parent).parts[0] if path.is_relative_to(Path(__file__).parent) else ""


def _group(item: pytest.Item) -> str:
    explicit = [g for g in GROUPS if item.get_closest_marker(g)]
    if explicit:  # a test that starts a server without a fixture says so itself
        return explicit[0]
    if _folder(item) in _FOLDER_GROUPS:
        return _FOLDER_GROUPS[_folder(item)]
    return "broker" if SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())) else "unit"


# tests/pipelines/ runs `spark-pipelines` (pyspark 4.1+): in CI on the newest pyspark and, through the compatibility
# run, on 4.2; the compatibility runs of older versions leave it out and say so (4.1 was checked by hand: README).
PIPELINES_FROM = (4, 2)
# What runs on every supported pyspark (`pytest -m compat`) besides tests/compat/: the declarative pipelines, the
# tables/ helpers (Spark's Python stateful operator differs between lines), every Flink golden test and the registry
# formats' schema evolution (batch and stream reads across a change).
COMPAT_FOLDERS = ("compat", "pipelines", "tables")
# (The evolution golden corpus, tests/formats/test_evolution_golden.py, runs on the newest pyspark only: its decoding is
# the formats' own, the same on every pyspark, and test_format_registry_evolution.py crosses the same changes through
# each pyspark's reads and streams; CI time.)
COMPAT_FILES = ("test_flink_golden.py", "test_format_registry_evolution.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import pyspark

    version = tuple(int(p) for p in pyspark.__version__.split(".")[:2])
    left_out = [item for item in items if _folder(item) == "pipelines" and version < PIPELINES_FROM]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
        print(f"\ntests/pipelines/: {len(left_out)} test(s) left out on pyspark {pyspark.__version__} (4.2+ only)")
    for item in items:
        item.add_marker(_group(item))
        if _folder(item) in COMPAT_FOLDERS or item.path.name in COMPAT_FILES:
            item.add_marker(pytest.mark.compat)  # .ci/run: `pytest -m compat` on every supported pyspark


# While a unit test runs, launching a JVM (a Kafka broker, the Schema Registry, Spark's gateway: all `java` or
# `spark-submit` processes) raises: `pytest -m unit` stays a run of seconds with no server, and a test that starts
# one without saying so fails here instead of being counted as a unit test. An audit hook cannot be removed, so it
# consults the running test's group.
_running_unit_test: list[str] = []


def _refuse_a_jvm(event: str, args: tuple) -> None:
    if event != "subprocess.Popen" or not _running_unit_test:
        return
    command = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
    names = {Path(str(a)).name for a in (args[0], *command[:1]) if a is not None}
    if names & {"java", "spark-submit", "spark-class"}:
        raise RuntimeError(
            f"unit test {_running_unit_test[0]} started {' '.join(map(str, command))[:200]}: a test that needs a JVM "
            "(Kafka, the Schema Registry, Spark) takes the fixture for it (tests/conftest.py SERVER_FIXTURES) or is "
            "marked @pytest.mark.broker"
        )


sys.addaudithook(_refuse_a_jvm)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    if item.get_closest_marker("unit"):  # its setup, call and teardown
        _running_unit_test.append(item.nodeid)
    try:
        return (yield)
    finally:
        _running_unit_test.clear()


# Spark's Python workers must run this interpreter (the one with the project installed).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Every JVM the tests start (brokers, the registry, Spark's driver, child drivers and executors) runs small workloads
# for seconds to minutes: with the C1 compiler alone and the serial collector they spend a third less CPU than with
# tiered compilation and G1 (44 broker tests: 209 CPU-s before, 144 after; the driver 68 -> 31, the broker 35 -> 18),
# and on 2 cores the suite's time is CPU time. The demo and the benchmarks keep the JVM's defaults.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


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


# Not UTC: Spark tags the Arrow batches a writer gets with the session's zone by name, and "UTC" alone hid writes that
# failed or differed under "Etc/UTC" (many machines' default) or a zone with an offset (and DST). A zone whose offset is
# not 0 also makes a test that reads a wall clock in the session's zone fail. tests/formats/test_format_time_zones.py
# runs every format under four zones; UPSERT_KAFKA_SESSION_TIME_ZONE runs the suite under another (tests/README.md).
SESSION_TIME_ZONE = os.environ.get("UPSERT_KAFKA_SESSION_TIME_ZONE", "America/New_York")


@pytest.fixture(scope="session")
def spark():
    from integration.spark_session import local_session

    # local[2,2]: two cores, and a failed task is retried once (as on a cluster), which the exactly-once
    # tests need.
    session = local_session(
        "upsert-kafka-tests",
        "local[2,2]",
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.session.timeZone": SESSION_TIME_ZONE,
            "spark.driver.memory": "1g",
            # A query's stop() waits for its thread forever by default: a test whose query hangs then hangs the
            # run. Bounded, the stop fails and names it.
            "spark.sql.streaming.stopTimeout": "120s",
        },
    )
    yield session
    session.stop()


@pytest.fixture
def session_time_zone(spark) -> Iterator[Callable[[str], None]]:
    """Set Spark's session time zone for what the test does next (call it again for another); the session's own is
    put back afterwards."""
    key = "spark.sql.session.timeZone"
    before = spark.conf.get(key)
    yield lambda zone: spark.conf.set(key, zone)
    spark.conf.set(key, before)


@pytest.fixture
def rocksdb(spark) -> Iterator[None]:
    """The tables/ helpers need Spark's RocksDB state store: set for the queries a test starts (a streaming query copies
    the session's configuration when it starts), and put back afterwards, with the changelog checkpointing they choose.
    A batch query of a stateful operator needs the state store coordinator that Spark starts with the session's
    streaming query manager: touched here, so that such a test does not depend on a stream having run before it
    (pyspark 4.1 and 4.2 fail it otherwise)."""
    from pyspark_upsert_kafka.tables.rows import CHANGELOG_CHECKPOINTING, ROCKSDB

    assert isinstance(spark.streams.active, list)

    provider = "spark.sql.streaming.stateStore.providerClass"
    # the helpers set RocksDB's changelog checkpointing where the session has no value: unset again for the next test
    before = {key: spark.conf.get(key, None) for key in (provider, CHANGELOG_CHECKPOINTING)}
    spark.conf.set(provider, ROCKSDB)
    yield
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


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
