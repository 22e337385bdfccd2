"""Everything under tests/compat/ runs on every supported pyspark (.ci/run: `pytest -m compat`)."""

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/compat/" in item.nodeid:
            item.add_marker(pytest.mark.compat)
