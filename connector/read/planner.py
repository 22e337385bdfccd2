"""Driver side: which partitions to read, and from/to which offsets.

One Planner per query keeps its broker look-ups (Spark calls the streaming reader from one long-lived
process); each rides out transient broker errors within the spec's bound (kafka/errors.py). Bounds (earliest,
latest, timestamp, group, specific) resolve to offsets here; admission control shares a record budget across
partitions in proportion to their backlog.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import partial

from confluent_kafka.admin import OffsetSpec

from ..errors import DataLossError, KafkaAuthorizationError, OptionError, TopicError
from ..kafka.brokers import Brokers
from ..kafka.spec import KafkaSpec
from ..kernel.clock import SYSTEM_CLOCK, Clock
from ..options.topics import TopicSelection
from .bounds import EARLIEST, LATEST, Bound, BoundKind, Fallback
from .data_loss import data_loss, lost
from .offsets import Offsets
from .spec import ReadSpec

log = logging.getLogger("upsert_kafka")

Partitions = dict[str, list[int]]


class Planner:
    def __init__(self, spec: ReadSpec, clock: Clock = SYSTEM_CLOCK) -> None:
        self.spec, self.clock = spec, clock  # the discovery interval's
        self.brokers = Brokers(spec.kafka, **{"allow.auto.create.topics": False})  # asking never creates
        self._partitions: Partitions | None = None
        self._discovered_at = 0.0
        self._bound: dict[str, dict[int, int]] | None = None  # a bounded stream's end, resolved once

    def __getstate__(self) -> dict[str, object]:
        return {
            "spec": self.spec,
            "clock": self.clock,
            "brokers": self.brokers,
            "_partitions": None,
            "_discovered_at": 0.0,
            "_bound": None,
        }

    def close(self) -> None:
        self.brokers.close()

    # -- partitions ------------------------------------------------------------------------------

    def partitions(self, refresh: bool = False) -> Partitions:
        """The topics' partitions; looked up again only after the discovery interval (or on refresh)."""
        due = self.clock.monotonic() - self._discovered_at >= self.spec.discovery_interval_s
        if self._partitions is None or refresh or due:
            found = self._lookup_partitions()
            if self._partitions is not None and found != self._partitions:
                log.info("upsert-kafka: partitions changed from %s to %s", self._partitions, found)
            self._partitions, self._discovered_at = found, self.clock.monotonic()
        return self._partitions

    def _lookup_partitions(self) -> Partitions:
        return lookup_partitions(self.brokers, self.spec.topics)

    def partition_counts(self, topics: list[str]) -> dict[str, int]:
        """How many partitions each topic has now, whichever of them the read covers (option 'assign')."""
        metadata = self.brokers.metadata()
        return {t: len(metadata.topics[t].partitions) for t in topics}

    # -- offsets ---------------------------------------------------------------------------------

    def list_offsets(self, partitions: Partitions, spec: Callable[[], OffsetSpec]) -> dict[str, dict[int, int]]:
        return self.brokers.list_offsets(partitions, spec)

    def earliest(self, partitions: Partitions) -> dict[str, dict[int, int]]:
        return self.list_offsets(partitions, OffsetSpec.earliest)

    def latest(self, partitions: Partitions) -> dict[str, dict[int, int]]:
        """The last stable offsets: what a read_committed reader can read up to."""
        return self.list_offsets(partitions, OffsetSpec.latest)

    def resolve(self, bound: Bound, partitions: Partitions, default: Fallback) -> dict[str, dict[int, int]]:
        """Offsets for a start or end bound; `default` (earliest/latest) for partitions it leaves open, unless the
        bound says otherwise (Flink's bounded specific-offsets: none of an unlisted partition is read)."""
        default = bound.unlisted or default
        if bound.kind in (BoundKind.EARLIEST, BoundKind.LATEST):
            return self.earliest(partitions) if bound.kind is BoundKind.EARLIEST else self.latest(partitions)
        if bound.kind is BoundKind.TIMESTAMP:
            at = bound.timestamp_ms
            assert at is not None, "a timestamp bound has its timestamp"  # parse_bound makes it with one
            return self._at_timestamps(bound, {(t, p): at for t, ps in partitions.items() for p in ps})
        if bound.kind is BoundKind.TIMESTAMPS:
            self._check_listed(bound, partitions)
            listed = {
                (t, p): ts
                for t, pairs in bound.specific
                if t is not None
                for p, ts in pairs
                if p in partitions.get(t, [])
            }
            return self._fill(partitions, self._at_timestamps(bound, listed), default)
        if bound.kind is BoundKind.GROUP:
            return self._fill(partitions, self._group_offsets(partitions), self.spec.group_fallback or Fallback.ERROR)
        return self._fill(partitions, self._specific(bound, partitions), default)

    def _at_timestamps(self, bound: Bound, wanted: dict[tuple[str, int], int]) -> dict[str, dict[int, int]]:
        """The first offset at or after each partition's timestamp (one look-up per distinct timestamp); where no
        record is, the partition's end, or an error (Spark's startingOffsetsByTimestampStrategy=error)."""
        out: dict[str, dict[int, int]] = {}
        for ts in sorted(set(wanted.values())):
            group: Partitions = {}
            for (t, p), at in wanted.items():
                if at == ts:
                    group.setdefault(t, []).append(p)
            found = self.list_offsets(group, partial(OffsetSpec.for_timestamp, ts))
            missing = {t: [p for p, o in ps.items() if o < 0] for t, ps in found.items()}
            missing = {t: ps for t, ps in missing.items() if ps}
            if missing and bound.no_match is Fallback.ERROR:
                where = "; ".join(f"topic '{t}' partition(s) {ps}" for t, ps in missing.items())
                raise OptionError(
                    f"option '{bound.option}': no record at or after timestamp {ts} in {where}; set option "
                    "'startingOffsetsByTimestampStrategy' to latest to start such partitions at their latest offset"
                )
            latest = self.latest(missing) if missing else {}
            for t, ps in found.items():
                for p, o in ps.items():
                    out.setdefault(t, {})[p] = o if o >= 0 else latest[t][p]
        return out

    def _check_listed(self, bound: Bound, partitions: Partitions) -> None:
        """Specific offsets or timestamps must name partitions that exist."""
        for topic, pairs in bound.specific:
            # Flink's form names no topic: a partition must exist in at least one topic read.
            known = (
                set(partitions.get(topic, [])) if topic is not None else {p for ps in partitions.values() for p in ps}
            )
            absent = [p for p, _ in pairs if p not in known]
            if absent and (topic is None or topic in partitions):
                where = f"topic '{topic}', which has" if topic else f"the topics read ({', '.join(partitions)}), with"
                if self.spec.topics.assigned is not None:
                    where = f"topic '{topic}', of which option 'assign' reads" if topic else "the assigned topics, with"
                raise OptionError(
                    f"option '{bound.option}' names partition {absent[0]} of {where} partitions "
                    f"{', '.join(map(str, sorted(known)))}"
                )

    def _specific(self, bound: Bound, partitions: Partitions) -> dict[str, dict[int, int]]:
        self._check_listed(bound, partitions)
        out: dict[str, dict[int, int]] = {}
        need: dict[int, Partitions] = {EARLIEST: {}, LATEST: {}}
        for t, ps in partitions.items():
            for p in ps:
                offset = bound.offset_for(t, p)
                if offset in need:
                    need[offset].setdefault(t, []).append(p)
                elif offset is not None:
                    out.setdefault(t, {})[p] = offset
        for code, which in ((EARLIEST, self.earliest), (LATEST, self.latest)):
            for t, offsets in which(need[code]).items():
                out.setdefault(t, {}).update(offsets)
        return out

    def _group_offsets(self, partitions: Partitions) -> dict[str, dict[int, int]]:
        group = self.spec.group_id
        assert group is not None, "a group bound has its group"  # parse_read_spec requires properties.group.id
        return self.brokers.committed_offsets(group, partitions)

    def _fill(self, partitions: Partitions, known: Offsets, default: Fallback) -> dict[str, dict[int, int]]:
        """Complete `known` offsets with the default for every partition it does not cover."""
        open_ = {t: [p for p in ps if p not in known.get(t, {})] for t, ps in partitions.items()}
        open_ = {t: ps for t, ps in open_.items() if ps}
        if open_ and default is Fallback.ERROR:
            listed = "; ".join(f"topic '{t}' partition(s) {ps}" for t, ps in open_.items())
            raise DataLossError(
                f"consumer group '{self.spec.group_id}' has no committed offset for {listed}; set option "
                "'properties.auto.offset.reset' to earliest or latest to start those from there"
            )
        filled = (self.earliest if default is Fallback.EARLIEST else self.latest)(open_) if open_ else {}
        return {t: {**filled.get(t, {}), **known.get(t, {})} for t in partitions}

    # -- a micro-batch's range -------------------------------------------------------------------

    def batch_start(self, checkpointed: Offsets, latest: Offsets) -> dict[str, dict[int, int]]:
        """Where a micro-batch starts reading: the checkpointed offsets, new partitions from offset 0, a start
        that retention deleted moved past the loss (or failed, see check_start), none past the log end."""
        begin, _ = with_new_partitions(checkpointed, latest)
        clipped = self.still_in_kafka(begin, latest)
        return {t: {p: min(o, latest[t].get(p, o)) for p, o in ps.items()} for t, ps in clipped.items()}

    def batch_end(self, begin: Offsets, latest: Offsets, partitions: Partitions) -> Offsets:
        """Where a micro-batch may read up to, before read limits: the log end (checked not to be below the
        start), or a bounded stream's bound (resolved once, when first needed; a start already past it reads
        nothing, which is not data loss)."""
        not_before(begin, latest, self.spec.fail_on_data_loss)
        if self.spec.end.kind is BoundKind.NONE:
            return dict(latest)
        if self._bound is None:
            self._bound = self.resolve(self.spec.end, partitions, Fallback.LATEST)
        bound = self._bound
        return {
            t: {p: min(o, max(begin[t][p], bound.get(t, {}).get(p, o))) for p, o in ps.items()}
            for t, ps in latest.items()
        }

    def still_in_kafka(self, begin: Offsets, stop: Offsets) -> Offsets:
        """A start that retention has since deleted is data loss: fail naming the missing range (or skip it), on
        the driver rather than in a task. Returns where each partition's records to read start."""
        reading = {t: [p for p, o in ps.items() if o < stop.get(t, {}).get(p, o)] for t, ps in begin.items()}
        reading = {t: ps for t, ps in reading.items() if ps}
        return self.check_start(begin, self.earliest(reading)) if reading else dict(begin)

    # -- checks and limits -----------------------------------------------------------------------

    def check_start(self, start: Offsets, earliest: Offsets) -> dict[str, dict[int, int]]:
        """A start below the log start is data loss: fail naming the missing range, or skip it."""
        out = {t: dict(ps) for t, ps in start.items()}
        for t, ps in start.items():
            for p, offset in ps.items():
                first = earliest.get(t, {}).get(p)
                if first is not None and offset < first:
                    lost(t, p, offset, first, self.spec.fail_on_data_loss)
                    out[t][p] = first
        return out


