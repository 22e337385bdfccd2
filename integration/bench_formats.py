"""Codec throughput next to the bare library loop, in one process on one core (no Kafka, no Spark).

    integration/dev python -m integration.bench_formats [records] [--repeat N]

For each format: decode (a batch of Kafka value bytes -> Arrow columns) and encode (Arrow columns -> bytes)
in chunks of 10 000 records, as the connector calls them, against the bare per-record library loop into
Python objects in the same run (json: orjson.loads / orjson.dumps of a dict, right-sized as the connector
does; avro: fastavro's schemaless_reader / schemaless_writer; csv: the csv module; raw: bytes.decode /
str.encode). The bare loop
gets its input for free (dicts prebuilt) and produces no columns, so it is a ceiling for per-record Python.
Each figure is the median of several repetitions; the ratio (codec / bare) is the median over runs taken
in pairs, back to back. avro-confluent runs when
SCHEMA_REGISTRY_URL names a registry. Test/dev tooling only: the product never imports this package.
"""

from __future__ import annotations

import argparse
import csv
import gc
import io
import os
import statistics
import time
import uuid
from collections.abc import Callable, Sequence

import orjson
import pyarrow as pa
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from pyspark_upsert_kafka.formats import CodecContext, make_codec
from pyspark_upsert_kafka.formats.json_values import json_bytes

from integration.bench_kafka import AVRO_VALUE_SCHEMA, row

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
    args = parser.parse_args(argv)
    n, repeat = args.records, args.repeat

    rows = [row(i) for i in range(n)]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    batches = table.to_batches(max_chunksize=CHUNK)
    parsed_avro = parse_schema(AVRO_VALUE_SCHEMA)
    name_rows = [{"name": r["name"]} for r in rows]
    name_batches = table.select(["name"]).to_batches(max_chunksize=CHUNK)
    name_schema = pa.schema([SCHEMA.field("name")])

    cases: list[tuple[str, Callable[[], object], Callable[[], object], Callable[[], object], Callable[[], object]]]
    cases = []

    json_codec = make_codec("json", "value.format", {}, CONTEXT)
    json_payloads = [json_bytes(r) for r in rows]
    cases.append(
        (
            "json",
            lambda: codec_decode(json_codec, json_payloads, SCHEMA),
            lambda: bare_json_decode(json_payloads),
            lambda: codec_encode(json_codec, batches, SCHEMA),
            lambda: bare_json_encode(rows),
        )
    )

    avro_codec = make_codec("avro", "value.format", {"schema": orjson.dumps(AVRO_VALUE_SCHEMA).decode()}, CONTEXT)
    avro_payloads = [p for b in batches for p in avro_codec.encoder(SCHEMA).encode(b)]
    cases.append(
        (
            "avro",
            lambda: codec_decode(avro_codec, avro_payloads, SCHEMA),
            lambda: bare_avro_decode(avro_payloads, parsed_avro),
            lambda: codec_encode(avro_codec, batches, SCHEMA),
            lambda: bare_avro_encode(rows, parsed_avro),
        )
    )

    registry = os.environ.get("SCHEMA_REGISTRY_URL")
    if registry:
        options = {"url": registry, "subject": f"bench-formats-{uuid.uuid4().hex[:8]}"}
        confluent = make_codec("avro-confluent", "value.format", options, CONTEXT)
        confluent_payloads = [p for b in batches for p in confluent.encoder(SCHEMA).encode(b)]
        cases.append(
            (
                "avro-confluent",
                lambda: codec_decode(confluent, confluent_payloads, SCHEMA),
                lambda: bare_avro_decode(confluent_payloads, parsed_avro, skip=5),
                lambda: codec_encode(confluent, batches, SCHEMA),
                lambda: bare_avro_encode(rows, parsed_avro),
            )
        )

    csv_codec = make_codec("csv", "value.format", {}, CONTEXT)
    csv_payloads = [p for b in batches for p in csv_codec.encoder(SCHEMA).encode(b)]
    cases.append(
        (
            "csv",
            lambda: codec_decode(csv_codec, csv_payloads, SCHEMA),
            lambda: bare_csv_decode(csv_payloads),
            lambda: codec_encode(csv_codec, batches, SCHEMA),
            lambda: bare_csv_encode(rows),
        )
    )

    raw_codec = make_codec("raw", "value.format", {}, CONTEXT)
    raw_payloads = [r["name"].encode() for r in rows]
    cases.append(
        (
            "raw (string)",
            lambda: codec_decode(raw_codec, raw_payloads, name_schema),
            lambda: [[p.decode() for p in part] for part in chunks(raw_payloads)],
            lambda: codec_encode(raw_codec, name_batches, name_schema),
            lambda: [[r["name"].encode() for r in part] for part in chunks(name_rows)],
        )
    )

    print(f"{n:,} records of 6 fields (json ~{sum(map(len, json_payloads)) // max(n, 1)} bytes), median of {repeat}")
    print(f"{'format':<16}{'decode rec/s':>14}{'bare':>14}{'ratio':>8}   {'encode rec/s':>14}{'bare':>14}{'ratio':>8}")
    for name, decode, bare_decode, encode, bare_encode in cases:
        d, bd, dr = compare(n, decode, bare_decode, repeat)
        e, be, er = compare(n, encode, bare_encode, repeat)
        print(f"{name:<16}{d:>14,.0f}{bd:>14,.0f}{dr:>8.2f}   {e:>14,.0f}{be:>14,.0f}{er:>8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
