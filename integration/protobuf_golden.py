"""The protobuf golden corpus: bytes the official protobuf library and confluent-kafka's ProtobufSerializer wrote,
which the tests read back exactly (tests/formats/test_protobuf_golden.py).

    integration/dev python -m integration.protobuf_golden

Not part of CI: the files it writes are committed. It compiles tests/formats/golden/protobuf/shop/*.proto with
protoc (grpcio-tools) into shop.desc (a descriptor set, --include_imports: what option descriptor-file takes) and
into generated Python classes (in a temporary folder, never committed), then:
- protobuf.json: each case's message built with the generated `shop.order_pb2.Order` class and serialized with its
  SerializeToString, with the row the message holds (written here from the case's own values); and under "proto2"
  the same for shop/legacy.proto's `shop.legacy.Stock` (proto2, as Flink's own protobuf tests), each with the row
  read with read-default-values too;
- protobuf_confluent.json: the same cases (and a second message of the file, and a nested one: message indexes
  [1] and [0, 0]) serialized by confluent-kafka's ProtobufSerializer against a real Apicurio registry started for
  the run, with the schemas it registered (subject, text, references) in registration order. Record headers hold
  that registry's ids: a test registers the same schemas and puts its own ids in.
Each row is JSON: bytes as base64, a Timestamp as microseconds since the epoch, a map as [key, value] pairs.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from integration.registry import SchemaRegistryServer

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "formats" / "golden" / "protobuf"
TOPIC = "golden-orders"

# name -> (fields set on Order, the row it reads as, in the table's columns when all are declared)
# fmt: off
_EMPTY_ROW = {
    "id": 0, "name": None, "big": 0, "huge": 0, "small_u": 0, "price": 0.0, "ratio": 0.0, "paid": False, "blob": "",
    "kind": "KIND_UNKNOWN", "tags": [], "attrs": [], "total": None, "lines": [], "at": None, "maybe": None,
    "card": None, "voucher": None,
}
CASES = [
    ("empty", {}, {}),
    (
        "full",
        {
            "id": 7, "name": "Ada", "big": -(2**63), "huge": 2**63 - 1, "small_u": 2**32 - 1, "price": 12.5,
            "ratio": 0.25, "paid": True, "blob": b"\x00\xff\x10", "kind": 1, "tags": ["a", "", "c"],
            "attrs": {"x": -1}, "total": {"currency": "EUR", "units": 1234}, "lines": [{"sku": "s1", "qty": 2}, {}],
            "at": (1_700_000_000, 123_456_000), "maybe": 42, "card": "visa",
        },
        {
            "id": 7, "name": "Ada", "big": -(2**63), "huge": 2**63 - 1, "small_u": 2**32 - 1, "price": 12.5,
            "ratio": 0.25, "paid": True, "blob": base64.b64encode(b"\x00\xff\x10").decode(), "kind": "BOOK",
            "tags": ["a", "", "c"], "attrs": [["x", -1]], "total": {"currency": "EUR", "units": 1234},
            "lines": [{"sku": "s1", "qty": 2}, {"sku": "", "qty": 0}], "at": 1_700_000_000_123_456, "maybe": 42,
            "card": "visa",
        },
    ),
    (
        "oneof_other_and_presence",
        {"id": -1, "name": "", "voucher": 0, "maybe": 0, "total": {}, "kind": 2, "at": (-1, 0)},
        {
            "id": -1, "name": "", "voucher": 0, "maybe": 0, "total": {"currency": "", "units": 0}, "kind": "GAME",
            "at": -1_000_000,
        },
    ),
]


# proto2 (shop/legacy.proto): name -> (fields set on Stock, the row it reads as, the row with read-default-values)
_STOCK_UNSET = {"label": None, "count": None, "active": None, "place": None, "bins": [], "box": None, "delta": None,
                "lot": None, "code": None}
_STOCK_DEFAULTS = {"label": "unlabelled", "count": 7, "active": False, "place": "SHELF", "bins": [],
                   "box": {"weight": 1.5, "note": ""}, "delta": -3, "lot": 0, "code": base64.b64encode(b"x").decode()}
PROTO2_CASES = [
    ("required_only", {"sku": 1}, {"sku": 1, **_STOCK_UNSET}, {"sku": 1, **_STOCK_DEFAULTS}),
    (
        "set_to_their_defaults_and_beyond",
        {"sku": -2, "label": "unlabelled", "count": 0, "active": False, "place": 2, "bins": [1, -1, 2**31 - 1],
         "box": {"note": "n"}, "delta": -(2**63), "lot": 2**32 - 1, "code": b""},
        {"sku": -2, "label": "unlabelled", "count": 0, "active": False, "place": "STORE", "bins": [1, -1, 2**31 - 1],
         "box": {"weight": None, "note": "n"}, "delta": -(2**63), "lot": 2**32 - 1, "code": ""},
        {"sku": -2, "label": "unlabelled", "count": 0, "active": False, "place": "STORE", "bins": [1, -1, 2**31 - 1],
         "box": {"weight": 1.5, "note": "n"}, "delta": -(2**63), "lot": 2**32 - 1, "code": ""},
    ),
]
# fmt: on


def _order(order_pb2, fields: dict):
    fields = dict(fields)
    at, total, lines, attrs, maybe = (fields.pop(k, None) for k in ("at", "total", "lines", "attrs", "maybe"))
    msg = order_pb2.Order(**fields)
    if at is not None:
        msg.at.seconds, msg.at.nanos = at
    if total is not None:
        msg.total.SetInParent()
        msg.total.MergeFrom(msg.total.__class__(**total))
    for line in lines or ():
        msg.lines.add(**line)
    for k, v in (attrs or {}).items():
        msg.attrs[k] = v
    if maybe is not None:
        msg.maybe.value = maybe
    return msg


def _stock(legacy_pb2, fields: dict):
    fields = dict(fields)
    box = fields.pop("box", None)
    msg = legacy_pb2.Stock(**fields)
    if box is not None:
        msg.box.SetInParent()
        msg.box.MergeFrom(legacy_pb2.Stock.Box(**box))
    return msg


def protoc(include: Path, protos: Iterable[Path], descriptor_set: Path, python_out: Path) -> None:
    """Compile `protos` (files under `include`) with protoc (grpcio-tools): a descriptor set holding every file they
    import (what option descriptor-file takes) and the generated Python modules (`<path>_pb2.py`) under
    `python_out`. Also the tests' way to compile their .proto files."""
    import grpc_tools
    from grpc_tools import protoc as grpc_protoc

    builtin = Path(grpc_tools.__file__).parent / "_proto"
    args = ["protoc", f"-I{include}", f"-I{builtin}", "--include_imports", f"--descriptor_set_out={descriptor_set}"]
    if grpc_protoc.main([*args, f"--python_out={python_out}", *(str(p) for p in protos)]) != 0:
        raise RuntimeError(f"protoc failed to compile {', '.join(str(p) for p in protos)}")


