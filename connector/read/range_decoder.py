"""Executor side: what every decoder of a partition range is (Kafka records -> Arrow record batches in the table's
schema, as a changelog or as a table) and the steps they share: the read modes, skipped records counted and
logged, decode failures reported, record metadata as columns.

Two kinds implement it, chosen by `read.task.range_decoder`: records keyed by their record key
(`read.record_decoder`) and change envelopes of a changelog value format (`read.changes`).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import RecordError, escaped_prefix
from ..formats import Codec
from ..formats.codec import IGNORE_PARSE_ERRORS
from .fetch import CHUNK_RECORDS, Records
from .latest_per_key import HEADER_LIST, LatestPerKey
from .range_calculator import PartitionRange
from .spec import ReadSpec

log = logging.getLogger("upsert_kafka")


class RangeDecoder(ABC):
    """Decodes the records of one partition range; counts what it skips and logs it at the end."""

    def __init__(self, spec: ReadSpec, rng: PartitionRange) -> None:
        self.spec, self.rng, self.layout = spec, rng, spec.layout
        self.null_keys = 0
        self.bad_records = 0

    # -- the read modes --------------------------------------------------------------------------

    def changelog(self, chunks: Iterable[Records]) -> Iterator[pa.RecordBatch]:
        """Every row, in record order; a compacted changelog only the last of each key (deletes kept)."""
        if self.spec.compact:
            yield from self._latest(chunks, keep_deletes=True)
            return
        for chunk in chunks:
            batch = self._rows(chunk)
            if batch.num_rows:
                yield batch
        self._log_skips()

    def table(self, chunks: Iterable[Records]) -> Iterator[pa.RecordBatch]:
        """The live keys' last rows."""
        yield from self._latest(chunks, keep_deletes=False)

    def _latest(self, chunks: Iterable[Records], keep_deletes: bool) -> Iterator[pa.RecordBatch]:
        """The last row of each key, by latest_per_key.py's reducer: within scan.table.memory-budget, spilled to
        local disk beyond it."""
        reducer = self._reducer()
        try:
            for chunk in chunks:
                keyed = self._keyed(chunk)
                if keyed is not None:
                    reducer.add(keyed)
            # A compacted changelog keeps its deletes, in record order; a table, the live keys.
            for table in reducer.results(keep_deletes, CHUNK_RECORDS):
                batch = self._reduced_rows(table)
                if batch.num_rows:
                    yield batch
        finally:
            reducer.close()
        self._log_spill(reducer)
        self._log_skips()

    # -- what each kind of decoder defines -----------------------------------------------------------

    @abstractmethod
    def _rows(self, chunk: Records) -> pa.RecordBatch:
        """The chunk's rows in the table's schema."""

    @abstractmethod
    def _reducer(self) -> LatestPerKey:
        """The reducer of a table read (or compacted changelog), fresh."""

    @abstractmethod
    def _keyed(self, chunk: Records) -> pa.Table | None:
        """The chunk as the reducer's input (its `key`, `value` and `offset` columns); None: nothing to add."""

    @abstractmethod
    def _reduced_rows(self, table: pa.Table) -> pa.RecordBatch:
        """The rows, in the table's schema, of what the reducer kept."""

    # -- shared steps ------------------------------------------------------------------------------

    def _failed(
        self,
        role: str,
        codec: Codec,
        failures: Sequence[tuple[int, str]],
        payloads: Sequence[bytes],
        offsets: Sequence[int],
    ) -> set[int]:
        """The records that failed to decode, when ignore-parse-errors skips them (counted); else the error
        naming the first."""
        if not failures:
            return set()
        if not codec.ignore_parse_errors:
            index, reason = failures[0]
            hint = (
                f" To skip such records set '{role}.{codec.name}.{IGNORE_PARSE_ERRORS.name}' to true."
                if IGNORE_PARSE_ERRORS.name in codec.option_names
                else ""
            )
            raise RecordError(
                f"cannot decode the {role} of the record at topic '{self.rng.topic}' partition "
                f"{self.rng.partition} offset {offsets[index]} with format '{codec.name}': {reason}; "
                f"{role} bytes: {escaped_prefix(payloads[index])}.{hint}"
            )
        bad = {i for i, _ in failures}
        self.bad_records += len(bad)
        return bad

    def _metadata(self, kind: str, records: Records) -> pa.Array:
        n, rng = len(records), self.rng
        if kind == "topic":
            return pa.repeat(pa.scalar(rng.topic, pa.string()), n)
        if kind == "partition":
            return pa.repeat(pa.scalar(rng.partition, pa.int32()), n)
        if kind == "offset":
            return pa.array(records.offsets, pa.int64())
        if kind == "watermark":
            millis = pa.scalar(rng.watermark_ms, pa.int64())
            return pa.repeat(millis, n).cast(pa.timestamp("ms", tz="UTC"))
        values = records.meta[kind]
        if kind == "timestamp":  # -1: the record has no timestamp
            millis = pa.array(values, pa.int64())
            return pc.if_else(pc.less(millis, 0), None, millis).cast(pa.timestamp("ms", tz="UTC"))
        if kind == "headers":
            return pa.array(values, pa.map_(pa.string(), pa.binary()))
        if kind == "header-list":
            return pa.array(values, HEADER_LIST)
        if kind == "leader-epoch":
            return pa.array(values, pa.int32())
        return pa.array(values, pa.string())  # timestamp-type

    def _log_skips(self) -> None:
        if self.null_keys or self.bad_records:
            log.warning(
                "%s: skipped %d record(s) with a null key and %d that failed to decode (ignore-parse-errors)",
                self.rng,
                self.null_keys,
                self.bad_records,
            )

    def _log_spill(self, reducer: LatestPerKey) -> None:
        if reducer.spilled:
            log.info(
                "%s: the latest records per key outgrew a quarter of scan.table.memory-budget (%d bytes): %d run(s), "
                "%d bytes, spilled to local disk",
                self.rng,
                self.spec.table_memory_budget,
                reducer.runs,
                reducer.spilled_bytes,
            )
