"""A record's version taken from one of its headers (options scan.upsert.version and sink.upsert.version,
`header:<name>`): the last header of that name, its value an integer's text. Columnar: the headers are flattened
and matched as Arrow arrays, not visited record by record. In the Kafka wing, below read/ and write/: the table read
(read/versions.py) and the writer's reducing buffer (write/encode.py) each name a record their own way (its offset,
its key)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class NoVersion(ValueError):
    """Record `row` has no usable version: no header of the name (`text` None), or one that is not an integer."""

    def __init__(self, row: int, text: str | None) -> None:
        super().__init__(row, text)
        self.row, self.text = row, text


def header_versions(headers: pa.Array, name: str) -> pa.Array:
    """Each record's version as int64, from `headers` (a list or map array of key / value entries, one per record);
    raises NoVersion for the first record without one."""
    if isinstance(headers.type, pa.MapType):  # the writer's `headers` map: its entries, as a header list's
        kind = headers.type
        headers = headers.cast(
            pa.list_(pa.struct([kind.key_field.with_name("key"), kind.item_field.with_name("value")]))
        )
    flat, parents = pc.list_flatten(headers), pc.list_parent_indices(headers)
    named = pc.equal(pc.struct_field(flat, "key"), name)
    owners = parents.filter(named).to_numpy(zero_copy_only=False)
    last = np.full(len(headers), -1, np.int64)
    last[owners] = np.arange(len(owners))  # a record's last header of the name (a later assignment wins)
    if (last < 0).any():
        raise NoVersion(int(np.argmax(last < 0)), None)
    texts = pc.struct_field(flat, "value").filter(named).take(pa.array(last)).cast(pa.string())
    try:
        return pc.cast(pc.utf8_trim_whitespace(texts), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        bad = next(i for i, t in enumerate(texts.to_pylist()) if not _integer(t))
        raise NoVersion(bad, texts[bad].as_py()) from None


def _integer(text: str | None) -> bool:
    try:
        int(text or "")
    except ValueError:
        return False
    return -(2**63) <= int(text or "") < 2**63
