"""SASL/OAUTHBEARER token providers for the tests (option 'properties.sasl.oauthbearer.token-provider'), imported
by name in every process that makes a Kafka client: the driver's planning workers and the executors' workers.

The secured broker checks tokens with Kafka's unsecured validator (integration/kafka.py): an unsigned JWT (header
`{"alg":"none"}`) whose `sub` is the user and `exp` its expiry. `sasl.oauthbearer.config` names the user:
`principal=<user>`. Each token lives LIFETIME_S, so a query running half a minute needs several.
"""

from __future__ import annotations

import base64
import json
import time

LIFETIME_S = 10
# A token a failing provider hands out: the tests check that this text is shown nowhere.
EXPIRED_TOKEN_SUB = "expired-token-user"


def _part(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()


# How every token made here begins (base64 of `{"alg":"none"}`): a test looks for it where no token may appear.
TOKEN_HEADER = _part({"alg": "none"})


def unsecured_jwt(sub: str, issued_at: float, lifetime_s: float) -> str:
    """An unsigned JWS compact serialization (an empty signature after the last '.')."""
    claims = {"sub": sub, "iat": issued_at, "exp": issued_at + lifetime_s}
    return f"{TOKEN_HEADER}.{_part(claims)}."


def _principal(config: str) -> str:
    fields = dict(item.split("=", 1) for item in config.split() if "=" in item)
    return fields["principal"]


def short_lived(config: str) -> tuple[str, float, str]:
    """A token for the user `sasl.oauthbearer.config` names, valid LIFETIME_S from now."""
    now, sub = time.time(), _principal(config)
    return unsecured_jwt(sub, now, LIFETIME_S), now + LIFETIME_S, sub


def expired_token() -> str:
    """The token `expired` returns: valid for 10 s an hour ago."""
    return unsecured_jwt(EXPIRED_TOKEN_SUB, 1_700_000_000, LIFETIME_S)


def expired(config: str) -> tuple[str, float]:
    return expired_token(), 1_700_000_000 + LIFETIME_S


def raising(config: str) -> tuple[str, float]:
    raise RuntimeError("the token service answered 503 Service Unavailable")


not_a_function = "a token provider must be callable"


_calls: dict[str, int] = {}


def first_call_only(config: str) -> tuple[str, float, str]:
    """A token on the first call in a process for this `config`; then the provider fails, as a signer whose
    credentials were revoked would on a refresh."""
    _calls[config] = _calls.get(config, 0) + 1
    if _calls[config] > 1:
        raise PermissionError("the credentials behind the signer were revoked")
    return short_lived(config)
