"""The change-envelope value formats: debezium-json, canal-json, maxwell-json, ogg-json (formats/cdc/envelope.py holds
what they share)."""

from .canal import CanalJsonCodec
from .debezium import DebeziumJsonCodec
from .maxwell import MaxwellJsonCodec
from .ogg import OggJsonCodec

__all__ = ["CanalJsonCodec", "DebeziumJsonCodec", "MaxwellJsonCodec", "OggJsonCodec"]
