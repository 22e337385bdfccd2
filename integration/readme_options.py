"""The README's option table, generated from connector/options/catalog.py, and its table of the column types
each format holds, generated from the codecs' declarations (Codec.column_types), so neither can drift apart.

    integration/dev python -m integration.readme_options    # rewrites the tables between the markers

tests/api/test_options.py checks that the README holds exactly these tables.
"""

from __future__ import annotations

import re
from pathlib import Path

from pyspark_upsert_kafka.formats import codec_class
from pyspark_upsert_kafka.formats.option_kinds import Option
from pyspark_upsert_kafka.options.catalog import OPTIONS
from pyspark_upsert_kafka.options.common import GUARANTEE_PROPERTIES, RESERVED_PROPERTIES
from pyspark_upsert_kafka.options.flink_only import readme_section

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- options:start (generated: python -m integration.readme_options) -->", "<!-- options:end -->"
_BLOCK = re.escape(START) + r"(.*?)" + re.escape(END)
TYPES_START = "<!-- format-types:start (generated: python -m integration.readme_options) -->"
TYPES_END = "<!-- format-types:end -->"
_TYPES_BLOCK = re.escape(TYPES_START) + r"(.*?)" + re.escape(TYPES_END)
FLINK_START = "<!-- flink-only:start (generated: python -m integration.readme_options) -->"
FLINK_END = "<!-- flink-only:end -->"
_FLINK_BLOCK = re.escape(FLINK_START) + r"(.*?)" + re.escape(FLINK_END)
BUILT_IN_FORMATS = ("json", "csv", "raw", "avro", "avro-confluent", "debezium-json", "canal-json", "maxwell-json")


def _row(option: Option) -> str:
    aliases = ", ".join(f"`{a}`" for a in option.aliases)
    name = f"`{option.name}`" + (f" (alias {aliases})" if aliases else "")
    return f"| {name} | {option.kind.type_name} | {option.shown} | {option.scope} | {option.doc} |"


def options_table() -> str:
    """Every option of the catalog: its name and aliases, declared kind, default, scope and meaning."""
    lines = ["| option | type | default | read/write | meaning |", "|---|---|---|---|---|"]
    return "\n".join(lines + [_row(doc) for doc in OPTIONS] + ["", reserved_table()])


def format_options_table(name: str) -> str:
    """The options of built-in format `name` as its codec declares them (`<role>.<format>.` left out), for the
    reference page of the formats."""
    lines = ["| option | type | default | meaning |", "|---|---|---|---|"]
    for option in codec_class(name, "value.format").declared_options:
        aliases = ", ".join(f"`{a}`" for a in option.aliases)
        shown = f"`{option.name}`" + (f" (alias {aliases})" if aliases else "")
        lines.append(f"| {shown} | {option.kind.type_name} | {option.shown} | {option.doc} |")
    return "\n".join(lines)


def reserved_table() -> str:
    """The client properties the connector owns: a `properties.*` value other than the accepted one fails."""
    lines = [
        "Client properties the connector sets itself (a different `properties.*` value is refused):",
        "",
        "| property | accepted value | why |",
        "|---|---|---|",
    ]
    for name, reserved in RESERVED_PROPERTIES.items():
        accepted = " or ".join(f"`{v}`" for v in reserved.accepted) or "none"
        when = " (any value with `sink.delivery-guarantee` = `none`)" if name in GUARANTEE_PROPERTIES else ""
        lines.append(f"| `properties.{name}` | {accepted}{when} | {reserved.reason} |")
    return "\n".join(lines)


def format_types_table() -> str:
    """The column types each built-in format holds, as its codec declares them."""
    lines = ["| format | column types it holds |", "|---|---|"]
    for name in BUILT_IN_FORMATS:
        types = codec_class(name, "value.format").column_types
        one = "; exactly one column (the key, or the value with `value.fields-include=EXCEPT_KEY`)"
        lines.append(f"| `{name}` | {types.describe()}{one if types.columns == 1 else ''} |")
    return "\n".join(lines)


def readme_table(text: str, block: str = _BLOCK) -> str | None:
    """The table between the markers in the README text, or None when the markers are missing."""
    match = re.search(block, text, re.S)
    return match.group(1).strip() if match else None


def readme_format_types(text: str) -> str | None:
    return readme_table(text, _TYPES_BLOCK)


def readme_flink_only(text: str) -> str | None:
    return readme_table(text, _FLINK_BLOCK)


def main() -> int:
    text = README.read_text()
    for block, start, end, table in (
        (_BLOCK, START, END, options_table()),
        (_TYPES_BLOCK, TYPES_START, TYPES_END, format_types_table()),
        (_FLINK_BLOCK, FLINK_START, FLINK_END, readme_section()),
    ):
        if readme_table(text, block) is None:
            raise SystemExit(f"README.md lacks the markers {start} ... {end}")
        text = re.sub(block, lambda _, s=start, t=table, e=end: f"{s}\n{t}\n{e}", text, flags=re.S)
    README.write_text(text)
    print("README.md option and format type tables updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
