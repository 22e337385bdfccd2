"""Option 'properties.sasl.oauthbearer.token-provider': SASL/OAUTHBEARER tokens made by code
('package.module:function'), for the managed services whose sign-in is a signature rather than a string (Amazon MSK
IAM, Google Managed Kafka).

A data source receives string options only and its clients are made on the executors, so every process that
opens a Kafka client loads the function by name itself (once: cached per process) and hands it to confluent-kafka
as `oauth_cb`. librdkafka calls it from its own background thread for a client's first token and again before each
token expires, an idle pooled client included; a broker that ends a session at its token's expiry then sees the
client sign in again with the new one. The function gets `properties.sasl.oauthbearer.config` and returns
(token, expiry in seconds since the epoch[, principal[, extensions]]).

What it returns is checked before librdkafka sees it: a failure (the function raising, something else than a
token, a token already expired) is an error naming the option, the function and the cause, and never the token.
Before a process's first client is made, the function is called once here: confluent-kafka would otherwise wait
10 s for a token and then say only that none came.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from datetime import datetime, timezone
from typing import Any

from ..errors import KafkaAuthenticationError, OptionError
from ..kernel.clock import SYSTEM_CLOCK, Clock
from .pool import CLIENT_POOL
from .references import load_reference

log = logging.getLogger("upsert_kafka")

PROPERTY = "sasl.oauthbearer.token-provider"
OPTION = f"properties.{PROPERTY}"
MECHANISM = "OAUTHBEARER"
_SASL_PROTOCOLS = ("sasl_ssl", "sasl_plaintext")
_SHAPE = "(token, expiry in seconds since the epoch[, principal[, extensions]])"


# What confluent-kafka's oauth_cb returns: (token, expiry in seconds since the epoch[, principal[, extensions]]).
Token = tuple[str, float] | tuple[str, float, str] | tuple[str, float, str, dict[str, str]]


class _Failed(Exception):
    """The provider gave no usable token; the message is the cause (never the token)."""


def take_token_provider(properties: MutableMapping[str, str]) -> str | None:
    """Remove the option from the client properties (librdkafka has no such property) and check the settings that
    go with it: SASL over SSL or plaintext, mechanism OAUTHBEARER (set, in capitals), not librdkafka's own OIDC."""
    reference = properties.pop(PROPERTY, None)
    if reference is None:
        return None
    reference = reference.strip()
    module, colon, name = reference.partition(":")
    if not (colon and module.strip() and name.strip()):
        raise OptionError(f"option '{OPTION}' = '{reference}' is not 'package.module:function'")
    protocol = properties.get("security.protocol", "plaintext")
    if protocol.strip().lower() not in _SASL_PROTOCOLS:
        raise OptionError(
            f"option '{OPTION}' signs in with SASL/OAUTHBEARER, which 'properties.security.protocol' = '{protocol}' "
            "does not do: set it to SASL_SSL (or SASL_PLAINTEXT)"
        )
    for key in ("sasl.mechanism", "sasl.mechanisms"):
        given = properties.get(key)
        if given is not None and given.strip().upper() != MECHANISM:
            raise OptionError(
                f"option '{OPTION}' makes OAUTHBEARER tokens, but 'properties.{key}' = '{given}': set it to "
                f"{MECHANISM} or leave it out"
            )
    if properties.get("sasl.oauthbearer.method", "default").strip().lower() != "default":
        raise OptionError(
            f"options '{OPTION}' and 'properties.sasl.oauthbearer.method' = "
            f"'{properties['sasl.oauthbearer.method']}' exclude each other: the tokens come either from the "
            "provider or from librdkafka's own OIDC client; give one of them"
        )
    properties.pop("sasl.mechanisms", None)  # librdkafka's other spelling
    properties["sasl.mechanism"] = MECHANISM  # librdkafka compares it case-sensitively
    token_provider(reference)  # imports now: a missing module or function fails before any query runs
    return reference


