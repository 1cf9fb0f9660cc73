"""What the deploy-tier tests share: a simulated cluster of each release, deployed once."""

from __future__ import annotations

import pytest
from deploy.fakedeploy import RELEASES, SimCluster, dump


@pytest.fixture(params=RELEASES, ids=[f"{v}-{a}" for v, a in RELEASES])
def cluster(request, tmp_path):
    version, auth = request.param
    sim = SimCluster(tmp_path / "sim", version=version, auth=auth)
    sim.version, sim.auth = version, auth
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    return sim
