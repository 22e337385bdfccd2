"""The ACLs each mode of the connector needs (the README's Security section lists the same), as Grants."""

from __future__ import annotations

from tests.support.secure_fixtures import Grant


def read_grants(topic: str) -> tuple[Grant, ...]:
    """A read: READ on the topic (READ implies DESCRIBE); DESCRIBE_CONFIGS for a stream, whose micro-batches read
    the topic's cleanup.policy and delete.retention.ms (read/lost_deletes.py)."""
    return (Grant("TOPIC", topic, ("READ", "DESCRIBE_CONFIGS")),)


def write_grants(topic: str) -> tuple[Grant, ...]:
    """An at-least-once write (an idempotent producer): WRITE on the topic (WRITE implies DESCRIBE)."""
    return (Grant("TOPIC", topic, ("WRITE",)),)


def exactly_once_grants(topic: str, prefix: str) -> tuple[Grant, ...]:
    """An exactly-once write: WRITE on the topic, and READ on it for the markers' offsets; WRITE on the
    transactional ids and READ on the consumer groups named like them (both start with the prefix)."""
    return (
        Grant("TOPIC", topic, ("WRITE", "READ")),
        Grant("TRANSACTIONAL_ID", prefix, ("WRITE",), prefixed=True),
        Grant("GROUP", prefix, ("READ",), prefixed=True),
    )


def group_grants(group: str) -> tuple[Grant, ...]:
    """Starting from, or committing to, a consumer group: READ on the group."""
    return (Grant("GROUP", group, ("READ",)),)