def compile_protos(out: Path) -> None:
    protos = [GOLDEN / "shop" / f for f in ("order.proto", "common.proto", "legacy.proto")]
    protoc(GOLDEN, protos, GOLDEN / "shop.desc", out)


def write(name: str, content: dict) -> None:
    (GOLDEN / name).write_text(json.dumps(content, indent=1) + "\n")
    print(f"wrote {GOLDEN / name}")


def main() -> int:
    generated = Path(tempfile.mkdtemp(prefix="protobuf-golden-"))
    compile_protos(generated)
    sys.path.insert(0, str(generated))
    order_pb2 = importlib.import_module("shop.order_pb2")
    records = [
        {"case": name, "hex": _order(order_pb2, fields).SerializeToString().hex(), "row": {**_EMPTY_ROW, **row}}
        for name, fields, row in CASES
    ]
    legacy_pb2 = importlib.import_module("shop.legacy_pb2")
    proto2 = [
        {"case": name, "hex": _stock(legacy_pb2, fields).SerializeToString().hex(), "row": row, "row_defaults": full}
        for name, fields, row, full in PROTO2_CASES
    ]
    write(
        "protobuf.json",
        {
            "writer": "the official protobuf library (generated shop.order_pb2.Order, SerializeToString)",
            "message": "shop.Order",
            "descriptor_file": "shop.desc",
            "records": records,
            "proto2": {"message": "shop.legacy.Stock", "records": proto2},
        },
    )
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    server = SchemaRegistryServer()
    server.start()
    try:
        client = SchemaRegistryClient({"url": server.url})
        ctx = SerializationContext(TOPIC, MessageField.VALUE)
        conf = {"use.deprecated.format": False, "auto.register.schemas": True}
        serialize = ProtobufSerializer(order_pb2.Order, client, conf)
        confluent = [{**r, "hex": serialize(_order(order_pb2, f), ctx).hex()} for r, (_, f, _) in zip(records, CASES)]
        extra = [  # other messages of the file: message indexes [1] and [0, 0], each under its own subject
            ("refund", order_pb2.Refund(order_id=7, reason="late"), {"order_id": 7, "reason": "late"}),
            ("nested_line", order_pb2.Order.Line(sku="s9", qty=3), {"sku": "s9", "qty": 3}),
        ]
        for name, msg, row in extra:
            topic = f"{TOPIC}-{name}"
            data = ProtobufSerializer(type(msg), client, conf)(msg, SerializationContext(topic, MessageField.VALUE))
            confluent.append({"case": name, "subject": f"{topic}-value", "hex": data.hex(), "row": row})
        registered = []
        for subject in sorted(client.get_subjects(), key=lambda s: (s.endswith("-value"), s)):  # references first
            version = client.get_latest_version(subject)
            refs = [[r.name, r.subject, r.version] for r in version.schema.references or []]
            registered.append(
                {"subject": subject, "id": version.schema_id, "schema": version.schema.schema_str, "references": refs}
            )
        write(
            "protobuf_confluent.json",
            {
                "writer": "confluent-kafka ProtobufSerializer (use.deprecated.format false), Apicurio registry",
                "topic": TOPIC,
                "registered": registered,
                "records": [{"subject": f"{TOPIC}-value", **r} for r in confluent],
            },
        )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
