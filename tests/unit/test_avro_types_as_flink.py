"""The Avro schema derived for each Flink type is the one Flink 2.2.1's AvroSchemaConverter derives, type by type, with
the legacy timestamp mapping and without (tests/formats/golden/flink/avro_type_mapping.json, written by Flink through
`integration/flink_golden.py`): the column alone and as a field of a ROW. Where Flink refuses a type, the connector
refuses it too, or writes what the file documents instead (formats/avro/schema.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark_upsert_kafka import OptionError, flink_table
from pyspark_upsert_kafka.formats import FormatOptionError
from pyspark_upsert_kafka.options.canonical import canonical_options
from pyspark_upsert_kafka.options.layout import parse_layout, table_schema

MAPPING = json.loads((Path(__file__).parents[1] / "formats/golden/flink/avro_type_mapping.json").read_text())
ENTRIES = {(e["type"], e["legacy"]): e for e in MAPPING["entries"]}
# Refused by flink_table, each with the words of its error: Spark holds no nanoseconds, no MULTISET, and Avro maps have
# string keys.
REFUSED_HERE = {"(9)": "hold microseconds", "MULTISET": "MULTISET", "MAP<INT": "MAP with INT keys"}
# Flink's converter refuses a TIME(6) alone, but a table column declared TIME(6) is Flink's TIME(0) (Flink 2.2.1
# resolves every TIME(p) of a CREATE TABLE so), whose schema is time-millis: the golden case time_avro, column t6.
TIME_MILLIS = {"type": "int", "logicalType": "time-millis"}


def _ours(flink_type: str, legacy: bool) -> object:
    """The Avro type this connector derives for a value column `c` of `flink_type`."""
    ddl = (
        f"CREATE TABLE t (k INT, c {flink_type}, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', "
        "'topic' = 't', 'properties.bootstrap.servers' = '127.0.0.1:9092', 'key.format' = 'avro', "
        "'value.format' = 'avro', 'value.fields-include' = 'EXCEPT_KEY', "
        f"'value.avro.timestamp_mapping.legacy' = '{str(legacy).lower()}')"
    )
    options = canonical_options(flink_table(ddl).options)
    layout = parse_layout(options, table_schema(options), ("t",))
    (field,) = layout.value_codec.writer_schema(layout.value_schema)["fields"]
    return field["type"]


def _named_as_flink(avro: object, name: str) -> object:
    """`avro` with its records named as Flink names a top-level type's (record names do not reach the bytes)."""
    if isinstance(avro, list):
        return [_named_as_flink(branch, name) for branch in avro]
    if isinstance(avro, dict) and avro.get("type") == "record":
        return {**avro, "name": name, "namespace": "org.apache.flink.avro.generated"}
    return avro


@pytest.mark.parametrize(("flink_type", "legacy"), sorted(ENTRIES), ids=lambda v: str(v))
def test_each_flink_type_derives_flinks_avro_schema(flink_type, legacy):
    flink = ENTRIES[(flink_type, legacy)]["top"]
    refused_here = next((words for part, words in REFUSED_HERE.items() if part in flink_type), None)
    if refused_here is not None:
        with pytest.raises((OptionError, FormatOptionError), match=refused_here):
            _ours(flink_type, legacy)
        return
    precision = int(flink_type.split("(")[1].split(")")[0]) if flink_type.startswith("TIMESTAMP") else 0
    if not legacy and precision > 3:  # Flink declares micros and writes millis there: refused, naming why
        with pytest.raises(FormatOptionError, match="declares as micros but writes as milliseconds"):
            _ours(flink_type, legacy)
        return
    if isinstance(flink, dict) and "error" in flink and flink_type.startswith("TIME("):
        assert "precision: 6" in flink["error"]
        nullable = "NOT NULL" not in flink_type
        assert _ours(flink_type, legacy) == (["null", TIME_MILLIS] if nullable else TIME_MILLIS)
        return
    if isinstance(flink, dict) and "error" in flink:
        # Flink's legacy mapping refuses TIMESTAMP(4..6) and TIMESTAMP_LTZ: written as its non-legacy mapping
        # declares them (with true microseconds where it declares micros).
        assert legacy and flink_type.startswith("TIMESTAMP"), flink["error"]
        flink = ENTRIES[(flink_type, False)]["top"]
    assert _named_as_flink(_ours(flink_type, legacy), "record") == flink
