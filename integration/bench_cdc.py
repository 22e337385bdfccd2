"""Decode throughput of the change-envelope formats next to json, in one process on one core (no Kafka, no Spark).

    integration/dev python -m integration.bench_cdc [records] [--repeat N]

The same 6-field rows (integration.bench_kafka.row) as json values and as Debezium (MySQL connector, schemas
disabled: a `source` block, one event in three an update with its before image), Canal (every value text) and
Maxwell messages. Two steps are timed, in chunks of 10 000 records as the read side calls them:
  format    the codec alone: json's decode() against the changelog decoder's decode_changes() (its fast path,
            Arrow's JSON reader over the batch), and that decoder's per-envelope path (orjson) for comparison;
  read      the executor's whole decode step (connector/read/record_decoder.py and read/changes.py): records -> rows
            in the table's schema with the change-type column, as a changelog read yields them to Spark.
Each step runs back to back with json's same step, repeatedly: records/s are medians, the ratio (json's time
over ours, so below 1 is slower than json) is the median over those pairs, so that a noisy moment weighs on
both. Test/dev tooling only: the product never imports this package.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import orjson
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType
from pyspark_upsert_kafka.formats import make_codec
from pyspark_upsert_kafka.formats.json.values import json_bytes
from pyspark_upsert_kafka.read.fetch import Records
from pyspark_upsert_kafka.read.range_calculator import PartitionRange
from pyspark_upsert_kafka.read.spec import parse_read_spec
from pyspark_upsert_kafka.read.task import range_decoder

from integration.bench_formats import CHUNK, CONTEXT, SCHEMA, chunks, timed
from integration.bench_kafka import row

TABLE = StructType(
    [
        StructField("id", LongType(), False),
        StructField("name", StringType(), False),
        StructField("category", StringType(), False),
        StructField("price", DoubleType(), False),
        StructField("quantity", IntegerType(), False),
        StructField("ts", LongType(), False),
        StructField("_change_type", StringType()),
    ]
)


def debezium(i: int) -> bytes:
    after = row(i)
    before = dict(after, quantity=after["quantity"] + 1) if i % 3 == 1 else None
    source = {
        "version": "2.5.0.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": after["ts"], "snapshot": "false",
        "db": "shop", "sequence": None, "table": "orders", "server_id": 223344, "gtid": None,
        "file": "mysql-bin.000003", "pos": 1000 + i, "row": 0, "thread": 8, "query": None,
    }  # fmt: skip
    op = "u" if before else "c"
    return json_bytes({"before": before, "after": after, "source": source, "op": op, "ts_ms": after["ts"] + 5})


def canal(i: int) -> bytes:
    data = {k: str(v) for k, v in row(i).items()}
    return json_bytes(
        {
            "data": [data],
            "database": "shop",
            "es": 1_790_000_000_000 + i,
            "id": i,
            "isDdl": False,
            "mysqlType": None,
            "old": None,
            "pkNames": ["id"],
            "sql": "",
            "sqlType": None,
            "table": "orders",
            "ts": 1_790_000_000_100 + i,
            "type": "INSERT",
        }
    )


def maxwell(i: int) -> bytes:
    return json_bytes(
        {
            "database": "shop",
            "table": "orders",
            "type": "insert",
            "ts": 1_790_000_000 + i,
            "xid": i,
            "commit": True,
            "data": row(i),
        }
    )


def bare_loads(payloads: list[bytes]) -> None:
    """orjson.loads of every payload, nothing kept: the floor of any per-envelope Python path."""
    loads = orjson.loads
    for part in chunks(payloads):
        for p in part:
            loads(p)


def read_step(value_format: str, values: list[bytes]) -> Callable[[], object]:
    options = {
        "topic": "bench",
        "properties.bootstrap.servers": "127.0.0.1:9",  # never contacted: decoding only
        "key.fields": "id",
        "value.format": value_format,
        "read.mode": "changelog",
    }
    spec = parse_read_spec(options, TABLE, streaming=False)
    keys = [json_bytes({"id": i}) for i in range(len(values))]
    parts = [
        Records(keys[i : i + CHUNK], values[i : i + CHUNK], list(range(i, min(i + CHUNK, len(values)))))
        for i in range(0, len(values), CHUNK)
    ]

    def run() -> None:
        decoder = range_decoder(spec, PartitionRange("bench", 0, 0, len(values)))
        for _ in decoder.changelog(parts):
            pass

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("records", nargs="?", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    n, repeat = args.records, args.repeat

    payloads = {
        "json": [json_bytes(row(i)) for i in range(n)],
        "debezium-json": [debezium(i) for i in range(n)],
        "canal-json": [canal(i) for i in range(n)],
        "maxwell-json": [maxwell(i) for i in range(n)],
    }
    json_decoder = make_codec("json", "value.format", {}, CONTEXT).decoder(SCHEMA)
    baselines = {
        "format": lambda: [json_decoder.decode(c) for c in chunks(payloads["json"])],
        "read": read_step("json", payloads["json"]),
    }
    steps: list[tuple[str, str, Callable[[], object]]] = []
    for name in ("debezium-json", "canal-json", "maxwell-json"):
        decoder = make_codec(name, "value.format", {}, CONTEXT).changelog_decoder(SCHEMA)
        steps.append((name, "format", lambda d=decoder, p=payloads[name]: [d.decode_changes(c) for c in chunks(p)]))
        each = lambda d=decoder, p=payloads[name]: [d._decode_each(list(c)) for c in chunks(p)]  # noqa: E731
        steps.append((name, "format, per envelope", each))
        steps.append((name, "read", read_step(name, payloads[name])))
    steps.append(("debezium-json", "orjson.loads alone", lambda: bare_loads(payloads["debezium-json"])))

    sizes = {name: sum(map(len, p)) / n for name, p in payloads.items()}
    print(f"{n:,} records, median of {repeat}; bytes per value: " + ", ".join(f"{k} {v:.0f}" for k, v in sizes.items()))
    print(
        "each step runs back to back with json's same step (format: the codec; read: the decode step); ratio: of pairs"
    )
    print(f"{'format':<16}{'step':<24}{'records/s':>12}{'MB/s':>8}{'json rec/s':>12}{'ratio':>7}")
    for name, step, run in steps:
        baseline = baselines["read" if step == "read" else "format"]
        ours, theirs = [], []
        for _ in range(repeat):
            ours.append(timed(run))
            theirs.append(timed(baseline))
        seconds = statistics.median(ours)
        ratio = statistics.median(t / o for o, t in zip(ours, theirs))
        print(
            f"{name:<16}{step:<24}{n / seconds:>12,.0f}{n * sizes[name] / seconds / 1e6:>8.1f}"
            f"{n / statistics.median(theirs):>12,.0f}{ratio:>7.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
