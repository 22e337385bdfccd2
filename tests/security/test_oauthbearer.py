"""SASL/OAUTHBEARER with a token provider (option 'properties.sasl.oauthbearer.token-provider') on the secured broker:
its OAUTHBEARER listeners check tokens with Kafka's unsecured validator and end a session when its token expires,
so a client that did not refresh its token loses its connection. The tokens of tests/support/oauth_tokens.py live
10 s: a stream runs until its clients have refreshed their tokens three times (waited for, not timed). What this
proves is the callback path (every process loads the provider, librdkafka calls it again before a token expires)
and the mechanism; a managed service's own sign-in (AWS's or Google's signature) is not run here."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator

import orjson
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from pyspark_upsert_kafka.errors import KafkaAuthenticationError, OptionError
from pyspark_upsert_kafka.kafka.brokers import Brokers
from pyspark_upsert_kafka.kafka.errors import kafka_error
from pyspark_upsert_kafka.kafka.spec import parse_kafka_spec
from pyspark_upsert_kafka.kafka.token_provider import OPTION, TokenProvider
from pyspark_upsert_kafka.options.canonical import canonical_options

from tests.security.acls import exactly_once_grants, read_grants, write_grants
from tests.security.failures import QUERY_WAIT_S, TIMEOUT_OPTIONS, assert_no_secret, failure_of
from tests.support.oauth_tokens import TOKEN_HEADER, expired_token, short_lived
from tests.support.secure_fixtures import SASL_PLAINTEXT, SASL_SSL, Credentials, Grant
from tests.workers.logged_tokens import refreshes

SCHEMA = "id INT, name STRING"
CHANGES = SCHEMA + ", _change_type STRING"
PROVIDER = "tests.support.oauth_tokens:short_lived"
# The stream's token provider notes each token it makes: the test waits for three refreshes, not for a while.
LOGGED_PROVIDER = "tests.workers.logged_tokens:short_lived"
MIN_RECORDS = 20
STREAM_TIMEOUT_S = 300  # a bound on the wait, not a pace: three refreshes take about 3 x 8 s


@pytest.fixture
def oauth_user(secure_kafka) -> Iterator[Callable[..., str]]:
    """`oauth_user(*grants)`: a user name for the tokens' `sub`, holding exactly `grants` (revoked after the test)."""
    made: list[Credentials] = []

    def make(*grants: Grant) -> str:
        user = Credentials(f"oauth-{uuid.uuid4().hex[:8]}", "", "OAUTHBEARER")
        made.append(user)
        secure_kafka.grant(user, *grants)
        return user.user

    yield make
    for user in made:
        secure_kafka.revoke(user)


def oauth_options(secure_kafka, user: str, topic: str, protocol: str = SASL_SSL, provider: str = PROVIDER, **more):
    """The connector's options as `user`, signing in with `provider`'s tokens (no mechanism given: implied); `more`
    over them."""
    props = {
        "properties.bootstrap.servers": secure_kafka.servers(protocol),
        "properties.security.protocol": protocol,
        "properties.sasl.oauthbearer.token-provider": provider,
        "properties.sasl.oauthbearer.config": f"principal={user}",
    }
    if protocol == SASL_SSL:
        props["properties.ssl.ca.location"] = secure_kafka.ca_file
    return {"topic": topic, "key.fields": "id", **props, **more}


def record(i: int) -> tuple[bytes, bytes]:
    return orjson.dumps({"id": i}), orjson.dumps({"id": i, "name": f"n{i}"})


