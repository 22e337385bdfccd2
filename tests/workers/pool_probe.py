"""A codec that reports the Kafka clients of the Spark worker it runs in (tests/write/test_write_client_pool.py):
`value.format=tests.workers.pool_probe:PoolProbeCodec`.

Decoding, every value becomes a row whose STRING columns all hold `<pid>:<consumers made>` of the reading
worker's pool. Encoding, every row becomes JSON of its columns plus `writer`: `<pid>:<producers made>` of the
writing worker's pool and `batch`, the micro-batch id."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import orjson
import pyarrow as pa
from pyspark_upsert_kafka.formats import Codec, CodecContext, Decoded, Decoder, Encoder
from pyspark_upsert_kafka.kafka.pool import CLIENT_POOL


class PoolProbeCodec(Codec):
    name = "pool-probe"

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)

    def decoder(self, schema: pa.Schema) -> Decoder:
        return ProbeDecoder(schema)

    def encoder(self, schema: pa.Schema) -> Encoder:
        return ProbeEncoder()


class ProbeDecoder(Decoder):
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        probe = f"{os.getpid()}:{CLIENT_POOL.made['consumer']}"
        columns = [pa.array([probe] * len(payloads), f.type) for f in self.schema]
        return Decoded(pa.RecordBatch.from_arrays(columns, schema=self.schema))


class ProbeEncoder(Encoder):
    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        from pyspark import TaskContext

        context = TaskContext.get()
        extra = {
            "writer": f"{os.getpid()}:{CLIENT_POOL.made['producer']}",
            "batch": context.getLocalProperty("streaming.sql.batchId") if context else None,
        }
        return [orjson.dumps(row | extra) for row in batch.to_pylist()]
