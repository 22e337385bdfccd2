"""The README's option table, generated from connector/options/catalog.py so the two cannot drift apart.

    integration/dev python -m integration.readme_options    # rewrites the table between the markers

tests/api/test_options.py checks that the README holds exactly this table.
"""

from __future__ import annotations

import re
from pathlib import Path

from pyspark_upsert_kafka.options.catalog import OPTIONS, OptionDoc
from pyspark_upsert_kafka.options.common import GUARANTEE_PROPERTIES, RESERVED_PROPERTIES

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- options:start (generated: python -m integration.readme_options) -->", "<!-- options:end -->"
_BLOCK = re.escape(START) + r"(.*?)" + re.escape(END)


def _row(doc: OptionDoc) -> str:
    aliases = ", ".join(f"`{a}`" for a in doc.aliases)
    name = f"`{doc.name}`" + (f" (alias {aliases})" if aliases else "")
    return f"| {name} | {doc.default or ''} | {doc.applies} | {doc.meaning} |"


def options_table() -> str:
    lines = ["| option | default | read/write | meaning |", "|---|---|---|---|"]
    return "\n".join(lines + [_row(doc) for doc in OPTIONS] + ["", reserved_table()])


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


def readme_table(text: str) -> str | None:
    """The table between the markers in the README text, or None when the markers are missing."""
    match = re.search(_BLOCK, text, re.S)
    return match.group(1).strip() if match else None


def main() -> int:
    text = README.read_text()
    if readme_table(text) is None:
        raise SystemExit(f"README.md lacks the markers {START} ... {END}")
    new = re.sub(_BLOCK, lambda _: f"{START}\n{options_table()}\n{END}", text, flags=re.S)
    README.write_text(new)
    print("README.md option table updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
