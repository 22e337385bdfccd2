"""Options of a write (batch or streaming), validated once into a WriteSpec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.types import StructType

from connector.layout import Layout, parse_layout
from connector.options import KafkaSpec, canonical_options, parse_kafka_spec, parse_topic


@dataclass(frozen=True)
class WriteSpec:
    kafka: KafkaSpec
    topic: str
    layout: Layout


def parse_write_spec(raw: Mapping[str, str], schema: StructType) -> WriteSpec:
    options = canonical_options(raw)
    kafka = parse_kafka_spec(options)
    topic = parse_topic(options)
    return WriteSpec(kafka=kafka, topic=topic, layout=parse_layout(options, schema, (topic,)))
