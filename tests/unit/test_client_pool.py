"""The client pool's rules as pure logic (kafka/pool.py), with stand-in clients: a client is lent to one borrower
at a time, reused only under its own key, kept only when given back clean, closed when idle too long or
beyond the pool's size, and a forked child never uses its parent's clients. The same rules against the real
broker and Spark are in tests/read/test_read_client_pool.py and tests/write/test_write_client_pool.py."""

from __future__ import annotations

import os
import threading

import pytest
from pyspark_upsert_kafka.kafka.errors import ClientErrors
from pyspark_upsert_kafka.kafka.pool import ClientPool, Pooled

from tests.support.clock import ManualClock
from tests.support.read_helpers import wait_for


class FakeClient:
    def __init__(self, name: str) -> None:
        self.name, self.closed, self.resets = name, False, 0


def maker(key: tuple, made: list[FakeClient], reset_ok: bool = True):
    def reset(client: FakeClient) -> bool:
        client.resets += 1
        return reset_ok

    def close(client: FakeClient) -> None:
        client.closed = True

    def create() -> Pooled:
        client = FakeClient(f"{key}-{len(made)}")
        made.append(client)
        return Pooled(key, client, ClientErrors(), reset, close)

    return create


def test_a_client_given_back_clean_is_lent_again_for_the_same_key():
    pool, made = ClientPool(), []
    first = pool.borrow(("consumer", "a"), maker(("consumer", "a"), made))
    pool.give_back(first, clean=True, idle_timeout_s=60)
    again = pool.borrow(("consumer", "a"), maker(("consumer", "a"), made))
    assert again.client is first.client and again.reused
    assert len(made) == 1 and made[0].resets == 1, "reset once, when given back"
    assert (pool.made["consumer"], pool.lent_again["consumer"]) == (1, 1)


def test_a_client_is_never_lent_under_another_key():
    pool, made = ClientPool(), []
    first = pool.borrow(("producer", "acks=all"), maker(("producer", "acks=all"), made))
    pool.give_back(first, clean=True, idle_timeout_s=60)
    other = pool.borrow(("producer", "acks=1"), maker(("producer", "acks=1"), made))
    assert other.client is not first.client and not other.reused
    assert pool.idle() == 1, "the first one waits for a borrower with its own settings"


def test_a_borrowed_client_is_not_lent_to_a_second_borrower():
    pool, made = ClientPool(), []
    key = ("consumer", "a")
    first = pool.borrow(key, maker(key, made))
    second = pool.borrow(key, maker(key, made))
    assert first.client is not second.client
    pool.give_back(first, clean=True, idle_timeout_s=60)
    pool.give_back(second, clean=True, idle_timeout_s=60)
    lent = {id(pool.borrow(key, maker(key, made)).client) for _ in range(2)}
    assert lent == {id(first.client), id(second.client)}, "each idle client to one borrower"


def test_a_client_given_back_after_an_error_is_closed_and_never_lent_again():
    pool, made = ClientPool(), []
    key = ("producer", "a")
    failed = pool.borrow(key, maker(key, made))
    pool.give_back(failed, clean=False, idle_timeout_s=60)
    assert failed.client.closed and pool.idle() == 0
    assert pool.borrow(key, maker(key, made)).client is not failed.client


def test_a_client_whose_callback_reported_a_final_error_is_closed_even_if_given_back_clean():
    pool, made = ClientPool(), []
    key = ("producer", "a")
    lent = pool.borrow(key, maker(key, made))
    lent.errors.final = object()  # e.g. an authentication failure seen only by the error callback
    pool.give_back(lent, clean=True, idle_timeout_s=60)
    assert lent.client.closed and pool.idle() == 0


def test_a_client_that_cannot_be_reset_is_closed():
    pool, made = ClientPool(), []
    key = ("consumer", "a")
    lent = pool.borrow(key, maker(key, made, reset_ok=False))
    pool.give_back(lent, clean=True, idle_timeout_s=60)
    assert lent.client.closed and pool.idle() == 0