def lookup_partitions(brokers: Brokers, topics: TopicSelection) -> Partitions:
    """The partitions a read covers now: of the listed topics (each must exist), of every topic matching the
    pattern, or the assigned ones (each must exist)."""
    kafka = brokers.kafka
    metadata = brokers.metadata()
    if topics.pattern:
        pattern = re.compile(topics.pattern)
        names = [t for t in metadata.topics if pattern.fullmatch(t) and not t.startswith("__")]
    else:
        missing = [t for t in topics.names if t not in metadata.topics]
        for topic in brokers.hidden(missing):
            raise KafkaAuthorizationError(
                f"not authorized to read topic '{topic}' at {kafka.describe()}: grant this client's user "
                f"DESCRIBE and READ on it (option '{topics.option}')"
            )
        if missing:
            quoted = ", ".join(f"'{t}'" for t in missing)
            verb = "topic {} does not exist" if len(missing) == 1 else "topics {} do not exist"
            raise TopicError(f"{verb.format(quoted)} at {kafka.describe()} (option '{topics.option}')")
        names = list(topics.names)
    found = {t: sorted(metadata.topics[t].partitions) for t in sorted(names)}
    return found if topics.assigned is None else _assigned(kafka, topics, found)


def _assigned(kafka: KafkaSpec, topics: TopicSelection, found: Partitions) -> Partitions:
    """Option 'assign': its partitions only, each of which must exist; a partition added to the topic later is
    never read (as in Spark's kafka source)."""
    for topic, wanted in topics.assigned or ():
        absent = [p for p in wanted if p not in found[topic]]
        if absent:
            raise OptionError(
                f"option 'assign' names partition(s) {', '.join(map(str, absent))} of topic '{topic}', which has "
                f"partitions {', '.join(map(str, found[topic]))} at {kafka.describe()}: assign "
                "partitions the topic has"
            )
    return {t: list(ps) for t, ps in topics.assigned or ()}


