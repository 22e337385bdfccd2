"""Schema mistakes through Spark itself, against the real broker: each is one connector error raised on the
driver before any task runs (Spark wraps it in AnalysisException [PYTHON_DATA_SOURCE_ERROR], whose text
carries the connector's error type and message), or a column the user may reasonably list is accepted.

The first three tests are mistakes that once crashed raw (a JVM IllegalArgumentException, a worker's KeyError,
a worker's ArrowInvalid)."""

from __future__ import annotations

import pytest

from tests.support.kafka_io import produce

RECORDS = [(b'{"id":1}', b'{"id":1,"v":"a"}'), (b'{"id":2}', None)]


def connector_error(excinfo: pytest.ExceptionInfo, error_type: str, *fragments: str) -> str:
    """The error's text holds the connector's error type and every fragment; no raw error of another layer."""
    text = str(excinfo.value)
    assert f"{error_type}:" in text, text
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text}"
    # Spark's mark of an error the data source raised on the driver; a task's error is [PYTHON_EXCEPTION].
    assert "[PYTHON_DATA_SOURCE_ERROR]" in text and "[PYTHON_EXCEPTION]" not in text, text
    for raw in ("KeyError", "ArrowInvalid", "IllegalArgumentException", "Py4JJavaError", "PySparkTypeError"):
        assert raw not in text, f"{raw} reached the user: {text}"
    return text


def test_schema_option_listing_the_change_column_reads_it_once(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, RECORDS)
    opts = options(topic, {"read.mode": "changelog", "schema": "id BIGINT, v STRING, _change_type STRING"})

    df = spark.read.format("upsert-kafka").options(**opts).load()

    assert df.columns == ["id", "v", "_change_type"]
    assert sorted(tuple(r) for r in df.collect()) == [(1, "a", "upsert"), (2, None, "delete")]


def test_duplicate_column_is_one_schema_error_naming_it(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, RECORDS)
    df = spark.read.format("upsert-kafka").options(**options(topic)).schema("id BIGINT, id STRING, v STRING").load()
    with pytest.raises(Exception) as err:
        df.collect()
    connector_error(err, "SchemaError", "column 'id'", "twice")


def test_change_column_of_another_type_than_string_is_one_schema_error(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, RECORDS)
    opts = options(topic, {"read.mode": "changelog"})
    df = spark.read.format("upsert-kafka").options(**opts).schema("id BIGINT, v STRING, _change_type INT").load()
    with pytest.raises(Exception) as err:
        df.collect()
    connector_error(err, "SchemaError", "column '_change_type'", "STRING", "not INT")


def test_change_column_of_another_type_in_the_schema_option_is_one_schema_error(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, RECORDS)
    opts = options(topic, {"read.mode": "changelog", "schema": "id BIGINT, v STRING, _change_type INT"})
    with pytest.raises(Exception) as err:
        spark.read.format("upsert-kafka").options(**opts).load().collect()
    connector_error(err, "SchemaError", "column '_change_type'", "STRING", "not INT")


def test_streaming_read_with_a_duplicate_column_fails_before_the_query_reads(spark, new_topic, options, tmp_path):
    opts = options(new_topic())
    df = spark.readStream.format("upsert-kafka").options(**opts).schema("id INT, ID STRING, _change_type STRING")
    with pytest.raises(Exception) as err:
        query = df.load().writeStream.format("noop").option("checkpointLocation", str(tmp_path)).start()
        try:
            query.awaitTermination(60)
        finally:
            query.stop()
    connector_error(err, "SchemaError", "column 'ID'", "twice")


def test_streaming_write_of_a_changelog_column_of_another_type_fails_before_any_task(
    spark, new_topic, options, tmp_path
):
    source = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    df = source.selectExpr("CAST(value AS INT) AS id", "1 AS _change_type")
    writer = df.writeStream.format("upsert-kafka").options(**options(new_topic()))
    with pytest.raises(Exception) as err:
        query = writer.option("checkpointLocation", str(tmp_path)).start()
        try:
            query.awaitTermination(60)
        finally:
            query.stop()
    connector_error(err, "SchemaError", "column '_change_type'", "STRING", "not INT")
