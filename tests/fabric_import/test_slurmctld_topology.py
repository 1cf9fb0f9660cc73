"""An imported fabric, rendered by clusterforge, is what the real slurmctld (22.05, and 24.11 in its Debian 13 root)
shows in `scontrol show topology`: the rail-optimized units merged into one switch each, and three tiers."""

from __future__ import annotations

import pytest
from fabric_import.cases import CAPTURED, gpu_cluster
from realslurm import harness

from clusterforge import hostlists
from clusterforge.fabric_import import import_fabric
from clusterforge.model import resolve
from clusterforge.render import render_all
from clusterforge.versions import SlurmVersion

CASES = {"rail-sharp": "gpu-node-[001-008]", "three-tier": "node[01-32]"}


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_slurmctld_shows_the_imported_tree(case, version):
    runtime = harness.require(version)
    names = CASES[case]
    fabric = import_fabric(CAPTURED[case].text(), case).fabric
    valid = resolve(gpu_cluster(names, fabric), SlurmVersion.parse(version))
    topology = render_all(valid)["topology.conf"]
    with harness.topology_slurmctld(runtime, hostlists.expand(names), "topology/tree", topology) as ctld:
        shown = harness.parse_topology(ctld.scontrol("show", "topology"))
        errors = ctld.errors()
    assert errors == []
    leaves = {leaf.name: set(leaf.nodes) for leaf in valid.topology.leaves}
    expected = {name: (set(nodes), set()) for name, nodes in leaves.items()}
    below: dict[str, set[str]] = dict(leaves)
    for spine in valid.topology.spines:  # in tier order: a spine's children come before it
        below[spine.name] = set().union(*(below[c] for c in spine.switches))
        expected[spine.name] = (below[spine.name], set(spine.switches))
    assert {name: (set(hostlists.expand(rec["Nodes"])), set(hostlists.expand(rec.get("Switches", ""))))
            for name, rec in shown.items()} == expected
    if case == "rail-sharp":
        assert sorted(leaves) == ["SU1-LEAF-1", "SU2-LEAF-1"]  # one switch per scalable unit
    else:
        assert {rec["Level"] for rec in shown.values()} == {"0", "1", "2"}
