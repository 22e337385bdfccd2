"""The driver's questions to the brokers (metadata, offsets, consumer groups, configurations), each through one
admin client under the retry policy (errors.with_retries): bounded by the spec's timeout, transient errors
retried within it, every failure one error that names the servers and what to change."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigEntry, ConfigResource, OffsetSpec, ResourceType

from ..errors import TopicError
from .clients import admin_client
from .errors import ClientErrors, is_transient, with_retries
from .spec import KafkaSpec

log = logging.getLogger("upsert_kafka")

T = TypeVar("T")


class Brokers:
    """The driver's questions to the brokers, through one admin client, each under the retry policy. After a
    transient error the client is made anew: its metadata may predate a broker restart or a leader change."""

    def __init__(self, kafka: KafkaSpec, **owned: Any) -> None:
        self.kafka, self._owned = kafka, owned
        self._admin: AdminClient | None = None
        self._errors = ClientErrors()  # kept across clients: what no retry cures stays true

    def __getstate__(self) -> dict[str, object]:  # a client never travels: the receiver makes its own
        return {"kafka": self.kafka, "_owned": self._owned, "_admin": None, "_errors": ClientErrors()}

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = admin_client(self.kafka, self._errors, **self._owned)  # serves the callbacks of this one
        return self._admin

    def _reset(self) -> None:
        self._admin = None

    def close(self) -> None:
        """Let go of the admin client (AdminClient has no close(): librdkafka ends it, connections included, when
        the last reference goes, its poll held by the error callback among them). A later call makes a new one."""
        self._admin = None
        self._errors.serve = None

    def call(
        self,
        what: str,
        attempt: Callable[[AdminClient, float], T],
        grant: str | None = None,
        transient: Callable[[KafkaError], bool] = is_transient,
    ) -> T:
        """`attempt(admin, timeout_s)` under the retry policy (errors.with_retries)."""
        return with_retries(
            self.kafka,
            what,
            lambda timeout: attempt(self.admin, timeout),
            errors=self._errors,
            reset=self._reset,
            grant=grant,
            transient=transient,
        )

    def metadata(self, topic: str | None = None) -> Any:
        """The cluster's metadata: every topic's (never ask for one by name unless it must be: asking may create
        it), or one topic's."""
        what = "read metadata" if topic is None else f"read the metadata of topic '{topic}'"
        return self.call(
            what, lambda admin, timeout: admin.list_topics(topic=topic, timeout=timeout), "DESCRIBE on the topics"
        )

    def hidden(self, topics: list[str]) -> list[str]:
        """Of topics absent from the listing, those that exist but this user may not DESCRIBE: asked by name,
        they answer 'not authorized' rather than 'unknown' (never ask with a client that may create topics)."""
        denied = KafkaError.TOPIC_AUTHORIZATION_FAILED
        found = {t: self.metadata(t).topics.get(t) for t in topics}
        return [t for t, m in found.items() if m is not None and m.error is not None and m.error.code() == denied]

    def topic_partitions(self, topic: str) -> list[int]:
        """The topic's partition ids, sorted; a missing topic is an error naming it."""
        found = self.metadata().topics.get(topic)
        if found is None:
            raise TopicError(f"topic '{topic}' does not exist at {self.kafka.describe()} (option 'topic')")
        if found.error is not None:
            raise TopicError(f"topic '{topic}' is not usable: {found.error.str()}")
        return sorted(found.partitions)

    def list_offsets(
        self, partitions: Mapping[str, list[int]], spec: Callable[[], OffsetSpec]
    ) -> dict[str, dict[int, int]]:
        """One request for an offset of each partition: `spec` is OffsetSpec.earliest, OffsetSpec.latest (the
        last stable offset, as read_committed readers see it) or a function making a for_timestamp spec."""
        out: dict[str, dict[int, int]] = {t: {} for t in partitions}
        request = {TopicPartition(t, p): spec() for t, ps in partitions.items() for p in ps}
        if not request:
            return out

        def attempt(admin: AdminClient, timeout: float) -> None:
            futures = admin.list_offsets(
                request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout
            )
            for tp, future in futures.items():
                out[tp.topic][tp.partition] = future.result().offset

        self.call("list offsets", attempt, "DESCRIBE on the topics", _leaders_may_come_back)
        return out

    def committed_offsets(self, group: str, partitions: Mapping[str, list[int]]) -> dict[str, dict[int, int]]:
        """The group's committed offsets of those partitions (partitions without one are left out)."""
        request = [
            ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, ps in partitions.items() for p in ps])
        ]
        committed = self.call(
            f"read the committed offsets of consumer group '{group}'",
            lambda admin, timeout: (
                admin.list_consumer_group_offsets(request, request_timeout=timeout)[group].result().topic_partitions
            ),
            f"READ on consumer group '{group}' (or DESCRIBE, which READ includes) and DESCRIBE on the topics",
        )
        out: dict[str, dict[int, int]] = {}
        for tp in committed:
            if tp.offset >= 0:
                out.setdefault(tp.topic, {})[tp.partition] = tp.offset
        return out

    def commit_offsets(self, group: str, offsets: Mapping[str, Mapping[int, int]]) -> None:
        tps = [TopicPartition(t, p, o) for t, ps in offsets.items() for p, o in ps.items()]

        def attempt(admin: AdminClient, timeout: float) -> None:
            request = [ConsumerGroupTopicPartitions(group, tps)]
            for future in admin.alter_consumer_group_offsets(request, request_timeout=timeout).values():
                future.result()

        self.call(f"commit offsets to consumer group '{group}'", attempt, f"READ on consumer group '{group}'")

    def consumer_groups(self) -> list[str]:
        """Every consumer group's id this user may see."""

        def attempt(admin: AdminClient, timeout: float) -> list[str]:
            listing = admin.list_consumer_groups(request_timeout=timeout).result()
            if listing.errors:
                log.warning("upsert-kafka: could not list every consumer group: %s", listing.errors[0].str())
            return [g.group_id for g in listing.valid]

        return self.call("list consumer groups", attempt, "DESCRIBE on the consumer groups")

    def describe_config(self, resource: ConfigResource) -> dict[str, ConfigEntry] | None:
        """A resource's configuration; None when these credentials may not read it."""
        return self.describe_configs([resource])[resource]

    def describe_configs(self, resources: list[ConfigResource]) -> dict[ConfigResource, dict[str, ConfigEntry] | None]:
        """Resources' configurations, in one request; None for those these credentials may not read."""

        def attempt(admin: AdminClient, timeout: float) -> dict[ConfigResource, dict[str, ConfigEntry] | None]:
            out: dict[ConfigResource, dict[str, ConfigEntry] | None] = {}
            for resource, future in admin.describe_configs(resources, request_timeout=timeout).items():
                try:
                    out[resource] = future.result()  # its Future is not parameterized
                except KafkaException as e:
                    if not (e.args and e.args[0].code() in _NOT_AUTHORIZED):
                        raise
                    log.info("upsert-kafka: may not read the configuration of %s", resource)
                    out[resource] = None
            return out

        what = f"read the configuration of {', '.join(f'{r.restype.name.lower()} {r.name!r}' for r in resources)}"
        return self.call(what, attempt) if resources else {}

    def topic_configs(self, topics: list[str]) -> dict[str, dict[str, str | None] | None]:
        """Topics' configurations as name -> value (None: hidden), in one request; None for a topic whose
        configuration these credentials may not read."""
        found = self.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics])
        values = {r.name: None if c is None else {n: e.value for n, e in c.items()} for r, c in found.items()}
        return {t: values[t] for t in topics}


def _leaders_may_come_back(error: KafkaError) -> bool:
    # librdkafka's offsets look-up reports partitions without a leader yet (a broker just restarted) as
    # "Failed to query partition leaders: No leaders found" with the generic code _NOENT.
    return is_transient(error) or error.code() == KafkaError._NOENT


_NOT_AUTHORIZED = (KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED)
