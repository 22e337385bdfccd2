"""How the failure tests on the secured broker look at a failure: its whole message (Spark's wrapping included),
its kind, whether a retry was waited for, and whether a secret shows anywhere a user or an operator could see it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from pyspark_upsert_kafka.errors import KafkaUnavailableError

# librdkafka reports an authentication or TLS failure through its error callback only: the call in flight returns
# when its request times out, and the connector then raises the callback's error instead of retrying
# (kafka/errors.with_retries); an ACL denial comes back as the request's answer. So every failure test runs with a
# short request timeout and a long pause before a retry: a failure recognized at the first attempt ends within one
# timeout plus Spark's own work, while one the connector retried waits out the pause first. A test asserts the error's
# kind and that no retry was waited for, with a margin (the pause) that a loaded machine does not take up.
CLIENT_TIMEOUT_S = 10
RETRY_INTERVAL_S = 60
TIMEOUT_OPTIONS = {"client.timeout": f"{CLIENT_TIMEOUT_S} s", "client.retry-interval": f"{RETRY_INTERVAL_S} s"}
# How long a test waits for a query that must fail (a bound on the wait, not on the failure's time).
QUERY_WAIT_S = 2 * (CLIENT_TIMEOUT_S + RETRY_INTERVAL_S)


@dataclass
class Failure:
    message: str
    seconds: float

    def assert_says(self, *words: str) -> None:
        """Each word (a regular expression, case-insensitive) appears in the message."""
        missing = [w for w in words if not re.search(w, self.message, re.IGNORECASE)]
        assert not missing, f"the error lacks {missing}:\n{self.message[:3000]}"

    def assert_asks_to_grant(self, permission: str, resource: str) -> None:
        """The message names the resource, the ACL operation in Kafka's own capitals (READ, WRITE, DESCRIBE: a
        case-sensitive match, so no 'read' in other words counts) and asks for it."""
        self.assert_says(re.escape(resource), "grant|needs?|require")
        assert re.search(rf"\b{permission}\b", self.message), f"the error lacks {permission}:\n{self.message[:3000]}"

    def assert_failed_as(self, *kinds: type[Exception]) -> None:
        """The connector's error is one of `kinds` (by class name, as the traceback Spark carries shows it), not the
        brokers' unavailability, and it came without a retry: before one request timeout and one pause ran out."""
        self.assert_says("|".join(rf"\b{kind.__name__}\b" for kind in kinds))
        assert KafkaUnavailableError.__name__ not in self.message, f"a timeout, not the cause:\n{self.message[:3000]}"
        limit = CLIENT_TIMEOUT_S + RETRY_INTERVAL_S
        assert self.seconds < limit, f"took {self.seconds:.1f} s: a retry ({RETRY_INTERVAL_S} s away) was waited for"


def failure_of(action: Callable[[], object]) -> Failure:
    """Run `action`, which must fail; its error's full text (the Python traceback a task or planner sent) and
    how long it ran."""
    started = time.monotonic()
    try:
        action()
    except Exception as e:  # Spark wraps the connector's error: keep every layer's text
        parts, seen = [], set()
        error: BaseException | None = e
        while error is not None and id(error) not in seen:
            seen.add(id(error))
            parts.append(f"{type(error).__name__}: {error}")
            error = error.__cause__ or error.__context__
        return Failure("\n".join(parts), time.monotonic() - started)
    raise AssertionError("the action was expected to fail, and succeeded")


def assert_no_secret(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text, f"a secret appears in: ...{text[max(0, text.find(secret) - 300) :][:600]}"
