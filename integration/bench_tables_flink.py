"""The Flink side of integration/bench_tables.py: Flink 2.2.1's own queries over the same topics, in a PyFlink session
of the Flink venv (integration/flink/bench_job.py, started through flink_golden.FlinkSession; the venv and jars are
flink_golden's: prepared on first use by ensure_flink_venv / ensure_flink_jars).

Every job runs at parallelism 2 with `state.backend.type` = rocksdb, its sources bounded ('scan.bounded.mode' =
'latest-offset'), into a 'blackhole' sink, timed by `execute_sql(insert).wait()` in the Flink process (planning and
the job's start included, about 15-25 s here: hence the slope over two sizes in bench_tables). The steps:
- read: a 'kafka' table with 'format' = 'json' over the keyed topic (no state).
- normalize: the 'upsert-kafka' table (PRIMARY KEY id NOT ENFORCED, json key and value), `SELECT *`, with
  'table.exec.source.cdc-events-duplicate' = 'true': Flink 2.2.1 plans no ChangelogNormalize for an upsert source
  whose sink takes upserts (the blackhole does: the plan is the scan alone, as cheap as the read), and this setting
  is what puts it back (the keyed last-row state, a new key an INSERT; checked in the plan).
- aggregate: `SELECT category, COUNT(*), SUM(price), AVG(price), MIN(price), MAX(price) ... GROUP BY category` over
  the upsert table (ChangelogNormalize then GroupAggregate with retractions, Flink's defaults: no mini-batch).
- aggregate_keys: the same aggregates `GROUP BY id`: as many groups as keys (1 M at 1 M keys).
- join: the orders topic (a 'kafka' json table, event time `order_time` = TO_TIMESTAMP_LTZ(order_ms, 3), watermark
  at it) `LEFT JOIN versions FOR SYSTEM_TIME AS OF o.order_time ON o.id = v.id`, `versions` the upsert table with
  event time `update_time` = TO_TIMESTAMP_LTZ(ts, 3) (TemporalJoin, checked in the plan).
State bytes: a second session takes incremental RocksDB checkpoints every second; each stateful step runs once more
there over unbounded sources, and the first checkpoint after every record is in reports its full size (the RocksDB
files it references, over all vertices; the sources' offsets add a few hundred bytes).

Test/dev tooling only: the product never imports this package.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from integration.flink_session import FLINK_DIR, FLINK_VERSION, FlinkSession, ensure_flink_jars, ensure_flink_venv

JOB = FLINK_DIR / "bench_job.py"
PARALLELISM = 2
VALUE_COLUMNS = "id BIGINT, name STRING, category STRING, price DOUBLE, quantity INT, ts BIGINT"
ORDER_COLUMNS = "order_id BIGINT, id BIGINT, amount DOUBLE, order_ms BIGINT"
JOINED_COLUMNS = (
    f"{ORDER_COLUMNS}, order_time TIMESTAMP_LTZ(3), name STRING, category STRING, price DOUBLE, quantity INT, "
    "ts BIGINT, update_time TIMESTAMP_LTZ(3)"
)
AGGREGATED_COLUMNS = "category STRING, n BIGINT, total DOUBLE, avg_price DOUBLE, low DOUBLE, high DOUBLE"
AGGREGATE = "SELECT {group}, COUNT(*), SUM(price), AVG(price), MIN(price), MAX(price) FROM {keyed} GROUP BY {group}"
JOIN = (
    "SELECT o.order_id, o.id, o.amount, o.order_ms, o.order_time, v.name, v.category, v.price, v.quantity, v.ts, "
    "v.update_time FROM {orders} AS o LEFT JOIN {versions} FOR SYSTEM_TIME AS OF o.order_time AS v ON o.id = v.id"
)
# Per step: the statement, the table settings of its job, and the operator its plan must (or must not) show.
STEPS: dict[str, tuple[str, dict[str, str], str]] = {
    "read": ("INSERT INTO sink_rows SELECT * FROM {plain}", {}, "!ChangelogNormalize"),
    "normalize": (
        "INSERT INTO sink_rows SELECT * FROM {keyed}",
        {"table.exec.source.cdc-events-duplicate": "true"},
        "ChangelogNormalize",
    ),
    "aggregate": (f"INSERT INTO sink_aggregated {AGGREGATE}".replace("{group}", "category"), {}, "GroupAggregate"),
    "aggregate_keys": (f"INSERT INTO sink_aggregated_keys {AGGREGATE}".replace("{group}", "id"), {}, "GroupAggregate"),
    "join": (f"INSERT INTO sink_joined {JOIN}", {}, "TemporalJoin"),
}


def prepare(mode: str) -> tuple[Path, list[Path]] | str:
    """The Flink venv's python and jars (flink_golden prepares them on first use: pip and mvn), or why not."""
    if mode == "no":
        return "not asked (--flink no)"
    try:
        return ensure_flink_venv(), ensure_flink_jars()
    except Exception as e:  # auto: the Spark side runs alone, saying why
        if mode == "yes":
            raise
        return f"the Flink venv could not be prepared: {type(e).__name__}: {str(e)[:300]}"


