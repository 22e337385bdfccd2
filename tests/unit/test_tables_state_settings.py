"""The stateful helpers' choice of RocksDB's changelog checkpointing where Spark refuses to set it, pure logic: a
declarative pipeline's definitions file may not set a session's configuration, so the helper says what to put in the
pipeline spec and goes on; any other refusal is the user's to see. The choice in a session: tests/tables/
test_normalize.py."""

from __future__ import annotations

import logging

import pytest
from pyspark.errors import PySparkException
from pyspark_upsert_kafka.tables import rows


class _Conf:
    """A session's conf with nothing set, whose `set` Spark refuses with `refusal` (its parameters: `given`)."""

    def __init__(self, refusal: str, given: dict[str, str]) -> None:
        self.refusal, self.given = refusal, given

    def get(self, key: str, default: str | None = None) -> str | None:
        return default

    def set(self, key: str, value: str) -> None:
        raise PySparkException(errorClass=self.refusal, messageParameters=self.given)


class _Session:
    def __init__(self, refusal: str, given: dict[str, str]) -> None:
        self.conf = _Conf(refusal, given)


def test_inside_a_pipelines_definitions_the_helper_names_the_setting_for_the_spec_and_goes_on(caplog):
    session = _Session("SESSION_MUTATION_IN_DECLARATIVE_PIPELINE.SET_RUNTIME_CONF", {"method": "set"})
    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        rows._choose_changelog_checkpointing(session, "normalized_changelog")  # type: ignore[arg-type]
    (record,) = caplog.records
    assert record.getMessage().startswith("normalized_changelog: ")
    assert f"set {rows.CHANGELOG_CHECKPOINTING}: 'true' in the pipeline spec's configuration" in record.getMessage()


def test_any_other_refusal_to_set_it_reaches_the_user():
    session = _Session("UNSUPPORTED_OPERATION", {"operation": "Setting a configuration"})
    with pytest.raises(PySparkException, match="Setting a configuration is not supported"):
        rows._choose_changelog_checkpointing(session, "normalized_changelog")  # type: ignore[arg-type]
