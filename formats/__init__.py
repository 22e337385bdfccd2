"""Key/value formats (codecs) for upsert-kafka: bytes <-> Arrow, per batch."""

from .codec import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    ChangelogCodec,
    ChangelogDecoder,
    ChangelogEncoder,
    Codec,
    CodecContext,
    Decoded,
    DecodedChanges,
    Decoder,
    Encoder,
    FormatOptionError,
)
from .registry import available_formats, codec_class, make_codec, register_codec

__all__ = [
    "DELETE",
    "INSERT",
    "UPDATE_AFTER",
    "UPDATE_BEFORE",
    "ChangelogCodec",
    "ChangelogDecoder",
    "ChangelogEncoder",
    "Codec",
    "CodecContext",
    "Decoded",
    "DecodedChanges",
    "Decoder",
    "Encoder",
    "FormatOptionError",
    "available_formats",
    "codec_class",
    "make_codec",
    "register_codec",
]
