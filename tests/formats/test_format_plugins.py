"""Looking formats up by name: built-ins, user codecs named `module:Class` (end to end through Spark's
Python workers and the real broker), codecs registered in the entry point group, and the errors for
unknown formats and options."""

from __future__ import annotations

import pytest
from pyspark_upsert_kafka.errors import OptionError
from pyspark_upsert_kafka.formats import CodecContext, FormatOptionError, available_formats, make_codec
from pyspark_upsert_kafka.formats.codec_registry import ENTRY_POINT_GROUP

from tests.support.kafka_io import consume_all, produce
from tests.support.read_helpers import read_spec
from tests.workers.tsv_codec import TsvCodec

TSV = "tests.workers.tsv_codec:TsvCodec"
SCHEMA = "id INT, name STRING, score DOUBLE"
VALUE = CodecContext(role="value", topics=("t",))


def write(spark, opts: dict, rows: list[tuple]) -> None:
    spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("upsert-kafka").options(**opts).mode("append").save()


def read(spark, opts: dict) -> list[tuple]:
    rows = spark.read.format("upsert-kafka").options(**opts).schema(SCHEMA).load().collect()
    return sorted(tuple(r) for r in rows)


def test_user_codec_named_module_class_writes_and_reads_through_spark_workers(spark, new_topic, options, bootstrap):
    topic = new_topic()
    opts = options(topic, {"value.format": TSV, "value.tsv.null-literal": "NULL"})

    write(spark, opts, [(1, "a", 1.5), (2, None, None)])

    assert [v for *_, v in consume_all(bootstrap, topic)] == [b"1\ta\t1.5", b"2\tNULL\tNULL"]
    assert read(spark, opts) == [(1, "a", 1.5), (2, None, None)]


def test_user_codec_as_key_format_and_value_format_at_once(spark, new_topic, options, bootstrap):
    topic = new_topic()
    opts = options(topic, {"key.format": TSV, "value.format": TSV, "value.fields-include": "EXCEPT_KEY"})

    write(spark, opts, [(7, "x", 0.25)])

    assert [(k, v) for *_, k, v in consume_all(bootstrap, topic)] == [(b"7", b"x\t0.25")]
    assert read(spark, opts) == [(7, "x", 0.25)]


def test_bad_record_of_a_user_codec_names_its_offset_and_the_codec(spark, new_topic, options, bootstrap):
    topic = new_topic()
    produce(bootstrap, topic, [(b'{"id":1}', b"1\ta\t2.0"), (b'{"id":2}', b"2\tonly-two")])

    with pytest.raises(Exception, match=rf"topic '{topic}' partition 0 offset 1 with format 'tsv': expected 3"):
        read(spark, options(topic, {"value.format": TSV}))


def test_unknown_option_of_a_user_codec_lists_its_valid_options(spark, new_topic, options):
    expected = r"value\.tsv\.nul-literal for format 'tsv'; valid options: value\.tsv\.null-literal"
    with pytest.raises(Exception, match=expected):
        read(spark, options(new_topic(), {"value.format": TSV, "value.tsv.nul-literal": "x"}))


@pytest.fixture
def tsv_entry_point(tmp_path, monkeypatch) -> str:
    """A distribution (as pip would install it) that registers TsvCodec in the entry point group as 'tsv'."""
    dist = tmp_path / "tsv_codec_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tsv-codec-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\ntsv = {TSV}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "tsv"


def test_codec_registered_in_the_entry_point_group_is_found_by_its_name(tsv_entry_point):
    assert "tsv" in available_formats()
    codec = make_codec("TSV", "value.format", {"null-literal": "-"}, VALUE)
    assert isinstance(codec, TsvCodec) and codec.null == "-"


def test_entry_point_codec_takes_its_options_in_the_connectors_option_parsing(tsv_entry_point):
    raw = {
        "topic": "t",
        "properties.bootstrap.servers": "localhost:9092",
        "key.fields": "id",
        "value.format": "tsv",
        "value.tsv.null-literal": "-",
    }
    spec = read_spec(raw, SCHEMA)
    assert isinstance(spec.layout.value_codec, TsvCodec) and spec.layout.value_codec.null == "-"


def test_unknown_format_lists_every_available_one_and_the_module_class_form(tsv_entry_point):
    with pytest.raises(FormatOptionError) as err:
        make_codec("tvs", "value.format", {}, VALUE)
    message = str(err.value)
    assert "option 'value.format': unknown format 'tvs'" in message
    for name in ("avro", "avro-confluent", "csv", "json", "raw", "tsv"):
        assert name in message
    assert "'module:Class'" in message


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("tests.no_such_module:Codec", "cannot load codec 'tests.no_such_module:Codec'"),
        ("tests.workers.tsv_codec:Missing", "cannot load codec 'tests.workers.tsv_codec:Missing'"),
        ("tests.workers.tsv_codec:TsvEncoder", "'tests.workers.tsv_codec:TsvEncoder' is not a formats.Codec subclass"),
    ],
)
def test_module_class_that_is_not_a_codec_is_rejected_naming_it(name, reason):
    with pytest.raises(FormatOptionError, match="option 'value.format': " + reason):
        make_codec(name, "value.format", {}, VALUE)


@pytest.mark.parametrize(
    ("fmt", "valid"),
    [
        ("json", "value.json.encode.ignore-null-fields"),
        ("csv", "value.csv.field-delimiter"),
        ("raw", "value.raw.endianness"),
        ("avro", "value.avro.record-name"),
        ("avro-confluent", "value.avro-confluent.url"),
    ],
)
def test_unknown_option_of_each_builtin_format_lists_its_valid_options(fmt, valid):
    with pytest.raises(FormatOptionError, match=rf"value\.{fmt}\.no-such-option .*valid options: .*{valid}"):
        make_codec(fmt, "value.format", {"no-such-option": "1"}, VALUE)


def test_option_of_another_format_is_rejected_naming_the_right_prefix():
    raw = {
        "topic": "t",
        "properties.bootstrap.servers": "localhost:9092",
        "key.fields": "id",
        "value.format": "avro",
        "value.json.ignore-parse-errors": "true",
    }
    with pytest.raises(OptionError, match=r"'value\.json\.ignore-parse-errors' does not belong .* 'value\.avro\.'"):
        read_spec(raw, SCHEMA)
