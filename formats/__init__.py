"""Key/value formats (codecs) for upsert-kafka: bytes <-> Arrow, per batch."""

from .codec import (
    SPARK_TYPES,
    Codec,
    CodecContext,
    ColumnTypes,
    Decoded,
    Decoder,
    Encoder,
    FormatOptionError,
    spark_type_name,
)
from .registry import available_formats, codec_class, make_codec, register_codec

__all__ = [
    "SPARK_TYPES",
    "Codec",
    "CodecContext",
    "ColumnTypes",
    "Decoded",
    "Decoder",
    "Encoder",
    "FormatOptionError",
    "available_formats",
    "codec_class",
    "make_codec",
    "register_codec",
    "spark_type_name",
]
