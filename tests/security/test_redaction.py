"""Secrets given as options stay out of what the connector and Spark show: the connector's reprs and messages
(one helper, pyspark_upsert_kafka.secrets), and Spark's plans once the session's option redaction covers them
(`redact_secret_options(spark)`): df.explain(), a streaming query's progress and plan, the SQL tab's plans."""

from __future__ import annotations

import uuid

import pytest
from pyspark_upsert_kafka import SPARK_REDACTION_REGEX, redact_secret_options
from pyspark_upsert_kafka.formats import CodecContext, make_codec
from pyspark_upsert_kafka.kafka.spec import parse_kafka_spec
from pyspark_upsert_kafka.secrets import SPARK_REDACTION_CONF, is_secret, redact, strip_url_credentials

from tests.security.acls import read_grants
from tests.support.read_helpers import Collector, wait_for
from tests.support.secure_fixtures import SASL_SSL, Grant

# Values that match none of Spark's or our words themselves (Spark also redacts an option whose value matches).
SECRETS = {
    "properties.sasl.password": "v-9f3a71",
    "properties.ssl.key.pem": "-----BEGIN PRIVATE KEY-----\nMIIEv-4c2e90\n-----END PRIVATE KEY-----",
    "kafka.ssl.key.password": "v-1b77c0",
    "properties.ssl.keystore.password": "v-e5d4a8",
    "properties.sasl.oauthbearer.config": "principal=alice extra=v-0a9d13",
    "properties.sasl.oauthbearer.client.secret": "v-77ac52",
    "properties.sasl.oauthbearer.assertion.private.key.passphrase": "v-3f0e6b",
    "value.avro-confluent.basic-auth.user-info": "reg-user:v-d41e0c",
    "value.avro-confluent.bearer-auth.token": "v-5a8b2f",
    "value.avro-confluent.ssl.keystore.password": "v-c06f19",
    "value.avro-confluent.url": "https://reg-user:v-8e2d47@[::1]:8081/apis/ccompat/v7",
}
SECRET_VALUES = ["v-9f3a71", "MIIEv-4c2e90", "v-1b77c0", "v-e5d4a8", "v-0a9d13", "v-77ac52", "v-3f0e6b", "v-d41e0c",
                 "v-5a8b2f", "v-c06f19", "v-8e2d47"]  # fmt: skip


def assert_none_shown(text: str) -> None:
    shown = [s for s in SECRET_VALUES if s in text]
    assert not shown, f"secrets {shown} appear in:\n{text[:4000]}"


# -- which options are secrets; URL credentials --------------------------------------------------------


@pytest.mark.parametrize("name", [*sorted(SECRETS.keys() - {"value.avro-confluent.url"}), "properties.sasl.jaas.config",
                                  "key.avro-confluent.basic-auth.user-info", "properties.ssl.keystore.key",
                                  "properties.sasl.oauthbearer.assertion.private.key.pem"])  # fmt: skip
def test_every_secret_bearing_option_is_a_secret_whatever_its_prefix(name):
    assert is_secret(name)
    assert is_secret(name.upper())


ORDINARY = ["topic", "key.fields", "properties.sasl.username", "properties.sasl.mechanism",
            "properties.ssl.ca.location", "properties.ssl.certificate.pem", "value.format"]  # fmt: skip


@pytest.mark.parametrize("name", ORDINARY)
def test_ordinary_options_are_not_secrets(name):
    assert not is_secret(name)


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("https://u:p@ss@registry:8081/apis", "https://***@registry:8081/apis"),
        ("http://token@[::1]:8081/x", "http://***@[::1]:8081/x"),
        ("u:pw@[fe80::1]:9092,v:q@broker2:9092", "***@[fe80::1]:9092,***@broker2:9092"),
        ("sasl_ssl://u:pw@broker:9093/bootstrap: failed", "sasl_ssl://***@broker:9093/bootstrap: failed"),
        ("url 'http://x:y@z/p?q=a@b'", "url 'http://***@z/p?q=a@b'"),
        ("alice@example.com at 10:30 @home", "alice@example.com at 10:30 @home"),
        ("SASL_SSL://127.0.0.1:9093/1: Disconnected", "SASL_SSL://127.0.0.1:9093/1: Disconnected"),
    ],
)
def test_credentials_in_urls_are_stripped_with_or_without_a_scheme(given, shown):
    assert strip_url_credentials(given) == shown


