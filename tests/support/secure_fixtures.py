"""The secured Kafka broker for tests/security (integration/kafka.py, `KafkaBroker(secured=True)`): started once
per test session, and only when a test asks for it; SCRAM users made per test, ACLs granted per test and revoked
after it; and a capture of the logs a secret must never reach (the JVM's log4j output, which in local mode is
both the driver's and the executors' log, and the Python workers' logs).

Listeners: SASL_SSL (SCRAM-SHA-512 or PLAIN) and SASL_PLAINTEXT (PLAIN or SCRAM-SHA-512), both with OAUTHBEARER too
(unsigned tokens: tests/support/oauth_tokens.py). The harness's own clients are the super user; the connector under
test always runs as a user with exactly the ACLs the test grants.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from tests.support.kafka_io import consume_all, create_topic, produce
from tests.support.servers import started

SASL_SSL, SASL_PLAINTEXT = "SASL_SSL", "SASL_PLAINTEXT"
SCRAM, PLAIN = "SCRAM-SHA-512", "PLAIN"


@dataclass(frozen=True)
class Credentials:
    user: str
    password: str = field(repr=False)
    mechanism: str

    @property
    def principal(self) -> str:
        return f"User:{self.user}"


@dataclass(frozen=True)
class Grant:
    """One ACL: `operations` on a resource (`TOPIC`, `GROUP`, `TRANSACTIONAL_ID`, `CLUSTER`) by name or prefix."""

    resource: str
    name: str
    operations: tuple[str, ...]
    prefixed: bool = False

    def bindings(self, principal: str) -> list[AclBinding]:
        pattern = ResourcePatternType.PREFIXED if self.prefixed else ResourcePatternType.LITERAL
        return [
            AclBinding(
                ResourceType[self.resource],
                self.name,
                pattern,
                principal,
                "*",
                AclOperation[op],
                AclPermissionType.ALLOW,
            )
            for op in self.operations
        ]


class SecureKafka:
    """The secured broker as the tests use it: addresses, the CA, users, ACLs and the harness's I/O."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.ca_file: str = broker.security.ca_file
        self.ssl_servers: str = broker.bootstrap_servers
        self.plaintext_servers: str = broker.sasl_plaintext_servers
        # The harness's clients log nothing: their lines (a broker stopping at the session's end) are noise.
        self.admin_config: dict = broker.admin_config() | {"logger": _quiet}
        self._admin = AdminClient(self.admin_config)

    @property
    def log_path(self) -> Path:
        return self.broker.log_path

    def servers(self, protocol: str) -> str:
        return self.ssl_servers if protocol == SASL_SSL else self.plaintext_servers

    def client_config(self, creds: Credentials, protocol: str = SASL_SSL) -> dict[str, str]:
        """librdkafka settings of a client that authenticates as `creds`."""
        config = {
            "bootstrap.servers": self.servers(protocol),
            "security.protocol": protocol,
            "sasl.mechanism": creds.mechanism,
            "sasl.username": creds.user,
            "sasl.password": creds.password,
        }
        if protocol == SASL_SSL:
            config["ssl.ca.location"] = self.ca_file
        return config

    def options(self, creds: Credentials, topic: str, protocol: str = SASL_SSL, **more: str) -> dict[str, str]:
        """The connector's options for `topic` as `creds`, keyed by `id`: librdkafka settings as `properties.*`."""
        props = {f"properties.{k}": v for k, v in self.client_config(creds, protocol).items()}
        return {"topic": topic, "key.fields": "id", **props, **more}

    # -- users ------------------------------------------------------------------------------------

    def create_scram_user(self, prefix: str = "user") -> Credentials:
        creds = Credentials(f"{prefix}-{uuid.uuid4().hex[:8]}", secrets.token_urlsafe(18), SCRAM)
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
        upsert = UserScramCredentialUpsertion(creds.user, info, creds.password.encode())
        for future in self._admin.alter_user_scram_credentials([upsert], request_timeout=30).values():
            future.result()
        # The credential travels through the cluster metadata: wait until the broker authenticates with it.
        self._wait(lambda: self._authenticates(creds), f"SCRAM user {creds.user} to authenticate")
        return creds

    def delete_scram_user(self, creds: Credentials) -> None:
        deletion = UserScramCredentialDeletion(creds.user, ScramMechanism.SCRAM_SHA_512)
        for future in self._admin.alter_user_scram_credentials([deletion], request_timeout=30).values():
            with contextlib.suppress(KafkaException):
                future.result()

    def plain_user(self, name: str) -> Credentials:
        """One of the broker's PLAIN users (they live in its JAAS configuration: integration.kafka.PLAIN_USERS)."""
        return Credentials(name, self.broker.security.plain_passwords[name], PLAIN)

    def _authenticates(self, creds: Credentials) -> bool:
        errors: list = []
        admin = AdminClient(self.client_config(creds, SASL_PLAINTEXT) | {"error_cb": errors.append, "logger": _quiet})
        try:
            admin.list_topics(timeout=2)
            return True
        except KafkaException:
            return False

    # -- ACLs -------------------------------------------------------------------------------------

    def grant(self, creds: Credentials, *grants: Grant) -> None:
        bindings = [b for g in grants for b in g.bindings(creds.principal)]
        for future in self._admin.create_acls(bindings, request_timeout=30).values():
            future.result()
        # ACLs reach the broker's authorizer through the metadata log: wait until it lists them.
        self._wait(lambda: len(self._acls(creds)) >= len(bindings), f"ACLs of {creds.user} to apply")

    def revoke(self, creds: Credentials) -> None:
        """Every ACL of the user."""
        flt = AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, creds.principal, None, AclOperation.ANY,
            AclPermissionType.ANY,
        )  # fmt: skip
        for future in self._admin.delete_acls([flt], request_timeout=30).values():
            future.result()
        self._wait(lambda: not self._acls(creds), f"ACLs of {creds.user} to be removed")

    def _acls(self, creds: Credentials) -> list:
        flt = AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, creds.principal, None, AclOperation.ANY,
            AclPermissionType.ANY,
        )  # fmt: skip
        return self._admin.describe_acls(flt, request_timeout=30).result()

    @staticmethod
    def _wait(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout:g} s for {what}")
            time.sleep(0.1)

    # -- the harness's I/O, as the super user -------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1) -> str:
        return create_topic(self.admin_config, name, partitions)

    def produce(self, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
        produce(self.admin_config, topic, records)

    def consume_all(self, topic: str) -> list[tuple[int, int, bytes | None, bytes | None]]:
        return consume_all(self.admin_config, topic)

    def committed(self, group: str, topic: str, partition: int = 0, timeout: float = 30) -> int | None:
        """The offset `group` holds for the partition, None for none; asked again while the group coordinator is not
        ready (a fresh broker creates __consumer_offsets on first use)."""
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, partition)])]
        deadline = time.monotonic() + timeout
        while True:
            try:
                answer = self._admin.list_consumer_group_offsets(request, request_timeout=10)[group].result(timeout)
                (found,) = answer.topic_partitions
                return found.offset if found.offset >= 0 else None
            except KafkaException as e:
                if e.args[0].code() not in _COORDINATOR_NOT_READY or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


