"""librdkafka's errors, met once for every client the connector runs: which are transient (retried), which
are final, and the one connector error each becomes.

Transient errors (a broker restarting, a leader or coordinator moving, a request timing out) are retried
every `client.retry-interval`, at most `client.retries` times, each attempt bounded by `client.timeout`:
a look-up waits `KafkaSpec.patience_s` for its brokers at most, then fails naming the servers and the wait.
Final errors (authentication, TLS, authorization, invalid configuration, a fatal producer error) fail at
once. librdkafka reports some of them only through a client's error callback (a wrong password or an
untrusted certificate otherwise surface as "transport failure"), so every client gets a `ClientErrors`.

The transient set is ours, not only `KafkaError.retriable()`: librdkafka does not flag a transport failure
or "not leader" from an admin request as retriable (checked on confluent-kafka 2.16 across broker restarts).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from ..errors import (
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaClientError,
    KafkaUnavailableError,
)
from ..kernel.clock import SYSTEM_CLOCK, Clock
from .spec import KafkaSpec
from .token_provider import authentication_hint

log = logging.getLogger("upsert_kafka")

T = TypeVar("T")

_E = KafkaError
TRANSIENT = frozenset(
    {
        _E._TRANSPORT,
        _E._ALL_BROKERS_DOWN,
        _E._TIMED_OUT,
        _E._TIMED_OUT_QUEUE,
        _E._WAIT_COORD,
        _E._NODE_UPDATE,
        _E._RESOLVE,  # a broker's name not resolving (yet): bounded like any other outage
        _E.NOT_LEADER_FOR_PARTITION,
        _E.LEADER_NOT_AVAILABLE,
        _E.FENCED_LEADER_EPOCH,
        _E.UNKNOWN_LEADER_EPOCH,
        _E.REQUEST_TIMED_OUT,
        _E.NETWORK_EXCEPTION,
        _E.BROKER_NOT_AVAILABLE,
        _E.REPLICA_NOT_AVAILABLE,
        _E.COORDINATOR_LOAD_IN_PROGRESS,
        _E.COORDINATOR_NOT_AVAILABLE,
        _E.NOT_COORDINATOR,
        _E.NOT_ENOUGH_REPLICAS,
        _E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        _E.KAFKA_STORAGE_ERROR,
        _E.OFFSET_NOT_AVAILABLE,
        _E.UNSTABLE_OFFSET_COMMIT,  # a transaction's offsets still completing (read_committed look-ups)
        _E.CONCURRENT_TRANSACTIONS,
        _E.THROTTLING_QUOTA_EXCEEDED,
        # A partition of a topic that exists, asked for while the restarted broker has not loaded it yet.
        # Whether a topic exists is decided from fresh metadata before offsets are asked for.
        _E.UNKNOWN_TOPIC_OR_PART,
    }
)
_AUTHENTICATION = frozenset(
    {_E._AUTHENTICATION, _E.SASL_AUTHENTICATION_FAILED, _E.ILLEGAL_SASL_STATE, _E.UNSUPPORTED_SASL_MECHANISM}
)
# What to grant for each authorization failure, unless the caller names it more exactly.
_GRANTS = {
    _E.TOPIC_AUTHORIZATION_FAILED: "DESCRIBE and READ (reads) or WRITE (writes) on the topic",
    _E.GROUP_AUTHORIZATION_FAILED: "READ on the consumer group",
    _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "WRITE on the transactional ids (prefix option "
    "'sink.transactional-id-prefix')",
    # An idempotent producer needs WRITE on a topic it writes (Kafka 3+) or IDEMPOTENT_WRITE on the cluster.
    _E.CLUSTER_AUTHORIZATION_FAILED: "WRITE on the topic (or IDEMPOTENT_WRITE on the cluster)",
}
# Errors of the client's user or connection, never of a record or a request: no retry cures them.
ACCESS_CODES = frozenset({*_AUTHENTICATION, _E._SSL, *_GRANTS})


def is_tls(error: KafkaError) -> bool:
    # librdkafka reports a failed TLS handshake (an untrusted certificate, a host name it does not name) as _SSL
    # or as a transport failure whose text says so.
    return error.code() == _E._SSL or "SSL handshake failed" in error.str() or "certificate verify" in error.str()


def is_transient(error: KafkaError) -> bool:
    return not error.fatal() and not is_tls(error) and (error.retriable() or error.code() in TRANSIENT)


def is_final_signal(error: KafkaError) -> bool:
    """An error-callback report that no retry will cure: credentials, TLS, an ACL, a fatal client error."""
    return error.fatal() or error.code() in ACCESS_CODES or is_tls(error)


class ClientErrors:
    """A client's `error_cb`: keeps the last error librdkafka reported only through the callback, and the
    first one no retry will cure. `serve` (a producer's or admin's poll) lets the callback run on demand;
    `ignore` lists codes that do not concern the client's work (e.g. its never-used group's coordinator)."""

    def __init__(self, ignore: frozenset[int] = frozenset()) -> None:
        self.ignore = ignore
        self.last: KafkaError | None = None
        self.final: KafkaError | None = None
        self.serve: Callable[[float], Any] | None = None

    def __call__(self, error: KafkaError) -> None:
        try:
            code = error.code()
        except SystemError as e:
            self.pending(e)
            return
        if code in self.ignore:
            return
        self.last = error
        if self.final is None and is_final_signal(error):
            self.final = error

    def pending(self, error: SystemError) -> None:
        """confluent-kafka leaves a fatal client error pending as an exception when it next calls back into
        Python (seen: an ACL denying the idempotent producer its id); the first call on any of its objects then
        raises SystemError with the fatal error as its cause. Keep that error; re-raise anything else."""
        cause = error.__cause__ or error.__context__
        if not (isinstance(cause, KafkaException) and cause.args and isinstance(cause.args[0], KafkaError)):
            raise error
        self(cause.args[0])

    def raised(self, error: BaseException) -> None:
        """Keep the Kafka error a client call raised. confluent-kafka reports a fatal client error (e.g. an ACL
        denying the idempotent producer its id) not through the callback but as the exception of whichever
        poll, flush or produce serves it: that call's caller must hand it here or it is lost."""
        found: BaseException | None = error
        if isinstance(error, SystemError):  # the fatal error, if any, is its cause (see `pending`)
            found = error.__cause__ or error.__context__
        if isinstance(found, KafkaException) and found.args and isinstance(found.args[0], KafkaError):
            self(found.args[0])

    def check(self) -> KafkaError | None:
        """The final error reported so far, after serving pending callbacks."""
        if self.serve is not None and self.final is None:
            try:
                self.serve(0)
            except KafkaException as e:
                self.raised(e)
        return self.final


