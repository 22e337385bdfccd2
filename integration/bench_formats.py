"""Codec throughput next to the bare library loop, in one process on one core (no Kafka, no Spark).

    integration/dev python -m integration.bench_formats [records] [--repeat N]

For each format: decode (a batch of Kafka value bytes -> Arrow columns) and encode (Arrow columns -> bytes) in
chunks of 10 000 records, as the connector calls them, against the bare per-record library loop into Python
objects in the same run (json and json-confluent: orjson.loads / orjson.dumps of a dict, right-sized as the
connector does; avro: fastavro's schemaless_reader / schemaless_writer; protobuf and protobuf-confluent: the
protobuf library's FromString / SerializeToString of the message `Row` protobuf-confluent derives from the
columns; csv: the csv module; raw: bytes.decode / str.encode). The bare loop gets its input for free (dicts
prebuilt) and produces no columns, so it is a ceiling for per-record Python. Each figure is the median of several
repetitions; the ratio (codec / bare) is the median over runs taken in pairs, back to back. The registry formats
(avro-confluent, json-confluent, protobuf-confluent) use the registry SCHEMA_REGISTRY_URL names, else one started
here (integration/registry.py). The figures are written to integration/results/formats.json (--out), from which
the performance page's formats table is made. Test/dev tooling only: the product never imports this package.
"""

from __future__ import annotations

import argparse
import csv
import gc
import io
import json
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow as pa
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from google.protobuf import descriptor_pb2
from pyspark_upsert_kafka.formats import CodecContext, make_codec
from pyspark_upsert_kafka.formats.json.values import json_bytes
from pyspark_upsert_kafka.formats.protobuf.derived import ROW, derived_message
from pyspark_upsert_kafka.formats.protobuf.schema import message_class

from integration.bench_kafka import AVRO_VALUE_SCHEMA, row

RESULTS = Path(__file__).resolve().parent / "results" / "formats.json"
CHUNK = 10_000  # records per decode / encode call (connector.fetch.CHUNK_RECORDS)
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("category", pa.string(), nullable=False),
        pa.field("price", pa.float64(), nullable=False),
        pa.field("quantity", pa.int32(), nullable=False),
        pa.field("ts", pa.int64(), nullable=False),
    ]
)
CONTEXT = CodecContext(role="value", topics=("bench",))


@dataclass(frozen=True)
class Case:
    """A format's figures to take: its payloads (their size is printed), the codec's and the bare loop's runs."""

    name: str
    payloads: list[bytes]
    decode: Callable[[], object]
    bare_decode: Callable[[], object]
    encode: Callable[[], object]
    bare_encode: Callable[[], object]


def chunks(items: Sequence, size: int = CHUNK) -> list[Sequence]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def timed(run: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def compare(n: int, codec: Callable[[], object], bare: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """Median records/s of the codec and of the bare loop, and the median ratio of runs taken in pairs
    (codec then bare, back to back, so that a noisy moment weighs on both)."""
    codec_times, bare_times = [], []
    for _ in range(repeat):
        codec_times.append(timed(codec))
        bare_times.append(timed(bare))
    ratio = statistics.median(b / c for c, b in zip(codec_times, bare_times))
    return n / statistics.median(codec_times), n / statistics.median(bare_times), ratio


# -- the bare library loops ----------------------------------------------------------------------


def bare_json_decode(payloads: list[bytes]) -> None:
    loads = orjson.loads
    for part in chunks(payloads):
        [loads(p) for p in part]


def bare_json_encode(rows: list[dict]) -> None:
    for part in chunks(rows):
        [json_bytes(r) for r in part]


def bare_avro_decode(payloads: list[bytes], schema: dict, skip: int = 0) -> None:
    for part in chunks(payloads):
        for p in part:
            buffer = io.BytesIO(p)
            buffer.seek(skip)
            schemaless_reader(buffer, schema, None)


def bare_avro_encode(rows: list[dict], schema: dict) -> None:
    for part in chunks(rows):
        buffer = io.BytesIO()
        for r in part:
            schemaless_writer(buffer, schema, r)


def bare_protobuf_decode(payloads: list[bytes], cls: type, skip: int = 0) -> None:
    parse = cls.FromString
    for part in chunks(payloads):
        [parse(p[skip:] if skip else p) for p in part]


def bare_protobuf_encode(rows: list[dict], cls: type) -> None:
    for part in chunks(rows):
        [cls(**r).SerializeToString() for r in part]


def protobuf_descriptor_set(schema: pa.Schema, folder: str) -> str:
    """A descriptor set file defining protobuf-confluent's derived message `Row` of `schema` (the protobuf format
    reads its type from a file)."""
    descriptors = descriptor_pb2.FileDescriptorSet()
    derived_message(schema, "bench").file.CopyToProto(descriptors.file.add())
    path = os.path.join(folder, "row.desc")
    with open(path, "wb") as f:
        f.write(descriptors.SerializeToString())
    return path


def bare_csv_decode(payloads: list[bytes]) -> None:
    for part in chunks(payloads):
        [next(csv.reader([p.decode()])) for p in part]


def bare_csv_encode(rows: list[dict]) -> None:
    for part in chunks(rows):
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="")
        for r in part:
            out.seek(0)
            out.truncate()
            writer.writerow(r.values())
            out.getvalue().encode()


# -- the codecs ----------------------------------------------------------------------------------


def codec_decode(codec, payloads: list[bytes], schema: pa.Schema) -> None:
    decoder = codec.decoder(schema)
    for part in chunks(payloads):
        decoder.decode(part)


def codec_encode(codec, batches: list[pa.RecordBatch], schema: pa.Schema) -> None:
    encoder = codec.encoder(schema)
    for batch in batches:
        encoder.encode(batch)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("records", nargs="?", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS), help="the results file to write ('' for none)")
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        registry = os.environ.get("SCHEMA_REGISTRY_URL") or _start_registry(stack)
        return _run(args, registry)


