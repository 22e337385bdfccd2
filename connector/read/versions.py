"""Executor side: each record's version for a table read that keeps a key's record of the highest version
(option scan.upsert.version): the record's timestamp, or a header's value read as an integer's text
(kafka/header_versions.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import RecordError
from ..kafka.header_versions import NoVersion, header_versions
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
    try:
        return header_versions(table[META_PREFIX + HEADERS].combine_chunks(), source.header)
    except NoVersion as e:
        record = _record(table, pa.array(np.arange(table.num_rows) == e.row), where)
        if e.text is None:
            raise RecordError(
                f"{record} has no header '{source.header}', which option scan.upsert.version takes its version from "
                "(write it on every record, tombstones too)"
            ) from None
        raise RecordError(
            f"{record} has header '{source.header}' = {e.text!r}, not an integer's text (option scan.upsert.version)"
        ) from None


def _record(table: pa.Table, mask: pa.Array, where: str) -> str:
    offset = table[OFFSET].combine_chunks().filter(mask)[0].as_py()
    return f"the record at {where} offset {offset}"