def kafka_error(
    kafka: KafkaSpec,
    what: str,
    error: KafkaError | BaseException,
    grant: str | None = None,
    hint: Callable[[KafkaError], str] | None = None,
) -> KafkaClientError:
    """The connector's error for a final librdkafka error met while trying to `what`: `grant` says what to
    grant when it is an authorization failure, `hint` what to change for any other error."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        error = error.args[0]
    if not isinstance(error, KafkaError):
        return KafkaClientError(f"could not {what} at the Kafka brokers {kafka.describe()}: {error}")
    code, servers = error.code(), kafka.describe()
    if code in _AUTHENTICATION:
        check = authentication_hint(kafka.token_provider) or (
            "Check options 'properties.sasl.username' and 'properties.sasl.password', "
            "'properties.sasl.mechanism' and 'properties.security.protocol'"
        )
        return KafkaAuthenticationError(
            f"authentication with the Kafka brokers {servers} failed ({kafka.security_summary()}): {error.str()}. "
            + check
        )
    if is_tls(error):
        return KafkaAuthenticationError(
            f"the TLS connection to the Kafka brokers {servers} failed ({kafka.security_summary()}): {error.str()}. "
            + _tls_hint(error.str())
        )
    if code in _GRANTS:
        return KafkaAuthorizationError(
            f"not authorized to {what} at the Kafka brokers {servers} ({error.str()}): "
            f"grant this client's user {grant or _GRANTS[code]}"
        )
    if is_transient(error):
        return unavailable(kafka, what, error, kafka.patience_s)
    fatal = " (the client cannot go on: fatal error)" if error.fatal() else ""
    extra = hint(error) if hint is not None else ""
    return KafkaClientError(
        f"could not {what} at the Kafka brokers {servers}: {error.str()} [{error.name()}]{fatal}{extra}"
    )


def unavailable(kafka: KafkaSpec, what: str, error: KafkaError | str, waited_s: float) -> KafkaUnavailableError:
    reason = error if isinstance(error, str) else error.str()
    return KafkaUnavailableError(
        f"could not {what} from the Kafka brokers {kafka.describe()}: no answer but transient errors for "
        f"{waited_s:.0f} s ({reason}). Check option 'properties.bootstrap.servers' and that the brokers are up; "
        f"{kafka.patience_doc()}"
    )


def _tls_hint(reason: str) -> str:
    if "verif" in reason or "certificate" in reason:
        return (
            "The brokers' certificate could not be verified: either it is signed by a CA this client does not "
            "trust (set option 'properties.ssl.ca.location' to the CA file that signed it), or it does not name "
            "the host given in 'properties.bootstrap.servers' (hostname verification is on by default: connect by "
            "a name the certificate holds; 'properties.ssl.endpoint.identification.algorithm=none' turns it off)"
        )
    return "Check options 'properties.security.protocol', 'properties.ssl.ca.location' and 'properties.ssl.*'"


def with_retries(
    kafka: KafkaSpec,
    what: str,
    attempt: Callable[[float], T],
    *,
    errors: ClientErrors | None = None,
    reset: Callable[[], None] | None = None,
    grant: str | None = None,
    transient: Callable[[KafkaError], bool] = is_transient,
    hint: Callable[[KafkaError], str] | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> T:
    """`attempt(timeout_s)` until it returns, retrying transient errors within the spec's bound.

    reset: called before a retry (e.g. to drop a client whose metadata may be stale). transient: the caller's
    rule, when it knows more than the code. grant, hint: as for kafka_error. clock: the bound's and the pauses'."""
    started = clock.monotonic()
    deadline = started + kafka.patience_s
    for attempt_no in range(kafka.retries + 1):
        try:
            return attempt(max(0.5, min(kafka.timeout_s, deadline - clock.monotonic())))
        except KafkaException as e:
            error = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
            final = errors.check() if errors is not None else None
            if final is not None:  # the callback knows the true cause: a timeout only followed from it
                raise kafka_error(kafka, what, final, grant, hint) from None
            left = deadline - clock.monotonic()
            if error is None or not transient(error):
                raise kafka_error(kafka, what, e, grant, hint) from None
            if attempt_no == kafka.retries or left <= 0:
                raise unavailable(kafka, what, error, clock.monotonic() - started) from None
            log.info(
                "upsert-kafka: could not %s (%s); retry %d of %d in %g s",
                what,
                error.str(),
                attempt_no + 1,
                kafka.retries,
                kafka.retry_interval_s,
            )
            clock.sleep(min(kafka.retry_interval_s, left))
            if reset is not None:
                reset()
    raise AssertionError("unreachable")  # the loop returns or raises


# librdkafka's send_offsets_to_transaction can block far past its timeout while the group coordinator it has
# cached is gone (librdkafka issues 5456 and 5511, open in 2.16): seen here after a broker restart, a pooled
# producer's call hung for minutes. Such a call runs in a thread of its own and is given up after its timeout.
_OVERRUN_S = 5.0


def within(timeout_s: float, fn: Callable[[], T]) -> T:
    """`fn()`, or a _TIMED_OUT KafkaException when it has not returned `timeout_s` (+5 s) later. A call given
    up on goes on in its thread: the caller must not use the client again (a new one fences it)."""
    done = threading.Event()
    value: list[T] = []  # fn's result, once it returned
    error: list[BaseException] = []  # or what it raised: handed to the caller

    def run() -> None:
        try:
            value.append(fn())
        except BaseException as e:
            error.append(e)
        finally:
            done.set()

    threading.Thread(target=run, name="upsert-kafka-bounded-call", daemon=True).start()
    # Real time, not a Clock's: the bound of a librdkafka call that runs (or hangs) in its own thread.
    if not done.wait(timeout_s + _OVERRUN_S):
        raise KafkaException(
            KafkaError(KafkaError._TIMED_OUT, f"librdkafka did not return within {timeout_s + _OVERRUN_S:g} s")
        )
    if error:
        raise error[0]
    return value[0]
