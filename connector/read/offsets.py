"""Offsets as Spark carries them: StreamOffset, with the batch's BatchPlan (how Spark tasks are made of the batch's
ranges is read/range_calculator.py's).

Spark stores the streaming offset as `json.dumps` of what we return and compares offsets AS STRINGS,
so StreamOffset.to_json builds its dict in one canonical order: our own keys first, sorted ("@plan", "@uncleaned",
"@watermarks"; '@' cannot occur in a topic name), then topics sorted, partitions in numeric order. The topics' form is
Spark's own Kafka source's, `{"topic": {"0": 42, "1": 7}}`, each the next offset to read. When watermarks
are tracked, their per-partition map rides along under "@watermarks", so it survives restarts in the
checkpoint. A micro-batch's end offset also records under "@plan" how the batch was planned (the split,
the idle partitions), so that Spark's replay of the batch after a restart (same start and end) gives the
same Spark partitions and the same rows whatever the options or the wall clock say by then.

Batch 0 has no stored start: Spark calls initialOffset() again when it runs the batch and when it replays
it after a restart, and by then `latest`, a group's offsets or the log start may have moved. So the initial
offset is marked ("@initial"), and the end offset of the batch planned from it records that start under
"@plan" too, as does the end offset of a batch planned from elsewhere than its stored start (past deleted
records with failOnDataLoss=false, new partitions from offset 0): a batch's range is a function of its
stored offsets. Records deleted after planning are skipped by clipping the planned slices (clip_starts).

A planned end offset also records under "@uncleaned", per partition, the (offset, wall-clock ms) marks of
read/lost_deletes.py: when the stream last saw where the log cleaner could not have been yet. An offset without them
was written before they were recorded (its micro-batch is checked as one with no mark).

Every offset carries the form's version under "@format" (FORMAT). A checkpoint's offset without one was written
before versions were recorded, in form 1; one of a later form than this code reads is refused
(StreamOffset.from_json), never guessed at: a newer package may have changed what a key means.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

from ..errors import OptionError
from .lost_deletes import Marks

# topic -> partition -> offset (or watermark, epoch ms)
Offsets = Mapping[str, Mapping[int, int]]
# topic -> partition -> (offset, wall-clock ms) marks: read/lost_deletes.py
PartitionMarks = Mapping[str, Mapping[int, Marks]]
# An offset's JSON form as parsed (json.loads, or the dict Spark hands over): what a checkpoint holds, unchecked.
ParsedJson = Mapping[str, Any]
WATERMARKS = "@watermarks"
PLAN = "@plan"
INITIAL = "@initial"
UNCLEANED = "@uncleaned"
FORMAT_KEY = "@format"
FORMAT = 1  # the form of the offsets this code writes and reads (unversioned ones are form 1 too)


def canonical(values: Offsets) -> dict[str, dict[str, int]]:
    return {t: {str(p): int(values[t][p]) for p in sorted(values[t])} for t in sorted(values)}


@dataclass(frozen=True)
class BatchPlan:
    """How one micro-batch's range was planned: the split into Spark tasks (read/range_calculator.py makes them as
    the plan says; an exactly-once writer keeps a marker per task, so a replay must give each task the same
    records) and the partitions that were idle for the merged watermark (idleness is wall-clock, a replay must not
    decide it again)."""

    max_records: int | None = None
    min_partitions: int | None = None
    idle: frozenset[tuple[str, int]] = frozenset()
    # Where the batch was planned from, when that is not the start Spark will hand back: batch 0's (Spark keeps
    # none and asks initialOffset() again), a start moved past deleted records, new partitions' offset 0.
    start: Offsets | None = field(default=None, hash=False)
    # Ranges read together in one task while their offsets add up to at most this (none: a task per range, as
    # every plan recorded before this field existed).
    coalesce: int | None = None
    # Bounded reads (batch, Trigger.AvailableNow): group_ranges' floor of tasks, with balanced groups; none: a
    # running stream's consecutive packing (coalesce_ranges), as every plan recorded before this field existed.
    min_tasks: int | None = None
    # Partitions whose deletes may have been lost, accepted with scan.compaction-lost-deletes=warn: shown in the
    # query's progress (its endOffset) and kept in the checkpoint.
    lost_deletes: frozenset[tuple[str, int]] = frozenset()

    def __post_init__(self) -> None:
        if self.start is not None:
            object.__setattr__(self, "start", _frozen(self.start))

    def to_json(self) -> dict[str, object]:
        split = {
            "max-records": self.max_records,
            "min-partitions": self.min_partitions,
            "coalesce": self.coalesce,
            "min-tasks": self.min_tasks,
        }
        out: dict[str, object] = {}
        if self.idle:
            out["idle"] = _by_topic(self.idle)
        if self.lost_deletes:
            out["lost-deletes"] = _by_topic(self.lost_deletes)
        out["split"] = {k: v for k, v in split.items() if v is not None}
        if self.start is not None:
            out["start"] = canonical(self.start)
        return out

    @classmethod
    def from_json(cls, value: ParsedJson) -> BatchPlan:
        split = value.get("split", {})
        idle = frozenset((t, int(p)) for t, ps in value.get("idle", {}).items() for p in ps)
        lost = frozenset((t, int(p)) for t, ps in value.get("lost-deletes", {}).items() for p in ps)
        start = _parse(value["start"]) if "start" in value else None
        return cls(
            split.get("max-records"),
            split.get("min-partitions"),
            idle,
            start,
            split.get("coalesce"),
            split.get("min-tasks"),
            lost,
        )


def _by_topic(partitions: frozenset[tuple[str, int]]) -> dict[str, list[int]]:
    return {t: sorted(p for tt, p in partitions if tt == t) for t in sorted({t for t, _ in partitions})}


def _parse(part: Mapping[str, Mapping[int, int] | Mapping[str, int]]) -> dict[str, dict[int, int]]:
    return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in part.items()}


def _marks(value: Iterable[Sequence[Any]]) -> Marks:
    return tuple((int(o), int(at)) for o, at in value)  # a checkpoint's JSON lists


def _frozen(values: Offsets) -> Offsets:
    """A read-only copy, partitions as ints (JSON's keys are text)."""
    return MappingProxyType({t: MappingProxyType(ps) for t, ps in _parse(values).items()})


@dataclass(frozen=True, eq=False)
class StreamOffset:
    """A stream's offset: the next offset to read per topic-partition, the per-partition watermarks (empty when
    not tracked), the plan an end offset recorded, and whether it is what initialOffset() returned (Spark never
    stores that one). Spark stores `json.dumps(to_json())` and compares offsets as that text, so two offsets are
    equal, and hash alike, when their text is."""

    offsets: Offsets
    watermarks: Offsets = field(default_factory=dict)
    plan: BatchPlan | None = None
    initial: bool = False
    # Per partition, marks for read/lost_deletes.py (none: an offset written before they were recorded).
    marks: PartitionMarks | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", _frozen(self.offsets))
        object.__setattr__(self, "watermarks", _frozen(self.watermarks))
        if self.marks is not None:
            marks = {t: MappingProxyType({int(p): _marks(m) for p, m in ps.items()}) for t, ps in self.marks.items()}
            object.__setattr__(self, "marks", MappingProxyType(marks))

    def to_json(self) -> dict[str, object]:
        """The canonical JSON-ready form: equal offsets always give equal `json.dumps` text."""
        out: dict[str, object] = {FORMAT_KEY: FORMAT}
        if self.initial:
            out[INITIAL] = True
        if self.plan is not None:
            out[PLAN] = self.plan.to_json()
        if self.marks is not None:
            ms = self.marks
            out[UNCLEANED] = {t: {str(p): [list(m) for m in ms[t][p]] for p in sorted(ms[t])} for t in sorted(ms)}
        if self.watermarks:
            out[WATERMARKS] = canonical(self.watermarks)
        return out | canonical(self.offsets)

    @classmethod
    def from_json(cls, value: ParsedJson | str) -> StreamOffset:
        """What to_json made (or Spark's text of it), or this connector's earlier, unversioned form; one of a later
        form is refused: a newer package may have changed what a key means."""
        parsed: ParsedJson = json.loads(value) if isinstance(value, str) else value
        form = parsed.get(FORMAT_KEY, 1)
        if not isinstance(form, int) or form > FORMAT:
            raise OptionError(
                f"the streaming query's checkpoint holds upsert-kafka offsets of form {form!r}, written by a newer "
                f"pyspark-upsert-kafka than this one (which reads form {FORMAT} and earlier): run the query with the "
                "package version that wrote the checkpoint or a newer one, or start it from a new checkpoint location"
            )
        topics = {t: v for t, v in parsed.items() if not t.startswith("@")}
        plan = BatchPlan.from_json(parsed[PLAN]) if PLAN in parsed else None  # none before plans were recorded
        marks = parsed.get(UNCLEANED)  # none before marks were recorded
        return cls(topics, parsed.get(WATERMARKS, {}), plan, parsed.get(INITIAL) is True, marks)

    @staticmethod
    def is_ours(value: object) -> bool:
        """Whether a source's offset (as Spark's offset log holds it, parsed) is this connector's: Spark's JVM Kafka
        source writes the same topic form, without our marks."""
        return isinstance(value, Mapping) and (FORMAT_KEY in value or PLAN in value or value.get(INITIAL) is True)

    @cached_property
    def text(self) -> str:
        """The text Spark stores and compares."""
        return json.dumps(self.to_json())

    def __eq__(self, other: object) -> bool:
        return self.text == other.text if isinstance(other, StreamOffset) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"StreamOffset({self.text})"

    def __reduce__(self) -> tuple[Callable[[dict[str, object]], StreamOffset], tuple[dict[str, object]]]:
        # the read-only maps do not pickle; the JSON form does
        return StreamOffset.from_json, (self.to_json(),)
