"""Key/value formats (codecs) for upsert-kafka: bytes <-> Arrow, per batch."""

from .codec import Codec, CodecContext, Decoded, Decoder, Encoder, FormatOptionError
from .registry import available_formats, codec_class, make_codec, register_codec

__all__ = [
    "Codec",
    "CodecContext",
    "Decoded",
    "Decoder",
    "Encoder",
    "FormatOptionError",
    "available_formats",
    "codec_class",
    "make_codec",
    "register_codec",
]
