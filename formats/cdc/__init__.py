"""The change-envelope value formats: debezium-json, canal-json, maxwell-json (formats/cdc/envelope.py holds
what they share)."""

from .canal import CanalJsonCodec
from .debezium import DebeziumJsonCodec
from .maxwell import MaxwellJsonCodec

__all__ = ["CanalJsonCodec", "DebeziumJsonCodec", "MaxwellJsonCodec"]