def _with(options: dict[str, str]) -> str:
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


def tables(suffix: str, bootstrap: str, table_topic: str, orders_topic: str, bounded: bool) -> list[str]:
    """CREATE TABLE statements over one size's topics (names ending in `suffix`), bounded or not."""
    kafka = {"properties.bootstrap.servers": bootstrap}
    end = {"scan.bounded.mode": "latest-offset"} if bounded else {}
    plain = {"connector": "kafka", "format": "json", "scan.startup.mode": "earliest-offset", **kafka, **end}
    upsert = {"connector": "upsert-kafka", "key.format": "json", "value.format": "json", **kafka, **end}
    key = "PRIMARY KEY (id) NOT ENFORCED"
    update_time = "update_time AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR update_time AS update_time"
    order_time = "order_time AS TO_TIMESTAMP_LTZ(order_ms, 3), WATERMARK FOR order_time AS order_time"
    return [
        f"CREATE TABLE plain{suffix} ({VALUE_COLUMNS}) WITH ({_with({**plain, 'topic': table_topic})})",
        f"CREATE TABLE keyed{suffix} ({VALUE_COLUMNS}, {key}) WITH ({_with({**upsert, 'topic': table_topic})})",
        f"CREATE TABLE versions{suffix} ({VALUE_COLUMNS}, {update_time}, {key}) "
        f"WITH ({_with({**upsert, 'topic': table_topic})})",
        f"CREATE TABLE orders{suffix} ({ORDER_COLUMNS}, {order_time}) WITH ({_with({**plain, 'topic': orders_topic})})",
    ]


SINKS = [
    f"CREATE TABLE sink_rows ({VALUE_COLUMNS}) WITH ('connector' = 'blackhole')",
    f"CREATE TABLE sink_aggregated ({AGGREGATED_COLUMNS}) WITH ('connector' = 'blackhole')",
    f"CREATE TABLE sink_aggregated_keys ({AGGREGATED_COLUMNS.replace('category STRING', 'id BIGINT')}) "
    "WITH ('connector' = 'blackhole')",
    f"CREATE TABLE sink_joined ({JOINED_COLUMNS}) WITH ('connector' = 'blackhole')",
]


def statement(step: str, suffix: str) -> str:
    names = {n: n + suffix for n in ("plain", "keyed", "versions", "orders")}
    return STEPS[step][0].format(**names)