def _start_registry(stack: ExitStack) -> str:
    from integration.registry import SchemaRegistryServer

    server = SchemaRegistryServer()
    server.start()
    stack.callback(server.stop)
    return server.url


def _run(args: argparse.Namespace, registry: str) -> int:
    n, repeat = args.records, args.repeat

    rows = [row(i) for i in range(n)]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    batches = table.to_batches(max_chunksize=CHUNK)
    parsed_avro = parse_schema(AVRO_VALUE_SCHEMA)
    name_rows = [{"name": r["name"]} for r in rows]
    name_batches = table.select(["name"]).to_batches(max_chunksize=CHUNK)
    name_schema = pa.schema([SCHEMA.field("name")])

    def case(name: str, options: dict, bare_decode: Callable, bare_encode: Callable, schema: pa.Schema = SCHEMA,
             chunks_of: list[pa.RecordBatch] = batches) -> Case:  # fmt: skip
        """Format `name`'s case: its payloads are its own encoder's, each bare loop given them (or the rows)."""
        codec = make_codec(name.split(" ")[0], "value.format", options, CONTEXT)
        payloads = [p for b in chunks_of for p in codec.encoder(schema).encode(b)]
        return Case(
            name, payloads, lambda: codec_decode(codec, payloads, schema), lambda: bare_decode(payloads),
            lambda: codec_encode(codec, chunks_of, schema), bare_encode,
        )  # fmt: skip

    def registered() -> dict[str, str]:
        return {"url": registry, "subject": f"bench-formats-{uuid.uuid4().hex[:8]}"}

    row_class = message_class(derived_message(SCHEMA, "bench"))
    folder = tempfile.mkdtemp(prefix="bench-formats-")
    protobuf = {"message-class-name": ROW, "descriptor-file": protobuf_descriptor_set(SCHEMA, folder)}
    cases = [
        case("json", {}, bare_json_decode, lambda: bare_json_encode(rows)),
        case("avro", {"schema": orjson.dumps(AVRO_VALUE_SCHEMA).decode()},
             lambda p: bare_avro_decode(p, parsed_avro), lambda: bare_avro_encode(rows, parsed_avro)),
        case("avro-confluent", registered(),
             lambda p: bare_avro_decode(p, parsed_avro, skip=5), lambda: bare_avro_encode(rows, parsed_avro)),
        case("json-confluent", registered(),
             lambda p: bare_json_decode([x[5:] for x in p]), lambda: bare_json_encode(rows)),
        case("protobuf", protobuf,
             lambda p: bare_protobuf_decode(p, row_class), lambda: bare_protobuf_encode(rows, row_class)),
        case("protobuf-confluent", registered(),
             lambda p: bare_protobuf_decode(p, row_class, skip=6), lambda: bare_protobuf_encode(rows, row_class)),
        case("csv", {}, bare_csv_decode, lambda: bare_csv_encode(rows)),
        case("raw (string)", {}, lambda p: [[x.decode() for x in part] for part in chunks(p)],
             lambda: [[r["name"].encode() for r in part] for part in chunks(name_rows)], name_schema, name_batches),
    ]  # fmt: skip

    print(f"{n:,} records of 6 fields, median of {repeat}")
    header = f"{'format':<20}{'bytes':>6}{'decode rec/s':>14}{'bare':>12}{'ratio':>7}"
    print(header + f"  {'encode rec/s':>14}{'bare':>12}{'ratio':>7}")
    figures = []
    for case in cases:
        d, bd, dr = compare(n, case.decode, case.bare_decode, repeat)
        e, be, er = compare(n, case.encode, case.bare_encode, repeat)
        size = sum(map(len, case.payloads)) / max(n, 1)
        print(
            f"{case.name:<20}{size:>6.0f}{d:>14,.0f}{bd:>12,.0f}{dr:>7.2f}  {e:>14,.0f}{be:>12,.0f}{er:>7.2f}",
            flush=True,
        )
        figures.append(
            {
                "format": case.name,
                "bytes_per_record": round(size, 1),
                "decode": round(d),
                "bare_decode": round(bd),
                "decode_ratio": round(dr, 3),
                "encode": round(e),
                "bare_encode": round(be),
                "encode_ratio": round(er, 3),
            }
        )
    if args.out:
        run = {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine(), "records": n, "repeat": repeat}
        Path(args.out).write_text(json.dumps({"run": run, "formats": figures}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