class TokenProvider:
    """The `oauth_cb` of this process's clients with one provider: calls the user's function, checks its answer,
    and keeps the last failure (never a token) for the error a client then meets."""

    def __init__(self, reference: str, function: Callable[[str], Any], clock: Clock = SYSTEM_CLOCK) -> None:
        self.reference = reference
        self._function = function
        self.clock = clock  # its wall clock tells an expired token
        self.failure: str | None = None
        self._checked: set[str] = set()

    def __repr__(self) -> str:  # part of a pooled client's key: the same for every client of this provider
        return f"TokenProvider({self.reference!r})"

    def __call__(self, config: str) -> Token:
        try:
            token = self._token(config)
        except _Failed as e:
            self.failure = str(e)
            log.warning("upsert-kafka: %s", self.describe(self.failure))
            raise
        self.failure = None
        return token

    def check(self, config: str) -> None:
        """Before a client is made (once per process and `config`): a provider that cannot give a token fails now."""
        if config in self._checked:
            return
        try:
            self._token(config)
        except _Failed as e:
            self.failure = str(e)
            raise self.error() from None
        self._checked.add(config)

    def describe(self, cause: str) -> str:
        return f"the SASL/OAUTHBEARER token provider '{self.reference}' (option '{OPTION}') {cause}"

    def error(self) -> KafkaAuthenticationError:
        cause = self.failure or "gave librdkafka no token in time"
        return KafkaAuthenticationError(
            f"{self.describe(cause)}; a Kafka client cannot sign in without a token. It must return {_SHAPE}, "
            "on the driver and on every executor"
        )

    def _token(self, config: str) -> Token:
        try:
            answer = self._function(config)
        except Exception as e:  # the provider's own failure: its cause goes to the user
            raise _Failed(f"raised {type(e).__name__}: {e}") from None
        return _checked(answer, self.clock.time())


def _checked(answer: Any, now: float) -> Token:
    """The provider's answer as confluent-kafka takes it, or _Failed saying what is wrong (never the token)."""
    if not isinstance(answer, (tuple, list)):
        raise _Failed(f"returned {_kind(answer)}, not {_SHAPE}")
    if not 2 <= len(answer) <= 4:
        raise _Failed(f"returned {len(answer)} values, not {_SHAPE}")
    token, expiry, *rest = answer
    if not isinstance(token, str):
        raise _Failed(f"returned {_kind(token)} as the token, not a str")
    if not token:
        raise _Failed("returned an empty token")
    if not (token.isascii() and token.isprintable()):
        raise _Failed("returned a token holding characters other than printable ASCII")
    if isinstance(expiry, bool) or not isinstance(expiry, (int, float)):
        raise _Failed(f"returned {_kind(expiry)} as the expiry, not a number of seconds since the epoch")
    if expiry > 1e11:  # past the year 5000: milliseconds
        raise _Failed(f"returned an expiry of {expiry:.0f}, which reads as milliseconds; give seconds since the epoch")
    if expiry <= now:
        raise _Failed(
            f"returned a token that expired at {_utc(expiry)} (now {_utc(now)}); the expiry is in seconds since the "
            "epoch (time.time() + the token's lifetime)"
        )
    if rest and not isinstance(rest[0], str):
        raise _Failed(f"returned {_kind(rest[0])} as the principal, not a str")
    if len(rest) > 1 and not (
        isinstance(rest[1], dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in rest[1].items())
    ):
        raise _Failed("returned extensions that are not a dict of str to str")
    return tuple(answer)


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _utc(epoch_s: float) -> str:
    try:
        return datetime.fromtimestamp(epoch_s, timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return f"{epoch_s:g} s"


def token_provider(reference: str) -> TokenProvider:
    """This process's provider for `reference`, imported on first use (kept with the process's clients)."""
    make = lambda: TokenProvider(reference, load_reference(reference, OPTION))  # noqa: E731
    return CLIENT_POOL.shared(_key(reference), make)


def _key(reference: str) -> tuple[str, str]:
    return ("token-provider", reference)


def authentication_hint(reference: str | None) -> str | None:
    """What to check when the brokers refuse a client that signs in with this provider (None: no provider)."""
    if reference is None:
        return None
    provider = CLIENT_POOL.shared_if_made(_key(reference))
    last = f"; its last call {provider.failure}" if provider is not None and provider.failure else ""
    return f"Check the token provider '{reference}' (option '{OPTION}') and the identity it signs in as{last}"
