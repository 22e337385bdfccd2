"""The fault suite's own broker: one more per test session, started on first use, that tests may kill, stop
and restart (never the session's broker, which every other test uses)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from integration.kafka import KafkaBroker


@pytest.fixture(scope="session")
def _own_broker() -> Iterator[KafkaBroker]:
    broker = KafkaBroker()
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def own_broker(_own_broker: KafkaBroker) -> Iterator[KafkaBroker]:
    """The fault suite's broker, up when the test starts; brought back up after a test that left it down."""
    if not _own_broker.is_running():
        _own_broker.restart()
    yield _own_broker
    if not _own_broker.is_running():
        _own_broker.restart()
