"""The check run on real SSH connections that cannot be made (no test cluster needed): a host that cannot be
reached is "could not check" (exit 2), named with ssh's reason, and the other hosts are still checked."""

from __future__ import annotations

import shutil
import socket
import time

import pytest

from clusterforge.check import exit_status, report
from clusterforge.check.run import check_cluster
from clusterforge.reach.hosts import Target, load

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on return: connections to it are refused


def test_unreachable_hosts_are_could_not_check_and_exit_2(tmp_path):
    valid, targets = load("inventories/vagrant.py")
    port = _closed_port()
    unreachable = [Target(t.machine, {**t.data, "ssh_hostname": "127.0.0.1", "ssh_port": port}) for t in targets]
    start = time.monotonic()
    outcomes = check_cluster(valid, unreachable)
    assert time.monotonic() - start < 30  # every host at once, each refused at once
    assert {o.host for o in outcomes} == {t.name for t in targets}
    assert {(o.check, o.status) for o in outcomes} == {("reach", "UNCHECKED")}
    assert all("refused" in o.findings[0].message for o in outcomes), outcomes[0]
    assert exit_status(outcomes) == 2
    assert report.table(outcomes).endswith("could not check everything (exit 2)")


def test_limit_keeps_the_hosts_named_and_the_controller_for_slurms_view():
    valid, targets = load("inventories/vagrant.py")
    port = _closed_port()
    unreachable = [Target(t.machine, {**t.data, "ssh_hostname": "127.0.0.1", "ssh_port": port}) for t in targets]
    outcomes = check_cluster(valid, unreachable, limit=frozenset({"gpu02"}))
    assert [o.host for o in outcomes] == ["ctl", "gpu02"]

