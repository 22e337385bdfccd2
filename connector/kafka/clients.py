"""librdkafka clients built from a KafkaSpec: consumers, producers, admin clients (executors borrow theirs from their
Python worker's pool, pool.py). No credential ever reaches a message or a log. The driver's questions to the
brokers are brokers.py's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from ..errors import OptionError
from ..options.catalog import default_of
from ..options.catalog_read import GROUP_ID_PREFIX
from .errors import ClientErrors
from .pool import CLIENT_POOL, ClientKey, Pooled
from .spec import KafkaSpec
from .token_provider import TokenProvider

log = logging.getLogger("upsert_kafka")
_client_log = logging.getLogger("upsert_kafka.librdkafka")

T = TypeVar("T")


def admin_client(kafka: KafkaSpec, errors: ClientErrors | None = None, **owned: Any) -> AdminClient:
    admin = _new(AdminClient, kafka, kafka.client_config(logger=_client_log, **_error_cb(errors), **owned))
    if errors is not None:
        errors.serve = admin.poll
    return admin


# librdkafka requires a consumer to have a group and looks up its coordinator even when it is never joined: a
# user without DESCRIBE on it gets this error, which says nothing about the ranges read.
UNUSED_GROUP_ERRORS = frozenset({KafkaError.GROUP_AUTHORIZATION_FAILED})


def consumer(kafka: KafkaSpec) -> tuple[Consumer, ClientErrors]:
    """A consumer for explicitly assigned ranges (no group membership, no offset commits), and its errors."""
    errors = ClientErrors(ignore=UNUSED_GROUP_ERRORS)
    return _new(Consumer, kafka, _consumer_config(kafka, errors)), errors


def _consumer_config(kafka: KafkaSpec, errors: ClientErrors) -> dict[str, Any]:
    # The range reader depends on every one of these; the user's properties cannot change them. A start
    # below the log start must fail (data loss), unless the user chose to skip lost offsets.
    return kafka.client_config(
        _CONSUMER_DEFAULTS,
        **{
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "error",  # a start below the log start is data loss (read.fetch decides)
            "logger": _client_log,
            "error_cb": errors,
        },
    )


# Consumer settings the user may tune with `properties.*`. A range read wants records that exist already,
# so the broker never needs to hold a fetch: a long poll only waits past the range's end, and would hold back
# the next range a pooled consumer is given by up to fetch.wait.max.ms (librdkafka's default 500 ms; at 10 ms,
# a task reading many small ranges one after the other still waited ~14 ms per range, most of its time).
# group.id: librdkafka requires one; a range consumer never joins or commits to it (the reader's groupIdPrefix or
# properties.group.id replaces it).
_CONSUMER_DEFAULTS = {"fetch.wait.max.ms": 0, "group.id": default_of(GROUP_ID_PREFIX)}


def group_consumer(kafka: KafkaSpec, group_id: str, errors: ClientErrors | None = None) -> Consumer:
    """A consumer that only reads `group_id`'s committed offsets (read_committed: offsets of transactions
    still completing are waited for); never joins the group. The user's properties cannot change these."""
    return _new(Consumer, kafka, _group_consumer_config(kafka, group_id, errors))


def _group_consumer_config(kafka: KafkaSpec, group_id: str, errors: ClientErrors | None) -> dict[str, Any]:
    config: dict[str, Any] = {"group.id": group_id, "enable.auto.commit": False, "isolation.level": "read_committed"}
    return kafka.client_config(logger=_client_log, **config, **_error_cb(errors))


# Producer settings the user may tune with `properties.*`.
_PRODUCER_DEFAULTS = {
    "linger.ms": 20,
    "batch.num.messages": 10000,
    "queue.buffering.max.messages": 500000,
    "message.timeout.ms": 120000,  # as the Java client's delivery.timeout.ms
}


def producer(
    kafka: KafkaSpec,
    on_delivery: Any,
    defaults: dict[str, Any] | None = None,
    errors: ClientErrors | None = None,
    **owned: Any,
) -> Producer:
    """A producer partitioning like the Java client and reporting only failed deliveries. `defaults` go on top
    of ours and may be changed by the user's properties; `owned` (the delivery guarantee's) may not."""
    client = _new(Producer, kafka, _producer_config(kafka, on_delivery, defaults, errors, owned))
    if errors is not None:
        errors.serve = client.poll
    return client