def test_redact_replaces_known_secret_values_and_url_credentials():
    text = "failed with v-9f3a71 at http://u:v-8e2d47@h:1 (v-9f3a71)"
    assert redact(text, ["v-9f3a71"]) == "failed with *** at http://***@h:1 (***)"


def test_the_kafka_spec_shows_no_secret():
    options = {k: v for k, v in SECRETS.items() if k.startswith("properties.")}
    spec = parse_kafka_spec({"properties.bootstrap.servers": "u:v-8e2d47@broker:9092", **options})

    assert_none_shown(repr(spec) + spec.describe())
    assert "properties={" in repr(spec) and "sasl.oauthbearer.config" in repr(spec)


def test_the_registry_codec_shows_no_secret(tls_files):
    options = {k.removeprefix("value.avro-confluent."): v for k, v in SECRETS.items() if "avro-confluent" in k}
    options |= {"ssl.keystore.location": tls_files.client_pem, "basic-auth.credentials-source": "USER_INFO"}
    del options["bearer-auth.token"]  # basic or bearer, not both
    codec = make_codec("avro-confluent", "value.format", options, CodecContext("value", ("t",)))

    assert_none_shown(repr(codec) + repr(codec.settings))
    assert "[::1]:8081" in repr(codec)


# -- Spark's plans ----------------------------------------------------------------------------------


@pytest.fixture
def redacting(spark):
    """The session hides the connector's secret options in plans, as `redact_secret_options` sets it."""
    before = spark.conf.get(SPARK_REDACTION_CONF)
    try:
        assert before == "(?i)url"  # Spark's default, which SPARK_REDACTION_REGEX includes
        assert redact_secret_options(spark) == SPARK_REDACTION_REGEX
        assert redact_secret_options(spark) == SPARK_REDACTION_REGEX  # once only
        yield
    finally:
        spark.conf.set(SPARK_REDACTION_CONF, before)


def test_redaction_is_added_to_a_users_own_setting(spark):
    before = spark.conf.get(SPARK_REDACTION_CONF)
    try:
        spark.conf.set(SPARK_REDACTION_CONF, "(?i)internal-host")
        assert redact_secret_options(spark) == f"(?i)internal-host|{SPARK_REDACTION_REGEX}"
        assert spark.conf.get(SPARK_REDACTION_CONF) == f"(?i)internal-host|{SPARK_REDACTION_REGEX}"
    finally:
        spark.conf.set(SPARK_REDACTION_CONF, before)


def plan_options(topic: str) -> dict:
    return {"topic": topic, "properties.bootstrap.servers": "127.0.0.1:9", "key.fields": "id", **SECRETS}


def explained(df, capsys) -> str:
    capsys.readouterr()
    df.explain(True)
    return capsys.readouterr().out


def sql_tab_plans(spark) -> str:
    """The plan texts of every SQL execution so far, as the UI's SQL tab shows them (description, plan, nodes)."""
    store = spark._jsparkSession.sharedState().statusStore()
    executions = store.executionsList()
    texts = []
    for i in range(executions.size()):
        execution = executions.apply(i)
        texts += [execution.description(), execution.details(), execution.physicalPlanDescription()]
        nodes = store.planGraph(execution.executionId()).allNodes()
        texts += [nodes.apply(j).desc() for j in range(nodes.size())]
    return "\n".join(texts)


def test_without_the_session_setting_spark_shows_what_its_default_regexes_miss(spark, capsys):
    """Why `redact_secret_options` exists: Spark's defaults hide names with password/secret/token/url only."""
    df = spark.readStream.format("upsert-kafka").options(**plan_options("t")).schema("id INT").load()
    shown = explained(df, capsys)
    assert "MIIEv-4c2e90" in shown and "v-d41e0c" in shown and "v-3f0e6b" in shown
    assert "v-9f3a71" not in shown  # properties.sasl.password: Spark's own spark.redaction.regex


