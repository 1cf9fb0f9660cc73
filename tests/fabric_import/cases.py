"""The fabrics the tests discover with ibsim, and the captured dumps of the small ones (dumps/*.txt), so the
importer is tested without ibsim too. test_dumps.py checks each capture is still what ibnetdiscover prints;
CLUSTERFORGE_UPDATE_GOLDEN=1 rewrites them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clusters import small_cluster
from fabric_import import netfiles

from clusterforge.model import Cluster, Fabric, Nodes

DUMPS = Path(__file__).parent / "dumps"
DEFAULT_HOSTS = ("gpu-node-003", "gpu-node-010", "gpu-node-020")


@dataclass(frozen=True)
class Captured:
    name: str
    net: Callable[[], netfiles.Net]
    attach: tuple[str | None, ...] = (None,)

    @property
    def path(self) -> Path:
        return DUMPS / f"{self.name}.txt"

    def text(self) -> str:
        return self.path.read_text()


CAPTURED = {c.name: c for c in (
    Captured("prod", netfiles.prod),
    Captured("rail-sharp", lambda: netfiles.rail_optimized(units=2, nodes=4, rails=8, spines=2, sharp=True)),
    Captured("defaults", lambda: netfiles.prod(defaults=DEFAULT_HOSTS)),
    # The storage fabric first: the importer must not take the first fabric it reads.
    Captured("storage", lambda: netfiles.with_storage(netfiles.prod(), netfiles.PROD_HOSTS[:4]),
             ("S-STORAGE-LEAF-01", None)),
    Captured("islands", netfiles.islands, (None, "S-spine02")),
    Captured("three-tier", netfiles.three_tier),
    # 4 scalable units of 4 DGX H100: one DGX describes its HCAs, the others need a GUID file (netfiles.superpod).
    Captured("superpod", netfiles.superpod),
    Captured("superpod-named", lambda: netfiles.superpod(described=tuple(netfiles.dgx_hosts(4, 4)))),
    # 3 units of 3 DGX whose HCAs say `dgx-001 HCA-4`: a unit one leaf short, crossed cables, a node on two rails'
    # leaves, a node with a rail on another unit's leaf (netfiles.port_labelled).
    Captured("short-unit", lambda: netfiles.port_labelled(missing=(2, 4))),
    Captured("crossed", lambda: netfiles.port_labelled(crossed=("dgx-002", 5, 6))),
    Captured("two-rails", lambda: netfiles.port_labelled(moved=("dgx-008", 3, 4))),
    # dgx-002's HCA-4 on unit 2's HCA-4 leaf: its own rail, another unit (netfiles.port_labelled).
    Captured("other-unit", lambda: netfiles.port_labelled(elsewhere=("dgx-002", 4, 2))),
)}


def with_fabric(cluster: Cluster, fabric: Fabric) -> Cluster:
    """The inventory with the imported fabric in place of its own: leaves name their nodes, nodes name no leaf."""
    nodes = tuple(entry.model_copy(update={"leaf": None}) for entry in cluster.nodes)
    return cluster.model_copy(update={"nodes": nodes, "fabric": fabric})


def gpu_cluster(names: str, fabric: Fabric | None = None) -> Cluster:
    cluster = small_cluster(nodes=(Nodes(names, profile="gpu"),), fabric=None)
    return with_fabric(cluster, fabric) if fabric is not None else cluster
