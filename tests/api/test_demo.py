"""The README's first command (integration/demo.py) against the session's broker and SparkSession."""

from __future__ import annotations

import itertools
import uuid

from integration import demo


def test_demo_streams_waves_through_several_micro_batches_and_a_delete(bootstrap: str, spark) -> None:
    suffix = uuid.uuid4().hex[:8]
    seen = demo.run(bootstrap, spark, f"demo-sales-{suffix}", f"demo-sales-num-{suffix}")

    assert seen.ok, f"final table {seen.tables[-1][1]} != expected {seen.expected}"
    assert seen.orders == demo.WAVES * demo.ORDERS_PER_WAVE
    # Orders arrive in waves and the table changes between micro-batches (not everything in one batch).
    busy = [batch for batch, rows in seen.batches if rows]
    assert len(busy) >= 3, f"micro-batches with rows: {seen.batches}"
    waves = [rows for step, rows in seen.tables if step.startswith("wave")]
    assert len(waves) == demo.WAVES
    assert all(before != after for before, after in itertools.pairwise(waves)), waves
    # The withdrawn category is in the table until its delete arrives, and gone from then on.
    categories = [(step, {row[0] for row in rows}) for step, rows in seen.tables]
    withdrawn_at = next(i for i, (step, _) in enumerate(categories) if step.startswith("the delete"))
    assert all(demo.WITHDRAWN in names for _, names in categories[:withdrawn_at]), categories
    assert all(demo.WITHDRAWN not in names for _, names in categories[withdrawn_at:]), categories
    assert {row[0] for row in seen.expected} == set(demo.CATEGORIES) - {demo.WITHDRAWN}
