"""Every key written to slurm.conf or cgroup.conf exists, and is not defunct, in the parser table of the release
rendered for: an unknown key stops slurmctld and slurmd at start."""

from __future__ import annotations

import pytest
from golden_cases import cases, refusal

from clusterforge.errors import InventoryError
from clusterforge.key_tables import cgroup_conf_keys, slurm_conf_keys
from clusterforge.model import resolve
from clusterforge.render import render_all
from clusterforge.versions import SUPPORTED

CASES = cases()


def top_level_keys(text: str) -> list[str]:
    return [line.split("=", 1)[0] for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize("version", SUPPORTED, ids=str)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_keys_exist_in_the_release(case, version):
    cluster = case.cluster()
    refused = refusal(cluster, version)
    if refused is not None:  # nothing to render for it
        with pytest.raises(InventoryError, match=refused):
            resolve(cluster, version)
        return
    valid = resolve(cluster, version)
    files = render_all(valid)
    for file, table in (("slurm.conf", slurm_conf_keys(version)), ("cgroup.conf", cgroup_conf_keys(version))):
        for key in top_level_keys(files[file]):
            canonical = table.lookup(key)
            assert canonical == key, f"{file}: {key} is not a key of Slurm {version}"
            assert not table.is_defunct(canonical), f"{file}: {key} is defunct in Slurm {version}"


def test_the_tables_know_the_documented_breakages():
    assert slurm_conf_keys(SUPPORTED[0]).lookup("slurmctldplugstack") == "SlurmctldPlugstack"
    assert slurm_conf_keys(SUPPORTED[2]).lookup("SlurmctldPlugstack") is None  # removed in 23.02
    cg_2211 = cgroup_conf_keys(SUPPORTED[3])
    assert cg_2211.lookup("ConstrainKmemSpace") is None and cg_2211.is_defunct("CgroupAutomount")
    assert slurm_conf_keys(SUPPORTED[-1]).lookup("AccountingStorageLoc") is None  # removed in 25.11