def test_explain_of_batch_and_streaming_reads_shows_no_secret(spark, redacting, capsys):
    topic = f"t-{uuid.uuid4().hex[:6]}"
    batch = spark.read.format("upsert-kafka").options(**plan_options(topic)).schema("id INT").load()
    stream = spark.readStream.format("upsert-kafka").options(**plan_options(topic)).schema("id INT").load()

    text = explained(batch, capsys) + explained(stream, capsys)

    assert_none_shown(text)
    assert f"topic={topic}" in text  # the other options still show


def test_a_temporary_view_with_secret_options_shows_none_in_its_plans_or_the_sql_tab(spark, redacting):
    view = f"secret_view_{uuid.uuid4().hex[:6]}"
    listed = ", ".join(f"`{k}` '{v}'" for k, v in plan_options("t").items())
    spark.sql(f"CREATE TEMPORARY VIEW {view} USING `upsert-kafka` OPTIONS ({listed}, schema 'id INT')")
    try:
        explain = spark.sql(f"EXPLAIN EXTENDED CREATE TEMPORARY VIEW {view}_2 USING `upsert-kafka` OPTIONS ({listed})")
        explain_text = explain.collect()[0][0]

        assert_none_shown(explain_text)
        assert_none_shown(sql_tab_plans(spark))
        assert "upsert-kafka" in explain_text
    finally:
        spark.catalog.dropTempView(view)


def test_a_streaming_query_on_the_secured_broker_shows_no_secret(
    spark, redacting, secure_kafka, secure_topic, kafka_user, tmp_path, capsys
):
    topic = secure_topic()
    # DESCRIBE on the range consumer's own group too: without it librdkafka's coordinator look-up for that group
    # (never joined) may fail a read at random, which is not what this test is about (test_secured_io covers it).
    user = kafka_user(*read_grants(topic), Grant("GROUP", "pyspark-upsert-kafka", ("DESCRIBE",)))
    # Settings librdkafka accepts and ignores on this listener (no client key, no OAUTHBEARER), given as secrets.
    extra = {"properties.ssl.key.password": "v-1b77c0", "properties.sasl.oauthbearer.client.secret": "v-77ac52"}
    opts = secure_kafka.options(user, topic, SASL_SSL, **extra)
    secure_kafka.produce(topic, [(b'{"id":1}', b'{"id":1,"name":"a"}')])
    sink = Collector()
    df = (
        spark.readStream.format("upsert-kafka")
        .options(**opts)
        .schema("id INT, name STRING, _change_type STRING")
        .load()
    )
    query = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "cp")).start()
    try:
        wait_for(lambda: sink.rows or query.exception() is not None, "the first batch")
        assert query.exception() is None, query.exception()
        wait_for(lambda: query.lastProgress is not None, "a progress report")
        progress = query.lastProgress.json + "".join(p.json for p in query.recentProgress)
        capsys.readouterr()
        query.explain(True)
        text = progress + capsys.readouterr().out + explained(df, capsys) + sql_tab_plans(spark)
    finally:
        query.stop()

    for secret in (user.password, *extra.values()):
        assert secret not in text, f"{secret} appears"
    assert topic in text  # the texts checked do name the query's topic


def test_the_log_capture_sees_worker_logs_and_task_failures(spark, spark_logs):
    """The no-secret-in-the-logs checks look where a leak would land: a Python worker's log line and a failed
    task's error in the JVM's log."""
    from pyspark.sql.functions import udf

    @udf("string", useArrow=False)
    def leaky(x):
        import logging

        logging.getLogger("upsert_kafka").warning("worker line v-2c41aa")
        raise ValueError("task failure v-7d03be")

    with pytest.raises(Exception, match="v-7d03be"):
        spark.range(1).select(leaky("id")).collect()

    logs = spark_logs.text()
    assert "v-2c41aa" in logs and "v-7d03be" in logs