def test_batch_write_then_batch_read_sign_in_with_the_providers_tokens(spark, secure_kafka, secure_topic, oauth_user):
    topic = secure_topic(2)
    user = oauth_user(*write_grants(topic), *read_grants(topic))  # the ACLs are the token's `sub`'s only
    opts = oauth_options(secure_kafka, user, topic)

    spark.createDataFrame([(1, "a"), (2, "b"), (3, None)], SCHEMA).write.format("upsert-kafka").options(**opts).mode(
        "append"
    ).save()

    df = spark.read.format("upsert-kafka").options(**opts, **{"read.mode": "table"}).schema(SCHEMA).load()
    assert sorted(tuple(r) for r in df.collect()) == [(1, "a"), (2, "b"), (3, None)]
    assert sorted((k, v) for _, _, k, v in secure_kafka.consume_all(topic)) == [
        (b'{"id":1}', b'{"id":1,"name":"a"}'),
        (b'{"id":2}', b'{"id":2,"name":"b"}'),
        (b'{"id":3}', b'{"id":3,"name":null}'),
    ]


class CommittedRecords:
    """What read_committed readers of `topic` see so far, read by the harness's super user as it arrives."""

    def __init__(self, secure_kafka, topic: str) -> None:
        config = secure_kafka.admin_config | {
            "group.id": "tests",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
        self.consumer = Consumer(config)
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.seen: list[tuple[bytes, bytes]] = []

    def poll(self) -> set[bytes]:
        for m in self.consumer.consume(1000, timeout=0.2):
            assert m.error() is None, m.error()
            self.seen.append((m.key(), m.value()))
        return {k for k, _ in self.seen}

    def close(self) -> None:
        self.consumer.close()


def test_an_exactly_once_stream_outlives_three_ten_second_tokens_without_a_failure(
    spark, secure_kafka, secure_topic, oauth_user, tmp_path, spark_logs, caplog
):
    source, target = secure_topic(2), secure_topic(1)
    prefix = f"oauth-eos-{uuid.uuid4().hex[:8]}"
    user = oauth_user(*read_grants(source), *exactly_once_grants(target, prefix))
    tokens = tmp_path / "tokens.log"  # each token made, by time and process (tests/workers/logged_tokens.py)
    signed = {"provider": LOGGED_PROVIDER, "properties.sasl.oauthbearer.config": f"principal={user} log={tokens}"}
    eos = {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": prefix}
    query = (
        spark.readStream.format("upsert-kafka").options(**oauth_options(secure_kafka, user, source, SASL_PLAINTEXT,
                                                                        **signed))
        .schema(CHANGES).load()
        .writeStream.format("upsert-kafka").options(**oauth_options(secure_kafka, user, target, SASL_PLAINTEXT,
                                                                    **signed, **eos))
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(processingTime="500 milliseconds").start()
    )  # fmt: skip
    committed = CommittedRecords(secure_kafka, target)
    produced: list[tuple[bytes, bytes]] = []
    deadline = time.monotonic() + STREAM_TIMEOUT_S
    try:
        # Records in steps, each waited for in the output, until MIN_RECORDS went through and a whole step went
        # through after the stream's clients had refreshed their tokens three times (sessions end with their token).
        while True:
            refreshed = refreshes(tokens) >= 3
            step = [record(len(produced) + i) for i in range(4)]
            secure_kafka.produce(source, step)
            produced += step
            wanted = {k for k, _ in step}
            while not wanted <= committed.poll():
                assert query.exception() is None, query.exception()
                assert query.isActive, "the query stopped"
                assert time.monotonic() < deadline, (
                    f"not done within {STREAM_TIMEOUT_S} s: {len(committed.seen)} of {len(produced)} records "
                    f"written, the most token refreshes of a process {refreshes(tokens)} (3 wanted)"
                )
            if refreshed and len(produced) >= MIN_RECORDS:
                break
        assert query.exception() is None and query.isActive, query.exception()
        progress = str(query.recentProgress)
    finally:
        query.stop()
        committed.close()

    written = [(k, v) for _, _, k, v in secure_kafka.consume_all(target)]
    assert Counter(written) == Counter(produced), "a record is missing or was written twice"
    # Every token the provider made starts with its header: none reached a log or the progress.
    assert_no_secret(TOKEN_HEADER, spark_logs.text(), caplog.text, progress)


# -- failures: one clear error naming the option, the provider and the cause; never the token --------------------


def batch_read(spark, opts: dict):
    return lambda: spark.read.format("upsert-kafka").options(**opts).schema(CHANGES).load().collect()


def batch_write(spark, opts: dict):
    df = spark.createDataFrame([(1, "a")], SCHEMA)
    return lambda: df.write.format("upsert-kafka").options(**opts).mode("append").save()


def streaming_read(spark, opts: dict, checkpoint: str, shown: list[str]):
    def run() -> None:
        df = spark.readStream.format("upsert-kafka").options(**opts).schema(CHANGES).load()
        query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()
        try:
            query.awaitTermination(QUERY_WAIT_S)
            assert not query.isActive, f"the query neither failed nor finished in {QUERY_WAIT_S} s"
        finally:
            shown.append(str(query.recentProgress))
            query.stop()

    return run


@pytest.mark.parametrize(
    ("provider", "action", "says"),
    [
        ("tests.support.oauth_tokens:raising", "read", [r"raised RuntimeError: the token service answered 503"]),
        ("tests.support.oauth_tokens:expired", "stream", [r"expired at 2023-11-14T22:13:30\+00:00", "epoch"]),
        ("tests.support.oauth_tokens:expired", "write", [r"expired at 2023-11-14T22:13:30\+00:00"]),
        ("tests.support.no_such_tokens:short_lived", "read", ["ModuleNotFoundError", "--py-files", "executor"]),
        ("tests.support.oauth_tokens:no_such_function", "write", ["AttributeError", "no_such_function"]),
    ],
    ids=["raises", "expired-stream", "expired-write", "missing-module", "missing-function"],
)
def test_a_provider_that_gives_no_token_fails_clearly_without_showing_a_token(
    spark, secure_kafka, secure_topic, oauth_user, spark_logs, caplog, capsys, tmp_path, provider, action, says
):
    topic = secure_topic()
    user = oauth_user(*read_grants(topic), *write_grants(topic))
    opts = oauth_options(secure_kafka, user, topic, provider=provider, **TIMEOUT_OPTIONS)
    shown: list[str] = []

    run = {
        "read": batch_read(spark, opts),
        "write": batch_write(spark, opts),
        "stream": streaming_read(spark, opts, str(tmp_path / "cp"), shown),
    }[action]
    failure = failure_of(run)

    failure.assert_says(OPTION.replace(".", r"\."), provider.replace(".", r"\."), *says)
    failure.assert_failed_as(KafkaAuthenticationError, OptionError)
    spark.readStream.format("upsert-kafka").options(**opts).schema(CHANGES).load().explain(True)
    shown.append(capsys.readouterr().out)
    assert_no_secret(expired_token(), failure.message, spark_logs.text(), caplog.text, *shown)


def test_a_provider_failing_after_its_first_token_is_named_by_the_error(secure_kafka, secure_topic, oauth_user):
    """The first call (before the client is made) succeeds; the client's own call fails: the constructor waits for a
    token in vain, and the error it ends in names the provider and its cause."""
    topic = secure_topic()
    opts = oauth_options(secure_kafka, oauth_user(*read_grants(topic)), topic, SASL_PLAINTEXT,
                         "tests.support.oauth_tokens:first_call_only", **TIMEOUT_OPTIONS)  # fmt: skip

    with pytest.raises(KafkaAuthenticationError) as raised:
        Brokers(parse_kafka_spec(canonical_options(opts))).topic_partitions(topic)

    message = str(raised.value)
    assert OPTION in message and "first_call_only" in message
    assert "raised PermissionError: the credentials behind the signer were revoked" in message


def test_an_authentication_failure_of_a_provider_client_points_at_the_provider():
    kafka = spec(**{OPTION: "tests.support.oauth_tokens:raising"})
    provider = kafka.client_config()["oauth_cb"]
    with pytest.raises(Exception, match="raised RuntimeError"):  # confluent-kafka swallows it; librdkafka retries
        provider("principal=alice")  # as librdkafka calls it on a refresh

    error = kafka_error(kafka, "read metadata", KafkaError(KafkaError._AUTHENTICATION, "SASL authentication failed"))

    assert isinstance(error, KafkaAuthenticationError)
    assert "tests.support.oauth_tokens:raising" in str(error) and OPTION in str(error)
    assert "its last call raised RuntimeError: the token service answered 503" in str(error)
    assert "sasl.username" not in str(error)


# -- the option's checks, before any client is made ----------------------------------------------------------


def spec(**props: str):
    given = {"properties.bootstrap.servers": "127.0.0.1:9", "properties.security.protocol": "SASL_SSL"}
    return parse_kafka_spec(canonical_options(given | {OPTION: PROVIDER} | props))


def test_the_provider_is_no_librdkafka_property_and_implies_the_mechanism():
    config = spec().client_config()

    assert "sasl.oauthbearer.token-provider" not in config
    assert config["sasl.mechanism"] == "OAUTHBEARER"
    assert isinstance(config["oauth_cb"], TokenProvider) and config["oauth_cb"].reference == PROVIDER
    given = spec(**{"properties.sasl.mechanisms": "oauthbearer"}).client_config()
    assert given["sasl.mechanism"] == "OAUTHBEARER" and "sasl.mechanisms" not in given


@pytest.mark.parametrize(
    ("props", "says"),
    [
        ({"properties.sasl.mechanism": "SCRAM-SHA-512"}, "'properties.sasl.mechanism' = 'SCRAM-SHA-512'"),
        ({"kafka.sasl.mechanisms": "PLAIN"}, "'properties.sasl.mechanisms' = 'PLAIN'"),
        ({"properties.security.protocol": "SSL"}, "'properties.security.protocol' = 'SSL'.*SASL_SSL"),
        ({"properties.sasl.oauthbearer.method": "oidc"}, "'properties.sasl.oauthbearer.method' = 'oidc'"),
        ({OPTION: "tests.support.oauth_tokens"}, "is not 'package.module:function'"),
    ],
)
def test_settings_that_contradict_the_provider_are_refused(props, says):
    with pytest.raises(OptionError, match=rf"{OPTION}.*{says}|{says}.*{OPTION}"):
        spec(**props)


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        ("kafka.sasl.client.callback.handler.class", "software.amazon.msk.auth.iam.IAMClientCallbackHandler"),
        ("properties.sasl.login.callback.handler.class", "com.google.cloud.hosted.kafka.auth.GcpLoginCallbackHandler"),
        ("kafka.sasl.jaas.config", "software.amazon.msk.auth.iam.IAMLoginModule required;"),
    ],
)
def test_java_sign_in_settings_name_the_token_provider_option(prop, value):
    with pytest.raises(OptionError, match=rf"Java client setting.*{OPTION}"):
        parse_kafka_spec(canonical_options({"properties.bootstrap.servers": "127.0.0.1:9", prop: value}))


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ("a-token", r"returned a str, not \(token, expiry"),
        (("a-token",), r"returned 1 values, not \(token, expiry"),
        ((None, 4e9), "returned None as the token"),
        (("", 4e9), "an empty token"),
        (("a-token", "4e9"), "returned a str as the expiry"),
        (("a-token", time.time() * 1000 + 60_000), "reads as milliseconds"),
        (("a-token", 600), r"expired at 1970-01-01T00:10:00\+00:00"),
        (("a token\n", 4e9), "printable ASCII"),
        (("a-token", 4e9, 7), "returned a int as the principal"),
        (("a-token", 4e9, "p", {"k": 1}), "extensions"),
    ],
)
def test_what_a_provider_returns_is_checked_before_librdkafka_sees_it(answer, says):
    provider = TokenProvider("m:f", lambda config: answer)

    with pytest.raises(KafkaAuthenticationError, match=says) as raised:
        provider.check("")
    assert "a-token" not in str(raised.value)


def test_a_valid_answer_goes_to_librdkafka_as_a_tuple():
    token, expiry, principal = short_lived("principal=alice")
    provider = TokenProvider("m:f", lambda config: [token, expiry, principal])

    assert provider("principal=alice") == (token, expiry, principal) and provider.failure is None
