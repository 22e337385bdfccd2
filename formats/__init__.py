"""Key/value formats (codecs) for upsert-kafka: bytes <-> Arrow, per batch."""

from ..kernel.change_kind import ChangeKind
from ..kernel.errors import FormatOptionError
from .codec import (
    SPARK_TYPES,
    ChangelogCodec,
    ChangelogDecoder,
    ChangelogEncoder,
    Codec,
    CodecContext,
    ColumnTypes,
    Decoded,
    DecodedChanges,
    Decoder,
    Encoder,
    Role,
    spark_type_name,
)
from .codec_registry import available_formats, codec_class, make_codec, register_codec

# The change kinds by their bare names, as custom codecs import them (`from pyspark_upsert_kafka.formats import
# INSERT`): the ChangeKind members themselves.
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = (
    ChangeKind.INSERT,
    ChangeKind.UPDATE_BEFORE,
    ChangeKind.UPDATE_AFTER,
    ChangeKind.DELETE,
)

__all__ = [
    "DELETE",
    "INSERT",
    "SPARK_TYPES",
    "UPDATE_AFTER",
    "UPDATE_BEFORE",
    "ChangeKind",
    "ChangelogCodec",
    "ChangelogDecoder",
    "ChangelogEncoder",
    "Codec",
    "CodecContext",
    "ColumnTypes",
    "Decoded",
    "DecodedChanges",
    "Decoder",
    "Encoder",
    "FormatOptionError",
    "Role",
    "available_formats",
    "codec_class",
    "make_codec",
    "register_codec",
    "spark_type_name",
]
