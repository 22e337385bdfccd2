"""Executor side: each record's version for a table read that keeps a key's record of the highest version
(option scan.upsert.version): the record's timestamp, or a header's value read as an integer's text. Columnar: the
headers are flattened and matched as Arrow arrays, not visited record by record."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import RecordError
from ..options.catalog_read import VersionSource
from .latest_per_key import META_PREFIX, OFFSET

TIMESTAMP, HEADERS = "timestamp", "header-list"


def metadata_kind(source: VersionSource) -> str:
    """The record metadata the version is read from (fetch collects it)."""
    return TIMESTAMP if source.header is None else HEADERS


def versions(table: pa.Table, source: VersionSource, where: str) -> pa.Array:
    """The int64 version of each of the reducer's rows (`where`: the topic and partition, for errors); a record
    without one fails the read, naming it."""
    if source.header is None:
        stamps = table[META_PREFIX + TIMESTAMP].combine_chunks()
        missing = pc.less(stamps, 0)
        if pc.any(missing).as_py():
            raise RecordError(f"{_record(table, missing, where)} has no timestamp, which option scan.upsert.version "
                              "takes as its version")  # fmt: skip
        return stamps
    lists = table[META_PREFIX + HEADERS].combine_chunks()
    flat, parents = pc.list_flatten(lists), pc.list_parent_indices(lists)
    named = pc.equal(pc.struct_field(flat, "key"), source.header)
    owners = parents.filter(named).to_numpy(zero_copy_only=False)
    last = np.full(table.num_rows, -1, np.int64)
    last[owners] = np.arange(len(owners))  # a record's last header of the name (a later assignment wins)
    if (last < 0).any():
        raise RecordError(
            f"{_record(table, pa.array(last < 0), where)} has no header '{source.header}', which option "
            "scan.upsert.version takes its version from (write it on every record, tombstones too)"
        )
    texts = pc.struct_field(flat, "value").filter(named).take(pa.array(last)).cast(pa.string())
    try:
        return pc.cast(pc.utf8_trim_whitespace(texts), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        bad = next(i for i, t in enumerate(texts.to_pylist()) if not _integer(t))
        mask = pa.array(np.arange(table.num_rows) == bad)
        raise RecordError(
            f"{_record(table, mask, where)} has header '{source.header}' = {texts[bad].as_py()!r}, not an integer's "
            "text (option scan.upsert.version)"
        ) from None


def _integer(text: str | None) -> bool:
    try:
        int(text or "")
    except ValueError:
        return False
    return -(2**63) <= int(text or "") < 2**63


def _record(table: pa.Table, mask: pa.Array, where: str) -> str:
    offset = table[OFFSET].combine_chunks().filter(mask)[0].as_py()
    return f"the record at {where} offset {offset}"
