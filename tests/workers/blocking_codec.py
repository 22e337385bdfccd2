"""The json codec, except that a task's first attempt stops before decoding its `block-at`-th chunk of records
until the test releases it: the task is then in the middle of its range, with the rest of its records still
in Kafka, while the test does something to the broker. Use it as
`value.format=tests.workers.blocking_codec:BlockingJsonCodec` with `value.blocking-json.signal-dir`; the
task writes `reached` there and waits (at most `patience` seconds) until the test creates `released`."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
from pyspark_upsert_kafka.formats import Codec, CodecContext, Decoded, Decoder, Encoder
from pyspark_upsert_kafka.formats.json.codec import JsonCodec


class BlockingJsonCodec(Codec):
    name = "blocking-json"
    option_names = frozenset({"signal-dir", "block-at", "patience"})

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        self.json = JsonCodec({}, context)
        self.signal_dir = Path(options["signal-dir"])
        self.block_at = int(options.get("block-at", "2"))
        self.patience_s = float(options.get("patience", "120"))

    def decoder(self, schema: pa.Schema) -> Decoder:
        return BlockingDecoder(self, self.json.decoder(schema))

    def encoder(self, schema: pa.Schema) -> Encoder:
        return self.json.encoder(schema)


class BlockingDecoder(Decoder):
    def __init__(self, codec: BlockingJsonCodec, inner: Decoder) -> None:
        self.codec, self.inner, self.calls = codec, inner, 0

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        from pyspark import TaskContext

        self.calls += 1
        context = TaskContext.get()
        if self.calls == self.codec.block_at and context is not None and context.attemptNumber() == 0:
            signals = self.codec.signal_dir
            (signals / "reached").write_text(str(self.calls))
            deadline = time.monotonic() + self.codec.patience_s
            while not (signals / "released").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return self.inner.decode(payloads)
