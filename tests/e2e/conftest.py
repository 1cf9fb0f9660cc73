"""The end-to-end tests need root, LXC, Vagrant and vagrant-lxc (testbed/up.sh installs them from Debian) and
network access to Debian's mirror (through the apt-cacher-ng proxy up.sh starts). They run when CLUSTERFORGE_E2E=1
(scripts/test.sh sets it), once per Debian release in CLUSTERFORGE_E2E_DISTS (default: bookworm, trixie).
CLUSTERFORGE_E2E_REUSE=1 runs them against the cluster already up (one release) and leaves it up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e.testbed import Testbed
from install.venv import build_wheel, fresh_venv

DISTS = [d for d in os.environ.get("CLUSTERFORGE_E2E_DISTS", "bookworm,trixie").split(",") if d]


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CLUSTERFORGE_E2E") == "1":
        return
    skip = pytest.mark.skip(reason="end-to-end: set CLUSTERFORGE_E2E=1 (scripts/test.sh does) to bring up the "
                                   "Vagrant test cluster and run them")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", params=DISTS)
def testbed(request):
    """A freshly deployed test cluster of one Debian release, torn down afterwards whatever happened. One per
    session and release, shared by every e2e module: pytest runs all the tests of one release, then the next's."""
    if os.geteuid() != 0:
        pytest.fail("the end-to-end tests need root (LXC containers, a bridge)", pytrace=False)
    bed = Testbed(request.param)
    if os.environ.get("CLUSTERFORGE_E2E_REUSE") == "1":
        # For working on the tests: use the cluster testbed/up.sh and a deploy left running, and leave it running.
        bed.first_deploy = None
        yield bed
        return
    bed.down()  # whatever a crashed earlier run left
    try:
        bed.up()
        first = bed.deploy()
        assert first.returncode == 0, f"the first deploy failed:\n{first.output[-6000:]}"
        bed.first_deploy = first
        yield bed
    finally:
        bed.down()


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Path:
    """The bin directory of a fresh virtualenv holding the wheel built from this clone, as an admin installs it
    (tests/install/venv.py): made once a session for the guide's walks (test_installed.py up to a deploy with
    nothing to do, test_gate.py a first deploy with admission on to a green `check`)."""
    wheel = build_wheel(tmp_path_factory.mktemp("dist"))
    return fresh_venv(wheel, tmp_path_factory.mktemp("venv") / "venv") / "bin"
