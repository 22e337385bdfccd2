"""The README and its reference pages say what the code and the results say: every generated table is the one
the code and the results files give today (a catalog or codec change without regenerating fails here), the
pages name every option, format option, metadata key and module the code has, and every link between them
resolves. Regenerate with `integration/dev python -m integration.readme_options`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark_upsert_kafka.formats import codec_class

from integration.readme_options import (
    BUILT_IN_FORMATS,
    CHANGE_DATA_CAPTURE,
    COMMAND,
    HEADER,
    PAGES,
    ROOT,
    block_text,
    codec_example,
    options_table,
    render,
)

README = ROOT / "README.md"
# The hand-written pages next to the generated ones, all linked from the README.
PAGES_BY_HAND = ("connector/README.md", "connector/read/README.md", "connector/write/README.md", "docker/README.md")
ALL_PAGES = ("README.md", *PAGES, *PAGES_BY_HAND)
# The folders' own pages: each format family's, the kernel's and the wings' (what it is, its public face, its modules).
FOLDERS = sorted(
    [
        "connector/kernel",
        "connector/kafka",
        "connector/flink",
        *(str(p.parent.relative_to(ROOT)) for p in (ROOT / "formats").glob("*/__init__.py")),
    ]
)


def _text(page: str) -> str:
    return (ROOT / page).read_text()


@pytest.mark.parametrize("page", list(PAGES))
def test_each_generated_page_holds_what_the_code_and_results_give_today(page):
    text = _text(page)
    assert text.startswith(HEADER + "\n") and COMMAND in HEADER
    assert render(page, text) == text, f"{page} is stale: run {COMMAND}"


def test_the_readme_is_a_ten_minute_read_with_a_table_of_contents():
    text = README.read_text()
    assert len(text.encode()) <= 45_000, f"README.md is {len(text.encode()):,} bytes: move reference into a page"
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections[:4] == ["Spark versions", "Two commands on a fresh machine", "Install", "Use"]
    assert {"Guarantees", "Errors", "Reference"} <= set(sections)
    contents = text.split("Contents:", 1)[1].split("\n\n", 1)[0]
    for section in sections:
        assert f"(#{_slug(section)})" in contents, f"the table of contents lacks {section}"
    for page in (*PAGES, *PAGES_BY_HAND):
        assert f"]({page})" in text, f"the README does not link {page}"


def test_the_first_install_line_works_without_the_package_on_pypi():
    install = README.read_text().split("## Install", 1)[1].split("\n## ", 1)[0]
    first = re.search(r"```bash\n(.+)\n", install).group(1)
    assert first.startswith("pip install .")  # from a clone: the package is not published yet
    assert "`pip install pyspark-upsert-kafka`" in install  # the published name, said to come


def test_the_option_page_lists_every_catalog_option_and_owned_client_property():
    assert block_text(_text("connector/options/README.md"), "options") == options_table()


def test_the_codec_example_is_the_module_the_plugin_tests_run():
    """One source: the page shows tests/workers/tsv_codec.py as it is, which tests/formats/test_format_plugins.py
    writes and reads through Spark's Python workers against the real broker."""
    example = block_text(_text("formats/README.md"), "tsv-codec")
    assert example == codec_example()
    assert "class TsvCodec(Codec):" in example
    plugins = (ROOT / "tests/formats/test_format_plugins.py").read_text()
    assert '"tests.workers.tsv_codec:TsvCodec"' in plugins


@pytest.mark.parametrize("fmt", BUILT_IN_FORMATS)
def test_the_format_page_names_every_option_the_codec_takes(fmt):
    text = _text("formats/README.md")
    for option in codec_class(fmt, "value.format").option_names:
        assert f"`{option}`" in text, f"formats/README.md does not name option {option!r} of {fmt}"


@pytest.mark.parametrize("fmt", CHANGE_DATA_CAPTURE)
def test_the_format_page_says_where_each_metadata_key_of_a_change_data_capture_format_comes_from(fmt):
    text = _text("formats/README.md")
    origins = text.split("Where each comes from in the envelope:", 1)[1].split("\n\n", 1)[0]
    said = origins.split(f"**{fmt}**", 1)[1].split("**", 1)[0]
    for key in codec_class(fmt, "value.format").readable_metadata:
        assert f"`{key}`" in said, f"formats/README.md does not say where {fmt}'s {key} comes from"


