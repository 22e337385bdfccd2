"""The client properties the connector reserves for itself (a user value refused unless it is the connector's own), and
their check; the Kafka client spec these options make is kafka/spec.py's KafkaSpec.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import OptionError
from .catalog_write import SINK_DELIVERY_GUARANTEE, SINK_TRANSACTIONAL_ID_PREFIX


# Client properties the connector sets itself, because its guarantees depend on them: a user value is refused
# unless it equals the connector's (then it changes nothing). The README lists them (generated from here).
@dataclass(frozen=True)
class ReservedProperty:
    accepted: tuple[str, ...]  # values that agree with the connector's own (empty: none may be given)
    reason: str


RESERVED_PROPERTIES: dict[str, ReservedProperty] = {
    "enable.auto.commit": ReservedProperty(("false",), "offsets are tracked in Spark's checkpoint"),
    "enable.auto.offset.store": ReservedProperty(("false",), "offsets are tracked in Spark's checkpoint"),
    "isolation.level": ReservedProperty(
        ("read_committed",), "reads see committed records only: aborted transactions are never data"
    ),
    "partitioner": ReservedProperty((), "records are partitioned by key like the Java client (murmur2)"),
    "transactional.id": ReservedProperty(
        (),
        f"with {SINK_DELIVERY_GUARANTEE.name}=exactly-once each task derives its own from "
        f"'{SINK_TRANSACTIONAL_ID_PREFIX.name}'",
    ),
    "enable.idempotence": ReservedProperty(
        ("true",), f"option '{SINK_DELIVERY_GUARANTEE.name}' decides it (at-least-once and exactly-once need it)"
    ),
    "acks": ReservedProperty(
        ("all", "-1"), f"option '{SINK_DELIVERY_GUARANTEE.name}' decides it (at-least-once and exactly-once need all)"
    ),
    "delivery.report.only.error": ReservedProperty(("true",), "the writer counts only failed deliveries"),
}
# Reserved only under a delivery guarantee that depends on them (sink.delivery-guarantee=none lets them be).
GUARANTEE_PROPERTIES = ("enable.idempotence", "acks")


def check_reserved(prop: str, value: str) -> None:
    """Refuse a user value of a property the connector owns, unless it is the connector's own value."""
    reserved = RESERVED_PROPERTIES[prop]
    if value.strip().lower() not in reserved.accepted:
        allowed = f" (only '{reserved.accepted[0]}' is accepted)" if reserved.accepted else ""
        raise OptionError(f"option 'properties.{prop}' cannot be set to '{value}'{allowed}: {reserved.reason}")
