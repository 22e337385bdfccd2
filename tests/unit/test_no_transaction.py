"""A write without exactly-once plans NoTransactions (write.exactly_once), chosen once in write.plan: the same faces
as exactly-once's (the write's, a task's, a task's transaction on its producer), each step the at-least-once one or
nothing, so the writer, its producer and the sink never ask whether there is a transaction. Pure logic: the
producer is a stand-in; the transactional side against the real broker: tests/write/test_write_exactly_once.py."""

from __future__ import annotations

import inspect
import logging
from types import SimpleNamespace

import pytest
from pyspark_upsert_kafka.errors import WriteTaskError
from pyspark_upsert_kafka.write.exactly_once import (
    NO_TRANSACTION_TASK,
    NO_TRANSACTIONS,
    ExactlyOnce,
    ExactlyOnceTask,
    NoTransactions,
    NoTransactionTask,
    WriteIdentity,
)
from pyspark_upsert_kafka.write.plan import WritePlan
from pyspark_upsert_kafka.write.transactions import NoTransaction, TaskTransaction


def _face(cls: type) -> dict[str, list[str]]:
    """The public methods and properties of `cls`, with their parameters."""
    return {
        name: list(inspect.signature(member.fget if isinstance(member, property) else member).parameters)
        for name, member in vars(cls).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }


@pytest.mark.parametrize(
    ("absent", "present", "used"),
    [
        (NoTransactions, ExactlyOnce, {"task", "fence_earlier_runs", "abort_failed"}),
        (NoTransactionTask, ExactlyOnceTask, {"settings", "transaction", "count", "check_replay", "input_unknown"}),
        (NoTransaction, TaskTransaction, {"begin", "commit", "abort", "release"}),
    ],
)
def test_each_no_transaction_object_has_the_face_its_callers_use_of_the_transactional_one(absent, present, used):
    mine, theirs = _face(absent), _face(present)
    assert used <= set(mine)
    assert {name: mine[name] for name in used} == {name: theirs[name] for name in used}


def test_a_plan_without_exactly_once_has_no_transactions_and_nothing_to_fence_or_abort():
    plan = WritePlan(SimpleNamespace(), SimpleNamespace())  # type: ignore[arg-type]
    assert plan.transactions is NO_TRANSACTIONS
    plan.transactions.fence_earlier_runs("query")  # no broker is asked: nothing fails
    plan.transactions.abort_failed("scope", [0, 1])
    task = plan.transactions.task(3, None)
    assert task is NO_TRANSACTION_TASK and task.scope is None and task.settings() == {}


class _Producer:
    def __init__(self) -> None:
        self.purged = 0

    def purge(self) -> None:
        self.purged += 1


def test_a_task_without_a_transaction_sends_everything_and_drops_what_is_queued_when_it_fails():
    producer = _Producer()
    transaction = NO_TRANSACTION_TASK.transaction(SimpleNamespace(client=producer))  # type: ignore[arg-type]
    assert transaction.begin() is None, "nothing committed before: every record is sent"
    NO_TRANSACTION_TASK.count([b"k"], 0)
    transaction.commit("topic")
    assert producer.purged == 0
    transaction.abort()
    assert producer.purged == 1
    transaction.release(clean=False)


def test_an_input_spark_cannot_vouch_for_fails_an_exactly_once_task_and_only_warns_without(caplog):
    spec = SimpleNamespace(topics=SimpleNamespace(describe=lambda: "topic 't'"), transactional_id_prefix="p")
    task = ExactlyOnceTask(ExactlyOnce(spec, None, "fresh"), "p-j-0", WriteIdentity("j", "write"), 0)  # type: ignore[arg-type]
    with pytest.raises(WriteTaskError, match=r"exactly-once write to topic 't': cannot tell whether Spark handed"):
        task.input_unknown()
    with caplog.at_level(logging.WARNING, logger="upsert_kafka"):
        NO_TRANSACTION_TASK.input_unknown()
    assert "cannot tell whether this task's input is complete" in caplog.text
