"""A complete user codec, the example formats/README.md shows (generated from this module): tab-separated
values, one column per field, column-wise in Arrow both ways. Use it as `value.format=tests.workers.tsv_codec:TsvCodec`
(or register it in the entry point group `pyspark_upsert_kafka.formats` and name it `tsv`); its one option is
`value.tsv.null-literal`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark_upsert_kafka.formats import Codec, CodecContext, Decoded, Decoder, Encoder, FormatOptionError


class TsvCodec(Codec):
    name = "tsv"  # its options are spelled value.tsv.<option> / key.tsv.<option>
    option_names = frozenset({"null-literal"})  # anything else is rejected, listing these

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)  # checks the option names
        self.null = options.get("null-literal", "\\N")
        if "\t" in self.null:
            raise FormatOptionError(f"option '{context.role}.tsv.null-literal' must not hold a tab")

    def decoder(self, schema: pa.Schema) -> Decoder:
        return TsvDecoder(schema, self.null)

    def encoder(self, schema: pa.Schema) -> Encoder:
        for f in schema:
            if pa.types.is_nested(f.type) or pa.types.is_binary(f.type):
                raise FormatOptionError(f"the tsv format cannot hold column '{f.name}' of type {f.type}")
        return TsvEncoder(self.null)


class TsvDecoder(Decoder):
    def __init__(self, schema: pa.Schema, null: str) -> None:
        self.schema, self.null = schema, null

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        try:
            return Decoded(self._batch(payloads))  # the whole batch at once: the hot path
        except (pa.ArrowInvalid, ValueError):
            pass
        # Some record is bad: only on this path decode one by one, to name each bad record.
        good, failures = [], []
        for i, payload in enumerate(payloads):
            try:
                self._batch([payload])
                good.append(payload)
            except (pa.ArrowInvalid, ValueError) as e:
                failures.append((i, str(e)))
        return Decoded(self._batch(good), tuple(failures))

    def _batch(self, payloads: Sequence[bytes]) -> pa.RecordBatch:
        text = pa.array(payloads, pa.binary()).cast(pa.string())  # checks UTF-8
        fields = pc.split_pattern(text, "\t")
        if not pc.all(pc.equal(pc.list_value_length(fields), len(self.schema)), min_count=0).as_py():
            raise ValueError(f"expected {len(self.schema)} tab-separated fields")
        columns = []
        for i, f in enumerate(self.schema):
            column = pc.list_element(fields, i) if len(payloads) else pa.array([], pa.string())
            column = pc.if_else(pc.equal(column, self.null), pa.scalar(None, pa.string()), column)
            columns.append(column.cast(f.type))  # one Arrow cast per column
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


class TsvEncoder(Encoder):
    def __init__(self, null: str) -> None:
        self.null = null

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        texts = [pc.fill_null(column.cast(pa.string()), self.null) for column in batch.columns]
        for name, text in zip(batch.schema.names, texts):
            if pc.any(pc.match_substring_regex(text, "[\t\n]"), min_count=0).as_py():
                raise ValueError(f"column '{name}' holds a tab or a line break, which tsv cannot write")
        return pc.binary_join_element_wise(*texts, "\t").cast(pa.binary()).to_pylist()
