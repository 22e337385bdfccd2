"""A MapState of the table helpers, read and written many entries at a time: a micro-batch's touched keys in one
exchange each way (spark_internals.MapStateCalls), or, where PySpark's client is not as read there, through the
MapState's own one-key calls. One place for the choice, so that every helper keeps state per entry the same way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql.types import StringType, StructField, StructType

from ..spark_internals import map_state_calls


class MapEntries:
    """A state group's entries of one MapState, keyed by one text (a key's, a group's)."""

    def __init__(self, handle: Any, name: str, key: str, value: StructType, ttl_ms: int | None = None) -> None:
        self._state = handle.getMapState(name, StructType([StructField(key, StringType())]), value, ttl_ms)
        self._calls = map_state_calls(self._state)

    def held(self, keys: Sequence[str]) -> list[tuple[Any, ...] | None]:
        """Each key's value (None: no entry); nothing is read while the group holds no entry (a fresh query)."""
        if not keys or not self._state.exists():
            return [None] * len(keys)
        wanted = [(k,) for k in keys]
        if self._calls:
            return self._calls.get_values(wanted)
        return [self._state.getValue(k) for k in wanted]

    def write(self, keys: Sequence[str], values: Sequence[tuple[Any, ...]], removed: Sequence[str] = ()) -> None:
        """Entries put (a key's value replaced) and removed."""
        put, gone = [(k,) for k in keys], [(k,) for k in removed]
        if self._calls:
            self._calls.update_values(put, values)
            self._calls.remove_keys(gone)
            return
        for k, v in zip(put, values):
            self._state.updateValue(k, v)
        for k in gone:
            self._state.removeKey(k)
