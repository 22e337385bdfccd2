"""Secrets out of texts the connector shows (errors, log lines): known secret values replaced, and the
credentials a URL or a `user:password@host` carries. Here, in the kernel, because the formats need it too (the
schema registry's errors) and may import nothing else of the connector; which options hold a secret is the
connector's (secrets.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "***"

# `user:password@` in front of a host: after a scheme (`https://user:pw@host`, any user-info), or bare
# (`user:pw@host:9092`, a colon needed so that `alice@example.com` stays). A password may hold '@'; the host may
# be an IPv6 literal in brackets.
_URL_USER_INFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+._-]*://)[^\s/?#@]+(?:@[^\s/?#@]*)*@")
_BARE_USER_INFO = re.compile(r"(?P<lead>^|[\s,;'\"(=\[])[^\s,;'\"/@:\[\]]+:[^\s,;'\"/]*@(?=[\w\[])")


def strip_url_credentials(text: str) -> str:
    """`text` with the user-info of every URL or `user:password@host` replaced by ***."""
    text = _URL_USER_INFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    return _BARE_USER_INFO.sub(lambda m: f"{m.group('lead')}{REDACTED}@", text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` fit to show: URL credentials stripped, and each known secret value (longest first) replaced."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return strip_url_credentials(text)
