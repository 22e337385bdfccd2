"""A required option's value: the one wording of an option left out (every other value is parsed by its declared
kind in canonical.canonical_options)."""

from __future__ import annotations

from typing import Any

from ..errors import OptionError
from ..kernel.option_kinds import Option, OptionValues


def require(options: OptionValues, option: Option[Any], example: str) -> str:
    name = option.name
    value = (options.text(option) or "").strip()
    if not value:
        raise OptionError(f'option \'{name}\' is required, e.g. .option("{name}", "{example}")')
    return value
