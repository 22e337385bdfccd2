"""The data-loss rule, driver and executor alike: offsets no longer in Kafka (retention, a recreated or truncated
topic) fail naming them and option scan.fail-on-data-loss, or, when the user chose to go on, a warning and the caller
skips them (read/README.md, Offsets and data loss)."""

from __future__ import annotations

import logging

from ..errors import DataLossError

log = logging.getLogger("upsert_kafka")

RETENTION = "deleted by retention or the topic was recreated"


def lost(topic: str, partition: int, start: int, stop: int, fail: bool, why: str = RETENTION) -> None:
    """The data-loss rule, driver and executor alike: offsets [start, stop) are gone. Fail naming them and the
    option, or (scan.fail-on-data-loss=false) log a warning and let the caller skip them."""
    where = f"offsets [{start}, {stop}) of topic '{topic}' partition {partition}"
    data_loss(f"{where} are no longer in Kafka ({why})", fail, "skip them")


def data_loss(what: str, fail: bool, going_on: str, ways_on: str = "set 'scan.fail-on-data-loss' to false") -> None:
    """The one wording of data loss: an error naming what is lost and the ways on (by default the option), or a
    warning when the user chose to go on (`going_on` says how)."""
    if fail:
        raise DataLossError(f"data loss: {what}; {ways_on} to {going_on}")
    log.warning("upsert-kafka: data loss: %s; going on: %s", what, going_on)
