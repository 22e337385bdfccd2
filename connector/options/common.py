"""Parse and validate the user's options once, into frozen specs that everything else takes.

Spark hands us a case-insensitive dict with lower-cased keys and string values. Here (canonical_options) names
are folded onto their declared spelling (aliases onto the Flink one), unknown options are rejected with a
did-you-mean, and every catalog option given is parsed once by the kind the catalog declares; the specs read the
typed values (`OptionValues.value`).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import OptionError
from ..formats.option_kinds import OptionValues, parse_values, same_option_twice
from ..secrets import redact, redact_options, secret_values, strip_url_credentials
from ..token_provider import take_token_provider, token_provider
from .catalog import OPTIONS, PASS_THROUGH_PREFIXES
from .flink_only import JAVA_ONLY_PROPERTIES, not_in_spark
from .values import require


# Client properties the connector sets itself, because its guarantees depend on them: a user value is refused
# unless it equals the connector's (then it changes nothing). The README lists them (generated from here).
@dataclass(frozen=True)
class ReservedProperty:
    accepted: tuple[str, ...]  # values that agree with the connector's own (empty: none may be given)
    reason: str


RESERVED_PROPERTIES: dict[str, ReservedProperty] = {
    "enable.auto.commit": ReservedProperty(("false",), "offsets are tracked in Spark's checkpoint"),
    "enable.auto.offset.store": ReservedProperty(("false",), "offsets are tracked in Spark's checkpoint"),
    "isolation.level": ReservedProperty(
        ("read_committed",), "reads see committed records only: aborted transactions are never data"
    ),
    "partitioner": ReservedProperty((), "records are partitioned by key like the Java client (murmur2)"),
    "transactional.id": ReservedProperty(
        (), "with sink.delivery-guarantee=exactly-once each task derives its own from 'sink.transactional-id-prefix'"
    ),
    "enable.idempotence": ReservedProperty(
        ("true",), "option 'sink.delivery-guarantee' decides it (at-least-once and exactly-once need it)"
    ),
    "acks": ReservedProperty(
        ("all", "-1"), "option 'sink.delivery-guarantee' decides it (at-least-once and exactly-once need all)"
    ),
    "delivery.report.only.error": ReservedProperty(("true",), "the writer counts only failed deliveries"),
}
# Reserved only under a delivery guarantee that depends on them (sink.delivery-guarantee=none lets them be).
GUARANTEE_PROPERTIES = ("enable.idempotence", "acks")


# ---------------------------------------------------------------------------------------------
# Raw options -> canonical names


# Spark spellings are camelCase; Spark hands us lower-cased keys: each is folded onto its declared spelling.
_DECLARED = {doc.name.lower(): doc.name for doc in OPTIONS if not doc.name.endswith("*")}
_NAMES = frozenset(_DECLARED.values())
_ALIASES = {alias.lower(): doc.name for doc in OPTIONS for alias in doc.aliases}
_ALIAS_SPELLINGS = {alias.lower(): alias for doc in OPTIONS for alias in doc.aliases}
# Format options (`key.json.ignore-parse-errors`) are validated by their codec, not here.
FORMAT_OPTION = re.compile(r"^(key|value)\.[a-z0-9_-]+\..+$")


# Options Spark's engine adds for its own use (a stream writer gets the checkpoint location).
_ENGINE_OPTIONS = {"checkpointlocation"}


def parse_options(options: Mapping[str, str]) -> OptionValues:
    """`options` parsed (canonical_options), unless they are already."""
    return options if isinstance(options, OptionValues) else canonical_options(options)


def canonical_options(raw: Mapping[str, str]) -> OptionValues:
    """Fold names onto their declared spelling and aliases onto Flink's; reject unknown options and conflicting
    alias pairs; parse every catalog option given by its declared kind, once."""
    out: dict[str, str] = {}
    given_as: dict[str, str] = {}
    spelled: dict[str, str] = {}  # the declared spelling of the name each was given under, for errors
    for key, value in raw.items():
        name = key.lower()
        if name in _ENGINE_OPTIONS:
            continue
        if name == "path":
            raise OptionError(
                f"upsert-kafka reads and writes the topic named by option 'topic', not a path: call "
                f'.load() / .save() with no argument and set .option("topic", "{value}")'
            )
        if name.startswith("kafka."):
            name = "properties." + name[len("kafka.") :]
        name = _value_format_option(name)
        spelling = _ALIAS_SPELLINGS.get(name)
        name = _ALIASES.get(name) or _DECLARED.get(name, name)
        if not (name in _NAMES or name.startswith(PASS_THROUGH_PREFIXES) or FORMAT_OPTION.match(name)):
            raise OptionError(_unknown_option_message(key))
        if name in out and out[name] != value:
            raise OptionError(same_option_twice(given_as[name], key))
        out[name], given_as[name], spelled[name] = value, key, spelling or name
    # Pass-through and format options are not the catalog's: their users check them.
    return parse_values(OPTIONS, out, unknown_ok=True, spelled=spelled)


def _value_format_option(name: str) -> str:
    """Flink's spelling of a value format's options next to option `format`: `json.ignore-parse-errors` is
    `value.json.ignore-parse-errors` (the Flink 1.13 notes' `avro-confluent.schema-registry.url` too)."""
    head = name.split(".", 1)[0]
    if "." not in name or name in _DECLARED or head in ("key", "value", "properties", "kafka"):
        return name
    return f"value.{name}" if head in _format_names() else name


def _format_names() -> frozenset[str]:
    from ..formats import available_formats  # here, not at import: the codecs' entry points load lazily

    return frozenset(available_formats())


def _unknown_option_message(key: str) -> str:
    foreign = not_in_spark(key.lower())
    if foreign is not None:
        return foreign.format(key=key)
    spellings = {**_DECLARED, **{alias.lower(): alias for doc in OPTIONS for alias in doc.aliases}}
    close = difflib.get_close_matches(key.lower(), list(spellings), n=1, cutoff=0.6)
    hint = f" Did you mean '{spellings[close[0]]}'?" if close else ""
    return (
        f"unknown option '{key}'.{hint} Kafka client settings go under 'properties.' (or 'kafka.'); "
        f"known options: {', '.join(sorted(_DECLARED.values(), key=str.lower))}"
    )


# ---------------------------------------------------------------------------------------------
# Specs


@dataclass(frozen=True)
class KafkaSpec:
    """How to reach the brokers: the servers, pass-through client properties, the request timeout and how
    transient errors are retried (kafka_errors.call)."""

    bootstrap_servers: str
    properties: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    timeout_s: float = 30.0
    retries: int = 30
    retry_interval_s: float = 1.0
    pool_idle_timeout_s: float = 300.0  # how long a client stays pooled in a Python worker (pool.py)
    token_provider: str | None = None  # 'module:function' making SASL/OAUTHBEARER tokens (token_provider.py)

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
    servers = require(options, "properties.bootstrap.servers", "broker1:9092,broker2:9092")
    _check_servers(servers)
    properties: dict[str, str] = {}
    for name, value in sorted(options.items()):
        if not name.startswith("properties.") or name == "properties.bootstrap.servers":
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
        timeout_s=options.value("client.timeout"),
        retries=options.value("client.retries"),
        retry_interval_s=options.value("client.retry-interval"),
        pool_idle_timeout_s=options.value("client.pool.idle-timeout"),
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


def check_reserved(prop: str, value: str) -> None:
    """Refuse a user value of a property the connector owns, unless it is the connector's own value."""
    reserved = RESERVED_PROPERTIES[prop]
    if value.strip().lower() not in reserved.accepted:
        allowed = f" (only '{reserved.accepted[0]}' is accepted)" if reserved.accepted else ""
        raise OptionError(f"option 'properties.{prop}' cannot be set to '{value}'{allowed}: {reserved.reason}")


def changelog_column_name(options: Mapping[str, str]) -> str:
    name = parse_options(options).value("changelog.column").strip()
    if not name:
        raise OptionError("option 'changelog.column' must name a column, e.g. '_change_type'")
    return name


@dataclass(frozen=True)
class TopicSelection:
    """The topics of a read or write: named by `topic` (a list), every topic matching `topic-pattern`, or (reads)
    the partitions `assign` lists, whose topics are then `names`."""

    names: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[tuple[str, tuple[int, ...]], ...] | None = None  # topic -> partitions, both sorted

    @property
    def single(self) -> str | None:
        return self.names[0] if len(self.names) == 1 and self.pattern is None else None

    def accepts(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.names

    def describe(self) -> str:
        if self.pattern is not None:
            return f"topics matching '{self.pattern}'"
        if self.assigned is not None:
            listed = "; ".join(f"topic '{t}' partition(s) {', '.join(map(str, ps))}" for t, ps in self.assigned)
            return f"{listed} (option 'assign')"
        return f"topic '{self.names[0]}'" if len(self.names) == 1 else f"topics {', '.join(self.names)}"

    @property
    def option(self) -> str:
        """The option that selected the topics, for errors."""
        return "topic-pattern" if self.pattern is not None else "assign" if self.assigned is not None else "topic"


_SELECTORS = ("topic", "topic-pattern", "assign")


def parse_topic_selection(raw: Mapping[str, str]) -> TopicSelection:
    """`topic` (a list, in the order given, without repeats), `topic-pattern` or `assign`: exactly one, as Spark's
    kafka source takes exactly one of subscribe, subscribePattern and assign."""
    options = parse_options(raw)
    given = [n for n in _SELECTORS if options.get(n, "").strip()]
    if len(given) > 1:
        named = ", ".join(f"'{n}'" for n in given[:-1]) + f" and '{given[-1]}'"
        raise OptionError(
            f"options {named} exclude each other; give one of them (Spark's kafka source: exactly one of subscribe, "
            "subscribePattern, assign)"
        )
    if "topic-pattern" in given:
        return TopicSelection(pattern=options.value("topic-pattern").pattern)  # compiled by its kind
    if "assign" in options and given != ["topic"]:
        return parse_assign(options["assign"])  # an empty one too: its error says what to write
    require(options, "topic", "orders")
    listed = options["topic"].strip()
    # ';' is Flink's list separator and ',' Spark's (subscribe); neither can occur in a topic name.
    names = tuple(dict.fromkeys(t.strip() for t in re.split(r"[;,]", listed) if t.strip()))
    for name in names or ("",):
        _check_topic_name(name, "topic", "; several topics are separated by ';'")
    return TopicSelection(names)


_ASSIGN_EXAMPLE = '{"orders":[0,1],"payments":[2]}'


def parse_assign(raw: str) -> TopicSelection:
    """Spark's `assign`: a JSON object of topic -> partition numbers, e.g. {"orders":[0,1]}."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(
            f"option 'assign' must be a JSON object of topics and their partitions, like {_ASSIGN_EXAMPLE}; got '{raw}'"
        )
    assigned = []
    for topic, partitions in sorted(parsed.items()):
        _check_topic_name(topic, "assign", "")
        if (
            not isinstance(partitions, list)
            or not partitions
            or any(type(p) is not int or p < 0 for p in partitions)  # JSON true or 1.5 is no partition
        ):
            raise OptionError(
                f"option 'assign': topic '{topic}' must have a non-empty list of partition numbers (0 or more), like "
                f"{_ASSIGN_EXAMPLE}; got {json.dumps(partitions)}"
            )
        if len(set(partitions)) != len(partitions):
            twice = next(p for p in partitions if partitions.count(p) > 1)
            raise OptionError(f"option 'assign' names partition {twice} of topic '{topic}' twice")
        assigned.append((topic, tuple(sorted(partitions))))
    return TopicSelection(tuple(t for t, _ in assigned), assigned=tuple(assigned))


def _check_topic_name(name: str, option: str, hint: str) -> None:
    if not _TOPIC_NAME.fullmatch(name) or name in (".", ".."):
        raise OptionError(
            f"option '{option}': '{name}' is not a Kafka topic name (1 to 249 of the characters a-z, A-Z, 0-9, "
            f"'.', '_' and '-'){hint}"
        )


_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
