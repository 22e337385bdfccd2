"""A row's change kind, one type for every part of the connector: the changelog formats' decoders and encoders,
the readers' change column, the writer, the multi-table write and the Delta mirror.

Flink's RowKind (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE, shown as +I, -U, +U, -D), spelled as Delta's change
data feed spells them, plus UPSERT: what an upsert topic's record is (the key's new value, whether or not the key
existed). The values are the strings Spark sees in a change column.
"""

from __future__ import annotations

from enum import Enum


class ChangeKind(str, Enum):
    INSERT = "insert"
    UPDATE_BEFORE = "update_preimage"  # always directly followed by its UPDATE_AFTER
    UPDATE_AFTER = "update_postimage"
    DELETE = "delete"
    UPSERT = "upsert"

    def __str__(self) -> str:  # the value, on every Python (3.12 changed a mixed-in enum's format())
        return self.value

    @property
    def short(self) -> str | None:
        """Flink's short string (RowKind.shortString()); None for UPSERT, which Flink has no kind for."""
        return _SHORT.get(self)


_SHORT = {
    ChangeKind.INSERT: "+I",
    ChangeKind.UPDATE_BEFORE: "-U",
    ChangeKind.UPDATE_AFTER: "+U",
    ChangeKind.DELETE: "-D",
}


class UpsertAction(Enum):
    """What an upsert write (a Kafka record per row, keyed) does with a row of a change kind."""

    VALUE = "value"  # the record carries the row: the key's new value
    TOMBSTONE = "tombstone"  # a record with a null value: the key is deleted
    SKIP = "skip"  # no record: a before-image, whose after-image follows


def upsert_action(kind: ChangeKind) -> UpsertAction:
    """The upsert write's reading of a change kind (Flink's upsert sink: +I and +U upsert, -D deletes, -U is
    dropped)."""
    if kind is ChangeKind.DELETE:
        return UpsertAction.TOMBSTONE
    if kind is ChangeKind.UPDATE_BEFORE:
        return UpsertAction.SKIP
    return UpsertAction.VALUE


def spellings(action: UpsertAction) -> tuple[str, ...]:
    """How a change column may name the kinds an upsert write gives `action` (lower-cased: the column is read
    case-insensitively): each kind's value and Flink's short string."""
    return kind_spellings(*[k for k in ChangeKind if upsert_action(k) is action])


def kind_spellings(*kinds: ChangeKind) -> tuple[str, ...]:
    """How a change column may name these kinds, lower-cased: each kind's value and Flink's short string."""
    return (*(k.value for k in kinds), *(k.short.lower() for k in kinds if k.short))


def kind_names() -> str:
    """The kinds a change column may name, as an error lists them."""
    return f"{', '.join(k.value for k in ChangeKind)} (or Flink's {', '.join(k.short for k in ChangeKind if k.short)})"
