"""The reference pages' generated tables: every option (from connector/options/catalog.py), the client
properties the connector owns, the Flink settings with no meaning here, the column types each format holds
(the codecs' declarations, Codec.column_types), the user codec example (tests/workers/tsv_codec.py, the module
its tests run) and the benchmark figures (integration/results/*.json), each placed between its markers on the
page that shows it, so that no table drifts from what it describes. One command rewrites them all:

    integration/dev python -m integration.readme_options

tests/unit/test_docs.py regenerates every page and fails when one differs from the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pyspark_upsert_kafka.formats import codec_class
from pyspark_upsert_kafka.kernel.option_kinds import Option
from pyspark_upsert_kafka.options.catalog import OPTIONS
from pyspark_upsert_kafka.options.columns import METADATA_TYPES, WRITABLE_METADATA, type_text
from pyspark_upsert_kafka.options.flink_only import readme_section
from pyspark_upsert_kafka.options.kafka_client import GUARANTEE_PROPERTIES, RESERVED_PROPERTIES
from pyspark_upsert_kafka.spark_internals import from_arrow_type

from integration import results_tables
from integration.readme_types import type_mapping_table

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "integration/dev python -m integration.readme_options"
# The first line of every generated page: what is generated, and how to regenerate it.
HEADER = (
    "<!-- The tables between 'generated' markers are written from the code and the results files by "
    f"integration/readme_options.py: regenerate them with `{COMMAND}` (tests/unit/test_docs.py fails when one "
    "is stale); edit the text around them by hand. -->"
)
BUILT_IN_FORMATS = (
    "json", "csv", "raw", "avro", "avro-confluent", "json-confluent", "protobuf", "protobuf-confluent",
    "debezium-json", "canal-json", "maxwell-json", "ogg-json", "debezium-avro-confluent",
)  # fmt: skip
PROTOBUF = ("protobuf", "protobuf-confluent")
CHANGE_DATA_CAPTURE = ("debezium-json", "canal-json", "maxwell-json", "ogg-json")
CODEC_EXAMPLE = ROOT / "tests/workers/tsv_codec.py"


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


def cdc_options_table() -> str:
    """The change-data-capture formats' options in one table, with the formats that take each."""
    rows: dict[str, tuple[Option, list[str]]] = {}
    for name in CHANGE_DATA_CAPTURE:
        for option in codec_class(name, "value.format").declared_options:
            rows.setdefault(option.name, (option, []))[1].append(name)
    lines = ["| option | formats | type | default | meaning |", "|---|---|---|---|---|"]
    for option, formats in rows.values():
        taken = "all" if len(formats) == len(CHANGE_DATA_CAPTURE) else ", ".join(formats)
        lines.append(f"| `{option.name}` | {taken} | {option.kind.type_name} | {option.shown} | {option.doc} |")
    return "\n".join(lines)


def other_format_options() -> str:
    """The options of the built-in formats that json's and the change-data-capture tables do not show."""
    others = [n for n in BUILT_IN_FORMATS if n != "json" and n not in CHANGE_DATA_CAPTURE and n not in PROTOBUF]
    return named_format_options(others)


def named_format_options(names: list[str] | tuple[str, ...]) -> str:
    return "\n\n".join(f"**{n}** (`key.{n}.*`, `value.{n}.*`):\n\n{format_options_table(n)}" for n in names)


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


def record_metadata_table() -> str:
    """The record's metadata keys option `metadata.columns` takes, with the type a column of each must have."""
    lines = ["| key | column type | written |", "|---|---|---|"]
    for key, t in METADATA_TYPES.items():
        lines.append(f"| `{key}` | `{type_text(t)}` | {'yes' if key in WRITABLE_METADATA else 'no: read only'} |")
    return "\n".join(lines)


def format_metadata_table() -> str:
    """The change-data-capture formats' own metadata (read only, `value.<key>`), as each codec declares it."""
    lines = ["| format | key | column type |", "|---|---|---|"]
    for name in CHANGE_DATA_CAPTURE:
        for key, t in codec_class(name, "value.format").readable_metadata.items():
            lines.append(f"| {name} | `{key}` | `{type_text(from_arrow_type(t))}` |")
    return "\n".join(lines)


def codec_example() -> str:
    """The user codec example: the module the plugin tests run through Spark's workers, as it is."""
    return f"```python\n{CODEC_EXAMPLE.read_text().rstrip()}\n```"


# page (relative to the repository) -> its generated blocks, by marker name, in the order they appear.
PAGES: dict[str, dict[str, Callable[[], str]]] = {
    "connector/options/README.md": {
        "options": options_table,
        "record-metadata": record_metadata_table,
        "flink-only": readme_section,
    },
    "formats/README.md": {
        "format-types": format_types_table,
        "flink-types": type_mapping_table,
        "format-options": other_format_options,
        "json-options": lambda: format_options_table("json"),
        "protobuf-options": lambda: named_format_options(PROTOBUF),
        "format-metadata": format_metadata_table,
        "cdc-options": cdc_options_table,
        "tsv-codec": codec_example,
    },
    "integration/results/README.md": results_tables.BLOCKS,
}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- generated: {name} -->", f"<!-- end generated: {name} -->"


def _block(name: str) -> str:
    start, end = markers(name)
    return re.escape(start) + r"\n(.*?)\n" + re.escape(end)


def block_text(text: str, name: str) -> str | None:
    """What the page holds between the markers of block `name`, or None when the markers are missing."""
    match = re.search(_block(name), text, re.S)
    return match.group(1) if match else None


def render(page: str, text: str) -> str:
    """The page's text with its header and every generated block written afresh."""
    if not text.startswith(HEADER + "\n"):
        raise SystemExit(f"{page} must start with the generated pages' header comment:\n{HEADER}")
    for name, make in PAGES[page].items():
        if block_text(text, name) is None:
            start, end = markers(name)
            raise SystemExit(f"{page} lacks the markers {start} ... {end}")
        start, end = markers(name)
        generated = "\n".join([start, make(), end])
        text = re.sub(_block(name), lambda _, g=generated: g, text, flags=re.S)
    return text


def stale_pages() -> list[str]:
    """The pages whose generated blocks differ from what the code and results give today."""
    return [page for page in PAGES if render(page, (ROOT / page).read_text()) != (ROOT / page).read_text()]


def main() -> int:
    for page in PAGES:
        path = ROOT / page
        text = path.read_text()
        path.write_text(render(page, text))
        print(f"{page}: {len(PAGES[page])} generated block(s) written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
