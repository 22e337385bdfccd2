"""Options are read through constants (`values.value(READ_MODE)`), never by a name string: the connector's through
the catalog's, each codec through its own (formats/, where the codec declares them). A misspelt constant is a
NameError ruff sees, a misspelt string a KeyError (or a silently absent option) when it runs. Also what
`OptionValues` does with an option object not its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from pyspark_upsert_kafka.formats import available_formats, codec_class
from pyspark_upsert_kafka.kernel.option_kinds import Option, Text, parse_values
from pyspark_upsert_kafka.options.canonical import canonical_options
from pyspark_upsert_kafka.options.catalog import BY_NAME
from pyspark_upsert_kafka.options.catalog_read import READ_MODE

ROOT = Path(__file__).parents[2]
CONNECTOR = ROOT / "connector"
FORMATS = ROOT / "formats"
# A look-up: .value("x"), .get("x"), .text("x"), .given("x"), default_of("x"), ["x"], "x" in ...
LOOK_UP = re.compile(
    r"""(?:\.(?:value|get|text|given)\(|default_of\(|\[|(?<![\w.])in\s+)\s*"([^"]+)"|"([^"]+)"\s+(?:not\s+)?in\s"""
)


def look_ups(source: str, names: set[str]) -> list[int]:
    """The lines of `source` that look an option up by one of `names` (LOOK_UP)."""
    return [
        number
        for number, line in enumerate(source.splitlines(), 1)
        if any((m.group(1) or m.group(2)) in names for m in LOOK_UP.finditer(line))
    ]


def test_the_look_up_scan_sees_every_way_of_naming_an_option():
    source = (
        'a = options.value("read.mode")\n'
        'b = given.get("topic")\n'
        'c = values.text("topic")\n'
        'd = spec.given("topic")\n'
        'e = default_of("topic")\n'
        'f = options["topic"]\n'
        'g = "topic" in options\n'
        'h = "topic" not in options\n'
        'i = found = key in "topic"\n'  # the pattern's bare `in "name"`
        "j = options.value(TOPIC)\n"  # through a constant
        'k = record.get("payload")\n'  # not an option's name
    )
    assert look_ups(source, {"read.mode", "topic"}) == [1, 2, 3, 4, 5, 6, 7, 8, 9]


def test_no_option_is_read_by_its_name_outside_the_catalog():
    names = set(BY_NAME) - {"properties.*"}
    scanned = [
        p for p in sorted(CONNECTOR.rglob("*.py")) if not (p.parent.name == "options" and p.name.startswith("catalog"))
    ]
    assert len(scanned) > 50, "the scan sees the connector's modules"
    found = [f"{p.relative_to(CONNECTOR)}:{n}" for p in scanned for n in look_ups(p.read_text(), names)]
    assert found == []


def test_values_answer_for_their_own_options_only():
    values = canonical_options({"read.mode": "changelog"})
    assert values.value(READ_MODE) == "changelog" and values.given(READ_MODE) and values.text(READ_MODE) == "changelog"
    stranger = Option("read.mode", "table", "read", "another declaration of the name", kind=Text())
    with pytest.raises(KeyError, match="not the one these values declare"):
        values.value(stranger)
    with pytest.raises(TypeError, match="read it through its constant"):
        parse_values([stranger], {}).value("read.mode")  # type: ignore[arg-type]


def _declared_options(source: str) -> list[tuple[str, bool, str]]:
    """(name, declared without a default, annotation) of each module-level `NAME = Option(...)` of `source`."""
    found = []
    for node in ast.parse(source).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Option"):
            continue
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
        default = value.args[1] if len(value.args) > 1 else next(k.value for k in value.keywords if k.arg == "default")
        annotation = ast.unparse(node.annotation) if isinstance(node, ast.AnnAssign) else ""
        found.append((ast.unparse(target), isinstance(default, ast.Constant) and default.value is None, annotation))
    return found


def test_an_option_without_a_default_is_typed_as_possibly_none():
    """`value()` returns an option's type: for an option with no default that is None when not given, so its
    constant must say so (`Option[int | None]`), and the type checker makes every reader handle the None."""
    declared = {
        f"{path.relative_to(ROOT)}: {name}": (no_default, annotation)
        for folder in (CONNECTOR, FORMATS)
        for path in sorted(folder.rglob("*.py"))
        for name, no_default, annotation in _declared_options(path.read_text())
    }
    names = {key.rpartition(" ")[2] for key in declared}
    assert names >= {"READ_MODE", "TOPIC", "CHARSET", "SUBJECT", "SINK_WRITE_ID"}, "the scan sees every catalog"
    assert _untyped(declared) == []


def _untyped(declared: dict[str, tuple[bool, str]]) -> list[str]:
    """The declarations without a default whose type does not say None."""
    return [key for key, (no_default, annotation) in declared.items() if no_default and "None" not in annotation]


def test_the_typing_scan_reads_declarations_and_finds_an_untyped_one():
    source = (
        "A = Option('a', None, READ, 'doc', kind=Text())\n"
        "B: Option[str | None] = Option('b', None, READ, 'doc', kind=Text())\n"
        "C = Option('c', '1', READ, 'doc', kind=Count())\n"
        "D: Option[str] = Option('d', None, READ, 'doc', kind=Text())\n"
    )
    declared = _declared_options(source)
    assert declared == [
        ("A", True, ""),
        ("B", True, "Option[str | None]"),
        ("C", False, ""),
        ("D", True, "Option[str]"),
    ]
    assert _untyped({name: (no_default, annotation) for name, no_default, annotation in declared}) == ["A", "D"]


# ---- Read by a name string, in the connector and in every codec: read from the sources' syntax -----------------

# OptionValues' reads: given a string (a literal or an f-string) they read by name, whatever the name.
READS = frozenset({"value", "given", "text"})
# What holds options by name: a codec's raw options, its option names, its parsed values.
HOLDERS = frozenset({"options", "option_names", "option_values"})


def format_option_names() -> set[str]:
    """Every name (and alias) a built-in codec declares."""
    return {
        name
        for format_name in available_formats()
        for option in codec_class(format_name, "value.format").declared_options
        for name in (option.name, *option.aliases)
    }


def _holder(node: ast.expr) -> str | None:
    """`options` of `options`, `self.options` or `codec.option_names`."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name if name in HOLDERS else None


def _text(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _reads_by_name(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        first, method = node.args[0], node.func.attr
        by_string = _text(first) is not None or isinstance(first, ast.JoinedStr)
        return (method in READS and by_string) or (
            method == "get" and _holder(node.func.value) is not None and _text(first) in names
        )
    if isinstance(node, ast.Compare) and _text(node.left) in names:
        return any(isinstance(op, (ast.In, ast.NotIn)) and _holder(c) for op, c in zip(node.ops, node.comparators))
    return isinstance(node, ast.Subscript) and _holder(node.value) is not None and _text(node.slice) in names


def reads_by_name(source: str, names: set[str]) -> list[str]:
    """The lines of `source` that read an option by a name string: `values.value("x")` (or an f-string), and
    `"x" in options`, `options["x"]`, `options.get("x")` for a declared name `x`."""
    found = {getattr(node, "lineno", 0) for node in ast.walk(ast.parse(source)) if _reads_by_name(node, names)}
    return [str(line) for line in sorted(found)]


def test_the_scan_sees_every_way_of_reading_an_option_by_name():
    source = (
        "a = values.value('fail-on-missing-field')\n"
        "b = self.option_values.value(f'{name}.include')\n"
        "c = values.given('quote-character')\n"
        "d = 'quote-character' in options\n"
        "e = 'ignore-parse-errors' in codec.option_names\n"
        "f = options['charset']\n"
        "g = self.options.get('charset')\n"
        "h = values.value(CHARSET)\n"  # through a constant
        "i = envelope.get('schema')\n"  # a record's field, not an option
        "j = 'schema' in envelope\n"
        "k = f\"option '{prefix}charset'\"\n"  # a message (its own rule: the constant's name)
    )
    names = {"fail-on-missing-field", "quote-character", "ignore-parse-errors", "charset", "schema"}
    assert reads_by_name(source, names) == ["1", "2", "3", "4", "5", "6", "7"]


def test_no_option_is_read_by_a_name_string_in_the_connector_or_any_format():
    names = (set(BY_NAME) - {"properties.*"}) | format_option_names()
    scanned = [p for folder in (CONNECTOR, FORMATS) for p in sorted(folder.rglob("*.py"))]
    families = {p for p in FORMATS.iterdir() if (p / "__init__.py").exists()}
    assert {"avro", "cdc", "confluent", "csv", "json", "protobuf"} <= {f.name for f in families}
    assert families <= {p.parent for p in scanned}, "every format family's folder is scanned"
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in scanned
        if not (path.parent.name == "options" and path.name.startswith("catalog"))
        for line in reads_by_name(path.read_text(), names)
    ]
    assert found == []