class FlinkPeer:
    """A timing session (bounded jobs, no checkpoints) and, for state(), a checkpointing one started on first use."""

    def __init__(self, python: Path, jars: list[Path], bootstrap: str, sizes: dict[str, tuple[str, str]]) -> None:
        self.python, self.jars, self.bootstrap, self.sizes = python, jars, bootstrap, sizes
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-tables-flink-"))
        self.plans: dict[str, list[str]] = {}
        self.probe: FlinkSession | None = None
        try:
            self.timing = self._session("timing", bounded=True)
        except BaseException:
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise

    def _session(self, name: str, bounded: bool, checkpoints: str | None = None) -> FlinkSession:
        workdir = self.workdir / name
        workdir.mkdir()
        settings = {"parallelism": PARALLELISM, "checkpoints": checkpoints}
        session = FlinkSession(self.python, self.jars, workdir, job=JOB, settings=settings)
        statements = list(SINKS)
        for suffix, (table_topic, orders_topic) in self.sizes.items():
            statements += tables(suffix, self.bootstrap, table_topic, orders_topic, bounded)
        try:
            session.request("sql", statements=statements)
        except BaseException:
            session.close()  # its JVM would outlive the run otherwise
            raise
        return session

    def check_plans(self) -> None:
        """Each step's plan has its operator (ChangelogNormalize, GroupAggregate, TemporalJoin), the read has none."""
        suffix = next(iter(self.sizes))
        for step, (_, config, operator) in STEPS.items():
            plan = self.timing.request("plan", statement=statement(step, suffix), config=config)["plan"]
            present = any(operator.lstrip("!") + "(" in line for line in plan)
            if present == operator.startswith("!"):
                raise AssertionError(f"Flink's plan of {step}: expected {operator}, got:\n" + "\n".join(plan))
            self.plans[step] = plan

    def time(self, step: str, suffix: str, timeout: float) -> float:
        config = STEPS[step][1]
        answer = self.timing.request("time", timeout + 30, statement=statement(step, suffix), config=config,
                                     timeout_s=timeout)  # fmt: skip
        return answer["seconds"]

    def state(self, step: str, suffix: str, records: int, timeout: float) -> dict[str, Any]:
        """The state of the step's job once every record is in (the first checkpoint after)."""
        if self.probe is None:
            folder = self.workdir / "checkpoints"
            self.probe = self._session("state", bounded=False, checkpoints=folder.as_uri())
        config = STEPS[step][1]
        return self.probe.request("state", timeout + 30, statement=statement(step, suffix), config=config,
                                  records=records, timeout_s=timeout)  # fmt: skip

    def settings(self) -> dict[str, Any]:
        return {
            "version": FLINK_VERSION,
            "parallelism": PARALLELISM,
            "state.backend.type": "rocksdb",
            "steps": {step: {"statement": STEPS[step][0], "config": STEPS[step][1]} for step in STEPS},
            "plans": self.plans,
        }

    def close(self) -> None:
        for session in (self.timing, self.probe):
            if session is not None:
                session.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def steady_job(bootstrap: str, source: str, sink: str) -> Callable[[], None]:
    """The steady benchmark's Flink pipeline, started: `source` read as an upsert-kafka table (from the earliest
    offset, unbounded) through ChangelogNormalize (checked in the plan) into an upsert-kafka table of `sink`, as
    `id, ts AS produced_ms`. Answers the function that cancels the job and ends the session."""
    python, jars = ensure_flink_venv(), ensure_flink_jars()
    workdir = Path(tempfile.mkdtemp(prefix="bench-steady-flink-"))
    session = FlinkSession(python, jars, workdir, job=JOB, settings={"parallelism": PARALLELISM, "checkpoints": None})
    kafka = {"connector": "upsert-kafka", "key.format": "json", "value.format": "json",
             "properties.bootstrap.servers": bootstrap}  # fmt: skip
    config = STEPS["normalize"][1]
    insert = "INSERT INTO steady_out SELECT id, ts FROM steady_in"
    try:
        session.request("sql", statements=[
            f"CREATE TABLE steady_in ({VALUE_COLUMNS}, PRIMARY KEY (id) NOT ENFORCED) WITH "
            f"({_with({**kafka, 'topic': source})})",
            f"CREATE TABLE steady_out (id BIGINT, produced_ms BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH "
            f"({_with({**kafka, 'topic': sink})})",
        ])  # fmt: skip
        plan = session.request("plan", statement=insert, config=config)["plan"]
        if not any("ChangelogNormalize(" in line for line in plan):
            raise AssertionError("Flink's steady plan has no ChangelogNormalize:\n" + "\n".join(plan))
        session.request("start", statement=insert, config=config)
    except BaseException:
        session.close()
        shutil.rmtree(workdir, ignore_errors=True)
        raise

    def stop() -> None:
        try:
            session.request("cancel")
        finally:
            session.close()
            shutil.rmtree(workdir, ignore_errors=True)

    return stop
