"""The type checker of .ci/run: mypy, strict (pyproject's [tool.mypy]), on the product's packages.

    integration/dev python -m integration.typecheck

The product's import name, pyspark_upsert_kafka, is no folder of the tree: pyproject's package-dir maps it onto
connector/ and its formats subpackage onto formats/. mypy finds modules by folder, so the package is laid out here as
a tree of links (the mapping read from pyproject, not the editable install's own tree, which is the venv's and may
be another clone's), and each error's path is mapped back to the file it links to.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import tomllib
from mypy import api

ROOT = Path(__file__).resolve().parent.parent


def link_tree(into: Path) -> str:
    """Lays the packages of pyproject's package-dir out under `into` as links; returns the top package's name."""
    package_dir: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    mapped = {tuple(name.split(".")) for name in package_dir}
    for name, folder in sorted(package_dir.items(), key=lambda item: item[0].count(".")):
        target = into.joinpath(*name.split("."))
        target.mkdir(parents=True)
        for entry in (ROOT / folder).iterdir():
            if (*name.split("."), entry.name) not in mapped and entry.name != "__pycache__":
                (target / entry.name).symlink_to(entry)
    return min(package_dir, key=len)


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        top = link_tree(Path(folder))
        os.environ["MYPYPATH"] = folder
        out, err, status = api.run(
            ["--config-file", str(ROOT / "pyproject.toml"), "-p", top, "--cache-dir", os.devnull]
        )
        # A reported path is one of the links: name the file of the tree.
        lines = [
            os.path.relpath(os.path.realpath(path), ROOT) + ":" + rest if path.startswith(folder) else line
            for line in out.splitlines()
            for path, _, rest in [line.partition(":")]
        ]
    print("\n".join(lines))
    print(err, end="", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
