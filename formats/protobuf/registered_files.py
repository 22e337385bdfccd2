"""The files protobuf-confluent registers (what confluent-kafka's ProtobufSerializer registers from a generated
module) and how a file the registry holds in another text is found the same (confluent_codec.py)."""

from __future__ import annotations

import base64
import binascii

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor
from google.protobuf.message import DecodeError

from .schema import is_builtin


def files_to_register(file: FileDescriptor) -> list[tuple[str, str, list[str]]]:
    """(name, base64 FileDescriptorProto, imported non-builtin names) of `file` and what it imports, imports first,
    `file` last: what confluent-kafka's serializer registers (builtin files are never registered)."""
    out: list[tuple[str, str, list[str]]] = []
    seen: set[str] = set()

    def visit(f: FileDescriptor) -> None:
        if f.name in seen:
            return
        seen.add(f.name)
        imports = [d for d in f.dependencies if not is_builtin(d.name)]
        for d in imports:
            visit(d)
        out.append((f.name, base64.standard_b64encode(_as_generated(f)).decode("ascii"), [d.name for d in imports]))

    visit(file)
    return out


def same_file(ours: str, held: str) -> bool:
    """Whether a registered schema's text is our file's (base64 FileDescriptorProtos both), json_names aside."""
    other = serialized_bytes(held)
    if other is None:  # .proto source text: not compared
        return False
    return _normalized(descriptor_pb2.FileDescriptorProto.FromString(other)) == _normalized(
        descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(ours))
    )


def _as_generated(file: FileDescriptor) -> bytes:
    """A file's FileDescriptorProto as protoc's Python generator serializes it (what confluent-kafka's serializer
    registers from a generated module): a field's `json_name` only where the .proto sets one. A descriptor set
    (`protoc --descriptor_set_out`) holds every field's json_name; registered so, the same file would be another
    schema to the registry, which a look-up does not find and a registration makes a new version of."""
    proto = descriptor_pb2.FileDescriptorProto.FromString(file.serialized_pb)
    return proto.SerializeToString() if _strip_json_names(proto) else file.serialized_pb


def _normalized(proto: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    _strip_json_names(proto)
    return proto


def _strip_json_names(proto: descriptor_pb2.FileDescriptorProto) -> bool:
    """Clear every json_name protoc would give a field that sets none; whether any was."""
    stripped = False
    messages = list(proto.message_type)
    fields = list(proto.extension)
    while messages:
        message = messages.pop()
        messages.extend(message.nested_type)
        fields.extend([*message.field, *message.extension])
    for field in fields:
        if field.HasField("json_name") and field.json_name == _default_json_name(field.name):
            field.ClearField("json_name")
            stripped = True
    return stripped


def _default_json_name(name: str) -> str:
    """protoc's json_name of a field that sets none: lowerCamelCase, each `_` dropped and the next letter upper."""
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def serialized_bytes(text: str) -> bytes | None:
    """A base64 FileDescriptorProto's bytes; None for anything else (.proto source text)."""
    try:
        data = base64.b64decode(text, validate=True)
        descriptor_pb2.FileDescriptorProto.FromString(data)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return data
