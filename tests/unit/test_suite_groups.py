"""The suite's groups (tests/conftest.py): every test is in exactly one of unit / broker / faults / security, and a
unit test cannot start a JVM (a Kafka broker, the Schema Registry or Spark), so `pytest -m unit` needs no server."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import GROUPS


@pytest.mark.parametrize("command", [["java", "-version"], ["/opt/spark/bin/spark-submit", "--version"]])
def test_a_unit_test_that_starts_a_jvm_fails_naming_itself(command):
    with pytest.raises(RuntimeError, match=r"unit test .*test_a_unit_test_that_starts_a_jvm.* started"):
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_unit_test_may_start_other_processes():
    assert subprocess.run(["true"], check=False).returncode == 0


def test_every_collected_test_is_in_exactly_one_group(request: pytest.FixtureRequest):
    items = request.session.items
    assert request.node in items
    wrong = {i.nodeid: [g for g in GROUPS if i.get_closest_marker(g)] for i in items}
    assert {n: g for n, g in wrong.items() if len(g) != 1} == {}
    assert request.node.get_closest_marker("unit")


def test_a_brokers_ports_are_below_the_ephemeral_range_so_a_restart_finds_them_free():
    from integration.kafka import ephemeral_start, free_ports

    ports = free_ports(3)
    assert len(set(ports)) == 3
    assert all(10_000 <= port < min(ephemeral_start(), 32768) for port in ports), ports
