"""The schema evolution golden corpus (integration/evolution_golden.py): records Confluent's serializers wrote of two
versions of a subject, for each change the registry accepted under BACKWARD, FORWARD or FULL, read through the
connector (batch, and an AvailableNow stream across the change per format) into the rows Confluent's own
deserializers gave.

Each test registers the case's versions in a fresh subject (compatibility NONE: the corpus shows what the registry
accepted under the case's level), puts this registry's ids into the payloads' framing and produces them into a
fresh topic.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from pyspark.sql.types import StructField, StructType

from tests.formats.test_format_avro_confluent import avro_options, confluent_client
from tests.formats.test_format_registry_evolution import compatibility, json_options, protobuf_options
from tests.support.kafka_io import produce
from tests.support.read_helpers import run_available_now
from tests.support.registry_fixtures import register_golden, with_id

GOLDEN = Path(__file__).parent / "golden" / "evolution"


def read_cases(fmt: str) -> list[dict]:
    return [c for c in json.loads((GOLDEN / f"{fmt}.json").read_text())["cases"] if c["read"]]


def changes(*names: str) -> set[str]:
    return {f"{n}_{level}" for n in names for level in ("backward", "forward", "full")}


# The read cases the corpus must hold (what Apicurio accepted; a regenerated corpus that loses one fails here,
# at collection, instead of testing less).
# fmt: off
EXPECTED = {
    "avro": changes("field_added_with_default", "nullable_field_added_with_default", "field_removed_with_default",
                    "string_to_bytes", "bytes_to_string")
    | {"field_added_without_default_forward", "field_removed_without_default_backward", "int_to_long_backward",
       "int_to_float_backward", "int_to_double_backward", "long_to_double_backward", "float_to_double_backward"},
    "protobuf": changes("field_added", "field_retired"),
    "json": {"property_added_closed_backward", "property_added_open_forward", "property_removed_closed_forward",
             "property_removed_open_backward"},
}
# fmt: on
CASES = {fmt: read_cases(fmt) for fmt in EXPECTED}
for _fmt, _names in EXPECTED.items():
    assert {c["case"] for c in CASES[_fmt]} == _names, (_fmt, sorted({c["case"] for c in CASES[_fmt]} ^ _names))


def by_name(fmt: str):
    return pytest.mark.parametrize("case", CASES[fmt], ids=lambda c: c["case"])


def written(case: dict, registry_url: str, bootstrap: str, topic: str, versions: tuple[int, ...] = (1, 2)) -> None:
    """The case's schemas registered under <topic>-value and the records of `versions` produced, keyed by id."""
    subject = f"{topic}-value"
    compatibility(confluent_client(registry_url), subject, "NONE")
    ids = register_golden(registry_url, case["schemas"], lambda _: subject)
    records = [r for r in case["records"] if r["version"] in versions]
    produce(bootstrap, topic, [(json.dumps({"id": r["value"]["id"]}).encode(),
                                with_id(base64.b64decode(r["payload"]), ids)) for r in records])  # fmt: skip


def expected(case: dict) -> list[tuple]:
    """The rows Confluent's deserializer gave (bytes as {"base64": ...} in the corpus), in the case's columns."""
    return sorted(tuple(_value(r["row"][c]) for c in case["columns"]) for r in case["records"] if "row" in r)


def _value(v):
    return base64.b64decode(v["base64"]) if isinstance(v, dict) else v


def rows(df) -> list[tuple]:
    return sorted(tuple(_bytes(v) for v in r) for r in df.collect())


def nullable(schema: StructType) -> StructType:
    """The columns given as Spark reads a DataFrame schema's: every one nullable."""
    return StructType([StructField(f.name, f.dataType, True) for f in schema.fields])


# -- avro-confluent -------------------------------------------------------------------------------------------------


@by_name("avro")
def test_avro_records_of_each_accepted_change_read_as_confluents_deserializer_reads_them(
    spark, new_topic, options, bootstrap, registry_url, case
):
    topic = new_topic()
    written(case, registry_url, bootstrap, topic)
    opts = avro_options(options(topic, {"read.mode": "table"}), registry_url, roles=("value",))

    from_registry = spark.read.format("upsert-kafka").options(**opts).load()  # the latest schema's columns
    assert from_registry.columns == case["columns"]
    given = spark.read.format("upsert-kafka").options(**opts).schema(nullable(from_registry.schema)).load()
    refused = [r for r in case["records"] if "error" in r]
    if not refused:
        assert rows(from_registry) == expected(case)
        assert rows(given) == expected(case)
        return
    # Confluent's deserializer refuses a record whose writer lacks a field the latest holds without a default
    # (field_added_without_default under FORWARD). Columns from the registry: that column is NOT NULL, and the
    # read is refused when it starts, naming it. Columns given nullable: Spark's meaning of a value the writer
    # lacks, null.
    assert case["change"] == "field_added_without_default" and all("No default value" in r["error"] for r in refused)
    with pytest.raises(Exception, match=r"the table reads 'stock' .* NOT NULL without a default, which the registered"):
        from_registry.collect()
    assert rows(given) == sorted([*expected(case), *((r["value"]["id"], r["value"]["name"], None) for r in refused)])