def _producer_config(
    kafka: KafkaSpec,
    on_delivery: Any,
    defaults: dict[str, Any] | None,
    errors: ClientErrors | None,
    owned: dict[str, Any],
) -> dict[str, Any]:
    return kafka.client_config(
        _PRODUCER_DEFAULTS | (defaults or {}),
        **{
            "partitioner": "murmur2_random",  # Java's default partitioner for keyed records
            "enable.idempotence": True,
            "acks": "all",
            "delivery.report.only.error": True,
            "on_delivery": on_delivery,
            "logger": _client_log,
            **_error_cb(errors),
            **owned,
        },
    )


# ---------------------------------------------------------------------------------------------
# Executors: clients borrowed from the Python worker's pool (pool.py), made by the factories above.


class DeliveryRelay:
    """A pooled producer's delivery callback: the reports go to the task that has the producer now."""

    def __init__(self) -> None:
        self.target: Callable[[Any, Any], None] | None = None

    def __call__(self, error: Any, message: Any) -> None:
        if self.target is not None:
            self.target(error, message)


def borrow_consumer(kafka: KafkaSpec) -> Pooled[Consumer]:
    """A range consumer (as `consumer` makes it), unassigned; hand it back with `give_back`."""
    errors = ClientErrors(ignore=UNUSED_GROUP_ERRORS)
    config = _consumer_config(kafka, errors)
    key = _pool_key("consumer", config)
    return CLIENT_POOL.borrow(key, lambda: Pooled(key, _new(Consumer, kafka, config), errors, _unassigned, _close))


def borrow_group_consumer(kafka: KafkaSpec, group_id: str) -> Pooled[Consumer]:
    """A consumer of `group_id`'s committed offsets (as `group_consumer` makes it)."""
    errors = ClientErrors()
    config = _group_consumer_config(kafka, group_id, errors)
    key = _pool_key("group consumer", config)
    return CLIENT_POOL.borrow(key, lambda: Pooled(key, _new(Consumer, kafka, config), errors, _never_assigned, _close))


def borrow_producer(
    kafka: KafkaSpec, defaults: dict[str, Any] | None = None, fresh: bool = False, **owned: Any
) -> Pooled[Producer]:
    """A producer (as `producer` makes it) whose delivery reports go to `pooled.relay.target`; `fresh`: a new
    one, not a pooled one."""
    errors, relay = ClientErrors(), DeliveryRelay()
    config = _producer_config(kafka, relay, defaults, errors, owned)
    key = _pool_key("producer", config)

    def create() -> Pooled[Producer]:
        client = _new(Producer, kafka, config)
        errors.serve = client.poll
        return Pooled(key, client, errors, _nothing_in_flight, _purged, relay)

    return CLIENT_POOL.borrow(key, create, fresh)


def give_back(pooled: Pooled[T], kafka: KafkaSpec, clean: bool) -> None:
    """Return a borrowed client: kept for `client.pool.idle-timeout` when `clean` (the borrower used it without
    any error and left nothing open), closed otherwise."""
    CLIENT_POOL.give_back(pooled, clean, kafka.pool_idle_timeout_s)


# Callbacks are made per borrower and the logger is shared: the rest is the client's configuration.
_NOT_CONFIG = ("on_delivery", "error_cb", "logger")


def _pool_key(kind: str, config: dict[str, Any]) -> ClientKey:
    return (kind, *sorted((k, str(v)) for k, v in config.items() if k not in _NOT_CONFIG))


def _unassigned(client: Consumer) -> bool:
    client.unassign()  # librdkafka drops what it fetched for the old assignment
    return True


def _never_assigned(client: Consumer) -> bool:
    return True


def _nothing_in_flight(client: Producer) -> bool:
    return len(client) == 0


def _close(client: Consumer) -> None:
    client.close()


def _purged(client: Producer) -> None:
    # Nothing of a discarded producer may still go out; its handle ends when it is collected (an explicit
    # close would first try to abort a transaction or flush, which may wait for absent brokers).
    client.purge()


def _new(cls: Callable[[dict[str, Any]], T], kafka: KafkaSpec, config: dict[str, Any]) -> T:
    """The client, or an error naming the setting librdkafka refused (secret values never shown)."""
    provider: TokenProvider | None = config.get("oauth_cb")
    if provider is not None:
        provider.check(config.get("sasl.oauthbearer.config", ""))
    try:
        return cls(config)
    except KafkaException as e:
        if provider is not None and provider.failure is not None:  # no token came: the constructor gave up on it
            raise provider.error() from None
        raise OptionError(
            f"the Kafka client refused its configuration: {kafka.redact(e.args[0].str())}; check the "
            "'properties.*' options (librdkafka's names: https://github.com/confluentinc/librdkafka/blob/master/"
            "CONFIGURATION.md)"
        ) from None


def _error_cb(errors: ClientErrors | None) -> dict[str, Any]:
    return {"error_cb": errors} if errors is not None else {}
