"""A token provider that notes each token it makes, so that a test can wait until a stream's clients have refreshed
their tokens rather than for a while: tests/support/oauth_tokens.py's short-lived tokens, each noted (the time it was
made, the process) in the file `log=<path>` of `sasl.oauthbearer.config` names. Spark's Python workers import it by
name (option 'properties.sasl.oauthbearer.token-provider': 'tests.workers.logged_tokens:short_lived')."""

from __future__ import annotations

import itertools
import os
from collections import defaultdict
from pathlib import Path

from tests.support.oauth_tokens import LIFETIME_S
from tests.support.oauth_tokens import short_lived as _short_lived


def short_lived(config: str) -> tuple[str, float, str]:
    token, expiry, principal = _short_lived(config)
    fields = dict(item.split("=", 1) for item in config.split() if "=" in item)
    with open(fields["log"], "a") as log:  # one short appended line: whole, whichever process writes at once
        log.write(f"{expiry - LIFETIME_S} {os.getpid()}\n")
    return token, expiry, principal


def refreshes(log: Path) -> int:
    """The most tokens one process made, each at least half a lifetime after its previous one: a long-lived client
    asking again before its token expires (librdkafka asks at 80% of the lifetime). Tokens that clients made
    together ask for count once."""
    if not log.exists():
        return 0
    made: dict[str, list[float]] = defaultdict(list)
    for line in log.read_text().splitlines():
        at, pid = line.split()
        made[pid].append(float(at))
    most = 0
    for times in made.values():
        times.sort()
        later = [b for a, b in itertools.pairwise(times) if b - a >= LIFETIME_S / 2]
        most = max(most, len(later))
    return most