_COORDINATOR_NOT_READY = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
)


# librdkafka's lines of the readiness probes (refused logins while a credential propagates) stay out of the output.
_quiet = logging.getLogger("tests.secure.probe")
_quiet.addHandler(logging.NullHandler())
_quiet.propagate = False


@pytest.fixture(scope="session")
def secure_kafka() -> Iterator[SecureKafka]:
    """A secured broker for this session, started the first time a test asks for it."""
    from integration.kafka import KafkaBroker

    with started("Secured Kafka broker", KafkaBroker(secured=True)) as broker:
        yield SecureKafka(broker)


@pytest.fixture
def secure_topic(secure_kafka: SecureKafka, request: pytest.FixtureRequest) -> Callable[..., str]:
    """Create a topic named after the test on the secured broker; call again for more topics."""

    def make(partitions: int = 1) -> str:
        base = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[:60]
        return secure_kafka.create_topic(f"{base}-{uuid.uuid4().hex[:8]}", partitions)

    return make


@pytest.fixture
def kafka_user(secure_kafka: SecureKafka) -> Iterator[Callable[..., Credentials]]:
    """`kafka_user(mechanism=SCRAM, *grants)`: a user holding exactly `grants`. SCRAM users are made fresh; the
    PLAIN user is the broker's `plain-alice`. Every ACL granted here is revoked and every user made is deleted
    after the test."""
    made: list[Credentials] = []

    def make(*grants: Grant, mechanism: str = SCRAM) -> Credentials:
        creds = secure_kafka.create_scram_user() if mechanism == SCRAM else secure_kafka.plain_user("plain-alice")
        made.append(creds)
        if grants:
            secure_kafka.grant(creds, *grants)
        return creds

    yield make
    for creds in made:
        secure_kafka.revoke(creds)
        if creds.mechanism == SCRAM:
            secure_kafka.delete_scram_user(creds)


# -- logs a secret must never reach -----------------------------------------------------------------


class SparkLogs:
    """Everything logged while the capture is on: the JVM's log4j events at INFO and above (driver and executors
    share the JVM in local mode) and the Python workers' logs (planning, reading and writing workers)."""

    def __init__(self, spark, path: Path) -> None:
        self.spark = spark
        self.path = path
        self._started = time.time()

    def text(self) -> str:
        jvm = self.path.read_text(errors="replace") if self.path.exists() else ""
        worker = "\n".join(
            f"{r.level} {r.logger}: {r.msg} {r.exception or ''}" for r in self.spark.tvf.python_worker_logs().collect()
        )
        return jvm + "\n" + worker


@pytest.fixture
def spark_logs(spark, tmp_path: Path) -> Iterator[SparkLogs]:
    """Capture the JVM's log (INFO and above, into a file; the console keeps its ERROR level) and turn on
    Spark's Python worker logging for the test."""
    jvm = spark._jvm
    log4j = jvm.org.apache.logging.log4j
    core = log4j.core
    context = log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    root = config.getRootLogger()
    path = tmp_path / "jvm.log"
    layout = core.layout.PatternLayout.newBuilder().withPattern("%p %c: %m%n%ex").withConfiguration(config).build()
    name = f"secret-check-{uuid.uuid4().hex[:6]}"
    appender = (
        core.appender.FileAppender.newBuilder()
        .withFileName(str(path))
        .setName(name)
        .setLayout(layout)
        .setConfiguration(config)
        .build()
    )
    appender.start()
    consoles = {n: a for n, a in dict(root.getAppenders()).items()}
    level = root.getLevel()
    for n, a in consoles.items():  # the console stays as quiet as the session made it
        root.removeAppender(n)
        root.addAppender(a, level, None)
    root.addAppender(appender, log4j.Level.INFO, None)
    root.setLevel(log4j.Level.INFO)
    context.updateLoggers()
    spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "true")
    try:
        yield SparkLogs(spark, path)
    finally:
        spark.conf.unset("spark.sql.pyspark.worker.logging.enabled")
        root.setLevel(level)
        root.removeAppender(name)
        for n, a in consoles.items():
            root.removeAppender(n)
            root.addAppender(a, None, None)
        context.updateLoggers()
        appender.stop()
