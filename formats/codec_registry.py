"""Look codecs up by name: built-ins, then the entry point group, then `module:Class`."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points

from ..kernel.errors import FormatOptionError
from .codec import ChangelogCodec, Codec, CodecContext
from .user_modules import import_user_module

ENTRY_POINT_GROUP = "pyspark_upsert_kafka.formats"

# Each format's class by its module under formats/ (a family's `package.module:Class`), imported when first asked
# for: every Python worker Spark starts imports this package, and most use one or two formats (all of them at once
# cost a worker about 0.2 s: confluent-kafka's registry client, fastavro, protobuf).
_BUILT_IN: dict[str, str] = {
    "json": "json.codec:JsonCodec",
    "csv": "csv.codec:CsvCodec",
    "raw": "raw_codec:RawCodec",
    "avro": "avro.codec:AvroCodec",
    "avro-confluent": "avro.confluent_codec:AvroConfluentCodec",
    "json-confluent": "json.confluent_codec:JsonConfluentCodec",
    "protobuf": "protobuf.codec:ProtobufCodec",
    "protobuf-confluent": "protobuf.confluent_codec:ProtobufConfluentCodec",
    "debezium-json": "cdc:DebeziumJsonCodec",
    "canal-json": "cdc:CanalJsonCodec",
    "maxwell-json": "cdc:MaxwellJsonCodec",
    "ogg-json": "cdc:OggJsonCodec",
    "debezium-avro-confluent": "cdc:DebeziumAvroConfluentCodec",
}
_registered: dict[str, type[Codec]] = {}


def register_codec(codec: type[Codec]) -> type[Codec]:
    """Register a codec class under `codec.name` (usable as a decorator)."""
    _registered[codec.name.lower()] = codec
    return codec


def _built_in(name: str) -> type[Codec] | None:
    where = _BUILT_IN.get(name)
    if where is None:
        return None
    module, _, attr = where.partition(":")
    cls: type[Codec] = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
    assert cls.name == name, (cls.name, name)  # the table above names each class by its own name
    return cls


def _entry_point_codecs() -> dict[str, type[Codec]]:
    return {ep.name.lower(): ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_formats() -> list[str]:
    return sorted({*_BUILT_IN, *_registered, *(ep.name.lower() for ep in entry_points(group=ENTRY_POINT_GROUP))})


def codec_class(name: str, option: str) -> type[Codec]:
    """The codec class for a format name; `option` names the option that gave it, for errors."""
    key = name.strip().lower()
    if ":" in name:
        module, _, attr = name.strip().partition(":")
        try:
            cls = getattr(import_user_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise FormatOptionError(f"option '{option}': cannot load codec '{name}': {e}") from None
        if not (isinstance(cls, type) and issubclass(cls, Codec)):
            raise FormatOptionError(f"option '{option}': '{name}' is not a formats.Codec subclass")
        return _check_role(cls, name, option)
    cls = _registered.get(key) or _built_in(key) or _entry_point_codecs().get(key)
    if cls is None:
        raise FormatOptionError(
            f"option '{option}': unknown format '{name}'; available: {', '.join(available_formats())}, "
            "or a 'module:Class' codec"
        )
    return _check_role(cls, name, option)


def _check_role(cls: type[Codec], name: str, option: str) -> type[Codec]:
    # A change envelope holds whole rows: the record key is the key columns in a key format.
    if option.startswith("key.") and issubclass(cls, ChangelogCodec):
        raise FormatOptionError(
            f"option '{option}': '{name}' is a changelog format: it can be the value format (value.format), "
            "while the key format encodes the key columns, e.g. json"
        )
    return cls


def make_codec(name: str, option: str, options: Mapping[str, str], context: CodecContext) -> Codec:
    return codec_class(name, option)(options, context)
