"""One Spark Connect server for this folder's tests (tests/conftest.py counts it as a server fixture)."""

from __future__ import annotations

import pytest

from integration.spark_connect import ConnectServer


@pytest.fixture(scope="package")
def connect_server(tmp_path_factory):
    with ConnectServer(tmp_path_factory.mktemp("connect")) as server:
        yield server
