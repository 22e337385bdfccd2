"""A required option's value: the one wording of an option left out (every other value is parsed by its declared
kind in canonical.canonical_options)."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import OptionError


def require(options: Mapping[str, str], name: str, example: str) -> str:
    value = options.get(name, "").strip()
    if not value:
        raise OptionError(f'option \'{name}\' is required, e.g. .option("{name}", "{example}")')
    return value
