"""Options are read through the catalog's constants (`values.value(READ_MODE)`), never by a name string: a misspelt
constant is a NameError ruff sees, a misspelt string a KeyError (or a silently absent option) when it runs. Also
what `OptionValues` does with an option object not its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark_upsert_kafka.kernel.option_kinds import Option, Text, parse_values
from pyspark_upsert_kafka.options.canonical import canonical_options
from pyspark_upsert_kafka.options.catalog import BY_NAME, READ_MODE

CONNECTOR = Path(__file__).parents[2] / "connector"
# A look-up: .value("x"), .get("x"), .text("x"), .given("x"), default_of("x"), ["x"], "x" in ...
LOOK_UP = re.compile(
    r"""(?:\.(?:value|get|text|given)\(|default_of\(|\[|(?<![\w.])in\s+)\s*"([^"]+)"|"([^"]+)"\s+(?:not\s+)?in\s"""
)


def test_no_option_is_read_by_its_name_outside_the_catalog():
    names = set(BY_NAME) - {"properties.*"}
    found = []
    for path in sorted(CONNECTOR.rglob("*.py")):
        if path.parent.name == "options" and path.name.startswith("catalog"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in LOOK_UP.finditer(line):
                if (match.group(1) or match.group(2)) in names:
                    found.append(f"{path.relative_to(CONNECTOR)}:{number}: {line.strip()}")
    assert found == []


def test_values_answer_for_their_own_options_only():
    values = canonical_options({"read.mode": "changelog"})
    assert values.value(READ_MODE) == "changelog" and values.given(READ_MODE) and values.text(READ_MODE) == "changelog"
    stranger = Option("read.mode", "table", "read", "another declaration of the name", kind=Text())
    with pytest.raises(KeyError, match="not the one these values declare"):
        values.value(stranger)
    codec_values = parse_values([stranger], {})
    assert codec_values.value("read.mode") == "table"  # a codec may still name its own options