def test_an_idle_timeout_of_zero_closes_the_client_after_its_borrower():
    pool, made = ClientPool(), []
    key = ("consumer", "a")
    lent = pool.borrow(key, maker(key, made))
    pool.give_back(lent, clean=True, idle_timeout_s=0)
    assert lent.client.closed and pool.idle() == 0


def test_an_idle_client_is_closed_after_its_idle_timeout_without_any_borrower():
    clock = ManualClock()
    pool, made = ClientPool(clock=clock), []
    key = ("consumer", "a")
    lent = pool.borrow(key, maker(key, made))
    closed = threading.Event()
    lent.close = lambda client: (setattr(client, "closed", True), closed.set())
    pool.give_back(lent, clean=True, idle_timeout_s=60)
    # The pool's sweep waits on the pool's clock, due at the idle timeout (and a hair after).
    wait_for(lambda: clock.waiting() != [], "the pool's sweep to wait on its clock", 30)
    assert clock.waiting()[0] - clock.monotonic() == pytest.approx(60, abs=0.1)
    clock.advance(59)
    assert pool.idle() == 1 and not closed.is_set(), "closed before its idle timeout"
    clock.advance(2)
    assert closed.wait(30), "the pool's sweep did not close it"  # a bound on the wait: it comes at once
    assert pool.idle() == 0 and clock.waiting() == []


def test_the_least_recently_given_back_clients_are_closed_beyond_the_pools_size():
    pool, made = ClientPool(max_idle=2), []
    lent = [pool.borrow(("producer", f"id-{i}"), maker(("producer", f"id-{i}"), made)) for i in range(3)]
    for pooled in lent:
        pool.give_back(pooled, clean=True, idle_timeout_s=60)
    assert [c.closed for c in made] == [True, False, False]
    assert pool.idle() == 2


def test_a_forked_child_starts_with_an_empty_pool():
    from pyspark_upsert_kafka.kafka import pool as module

    made: list[FakeClient] = []
    key = ("test-fork", "a")
    module.CLIENT_POOL.give_back(module.CLIENT_POOL.borrow(key, maker(key, made)), clean=True, idle_timeout_s=60)
    module.CLIENT_POOL.shared(key, lambda: "a token provider")
    try:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            shared = module.CLIENT_POOL.shared_if_made(key)
            os.write(write, f"{module.CLIENT_POOL.idle()} {shared}".encode())
            os._exit(0)
        os.close(write)
        answer = os.read(read, 64)
        os.waitpid(pid, 0)
        assert answer == b"0 None", "the child's pool is empty, its shared values too"
        assert module.CLIENT_POOL.shared_if_made(key) == "a token provider"  # the parent's are kept
    finally:
        module.CLIENT_POOL.clear()


def test_a_shared_value_is_made_once_per_process_and_again_when_too_old():
    clock = ManualClock()
    pool, made = ClientPool(clock=clock), []

    def make() -> int:
        made.append(len(made))
        return len(made)

    assert [pool.shared("fenced", make) for _ in range(3)] == [1, 1, 1]
    assert pool.shared_if_made("fenced") == 1 and pool.shared_if_made("never") is None
    assert pool.shared("target", make, ttl_s=0.05) == 2
    clock.advance(0.06)
    assert pool.shared_if_made("target") is None and pool.shared("target", make, ttl_s=0.05) == 3
    assert pool.shared("fenced", make) == 1  # kept: no ttl


def test_a_shared_value_that_failed_to_be_made_is_made_again():
    pool, calls = ClientPool(), []

    def failing() -> int:
        calls.append(1)
        raise RuntimeError("brokers away")

    for _ in range(2):
        with pytest.raises(RuntimeError, match="brokers away"):
            pool.shared("fenced", failing)
    assert len(calls) == 2 and pool.shared_if_made("fenced") is None


def test_making_a_shared_value_may_take_another_shared_value():
    """A stream's write target is asked of the brokers through a client whose token provider is shared too."""
    pool, done = ClientPool(), []

    def target() -> str:
        return "target with " + pool.shared("token-provider", lambda: "provider")

    worker = threading.Thread(target=lambda: done.append(pool.shared("write-target", target, ttl_s=60)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert done == ["target with provider"], "making one shared value while making another deadlocked"
