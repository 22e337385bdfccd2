"""Options of a read (batch or streaming), validated once into a ReadSpec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.types import StructType

from connector.errors import OptionError
from connector.layout import Layout, parse_layout
from connector.options import (
    KafkaSpec,
    canonical_options,
    changelog_column_name,
    parse_kafka_spec,
    parse_topic,
)


@dataclass(frozen=True)
class ReadSpec:
    kafka: KafkaSpec
    topic: str
    layout: Layout
    changelog: bool  # False: table mode (latest value per key)


def parse_read_spec(raw: Mapping[str, str], schema: StructType, streaming: bool) -> ReadSpec:
    options = canonical_options(raw)
    kafka = parse_kafka_spec(options)
    topic = parse_topic(options)
    mode = options.get("read.mode", "changelog" if streaming else "table").strip().lower()
    if mode not in ("table", "changelog"):
        raise OptionError(f"option 'read.mode' must be 'table' or 'changelog', got '{raw.get('read.mode')}'")
    if streaming and mode == "table":
        raise OptionError("option 'read.mode': a streaming read is a changelog; use read.mode=changelog")
    layout = parse_layout(options, schema, (topic,))
    if mode == "changelog" and layout.changelog_column is None:
        column = changelog_column_name(options)
        raise OptionError(
            f"a changelog read needs the column '{column} STRING' to say whether a row is an upsert or a "
            f"delete: add it to .schema(...), or give the data columns with option 'schema' and it is "
            f"added for you"
        )
    return ReadSpec(kafka=kafka, topic=topic, layout=layout, changelog=mode == "changelog")
