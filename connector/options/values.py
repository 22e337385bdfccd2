"""One option's value read from a plain options mapping by its catalog declaration (kind and default), for the
tests of one kind's grammar; the specs read every value from the one parse step (common.canonical_options)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import OptionError
from ..formats.option_kinds import BOTH, Option
from .catalog import BY_NAME, option
from .kinds import Duration


def require(options: Mapping[str, str], name: str, example: str) -> str:
    value = options.get(name, "").strip()
    if not value:
        raise OptionError(f'option \'{name}\' is required, e.g. .option("{name}", "{example}")')
    return value


def parse_declared(options: Mapping[str, str], name: str) -> Any:
    """Catalog option `name` parsed by its kind: as given in `options`, else its default (None without one)."""
    declared = option(name)
    raw = options.get(name)
    return declared.default_value() if raw is None else declared.parse(raw)


def parse_duration(options: Mapping[str, str], name: str, allow_zero: bool = False) -> float:
    """A Flink-style duration in seconds: a catalog option's by its declaration, any other name's by Flink's
    grammar (positive, or zero too with `allow_zero`)."""
    if name in BY_NAME:
        return parse_declared(options, name)
    return Option(name, "0", BOTH, "", kind=Duration(allow_zero)).parse(options.get(name, "0"))


def parse_table_memory_budget(options: Mapping[str, str]) -> int:
    """scan.table.memory-budget in bytes: what a task's latest-record-per-key reduction may hold
    (read/latest_per_key.py)."""
    return parse_declared(options, "scan.table.memory-budget")
