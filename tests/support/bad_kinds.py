"""The values each kind of option refuses, for the generated bad-input suites (tests/api/test_bad_options.py,
test_bad_format_options.py): derived from the kind an option declares, so that a new option brings its cases."""

from __future__ import annotations

from pyspark_upsert_kafka.formats.avro.codec import AvroSchema
from pyspark_upsert_kafka.formats.raw_codec import Charset
from pyspark_upsert_kafka.kernel.option_kinds import Char, Count, Flag, Kind, OneOf, Regex, Text
from pyspark_upsert_kafka.options.catalog_read import VersionSources
from pyspark_upsert_kafka.options.kinds import (
    Duration,
    EpochMillis,
    FlinkColumnTypes,
    FlinkOffsets,
    MemorySize,
    SparkOffsets,
    SparkTime,
    SparkTimestamps,
)


def bad_values(kind: Kind) -> list[tuple[str, str]]:
    """Values the declared kind refuses, derived from its parameters: (label, value). None for free text, whose
    mistakes are the option's own rules (the suites' RULES)."""
    words = {
        Flag: ["", "yes", "1", "maybe", "true false"],
        MemorySize: ["", "big", "0", "0 mb", "-1 mb", "1.5 gb", "1 pb", "mb"],
        EpochMillis: ["", "yesterday", "-5", "1.5", "1e12"],
        SparkTime: ["", "soon", "-1s", "0", "0m", "1 fortnight", "1.5m", "15 mins"],
        Regex: ["orders-(", "[a-", "*"],
        Char: ["", "ab", "\n"],
        Charset: ["klingon", "base64", ""],
        AvroSchema: ["{not json", '{"type": "nope"}'],
        VersionSources: ["", "offset", "header:", "header", "timestamps", "value:v"],
        FlinkColumnTypes: [
            "ts",
            "ts DATE",
            "ts TIMESTAMP(9)",
            "ts TIMESTAMP(3) ts TIMESTAMP(3)",
            "ts TIMESTAMP(3),, x TIMESTAMP(3)",
            "ts TIMESTAMP(3), ts TIMESTAMP(6)",
            "`ts TIMESTAMP(3)",
        ],
        FlinkOffsets: [
            "0:42",
            "partition:0,offset:-1",
            "partition:x,offset:1",
            "partition:0;offset:1",
            "partition:0,offset:1;partition:0,offset:2",
        ],
        SparkTimestamps: [
            "",
            "{not json",
            '{"t": 5}',
            '{"t": {"x": 1}}',
            '{"t": {"0": -1}}',
            '{"t": {"0": 1.5}}',
            '{"t": {"0": true}}',
            "[1, 2]",
            '{"other": {"0": 1}}',
            "earliest",
        ],
    }.get(type(kind))
    if isinstance(kind, Duration):
        words = ["", "soon", "-1 s", "1 fortnight", "s", "1.5.2 s"] + ([] if kind.allow_zero else ["0"])
    elif isinstance(kind, Count):
        words = ["", "-1", "1.5", "many", "1e3", " "] + ([str(kind.minimum - 1)] if kind.minimum > 0 else [])
    elif isinstance(kind, SparkOffsets):
        words = [
            "",
            "{not json",
            '{"t": 5}',
            '{"t": {"x": 1}}',
            '{"t": {"0": -3}}',
            '{"t": {"0": 1.5}}',
            '{"t": {"0": true}}',
            "[1, 2]",
            '"earliest"',
            '{"other": {"0": 1}}',
            "earliests",
        ] + (["earliest", '{"t": {"0": -2}}'] if kind.ending else [])
    elif isinstance(kind, OneOf):  # Choice and EnumChoice
        first = kind.choices[0]
        words = ["", first[:-1], first + "s"] + ([",".join(kind.choices[:2])] if len(kind.choices) > 1 else [])
        if not kind.dashes:  # the other separator: `except-key` for EXCEPT_KEY, `earliest_offset` for earliest-offset
            words += [c.translate(str.maketrans("-_", "_-")) for c in kind.choices if "-" in c or "_" in c][:1]
    elif isinstance(kind, Text) and words is None:
        return []
    assert words is not None, f"the bad-input suite knows no bad values of kind {type(kind).__name__}: add them here"
    return [(repr(w), w) for w in dict.fromkeys(words)]
