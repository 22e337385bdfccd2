"""Time is read through the kernel's clock (kernel/clock.py), never from the `time` or `datetime` modules directly:
every deadline, pause and wall-clock comparison of the product can be driven by a manual clock. The scan reads the
sources with `ast` (a call, not a mention in a message); then a few of the timers it made injectable, on a manual
clock, without sleeping."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark_upsert_kafka.errors import KafkaAuthenticationError
from pyspark_upsert_kafka.kafka.token_provider import TokenProvider
from pyspark_upsert_kafka.read.planner import Planner
from pyspark_upsert_kafka.read.source import UpsertKafkaStreamReader
from pyspark_upsert_kafka.spark_internals import ReadMinRows

from tests.support.clock import ManualClock

ROOT = Path(__file__).resolve().parents[2]
CLOCK = ROOT / "connector" / "kernel" / "clock.py"
# What reads the time: the `time` module's clocks and sleep, and datetime's "now".
TIME_READS = frozenset({"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "sleep"})
NOW_READS = frozenset({"now", "utcnow", "today"})


def time_reads(source: str, name: str = "<source>") -> list[str]:
    """The calls of `source` that read the time without a Clock, as 'line: call'."""
    tree = ast.parse(source, name)
    modules: set[str] = set()  # names bound to the time module
    functions: set[str] = set()  # names bound to one of its reads
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "time"}
        elif isinstance(node, ast.ImportFrom) and node.module == "time" and node.level == 0:
            functions |= {a.asname or a.name for a in node.names if a.name in TIME_READS}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in functions:
            found.append(f"{node.lineno}: {func.id}()")
        elif isinstance(func, ast.Attribute):
            owner = func.value
            # time.monotonic(), t.time(); datetime.now(), datetime.datetime.now(), dt.date.today()
            owner_name = (
                owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            )
            from_time = isinstance(owner, ast.Name) and owner.id in modules and func.attr in TIME_READS
            now = owner_name in ("datetime", "date") and func.attr in NOW_READS
            if from_time or now:
                found.append(f"{node.lineno}: {owner_name}.{func.attr}()")
    return sorted(found, key=lambda f: int(f.split(":")[0]))


def test_the_scan_finds_every_way_of_reading_the_time():
    source = (
        "import time\n"
        "import time as t\n"
        "from time import monotonic, sleep as nap\n"
        "import datetime\n"
        "from datetime import datetime as dt_class\n"
        "a = time.monotonic()\n"
        "b = t.time()\n"
        "c = monotonic()\n"
        "nap(1)\n"
        "d = datetime.datetime.now()\n"
        "e = datetime.date.today()\n"
        "f = time.strftime('%Y')\n"  # formatting, no clock read
        "g = 'time.time()'\n"  # a mention in a message
        "h = clock.monotonic()\n"
    )
    assert [f.split(": ")[1] for f in time_reads(source)] == [
        "time.monotonic()",
        "t.time()",
        "monotonic()",
        "nap()",
        "datetime.now()",
        "date.today()",
    ]


def test_no_product_module_reads_the_time_but_through_the_clock():
    found = [
        f"{path.relative_to(ROOT)}:{read}"
        for folder in (ROOT / "connector", ROOT / "formats")
        for path in sorted(folder.rglob("*.py"))
        if path != CLOCK
        for read in time_reads(path.read_text(), str(path))
    ]
    assert found == []


def test_an_expired_token_is_told_by_the_providers_wall_clock():
    clock = ManualClock(wall=1_700_000_000.0)
    expiry = 1_700_000_060
    assert TokenProvider("m:f", lambda config: ("a-token", expiry), clock)("") == ("a-token", expiry)

    clock.advance(60.0)
    with pytest.raises(KafkaAuthenticationError, match=r"expired at 2023-11-14T22:14:20\+00:00 \(now 2023-11-14T22"):
        TokenProvider("m:f", lambda config: ("a-token", expiry), clock).check("")


class _Planner(Planner):
    def __init__(self, clock: ManualClock) -> None:
        super().__init__(SimpleNamespace(kafka=None, discovery_interval_s=10.0), clock)  # type: ignore[arg-type]
        self.lookups = 0

    def _lookup_partitions(self) -> dict[str, list[int]]:
        self.lookups += 1
        return {"t": [0]}


def test_partitions_are_looked_up_again_after_the_discovery_interval_on_the_planners_clock():
    clock = ManualClock()
    planner = _Planner(clock)
    planner.partitions()
    clock.advance(9.0)
    planner.partitions()
    assert planner.lookups == 1
    clock.advance(1.0)
    planner.partitions()
    assert planner.lookups == 2


def test_min_offsets_per_trigger_holds_a_batch_back_until_max_trigger_delay_on_the_readers_clock():
    clock = ManualClock()
    spec = SimpleNamespace(kafka=None, min_records_per_trigger=10, max_trigger_delay_s=5.0)
    reader = UpsertKafkaStreamReader(spec, clock)  # type: ignore[arg-type]
    begin, few = {"t": {0: 0}}, {"t": {0: 3}}
    limit = ReadMinRows(10)
    assert not reader._held_back(begin, few, limit), "the first trigger always goes"
    clock.advance(4.0)
    assert reader._held_back(begin, few, limit), "3 new records, fewer than 10, and 4 s < maxTriggerDelay"
    clock.advance(1.0)
    assert not reader._held_back(begin, few, limit), "maxTriggerDelay has passed"
