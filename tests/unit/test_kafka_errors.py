"""The one retry policy and error mapping every Kafka call goes through (pure logic: the attempts are plain
functions raising librdkafka's own error objects; the broker-backed proofs are in tests/faults)."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import KafkaError, KafkaException
from pyspark_upsert_kafka.errors import (
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaClientError,
    KafkaUnavailableError,
)
from pyspark_upsert_kafka.kafka.errors import ClientErrors, is_transient, with_retries, within
from pyspark_upsert_kafka.kafka.spec import KafkaSpec, parse_kafka_spec
from pyspark_upsert_kafka.options.canonical import canonical_options

from tests.support.clock import ManualClock

FAST = KafkaSpec("b1:9092", timeout_s=1.0, retries=3, retry_interval_s=0.01)


def failing(*codes: int):
    """An attempt that raises each code in turn, then returns 'ok'; records the timeouts it was given."""
    calls: list[float] = []

    def attempt(timeout: float) -> str:
        calls.append(timeout)
        if len(calls) <= len(codes):
            raise KafkaException(KafkaError(codes[len(calls) - 1]))
        return "ok"

    return attempt, calls


@pytest.mark.parametrize(
    "code",
    [
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
    ],
)
def test_transient_errors_are_retried_until_the_call_succeeds(code):
    attempt, calls = failing(code, code)
    resets = []
    assert with_retries(FAST, "list offsets", attempt, reset=lambda: resets.append(1)) == "ok"
    assert len(calls) == 3 and len(resets) == 2  # a fresh client before each retry


def test_transient_errors_beyond_the_retries_fail_naming_servers_wait_and_options():
    attempt, calls = failing(*[KafkaError._TRANSPORT] * 10)
    with pytest.raises(KafkaUnavailableError) as raised:
        with_retries(FAST, "list offsets", attempt)
    assert len(calls) == FAST.retries + 1
    message = str(raised.value)
    assert "could not list offsets from the Kafka brokers 'b1:9092'" in message
    assert "'client.timeout' = 1 s, 'client.retries' = 3, 'client.retry-interval' = 0.01 s" in message


def test_retries_stop_at_the_time_bound_even_with_retries_left():
    spec = KafkaSpec("b1:9092", timeout_s=2.0, retries=10, retry_interval_s=1.0)  # a bound of 2 + 10 * 1 s
    clock = ManualClock()
    started = clock.monotonic()
    attempts: list[float] = []

    def no_answer(timeout: float) -> None:
        attempts.append(timeout)
        clock.advance(timeout)  # each attempt waits its whole timeout
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))

    with pytest.raises(KafkaUnavailableError, match=r"transient errors for 12 s"):
        with_retries(spec, "read metadata", no_answer, clock=clock)
    # 2 s per attempt and 1 s between: the bound of 12 s is reached after four, with retries left; the last attempt
    # is given the half second every attempt has at least.
    assert attempts == [2.0, 2.0, 2.0, 2.0, 0.5]
    assert clock.monotonic() - started == 12.5


@pytest.mark.parametrize(
    ("code", "kind", "words"),
    [
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaAuthorizationError, "grant this client's user READ on topic 't'"),
        (KafkaError._AUTHENTICATION, KafkaAuthenticationError, "'properties.sasl.password'"),
        (KafkaError.SASL_AUTHENTICATION_FAILED, KafkaAuthenticationError, "'properties.sasl.username'"),
        (KafkaError._SSL, KafkaAuthenticationError, "'properties.security.protocol'"),
        (KafkaError.INVALID_CONFIG, KafkaClientError, "[INVALID_CONFIG]"),
    ],
)
def test_final_errors_fail_at_once_with_their_own_error(code, kind, words):
    attempt, calls = failing(code)
    with pytest.raises(kind) as raised:
        with_retries(FAST, "read topic 't'", attempt, grant="READ on topic 't'")
    assert len(calls) == 1
    assert words in str(raised.value)


def test_an_authentication_failure_reported_only_to_the_error_callback_explains_a_transport_failure():
    errors = ClientErrors()
    errors(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: invalid credentials"))
    attempt, calls = failing(KafkaError._TRANSPORT, KafkaError._TRANSPORT)
    spec = KafkaSpec("b1:9092", (("security.protocol", "SASL_SSL"), ("sasl.mechanism", "SCRAM-SHA-512")))
    with pytest.raises(KafkaAuthenticationError) as raised:
        with_retries(spec, "read metadata", attempt, errors=errors)
    assert len(calls) == 1  # no retry: credentials do not get better
    assert "security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512" in str(raised.value)


def test_a_certificate_failure_names_the_ca_option():
    # librdkafka's words for a broker certificate signed by a CA the client does not trust.
    untrusted = KafkaError(
        KafkaError._SSL,
        "127.0.0.1:9093/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: "
        "broker certificate could not be verified, verify that ssl.ca.location is correctly configured",
    )

    def attempt(timeout: float) -> None:
        raise KafkaException(untrusted)

    with pytest.raises(KafkaAuthenticationError, match=r"'properties\.ssl\.ca\.location'"):
        with_retries(FAST, "read metadata", attempt)


def test_fatal_errors_are_never_retried():
    fatal = KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED, fatal=True)
    assert not is_transient(fatal)
    assert not is_transient(KafkaError(KafkaError._TRANSPORT, fatal=True))


def test_a_fatal_error_raised_by_a_client_call_is_kept_as_the_clients_final_error():
    """confluent-kafka raises a fatal client error from the poll or flush that serves it, never through the
    error callback; also as the cause of a SystemError when another callback ran after it."""
    fatal = KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED, "Failed to acquire idempotence PID", fatal=True)
    direct, chained = ClientErrors(), ClientErrors()
    direct.raised(KafkaException(fatal))
    try:
        raise SystemError("a result with an exception set") from KafkaException(fatal)
    except SystemError as e:
        chained.raised(e)
    assert direct.final is fatal and chained.final is fatal

    unrelated = ClientErrors()
    unrelated.raised(SystemError("returned NULL without setting an exception"))
    unrelated.raised(ValueError("not a Kafka error"))
    assert unrelated.final is None and unrelated.last is None


def test_spark_spellings_set_the_retry_policy():
    spec = parse_kafka_spec(
        canonical_options(
            {
                "kafka.bootstrap.servers": "b1:9092",
                "fetchoffset.numretries": "5",
                "fetchoffset.retryintervalms": "250",
                "client.timeout": "10 s",
            }
        )
    )
    assert (spec.retries, spec.retry_interval_s, spec.patience_s) == (5, 0.25, 11.25)


def test_a_librdkafka_call_that_ignores_its_timeout_is_given_up_as_a_timeout(monkeypatch):
    # librdkafka 5456: send_offsets_to_transaction may block past its timeout; the caller must not wait with it.
    monkeypatch.setattr("pyspark_upsert_kafka.kafka.errors._OVERRUN_S", 0.1)
    release, returned = threading.Event(), threading.Event()

    def hanging() -> None:
        release.wait(60)
        returned.set()

    with pytest.raises(KafkaException) as raised:
        within(0.2, hanging)
    # Given up while the call still hung (it returns only once released, or after 60 s): not waited for.
    hung = not returned.is_set()
    release.set()
    assert raised.value.args[0].code() == KafkaError._TIMED_OUT
    assert hung, "the caller waited for the hanging call to return"


def test_a_bounded_call_returns_its_value_and_raises_its_own_error():
    assert within(5, lambda: 42) == 42
    with pytest.raises(KafkaException) as raised:
        within(5, lambda: (_ for _ in ()).throw(KafkaException(KafkaError(KafkaError.PRODUCER_FENCED))))
    assert raised.value.args[0].code() == KafkaError.PRODUCER_FENCED
