"""The Spark-facing readers: plan partition ranges on the driver, read them on executors.

Driver side (planning) asks the brokers for partitions and offsets and makes Spark tasks of the ranges
(read.range_calculator); executor side (`read`, read.task) gets everything it needs inside its PartitionRange (or a
RangeGroup of small ones, read one after the other), borrows a consumer from its Python worker's pool and yields
Arrow batches.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

import pyarrow as pa
import pyspark.sql.datasource as ds  # its Filter exists from pyspark 4.1 (an annotation here)
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition

from ..errors import UpsertKafkaError
from ..kernel.clock import SYSTEM_CLOCK, Clock
from ..options.catalog_read import ReadMode
from ..spark_internals import ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow
from .bounds import BoundKind, Fallback
from .data_loss import data_loss
from .lost_deletes import WAYS_ON, Cleanup, Mark, Marks, advance, message, risks
from .offsets import BatchPlan, Offsets, PartitionMarks, StreamOffset, canonical
from .planner import Planner, limit_by_backlog, with_new_partitions, within_log_end
from .pushdown import Narrowing, narrow_plan, narrowing
from .range_calculator import clip_starts, plan_of, planned_tasks, ranges_between
from .spec import ReadSpec
from .task import read_range
from .watermarks import WatermarkTracker

log = logging.getLogger("upsert_kafka")


def _log_batch(end: Offsets, latest: Offsets, merged_watermark: int | None) -> None:
    """Per planned micro-batch: the records left behind the log end per topic (lag) and the merged watermark."""
    lag = {t: sum(max(0, o - end.get(t, {}).get(p, o)) for p, o in ps.items()) for t, ps in sorted(latest.items())}
    watermark = "" if merged_watermark is None else f"; merged watermark {merged_watermark} ms"
    log.info("upsert-kafka: micro-batch planned; records behind the latest offset per topic %s%s", lag, watermark)


_LATE_STARTS = {
    BoundKind.LATEST: "the latest offset",
    BoundKind.TIMESTAMP: "a timestamp",
    BoundKind.TIMESTAMPS: "timestamps",
    BoundKind.SPECIFIC: "specific offsets",
}


def warn_if_late_start(spec: ReadSpec) -> None:
    """An upsert topic is complete only from its earliest offset: a read that starts later misses every key whose
    last change came before (Flink's upsert-kafka always starts at the earliest offset; this one lets you choose)."""
    what = _LATE_STARTS.get(spec.start.kind)
    if what is None:
        return
    given = f" (option '{spec.start.option}')" if spec.start.option else ""
    log.warning(
        "upsert-kafka: this %s read starts at %s%s, not at the earliest offset: keys whose last change came "
        "before that point are missing from it, so it is not the whole table",
        ReadMode.CHANGELOG if spec.changelog else ReadMode.TABLE,
        what,
        given,
    )


class UpsertKafkaBatchReader(DataSourceReader):
    """A bounded read: each partition from the start bound to the end bound, fixed when planned."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec
        self.narrow: Narrowing | None = None  # what pushed filters allow (UpsertKafkaLookupReader)

    def partitions(self) -> Sequence[InputPartition]:
        warn_if_late_start(self.spec)
        planner = Planner(self.spec)
        parts = planner.partitions()
        start = planner.resolve(self.spec.start, parts, Fallback.EARLIEST)
        start = planner.check_start(start, planner.earliest(parts))
        end = planner.resolve(self.spec.end, parts, Fallback.LATEST)
        if self.spec.end.kind is not BoundKind.LATEST:
            end = within_log_end(end, planner.latest(parts))
        watermark = None
        if self.spec.tracks_watermarks:
            tracker = WatermarkTracker(planner)
            watermark = tracker.merged(tracker.advance(start, end, {}))
        if self.narrow is not None:  # after the watermark: filters change what is read, not the watermark
            start, end = narrow_plan(self.spec, self.narrow, planner, parts, start, end)
        return planned_tasks(plan_of(self.spec, bounded=True), ranges_between(start, end, watermark))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.spec, partition)


class UpsertKafkaLookupReader(UpsertKafkaBatchReader):
    """The batch reader with filter pushdown: handed to Spark only when pushdown is on (pushdown.enabled).
    Every filter stays with Spark; the reader uses them to read fewer partitions and offsets."""

    def pushFilters(self, filters: list[ds.Filter]) -> Iterable[ds.Filter]:
        self.narrow = narrowing(self.spec, filters)
        return filters


class UpsertKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A changelog stream. Its offset is a StreamOffset (read.offsets); Spark's API carries it as the dict of its
    JSON form, which the methods Spark calls with offsets (initialOffset, latestOffset, partitions, commit) convert,
    and nothing else sees."""

    def __init__(self, spec: ReadSpec, clock: Clock = SYSTEM_CLOCK) -> None:
        self.spec = spec
        self.clock = clock  # the discovery interval's, idleness's and maxTriggerDelay's
        self.planner = Planner(spec, clock)
        self.tracker = WatermarkTracker(self.planner, clock)
        self.available_now: dict[str, dict[int, int]] | None = None  # Trigger.AvailableNow's fixed target
        self.available_now_at = 0  # when that target was looked up (wall-clock ms)
        # Each partition's last stable offset when this process last looked (read/lost_deletes.py's marks): a
        # stream that idles at the log end keeps its next batch's stamp fresh although no batch records one.
        self.observed: dict[tuple[str, int], Mark] = {}
        self.planned_text: str | None = None  # the text of the last end offset this process planned
        self.initial: StreamOffset | None = None
        # The log ends latestOffset last looked up, for reportLatestOffset.
        self.latest: dict[str, dict[int, int]] | None = None
        self.last_trigger: float | None = None  # when minOffsetsPerTrigger last let a batch go (on `clock`)
        # The end of the last batch Spark planned (the next one's start), as Spark handed it: see latestOffset.
        self.planned_end: dict[str, object] | None = None
        self.warned_capped = False

    # -- Spark's side: offsets as the dicts of their JSON form -----------------------------------

    def initialOffset(self) -> dict[str, object]:
        """The start of batch 0, marked as such. Spark asks again when it runs batch 0 (and when it replays it
        after a restart): the answer is kept for this process, and batch 0's end offset records it."""
        return self._initial().to_json()

    def latestOffset(self, start: dict[str, object] | None = None, limit: ReadLimit | None = None) -> dict[str, object]:
        """The end of the next micro-batch. pyspark 4.2+ hands over the batch's start and Spark's read limit;
        4.0/4.1 call latestOffset() with neither (spark_internals.ADMISSION_CONTROL): the start is then the end of
        the last batch Spark planned (`partitions`; after a restart Spark shows the reader the checkpoint's
        latest offset that way before anything else) or, before any, the initial offset, and the limit is the
        options' own, so maxOffsetsPerTrigger and minOffsetsPerTrigger hold on every version."""
        legacy = start is None
        if start is None:
            start = self.planned_end if self.planned_end is not None else self.initialOffset()
            limit = self.getDefaultReadLimit()
        end = self._next_end(StreamOffset.from_json(start), limit, legacy)
        # No batch now: the start goes back as it came (an unversioned one too), as Spark compares offsets as
        # text and a start written anew would make it run an empty micro-batch.
        return start if end is None else end.to_json()

    def partitions(self, start: dict[str, object], end: dict[str, object]) -> Sequence[InputPartition]:
        """The batch's ranges, from the start and split and watermarked as its end offset's plan says (a replay
        after a restart gets the same tasks and rows even if the options changed or batch 0's initial offset
        moved); by the current options for an end offset from a checkpoint older than recorded plans."""
        self.planned_end = end
        return self._tasks(StreamOffset.from_json(start), StreamOffset.from_json(end))

    def commit(self, end: dict[str, object]) -> None:
        """Best effort: record progress in the consumer group, for monitoring tools. Spark's checkpoint,
        not the group, is what a restarted query resumes from."""
        if not self.spec.group_id:
            return
        stop = StreamOffset.from_json(end).offsets  # outside the try: an offset of a newer form fails the query
        try:
            self.planner.brokers.commit_offsets(self.spec.group_id, stop)
        except UpsertKafkaError as e:  # best effort by contract: log, never fail the query
            log.warning("upsert-kafka: could not commit offsets to group '%s': %s", self.spec.group_id, e)

    # -- the reader's side: StreamOffset ---------------------------------------------------------

    def _initial(self) -> StreamOffset:
        if self.initial is None:
            warn_if_late_start(self.spec)
            parts = self.planner.partitions(refresh=True)
            start = self.planner.resolve(self.spec.start, parts, Fallback.EARLIEST)
            start = self.planner.check_start(start, self.planner.earliest(parts))
            watermarks: dict[str, dict[int, int]] = {t: {} for t in start} if self.spec.tracks_watermarks else {}
            self.initial = StreamOffset(start, watermarks, initial=True)
        return self.initial

    def getDefaultReadLimit(self) -> ReadLimit:
        """PySpark has no composite limit: with both maxOffsetsPerTrigger and minOffsetsPerTrigger, Spark is
        handed the maximum and the reader keeps the minimum (_held_back)."""
        n, m = self.spec.max_records_per_batch, self.spec.min_records_per_trigger
        if n:
            return ReadMaxRows(n)
        return ReadMinRows(m) if m else ReadAllAvailable()

    def _held_back(self, begin: Offsets, available: Offsets, limit: ReadLimit | None) -> bool:
        """Spark's minOffsetsPerTrigger: no new micro-batch while fewer records than that are available, unless
        maxTriggerDelay has passed since the last batch it let go (the first trigger always goes, as in Spark).
        Ignored under Trigger.AvailableNow (which would otherwise wait for records that never come) and when Spark
        asks for everything (ReadAllAvailable)."""
        minimum = limit.min_rows if isinstance(limit, ReadMinRows) else self.spec.min_records_per_trigger
        if minimum is None or isinstance(limit, ReadAllAvailable) or self.available_now is not None:
            return False
        now = self.clock.monotonic()
        if self.last_trigger is None or now - self.last_trigger >= self.spec.max_trigger_delay_s:
            self.last_trigger = now
            return False
        new = sum(o - begin[t][p] for t, ps in available.items() for p, o in ps.items() if o > begin[t][p])
        if new < minimum:
            log.debug("upsert-kafka: %d new record(s), fewer than minOffsetsPerTrigger=%d: batch delayed", new, minimum)
            return True
        self.last_trigger = now
        return False

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now_at = self._now_ms()  # before the look-up: a mark's time is never after its look-up
        self.available_now = self.planner.latest(self.planner.partitions(refresh=True))

    def _now_ms(self) -> int:
        return int(self.clock.time() * 1000)

    def _next_end(self, start: StreamOffset, limit: ReadLimit | None, legacy: bool) -> StreamOffset | None:
        """The end of the next micro-batch from `start`; None when no batch is due (nothing new, or fewer records
        than minOffsetsPerTrigger)."""
        checkpointed, watermarks = start.offsets, start.watermarks
        parts = self.planner.partitions()
        seen_at = self.available_now_at if self.available_now is not None else self._now_ms()
        latest = self.available_now if self.available_now is not None else self.planner.latest(parts)
        self.latest = latest
        observed = self.observed
        self.observed = {(t, p): (o, seen_at) for t, ps in latest.items() for p, o in ps.items()}
        # Records deleted below the start fail (or are skipped) here, before the batch is sized from offsets that
        # are gone; a start moved past them is recorded in the plan (as is batch 0's, which Spark keeps nowhere).
        begin = self.planner.batch_start(checkpointed, latest)
        end = self.planner.batch_end(begin, latest, parts)
        if self._held_back(begin, end, limit):
            return None
        if self.spec.alignment_max_drift_ms is not None:
            end = self.tracker.align(begin, end, watermarks)
        if isinstance(limit, ReadMaxRows):
            available, end = end, limit_by_backlog(begin, end, limit.max_rows)
            if legacy and end != available and not self.warned_capped:
                self.warned_capped = True
                log.warning(
                    "upsert-kafka: this micro-batch stops at maxOffsetsPerTrigger=%d with records left behind it. "
                    "On this pyspark (before 4.2) Spark runs a Python source under Trigger.AvailableNow or Once as "
                    "ONE micro-batch, so such a run reads only up to the limit (the next run goes on from there): "
                    "drop maxOffsetsPerTrigger for AvailableNow runs",
                    limit.max_rows,
                )
        if not start.initial and StreamOffset(end) == StreamOffset(checkpointed):
            # Nothing to read: no new offset, so that neither other options nor the wall clock (both recorded in
            # the plan) make Spark run an empty micro-batch. (Batch 0 runs whatever its offsets: its end offset
            # always records its start.)
            return None
        idle: frozenset[tuple[str, int]] = frozenset()
        merged = None
        if self.spec.tracks_watermarks:
            watermarks = self.tracker.advance(begin, end, watermarks)
            idle = self.tracker.idle(watermarks)  # after advance: a partition with records in this batch is active
            merged = self.tracker.merged(watermarks, idle)
        _log_batch(end, latest, merged)
        planned_from = begin if start.initial or StreamOffset(begin) != StreamOffset(checkpointed) else None
        marks = self._marks(start, begin, observed)
        lost = self._lost_deletes(begin, end, marks)
        plan = replace(
            plan_of(self.spec, bounded=self.available_now is not None), idle=idle, start=planned_from, lost_deletes=lost
        )
        planned = StreamOffset(end, watermarks if self.spec.tracks_watermarks else {}, plan, marks=marks)
        self.planned_text = planned.text
        return planned

    def _marks(self, start: StreamOffset, begin: Offsets, observed: dict[tuple[str, int], Mark]) -> PartitionMarks:
        """The marks the batch from `begin` records (read/lost_deletes.py): its start's, this process's earlier and
        current look-ups of the log end, and, where the query reads a partition for the first time, the planning
        time at its start (what it reads from now on was in the log when read)."""
        now = self._now_ms()
        out: dict[str, dict[int, Marks]] = {}
        for t, ps in begin.items():
            out[t] = {}
            for p, offset in ps.items():
                first = start.initial or p not in start.offsets.get(t, {})
                known = [(offset, now)] if first else list((start.marks or {}).get(t, {}).get(p, ()))
                seen = [m for m in (observed.get((t, p)), self.observed.get((t, p))) if m is not None]
                out[t][p] = advance([*known, *seen], offset)
        return out

    def _lost_deletes(self, begin: Offsets, end: Offsets, marks: PartitionMarks) -> frozenset[tuple[str, int]]:
        """Partitions of the batch [begin, end) whose unread tombstones the log cleaner may have removed: data loss
        (option scan.compaction-lost-deletes), or, when the user accepts it, the partitions to record."""
        reading = sorted(t for t, ps in begin.items() if any(o < end.get(t, {}).get(p, o) for p, o in ps.items()))
        cleanup = {t: Cleanup.from_config(c) for t, c in self.planner.brokers.topic_configs(reading).items()}
        now = self._now_ms()
        found = risks(begin, end, marks, cleanup, now)
        if found:
            data_loss(message(found, now), self.spec.fail_on_lost_deletes, "go on", WAYS_ON)
        return frozenset((r.topic, r.partition) for r in found)

    def _tasks(self, start: StreamOffset, end: StreamOffset) -> Sequence[InputPartition]:
        begin, watermarks, stop, plan = start.offsets, start.watermarks, end.offsets, end.plan
        if plan is not None and plan.start is not None:
            begin = plan.start
        begin, _ = with_new_partitions(begin, stop)
        begin = {t: {p: min(o, stop[t][p]) for p, o in ps.items() if p in stop.get(t, {})} for t, ps in begin.items()}
        if end.text != self.planned_text:  # a replay (or a batch planned by an earlier process): check it again
            self._lost_deletes(begin, stop, end.marks or {})
        first = self.planner.still_in_kafka(begin, stop)
        merged = None
        if self.spec.tracks_watermarks:
            merged = self.tracker.merged(watermarks, None if plan is None else plan.idle)
        ranges = ranges_between(begin, stop, merged)
        if plan is None:
            plan = BatchPlan(self.spec.split_max_records, self.spec.min_partitions)
        # Split and group the ranges as planned, then skip what was deleted since (failOnDataLoss=false): a
        # deletion between the first run and a replay must not move the records that survive it to other tasks.
        return clip_starts(planned_tasks(plan, ranges), first)

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        """The log ends the last latestOffset() looked up (Spark asks right after it): StreamingQueryProgress's
        `sources[].latestOffset`, next to `endOffset`, for the records the query is behind. No broker call."""
        return None if self.latest is None else canonical(self.latest)  # Spark's Kafka form: not stored

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.spec, partition)

    def stop(self) -> None:
        """Close the driver's clients: the admin client and the watermark look-up consumer. (PySpark 4.3 ends the
        driver's Python process of a stopped query without calling this; whoever calls it gets the clients closed.)"""
        self.tracker.close()
        self.planner.close()
