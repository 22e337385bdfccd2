"""The change-envelope value formats: debezium-json, canal-json, maxwell-json, ogg-json and
debezium-avro-confluent (formats/cdc/envelope.py holds what they share)."""

from .canal import CanalJsonCodec
from .debezium import DebeziumJsonCodec
from .debezium_avro import DebeziumAvroConfluentCodec
from .maxwell import MaxwellJsonCodec
from .ogg import OggJsonCodec

__all__ = ["CanalJsonCodec", "DebeziumAvroConfluentCodec", "DebeziumJsonCodec", "MaxwellJsonCodec", "OggJsonCodec"]
