"""Settings a Flink user brings along that cannot apply to Spark or to librdkafka, each with what does the same
here. The option parser (options.canonical) turns each into one error naming the replacement; the README's section
"Flink settings with no meaning here" is generated from these tables."""

from __future__ import annotations

from .catalog import KEY_FORMAT, PROPERTIES_BOOTSTRAP_SERVERS, PROPERTIES_SASL_OAUTHBEARER_TOKEN_PROVIDER, VALUE_FORMAT
from .catalog_read import SCAN_WATERMARK_IDLE_TIMEOUT
from .catalog_write import SINK_PARALLELISM

# Java Kafka client properties (`properties.<name>`) with no librdkafka meaning, and what to use instead.
_TOKEN_PROVIDER = (
    f"option '{PROPERTIES_SASL_OAUTHBEARER_TOKEN_PROVIDER.name}' = 'package.module:function', a Python function "
    "making the SASL/OAUTHBEARER token (Amazon MSK IAM, Google Managed Kafka: README 'Managed Kafka services')"
)
JAVA_ONLY_PROPERTIES: dict[str, str] = {
    "sasl.jaas.config": "'properties.sasl.username' and 'properties.sasl.password' (with "
    "'properties.sasl.mechanism'); for OAUTHBEARER (a login module such as Amazon MSK's IAMLoginModule) "
    f"{_TOKEN_PROVIDER}, or librdkafka's own 'properties.sasl.oauthbearer.*'",
    "sasl.login.callback.handler.class": _TOKEN_PROVIDER,
    "sasl.client.callback.handler.class": _TOKEN_PROVIDER,
    "ssl.truststore.location": "'properties.ssl.ca.location' (a PEM file of the CA certificates)",
    "ssl.truststore.password": "nothing: librdkafka reads PEM CA files, set 'properties.ssl.ca.location'",
    "ssl.keystore.location": "'properties.ssl.certificate.location' and 'properties.ssl.key.location' (PEM files)",
    "key.serializer": f"option '{KEY_FORMAT.name}'",
    "value.serializer": f"option '{VALUE_FORMAT.name}'",
    "key.deserializer": f"option '{KEY_FORMAT.name}'",
    "value.deserializer": f"option '{VALUE_FORMAT.name}'",
}

# Options of a Flink table, job or YAML pipeline that are not options of a Spark read or write.
NOT_IN_SPARK: dict[str, str] = {
    "connector": 'Spark picks the connector with .format("upsert-kafka"); leave this option out',
    "type": 'a Flink CDC pipeline\'s sink type; Spark picks the connector with .format("upsert-kafka")',
    "name": "a Flink CDC pipeline's sink name; name a streaming query with .queryName(...) on its writeStream",
    "table.exec.source.idle-timeout": "a Flink job setting; here the per-read option "
    f"'{SCAN_WATERMARK_IDLE_TIMEOUT.name}'",
    "execution.runtime-mode": "a Flink job setting; Spark reads a bounded table with spark.read and an unbounded "
    "stream with spark.readStream (writes: df.write / df.writeStream)",
}
# Option prefixes of the same kind: `aliyun.kafka.accessKeyId`, `aliyun.kafka.endpoint`, ...
NOT_IN_SPARK_PREFIXES: dict[str, str] = {
    "aliyun.kafka.": "Realtime Compute's ApsaraMQ settings (its Alibaba Cloud API credentials create topics); "
    f"here create the topics beforehand and connect as to any Kafka: '{PROPERTIES_BOOTSTRAP_SERVERS.name}' = the "
    "instance's endpoint, and for its SASL endpoint 'properties.security.protocol', 'properties.sasl.mechanism', "
    "'properties.sasl.username' and 'properties.sasl.password'",
}


def not_in_spark(name: str) -> str | None:
    """The error for a lower-cased option name that cannot apply to Spark, or None."""
    reason = NOT_IN_SPARK.get(name) or next(
        (r for p, r in NOT_IN_SPARK_PREFIXES.items() if name.startswith(p.lower())), None
    )
    return None if reason is None else f"option '{{key}}' has no meaning in Spark: {reason}"


def sink_parallelism_message(value: str, key_columns: tuple[str, ...]) -> str:
    """sink.parallelism: the Data Source API lets a Python writer ask for no distribution (a write runs one task
    per partition of the DataFrame), so the DataFrame is repartitioned by the user, by key."""
    columns = ", ".join(repr(c) for c in key_columns)
    return (
        f"option '{SINK_PARALLELISM.name}' = '{value}' cannot be honoured: a Spark write runs one task per partition "
        f"of the DataFrame and a Python data source cannot ask for another distribution. Do the same with "
        f"df.repartition({value.strip()}, {columns}) before .write / .writeStream (hashing by the key keeps every key "
        "in one task, so its order is kept) and leave the option out"
    )


def readme_section() -> str:
    """The README table of the settings above (integration.readme_options writes it)."""
    lines = ["| setting | in Spark |", "|---|---|"]
    lines += [f"| `{name}` | {reason} |" for name, reason in NOT_IN_SPARK.items()]
    lines += [f"| `{prefix}*` | {reason} |" for prefix, reason in NOT_IN_SPARK_PREFIXES.items()]
    lines.append(
        f"| `{SINK_PARALLELISM.name}` | refused on writes: `df.repartition(N, *key columns)` before the write does the "
        "same (every key stays in one task) |"
    )
    lines += [f"| `properties.{name}` | {reason} |" for name, reason in JAVA_ONLY_PROPERTIES.items()]
    return "\n".join(lines)