def test_avro_a_stream_across_the_change_reads_each_versions_records_as_confluents_deserializer(
    spark, new_topic, options, bootstrap, registry_url, tmp_path
):
    (case,) = [c for c in CASES["avro"] if c["case"] == "field_added_with_default_full"]
    across_the_change(spark, case, avro_options(options(new_topic()), registry_url, roles=("value",)), registry_url,
                      bootstrap, tmp_path)  # fmt: skip


def across_the_change(spark, case: dict, opts: dict, registry_url: str, bootstrap: str, tmp_path, schema=None):
    """An AvailableNow stream on the latest version's columns reads version 1's records, then (the same
    checkpoint) version 2's: each run's rows are those Confluent's deserializer gave."""
    topic = opts["topic"]
    written(case, registry_url, bootstrap, topic, versions=(1,))
    read = spark.readStream.format("upsert-kafka").options(**opts)
    df = (read if schema is None else read.schema(schema)).load()
    first = run_available_now(df, str(tmp_path / "checkpoint")).rows
    written(case, registry_url, bootstrap, topic, versions=(2,))
    second = run_available_now(df, str(tmp_path / "checkpoint")).rows
    ids = {v: {r["value"]["id"] for r in case["records"] if r["version"] == v} for v in (1, 2)}
    for got, version in ((first, 1), (second, 2)):
        want = [row for row in expected(case) if row[0] in ids[version]]
        assert sorted(tuple(_bytes(v) for v in r[:-1]) for r in got) == want, version
        assert {r[-1] for r in got} == {"upsert"}


def _bytes(v):
    return bytes(v) if isinstance(v, bytearray) else v


# -- protobuf-confluent ---------------------------------------------------------------------------------------------


@by_name("protobuf")
def test_protobuf_records_of_each_field_added_or_retired_read_as_confluents_deserializer_reads_them(
    spark, new_topic, options, bootstrap, registry_url, case
):
    topic = new_topic()
    written(case, registry_url, bootstrap, topic)
    opts = protobuf_options(options(topic, {"read.mode": "table"}), registry_url)

    from_registry = spark.read.format("upsert-kafka").options(**opts).load()  # the latest message's fields
    assert from_registry.columns == case["columns"]
    assert rows(from_registry) == expected(case)
    given = spark.read.format("upsert-kafka").options(**opts).schema(nullable(from_registry.schema)).load()
    assert rows(given) == expected(case)


def test_protobuf_a_stream_across_the_change_reads_each_versions_records_as_confluents_deserializer(
    spark, new_topic, options, bootstrap, registry_url, tmp_path
):
    (case,) = [c for c in CASES["protobuf"] if c["case"] == "field_added_backward"]
    across_the_change(spark, case, protobuf_options(options(new_topic()), registry_url), registry_url, bootstrap,
                      tmp_path)  # fmt: skip


# -- json-confluent -------------------------------------------------------------------------------------------------

JSON_TYPES = {"integer": "BIGINT", "string": "STRING"}


def json_columns(case: dict) -> str:
    """The latest version's properties as columns (json-confluent takes its columns given)."""
    latest = json.loads(case["schemas"][-1]["schema"])["properties"]
    return ", ".join(f"{name} {JSON_TYPES[latest[name]['type']]}" for name in case["columns"])


@by_name("json")
def test_json_records_of_each_property_added_or_removed_read_as_confluents_deserializer_reads_them(
    spark, new_topic, options, bootstrap, registry_url, case
):
    topic = new_topic()
    written(case, registry_url, bootstrap, topic)
    opts = json_options(options(topic, {"read.mode": "table"}), registry_url)

    df = spark.read.format("upsert-kafka").options(**opts).schema(json_columns(case)).load()

    assert rows(df) == expected(case)


def test_json_a_stream_across_the_change_reads_each_versions_records_as_confluents_deserializer(
    spark, new_topic, options, bootstrap, registry_url, tmp_path
):
    (case,) = [c for c in CASES["json"] if c["case"] == "property_added_closed_backward"]
    across_the_change(spark, case, json_options(options(new_topic()), registry_url), registry_url, bootstrap,
                      tmp_path, schema=f"{json_columns(case)}, _change_type STRING")  # fmt: skip
