"""Executor side: a write task's Arrow batches -> rows on their way to Kafka (write.buffer's Pending) -> the
records' keys, values, timestamps and headers, with Arrow compute.

Per batch: change kinds classified (pre-images dropped, deletes marked), null keys and per-row topics
checked, keys encoded once. Values are encoded later, when the rows are sent (`values`), so that the
reducing buffer encodes only the rows that survive it. An encoding error names the row's key and format.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import RecordError
from ..formats import ChangelogEncoder, Encoder
from ..formats.codec import Role
from ..kafka.header_versions import NoVersion, header_versions
from .buffer import Pending
from .spec import WriteSpec
from .upsert_actions import classify

# A record's headers, as the producer takes them.
Headers = list[tuple[str, bytes | None]]


class RecordEncoder:
    """Encodes one task's rows with the write's key and value formats."""

    def __init__(self, spec: WriteSpec) -> None:
        layout = spec.layout
        self.spec, self.layout = spec, layout
        self.key_encoder = layout.key_codec.encoder(layout.key_schema)
        self.value_encoder = layout.value_codec.encoder(layout.value_schema)
        self.meta = {c.kind: c.column for c in layout.metadata}
        self.skipped = 0  # pre-images dropped

    def pending(self, batch: pa.RecordBatch) -> Pending | None:
        """The batch's rows to write, with their encoded keys; None when none is left."""
        rows, deletes = self._classify(batch)
        if rows.num_rows == 0:
            return None
        self._check_keys(rows)
        topics = self._row_topics(rows)
        key_columns = rows.select(list(self.layout.key_fields)).rename_columns(list(self.layout.key_record_names))
        keys = self._encode(self.key_encoder, key_columns, rows, Role.KEY)
        return Pending(rows, deletes, keys, topics, None if self.spec.version is None else self._versions(rows))

    def topics(self, pending: Pending) -> str | list[str]:
        """The records' topic, or each record's when the write has several."""
        return pending.topics if pending.topics is not None else self.spec.topics.names[0]

    def values(self, pending: Pending) -> Sequence[bytes | None]:
        """Each row's encoded value; None (a tombstone) for a delete, unless the format writes changes."""
        rows, deletes = pending.rows, pending.deletes
        columns = list(self.layout.value_fields)
        if isinstance(self.value_encoder, ChangelogEncoder):  # a delete is an envelope too, not a tombstone
            return self._encode(self.value_encoder, rows.select(columns), rows, Role.VALUE, deletes)
        if not pc.any(deletes).as_py():
            return self._encode(self.value_encoder, rows.select(columns), rows, Role.VALUE)
        upserts = rows.filter(pc.invert(deletes))
        encoded = iter(self._encode(self.value_encoder, upserts.select(columns), upserts, Role.VALUE))
        return [None if d else next(encoded) for d in deletes.to_pylist()]

    def headers(self, rows: pa.RecordBatch) -> list[Headers | None] | None:
        """Each row's record headers, as the producer takes them: from the `headers` map, or from the
        `header-list` column in its order, a key that repeats sent each time (null: no headers)."""
        if "headers" in self.meta:
            maps: list[Headers | None] = rows.column(self.meta["headers"]).to_pylist()  # (key, value) pairs already
            return maps
        column = self.meta.get("header-list")
        if column is None:
            return None
        lists = rows.column(column)
        entries = lists.flatten()  # the entries of the rows that have a list, in row order
        keys = entries.field("key")
        if entries.null_count or keys.null_count:
            for i, row in enumerate(lists.to_pylist()):
                if any(e is None or e["key"] is None for e in row or ()):
                    raise RecordError(
                        f"column '{column}' (header-list) has a header without a key in the row with key "
                        f"{self.key_text(rows, i)}: every header needs a key; its value may be null"
                    )
        pairs = iter(zip(keys.to_pylist(), entries.field("value").to_pylist()))
        lengths = pc.fill_null(pc.list_value_length(lists), 0).to_pylist()
        nulls = lists.is_null().to_pylist()
        return [None if null else list(itertools.islice(pairs, n)) for n, null in zip(lengths, nulls)]

    def timestamps(self, rows: pa.RecordBatch) -> list[int] | None:
        """The `timestamp` metadata column as epoch ms; a null one is 0, which Kafka's client reads as now."""
        column = self.meta.get("timestamp")
        if column is None:
            return None
        millis = pc.cast(rows.column(column), pa.timestamp("ms", tz="UTC"), safe=False).cast(pa.int64())
        stamps: list[int] = pc.fill_null(millis, 0).to_pylist()
        return stamps

    def _versions(self, rows: pa.RecordBatch) -> np.ndarray:
        """Each row's version (option sink.upsert.version): its `timestamp` column's, or its header's integer text."""
        source = self.spec.version
        assert source is not None
        if source.header is None:
            stamps = rows.column(self.meta["timestamp"])
            if stamps.null_count:
                row = pc.index(stamps.is_null(), True).as_py()
                raise RecordError(f"the row with key {self.key_text(rows, row)} has no timestamp, which option "
                                  "sink.upsert.version takes as its version")  # fmt: skip
            return np.asarray(stamps.cast(pa.int64()).to_numpy(zero_copy_only=False))
        column = self.meta.get("headers") or self.meta["header-list"]
        try:
            return np.asarray(header_versions(rows.column(column), source.header).to_numpy(zero_copy_only=False))
        except NoVersion as e:
            name = source.header
            held = f"no header '{name}'" if e.text is None else f"header '{name}' = {e.text!r}, not an integer's text,"
            raise RecordError(
                f"the row with key {self.key_text(rows, e.row)} has {held} in column '{column}'; option "
                "sink.upsert.version takes each row's version from it (an integer as text, on every row)"
            ) from None

    def key_text(self, batch: pa.RecordBatch, row: int) -> str:
        return str({name: batch.column(name)[row].as_py() for name in self.layout.key_fields})

    # -- checks -------------------------------------------------------------------------------------

    def _classify(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.BooleanArray]:
        """Drop pre-images (a change-envelope format writes each as a delete, as Flink's do); return the rows to
        write and which of them are deletes."""
        where = lambda b, row: f"the row with key {self.key_text(b, row)}"  # noqa: E731
        envelopes = isinstance(self.value_encoder, ChangelogEncoder)
        rows, deletes, skipped = classify(batch, self.layout.changelog_column, where, envelopes)
        self.skipped += skipped
        return rows, deletes

    def _check_keys(self, rows: pa.RecordBatch) -> None:
        for name in self.layout.key_fields:
            nulls = rows.column(name).is_null()
            if pc.any(nulls).as_py():
                row = pc.index(nulls, True).as_py()
                raise RecordError(
                    f"key column '{name}' is null in the row with key {self.key_text(rows, row)}; an "
                    "upsert-kafka key must not be null (option 'key.fields')"
                )

    def _row_topics(self, rows: pa.RecordBatch) -> list[str] | None:
        """Each row's topic when the write has several; a row outside them fails the write."""
        topics = self.spec.topics
        column = self.spec.topic_column
        if column is None:
            return None
        values = rows.column(column).to_pylist()
        bad = sorted({t for t in set(values) if t is None or not topics.accepts(t)}, key=str)
        if bad:
            row = values.index(bad[0])
            raise RecordError(
                f"the row with key {self.key_text(rows, row)} names topic {bad[0]!r} in column "
                f"'{column}', which is not among the {topics.describe()} this write may write (option "
                f"'{'topic-pattern' if topics.pattern else 'topic'}')"
            )
        return cast(list[str], values)  # no None: `bad` would have named it

    def _encode(
        self,
        encoder: Encoder,
        part: pa.RecordBatch,
        rows: pa.RecordBatch,
        role: Role,
        deletes: pa.BooleanArray | None = None,
    ) -> list[bytes]:
        """Encode `part` (the key or value columns of `rows`); with `deletes`, as change envelopes."""

        def encode(batch: pa.RecordBatch, flags: pa.BooleanArray | None) -> list[Any]:
            if flags is None:
                return encoder.encode(batch)
            assert isinstance(encoder, ChangelogEncoder), "deletes come with a change envelope format's encoder"
            return encoder.encode_changes(batch, flags)

        try:
            return encode(part, deletes)
        except (ValueError, TypeError, OverflowError) as batch_error:
            # Find the row to name it; only on this error path is encoding done row by row.
            for i in range(part.num_rows):
                try:
                    encode(part.slice(i, 1), None if deletes is None else deletes.slice(i, 1))
                except (ValueError, TypeError, OverflowError) as e:
                    raise RecordError(
                        f"cannot encode the {role} of the row with key {self.key_text(rows, i)} for "
                        f"{self.spec.topics.describe()} with format '{self._format(role)}': {e}"
                    ) from None
            raise RecordError(f"cannot encode a {role} for {self.spec.topics.describe()}: {batch_error}") from None

    def _format(self, role: Role) -> str:
        return (self.layout.key_codec if role is Role.KEY else self.layout.value_codec).name
