"""The user's options as Spark hands them (a case-insensitive dict with lower-cased keys and string values), read
once: names folded onto their declared spelling (aliases onto the Flink one), unknown options rejected with a
did-you-mean, and every catalog option given parsed once by the kind the catalog declares; the specs read the
typed values (`OptionValues.value`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..errors import OptionError, did_you_mean
from ..kernel.option_kinds import OptionValues, parse_values, same_option_twice
from .catalog import CHANGELOG_COLUMN, OPTIONS, PASS_THROUGH_PREFIXES, TOPIC
from .flink_only import not_in_spark

# Spark spellings are camelCase; Spark hands us lower-cased keys: each is folded onto its declared spelling.
_DECLARED = {doc.name.lower(): doc.name for doc in OPTIONS if not doc.name.endswith("*")}
_NAMES = frozenset(_DECLARED.values())
_ALIASES = {alias.lower(): doc.name for doc in OPTIONS for alias in doc.aliases}
_ALIAS_SPELLINGS = {alias.lower(): alias for doc in OPTIONS for alias in doc.aliases}
# Format options (`key.json.ignore-parse-errors`) are validated by their codec, not here.
FORMAT_OPTION = re.compile(r"^(key|value)\.[a-z0-9_-]+\..+$")


# Options Spark's engine adds for its own use: a stream writer gets the checkpoint location, and a Declarative
# Pipelines sink's flow (`create_sink` + `append_flow`, Spark 4.1+) its flow's name as `queryName`.
_ENGINE_OPTIONS = {"checkpointlocation", "queryname"}


def parse_options(options: Mapping[str, str]) -> OptionValues:
    """`options` parsed (canonical_options), unless they are already."""
    return options if isinstance(options, OptionValues) else canonical_options(options)


def canonical_options(raw: Mapping[str, str]) -> OptionValues:
    """Fold names onto their declared spelling and aliases onto Flink's; reject unknown options and conflicting
    alias pairs; parse every catalog option given by its declared kind, once."""
    out: dict[str, str] = {}
    given_as: dict[str, str] = {}
    spelled: dict[str, str] = {}  # the declared spelling of the name each was given under, for errors
    for key, value in raw.items():
        name = key.lower()
        if name in _ENGINE_OPTIONS:
            continue
        if name == "path":
            raise OptionError(
                f"upsert-kafka reads and writes the topic named by option '{TOPIC.name}', not a path: call "
                f'.load() / .save() with no argument and set .option("{TOPIC.name}", "{value}")'
            )
        if name.startswith("kafka."):
            name = "properties." + name[len("kafka.") :]
        name = _value_format_option(name)
        spelling = _ALIAS_SPELLINGS.get(name)
        name = _ALIASES.get(name) or _DECLARED.get(name, name)
        if not (name in _NAMES or name.startswith(PASS_THROUGH_PREFIXES) or FORMAT_OPTION.match(name)):
            raise OptionError(_unknown_option_message(key))
        if name in out and out[name] != value:
            raise OptionError(same_option_twice(given_as[name], key))
        out[name], given_as[name], spelled[name] = value, key, spelling or name
    # Pass-through and format options are not the catalog's: their users check them.
    return parse_values(OPTIONS, out, unknown_ok=True, spelled=spelled)


def _value_format_option(name: str) -> str:
    """Flink's spelling of a value format's options next to option `format`: `json.ignore-parse-errors` is
    `value.json.ignore-parse-errors` (the Flink 1.13 notes' `avro-confluent.schema-registry.url` too)."""
    head = name.split(".", 1)[0]
    if "." not in name or name in _DECLARED or head in ("key", "value", "properties", "kafka"):
        return name
    return f"value.{name}" if head in _format_names() else name


def _format_names() -> frozenset[str]:
    from ..formats import available_formats  # here, not at import: the codecs' entry points load lazily

    return frozenset(available_formats())


def _unknown_option_message(key: str) -> str:
    foreign = not_in_spark(key.lower())
    if foreign is not None:
        return foreign.format(key=key)
    spellings = {**_DECLARED, **{alias.lower(): alias for doc in OPTIONS for alias in doc.aliases}}
    hint = did_you_mean(key.lower(), spellings)
    return (
        f"unknown option '{key}'.{hint} Kafka client settings go under 'properties.' (or 'kafka.'); "
        f"known options: {', '.join(sorted(_DECLARED.values(), key=str.lower))}"
    )


def changelog_column_name(options: Mapping[str, str]) -> str:
    name = parse_options(options).value(CHANGELOG_COLUMN).strip()
    if not name:
        raise OptionError(f"option '{CHANGELOG_COLUMN.name}' must name a column, e.g. '_change_type'")
    return name
