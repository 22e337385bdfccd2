"""How to reach the brokers: KafkaSpec (servers, pass-through client properties, timeouts, retries, token provider),
parsed from the options once; every client of the connector is made from one (kafka/clients.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import OptionError
from ..options.canonical import parse_options
from ..options.catalog import (
    CLIENT_POOL_IDLE_TIMEOUT,
    CLIENT_RETRIES,
    CLIENT_RETRY_INTERVAL,
    CLIENT_TIMEOUT,
    PROPERTIES_BOOTSTRAP_SERVERS,
)
from ..options.flink_only import JAVA_ONLY_PROPERTIES
from ..options.kafka_client import GUARANTEE_PROPERTIES, RESERVED_PROPERTIES, check_reserved
from ..options.values import require
from ..secrets import redact, redact_options, secret_values, strip_url_credentials
from .token_provider import take_token_provider, token_provider


@dataclass(frozen=True)
class KafkaSpec:
    """How to reach the brokers: the servers, pass-through client properties, the request timeout and how
    transient errors are retried (kafka.errors.with_retries)."""

    bootstrap_servers: str
    properties: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    timeout_s: float = 30.0
    retries: int = 30
    retry_interval_s: float = 1.0
    pool_idle_timeout_s: float = 300.0  # how long a client stays pooled in a Python worker (kafka/pool.py)
    token_provider: str | None = None  # 'module:function' making SASL/OAUTHBEARER tokens (kafka/token_provider.py)

    def __repr__(self) -> str:  # the spec may be logged: secret values never are
        shown = redact_options(dict(self.properties))
        return (
            f"KafkaSpec({self.describe()}, properties={shown}, timeout_s={self.timeout_s}, "
            f"retries={self.retries}, retry_interval_s={self.retry_interval_s}, "
            f"pool_idle_timeout_s={self.pool_idle_timeout_s}, token_provider={self.token_provider!r})"
        )

    @property
    def patience_s(self) -> float:
        """How long a broker look-up waits for the brokers at most: one request's timeout, plus the retries."""
        return self.timeout_s + self.retries * self.retry_interval_s

    def patience_doc(self) -> str:
        return (
            f"a query waits {self.patience_s:g} s for them (options 'client.timeout' = {self.timeout_s:g} s, "
            f"'client.retries' = {self.retries}, 'client.retry-interval' = {self.retry_interval_s:g} s)"
        )

    def security_summary(self) -> str:
        """The connection's security settings that are not secret, for error messages."""
        props = dict(self.properties)
        protocol = props.get("security.protocol", "plaintext")
        mechanism = props.get("sasl.mechanism") or props.get("sasl.mechanisms")
        return f"security.protocol={protocol}" + (f", sasl.mechanism={mechanism}" if mechanism else "")

    def client_config(self, defaults: Mapping[str, Any] | None = None, **owned: Any) -> dict[str, Any]:
        """librdkafka configuration: our tunable defaults, the user's pass-through properties on top, and on top
        of everything the settings the connector owns (a client's group, transactional id, isolation...)."""
        config: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers, **(defaults or {})}
        config.update(self.properties)
        if self.token_provider is not None:  # loaded in this process: a function cannot travel as an option
            config["oauth_cb"] = token_provider(self.token_provider)
        config.update(owned)
        return config

    def describe(self) -> str:
        """For error messages: the servers only, never a credential (not even one written into an address)."""
        return f"'{strip_url_credentials(self.bootstrap_servers)}'"

    def redact(self, text: str) -> str:
        """`text` fit to show: the value of every secret property replaced, URL credentials stripped."""
        return redact(text, secret_values(dict(self.properties)))


def parse_kafka_spec(given: Mapping[str, str]) -> KafkaSpec:
    options = parse_options(given)
    servers = require(options, PROPERTIES_BOOTSTRAP_SERVERS, "broker1:9092,broker2:9092")
    _check_servers(servers)
    properties: dict[str, str] = {}
    for name, value in sorted(options.items()):
        if not name.startswith("properties.") or name == PROPERTIES_BOOTSTRAP_SERVERS.name:
            continue
        prop = name[len("properties.") :]
        if prop in JAVA_ONLY_PROPERTIES:
            raise OptionError(
                f"option '{name}' is a Java client setting with no meaning to librdkafka, which this connector "
                f"uses; instead: {JAVA_ONLY_PROPERTIES[prop]}"
            )
        reserved = RESERVED_PROPERTIES.get(prop)
        if reserved is not None and prop not in GUARANTEE_PROPERTIES:
            check_reserved(prop, value)
        properties[prop] = value
    provider = take_token_provider(properties)
    return KafkaSpec(
        servers,
        tuple(sorted(properties.items())),
        timeout_s=options.value(CLIENT_TIMEOUT),
        retries=options.value(CLIENT_RETRIES),
        retry_interval_s=options.value(CLIENT_RETRY_INTERVAL),
        pool_idle_timeout_s=options.value(CLIENT_POOL_IDLE_TIMEOUT),
        token_provider=provider,
    )


def _check_servers(servers: str) -> None:
    """Each entry is host or host:port (with an optional `protocol://`), as librdkafka reads the list; a
    malformed one would otherwise surface only as a connection timeout."""
    for entry in (e.strip() for e in servers.split(",")):
        address = entry.split("://", 1)[-1]
        with_port = ":" in address and not address.endswith("]")  # '[::1]' is an IPv6 host without a port
        host, colon, port = address.rpartition(":") if with_port else (address, "", "")
        if not host or (colon and not (port.isdigit() and 0 < int(port) < 65536)):
            raise OptionError(
                f"option 'properties.bootstrap.servers': '{entry}' is not a broker address; give host:port "
                "entries separated by ',', e.g. 'broker1:9092,broker2:9092'"
            )