def _layout() -> set[str]:
    """The modules connector/README.md's layout block lists, by path: an entry's names (`a.py`, `b.py, c.py`,
    `folder/`) are in the name column, each under the folders above it at a smaller indent; a line indented to the
    description column continues the one above."""
    block = _text("connector/README.md").split("```\nconnector/", 1)[1].split("\n```", 1)[0]
    folders: list[tuple[int, str]] = []
    listed = set()
    for line in ("connector/" + block).splitlines():
        indent = len(line) - len(line.lstrip())
        names = re.match(r"([\w.]+/?(?:, [\w.]+/?)*)(?:\s{2,}|$)", line.strip())
        if indent >= 20 or not names:
            continue
        while folders and folders[-1][0] >= indent:
            folders.pop()
        for name in names.group(1).split(", "):
            if name.endswith("/"):
                folders.append((indent, name.rstrip("/")))
            else:
                listed.add("/".join([*(f for _, f in folders), name]))
    return listed


def test_the_layout_page_names_every_module_and_only_modules_that_exist():
    listed = {path for path in _layout() if path.split("/")[0] in ("connector", "formats")}
    modules = {str(p.relative_to(ROOT)) for folder in ("connector", "formats") for p in (ROOT / folder).rglob("*.py")}
    assert {"connector/kernel/errors.py", "formats/avro/codec.py", "formats/cdc/ogg.py"} <= listed
    lacking = {m for m in modules - listed if Path(m).name != "__init__.py"}
    assert lacking == set(), "connector/README.md (the layout) lacks these modules"
    assert listed - modules == set(), "connector/README.md lists modules that do not exist"
    named = set(re.findall(r"\b(\w+\.py)\b", _text("connector/README.md")))
    assert named - {Path(m).name for m in modules} == set(), "connector/README.md names modules that do not exist"


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_format_family_the_kernel_and_each_wing_has_a_readme_naming_its_modules(folder):
    """formats/<family>/README.md, connector/kernel/README.md and the wings' (connector/kafka/, connector/flink/): what
    the folder is, its public face, and each of its modules."""
    text = _text(f"{folder}/README.md")
    for module in sorted(p.name for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py"):
        assert f"`{module}`" in text, f"{folder}/README.md does not name {module}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", prose, re.M)}


@pytest.mark.parametrize("page", [*ALL_PAGES, *(f"{folder}/README.md" for folder in FOLDERS)])
def test_every_link_of_a_page_reaches_a_file_and_heading_that_exist(page):
    text = _text(page)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    links = [t for t in re.findall(r"\]\(([^)\s]+)\)", prose) if not re.match(r"https?:", t)]
    assert links or page == "connector/README.md" or page.removesuffix("/README.md") in FOLDERS
    for link in links:
        path, _, anchor = link.partition("#")
        target = (ROOT / page).parent / path if path else ROOT / page
        assert target.resolve().exists(), f"{page} links {link}: no such file"
        if anchor:
            assert anchor in _anchors(target.read_text()), f"{page} links {link}: no such heading"


def test_every_reference_page_lives_in_the_projects_folders():
    folders = {"README.md", "connector", "formats", "integration", "docker", "tests"}  # no docs/ folder
    assert {Path(page).parts[0] for page in ALL_PAGES} <= folders


def test_the_readme_errors_table_names_every_error_users_catch():
    import pyspark_upsert_kafka
    from pyspark_upsert_kafka.errors import UpsertKafkaError

    errors = README.read_text().split("\n## Errors", 1)[1].split("\n## ", 1)[0]
    kinds = [e for e in vars(pyspark_upsert_kafka.errors).values() if isinstance(e, type)]
    kinds = [e for e in kinds if issubclass(e, UpsertKafkaError) and e is not UpsertKafkaError]
    assert len(kinds) >= 9
    for kind in kinds:
        assert f"`{kind.__name__}`" in errors, f"the README's Errors lacks {kind.__name__}"
        assert getattr(pyspark_upsert_kafka, kind.__name__) is kind, f"{kind.__name__} is not exported"