def limit_by_backlog(start: Offsets, end: Offsets, max_records: int) -> dict[str, dict[int, int]]:
    """Share max_records across partitions in proportion to their backlog; a partition with any backlog
    gets at least one record, so none starves."""
    backlog = {(t, p): e - start[t][p] for t, ps in end.items() for p, e in ps.items() if e > start[t][p]}
    total = sum(backlog.values())
    if total <= max_records:
        return {t: dict(ps) for t, ps in end.items()}
    out = {t: dict(ps) for t, ps in end.items()}
    for (t, p), size in backlog.items():
        share = max_records * size / total
        out[t][p] = start[t][p] + min(size, max(1, int(share)))
    return out


def within_log_end(end: Offsets, latest: Offsets) -> dict[str, dict[int, int]]:
    """A batch read ends at the log's end at the latest: records past it do not exist yet, and waiting for
    them would only time out."""
    beyond = {(t, p) for t, ps in end.items() for p, o in ps.items() if o > latest[t][p]}
    if beyond:
        log.info("upsert-kafka: end offsets past the log end of %s read up to the log end", sorted(beyond))
    return {t: {p: min(o, latest[t][p]) for p, o in ps.items()} for t, ps in end.items()}


def with_new_partitions(begin: Offsets, end: Offsets) -> tuple[Offsets, Partitions]:
    """Partitions that appeared since `begin` was planned start at offset 0, as in Spark's Kafka source:
    a new partition's records deleted before the query saw them are data loss (see Planner.check_start).
    Returns the completed start and the new partitions."""
    new = {t: [p for p in ps if p not in begin.get(t, {})] for t, ps in end.items()}
    new = {t: ps for t, ps in new.items() if ps}
    if not new:
        return dict(begin), new
    log.info("upsert-kafka: reading new partitions %s from offset 0", new)
    return {t: {**dict.fromkeys(new.get(t, []), 0), **begin.get(t, {})} for t in end}, new


def not_before(begin: Offsets, end: Offsets, fail_on_data_loss: bool) -> None:
    """An end below the start means the log was truncated or the topic recreated: data loss."""
    behind = [(t, p, o) for t, ps in end.items() for p, o in ps.items() if o < begin[t][p]]
    if behind:
        where = "; ".join(
            f"topic '{t}' partition {p} now ends at {o}, before offset {begin[t][p]}" for t, p, o in behind
        )
        what = f"{where} this query had reached (the topic was recreated or truncated)"
        data_loss(what, fail_on_data_loss, "go on from the log's current end")
