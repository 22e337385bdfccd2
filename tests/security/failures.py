"""How the failure tests on the secured broker look at a failure: its whole message (Spark's wrapping included),
how long it took, and whether a secret shows anywhere a user or an operator could see it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

# Every failure test runs with this client timeout and must end within it plus the margin (Spark's own work:
# planning, a job, a retried task).
CLIENT_TIMEOUT_S = 10
MARGIN_S = 25
TIMEOUT_OPTIONS = {"client.timeout": f"{CLIENT_TIMEOUT_S} s"}


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

    def assert_within_client_timeout(self) -> None:
        limit = CLIENT_TIMEOUT_S + MARGIN_S
        assert self.seconds < limit, f"took {self.seconds:.1f} s (client.timeout {CLIENT_TIMEOUT_S} s + {MARGIN_S} s)"


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
