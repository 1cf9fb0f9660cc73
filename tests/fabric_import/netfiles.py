"""Net files for ibsim, written by the tests: switches, HCAs with node descriptions, and the links between them.

ibsim reads the format ibnetdiscover writes. `switchguid=`/`caguid=` before a record fix its GUID (ibsim gives
port 1 of a CA the GUID after it), and `# "..."` after the record's id sets its node description, so several HCAs
can carry the same vendor default description, as on real fabrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHARP_DESCRIPTION = "Mellanox Technologies Aggregation Node"
DEFAULT_DESCRIPTION = "MT4129 ConnectX7   Mellanox Technologies"


@dataclass
class _Node:
    id: str
    kind: str  # "Switch" or "Hca"
    guid: int
    description: str
    ports: int
    links: dict[int, tuple[str, int]] = field(default_factory=dict)


@dataclass
class Net:
    nodes: dict[str, _Node] = field(default_factory=dict)
    _switch_guid: int = 0x2C5EAB0300000000
    _ca_guid: int = 0xE09D730300000000

    def switch(self, description: str, ports: int = 65) -> str:
        """A switch; its id is the name in its description (`MF0;SU1-LEAF-1:MQM9700/U1` -> S-SU1-LEAF-1)."""
        self._switch_guid += 0x10
        name = description.split(";", 1)[-1].split(":", 1)[0]
        return self._add("Switch", f"S-{name}", self._switch_guid, description, ports)

    def hca(self, description: str, *, key: str | None = None) -> str:
        """An HCA (one port); ``key`` tells apart HCAs with the same description."""
        self._ca_guid += 0x10
        return self._add("Hca", f"H-{key or description.replace(' ', '_')}", self._ca_guid, description, 1)

    def guid(self, node_id: str) -> str:
        return f"0x{self.nodes[node_id].guid:016x}"

    def port_guid(self, node_id: str) -> str:
        return f"0x{self.nodes[node_id].guid + 1:016x}"

    def link(self, a: str, b: str, a_port: int | None = None, b_port: int | None = None) -> None:
        a_port = a_port or self._free(a)
        b_port = b_port or self._free(b)
        self.nodes[a].links[a_port] = (b, b_port)
        self.nodes[b].links[b_port] = (a, a_port)

    def text(self) -> str:
        out = []
        for node in self.nodes.values():
            key = "switchguid" if node.kind == "Switch" else "caguid"
            out.append(f"{key}=0x{node.guid:016x}")
            out.append(f'{node.kind}\t{node.ports} "{node.id}"\t\t# "{node.description}"')
            out += [f'[{port}]\t"{peer}"[{peer_port}]' for port, (peer, peer_port) in sorted(node.links.items())]
            out.append("")
        return "\n".join(out)

    def _add(self, kind: str, node_id: str, guid: int, description: str, ports: int) -> str:
        assert node_id not in self.nodes, node_id
        self.nodes[node_id] = _Node(node_id, kind, guid, description, ports)
        return node_id

    def _free(self, node_id: str) -> int:
        node = self.nodes[node_id]
        port = next(p for p in range(1, node.ports + 1) if p not in node.links)
        return port


def leaf_spine(net: Net, nodes_per_leaf: dict[str, list[str]], spines: list[str], *, trunk: int = 1,
               hca: str = "mlx5_0", defaults: tuple[str, ...] = ()) -> None:
    """Leaves with one HCA per node, every leaf linked to every spine (``trunk`` cables each); the HCAs of the
    ``defaults`` hosts keep the vendor's description."""
    spine_ids = [net.switch(s) for s in spines]
    for leaf, hosts in nodes_per_leaf.items():
        leaf_id = net.switch(leaf)
        for host in hosts:
            described = DEFAULT_DESCRIPTION if host in defaults else f"{host} {hca}"
            net.link(leaf_id, net.hca(described, key=f"{host}_{hca}"))
        for spine_id in spine_ids:
            for _ in range(trunk):
                net.link(leaf_id, spine_id)


PROD_HOSTS = [f"gpu-node-{i:03d}" for i in range(1, 33)]


def prod(defaults: tuple[str, ...] = ()) -> Net:
    """inventories/prod.py: gpu-node-[001-032], 8 a leaf on leaf[01-04], both spines above every leaf; two cables
    from each leaf to each spine, as real trunks are."""
    net = Net()
    leaf_spine(net, {f"leaf{n:02d}": PROD_HOSTS[(n - 1) * 8:n * 8] for n in range(1, 5)}, ["spine01", "spine02"],
               trunk=2, defaults=defaults)
    return net


def islands() -> Net:
    """prod's nodes as two fabrics that share no switch: leaf[01-02] under spine01, leaf[03-04] under spine02."""
    net = Net()
    leaf_spine(net, {f"leaf{n:02d}": PROD_HOSTS[(n - 1) * 8:n * 8] for n in (1, 2)}, ["spine01"])
    leaf_spine(net, {f"leaf{n:02d}": PROD_HOSTS[(n - 1) * 8:n * 8] for n in (3, 4)}, ["spine02"])
    return net


def with_storage(net: Net, hosts: list[str]) -> Net:
    """A separate storage fabric: one leaf with each host's storage HCA (mlx5_8) and two storage servers."""
    leaf = net.switch("MF0;STORAGE-LEAF-01:MQM9700/U1")
    for host in [*hosts, "ddn01", "ddn02"]:
        net.link(leaf, net.hca(f"{host} {'mlx5_8' if host in hosts else 'mlx5_0'}"))
    return net


def rail_optimized(units: int = 2, nodes: int = 32, rails: int = 8, spines: int = 4, sharp: bool = False,
                   miscabled: str | None = None) -> Net:
    """DGX SuperPOD style: each scalable unit has one leaf per rail; each node's HCA of rail r goes to its unit's
    leaf r; every leaf goes to every spine. Odd units name HCAs mlx5_N, even ones HCA-N (both are seen). The
    ``miscabled`` host's last rail goes to the next unit's leaf instead."""
    net = Net()
    spine_ids = [net.switch(f"MF0;SPINE-{s + 1:02d}:MQM9700/U1") for s in range(spines)]
    leaves = {(u, r): net.switch(f"MF0;SU{u}-LEAF-{r + 1}:MQM9700/U1") for u in range(1, units + 1)
              for r in range(rails)}
    for unit in range(1, units + 1):
        for n in range(nodes):
            host = f"gpu-node-{(unit - 1) * nodes + n + 1:03d}"
            for rail in range(rails):
                name = f"{host} mlx5_{rail}" if unit % 2 else f"{host} HCA-{rail + 1}"
                moved = host == miscabled and rail == rails - 1
                net.link(leaves[(unit % units + 1 if moved else unit, rail)], net.hca(name))
    for unit in range(1, units + 1):
        for leaf_id in [leaves[(unit, r)] for r in range(rails)]:
            for spine_id in spine_ids:
                net.link(leaf_id, spine_id)
    if sharp:
        for switch_id in [n for n in net.nodes if n.startswith("S-")]:
            net.link(switch_id, net.hca(SHARP_DESCRIPTION, key=f"AN-{switch_id}"), a_port=65)
    return net


def three_tier() -> Net:
    """Two pods of 4 leaves x 4 nodes under 2 spines each; 2 cores above all 4 spines. Names say nothing of tiers."""
    net = Net()
    cores = [net.switch(f"sw-{c}") for c in ("x1", "x2")]
    host = iter(f"node{i:02d}" for i in range(1, 33))
    for pod in range(2):
        spines = [net.switch(f"sw-p{pod}s{s}") for s in range(2)]
        for leaf in range(4):
            leaf_id = net.switch(f"sw-p{pod}l{leaf}")
            for _ in range(4):
                net.link(leaf_id, net.hca(f"{next(host)} mlx5_0"))
            for spine_id in spines:
                net.link(leaf_id, spine_id)
        for spine_id in spines:
            for core_id in cores:
                net.link(spine_id, core_id)
    return net


# A DGX H100's eight compute HCAs as the kernel names them (mlx5_1, 2, 7 and 8 are its storage and in-band ports).
DGX_H100_HCAS = ("mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11")
# Hosts on the compute fabric that are no compute node: by name, by a default host name, by having one HCA.
SUPERPOD_OTHERS = {"ufm01 mlx5_0": ("su1-leaf1", 33), "ubuntu": ("su2-leaf4", 33), "gw01 mlx5_0": ("su3-leaf8", 33)}


def dgx_hosts(units: int, nodes: int) -> list[str]:
    return [f"dgx-{i:03d}" for i in range(1, units * nodes + 1)]


def superpod(units: int = 4, nodes: int = 4, spines: int = 4, described: tuple[str, ...] = ("dgx-006",)) -> Net:
    """A DGX H100 SuperPOD: each scalable unit has 8 leaves (one per rail), HCA i of each DGX goes to leaf i of its
    unit, every leaf to every spine, a SHARP aggregation node on every switch, and three hosts that are no compute
    node (SUPERPOD_OTHERS). Only the ``described`` DGX carry `host mlx5_N` descriptions; the others keep the
    vendor's, as before rdma-ndd runs, so they are named through a GUID file (``superpod_guids``)."""
    net = Net()
    spine_ids = [net.switch(f"MF0;spine{s:02d}:MQM9700/U1") for s in range(1, spines + 1)]
    hosts = iter(dgx_hosts(units, nodes))
    for unit in range(1, units + 1):
        leaves = [net.switch(f"MF0;su{unit}-leaf{r}:MQM9700/U1") for r in range(1, len(DGX_H100_HCAS) + 1)]
        for host in [next(hosts) for _ in range(nodes)]:
            for leaf_id, device in zip(leaves, DGX_H100_HCAS, strict=True):
                described_as = f"{host} {device}" if host in described else DEFAULT_DESCRIPTION
                net.link(leaf_id, net.hca(described_as, key=f"{host}_{device}"))
        for leaf_id in leaves:
            for spine_id in spine_ids:
                net.link(leaf_id, spine_id)
    for description, (leaf, port) in SUPERPOD_OTHERS.items():
        net.link(f"S-{leaf}", net.hca(description, key=description.split()[0]), a_port=port)
    for switch_id in [n for n in net.nodes if n.startswith("S-")]:
        net.link(switch_id, net.hca(SHARP_DESCRIPTION, key=f"AN-{switch_id}"), a_port=65)
    return net


def superpod_guids(net: Net) -> str:
    """The GUID file an admin collects with `pdsh -w 'dgx-[001-016]' ibstat -p`: each DGX's port GUIDs."""
    lines = [f"{node_id[2:].split('_', 1)[0]}: {net.port_guid(node_id)}" for node_id in net.nodes
             if node_id.startswith("H-dgx-")]
    return "\n".join(lines) + "\n"


def port_labelled(units: int = 3, nodes: int = 3, spines: int = 2, *, missing: tuple[int, int] | None = None,
                  crossed: tuple[str, int, int] | None = None, moved: tuple[str, int, int] | None = None,
                  elsewhere: tuple[str, int, int] | None = None) -> Net:
    """A DGX SuperPOD whose HCAs carry the DGX's port labels (`dgx-001 HCA-4`), as most of a real dump's do: leaf r
    of each unit (`su1-leaf4`) carries HCA-r of its unit's DGX; every leaf goes to every spine.

    ``missing``: (unit, r): that leaf is absent, so the unit is one leaf short and its DGX's HCA-r hang on nothing
    (ibnetdiscover sees none of them). ``crossed``: (host, a, b): the host's HCA-a and HCA-b swapped between their
    leaves. ``moved``: (host, a, b): the host's HCA-a on leaf b, beside its HCA-b: a node on two rails' leaves.
    ``elsewhere``: (host, r, u): the host's HCA-r on leaf r of unit u: its own rail, another unit's leaf."""
    net = Net()
    spine_ids = [net.switch(f"MF0;spine{s:02d}:MQM9700/U1") for s in range(1, spines + 1)]
    hosts = iter(dgx_hosts(units, nodes))
    rails = range(1, len(DGX_H100_HCAS) + 1)
    later = []  # (unit, r, description): linked once every unit's leaves are there
    for unit in range(1, units + 1):
        leaves = {r: net.switch(f"MF0;su{unit}-leaf{r}:MQM9700/U1") for r in rails if (unit, r) != missing}
        for host in [next(hosts) for _ in range(nodes)]:
            for r in rails:
                if elsewhere is not None and (host, r) == elsewhere[:2]:
                    later.append((elsewhere[2], r, f"{host} HCA-{r}"))
                    continue
                leaf = r
                if crossed is not None and host == crossed[0] and r in crossed[1:]:
                    leaf = crossed[2] if r == crossed[1] else crossed[1]
                if moved is not None and (host, r) == moved[:2]:
                    leaf = moved[2]
                if leaf in leaves:
                    net.link(leaves[leaf], net.hca(f"{host} HCA-{r}"))
        for leaf_id in leaves.values():
            for spine_id in spine_ids:
                net.link(leaf_id, spine_id)
    for unit, r, description in later:
        net.link(f"S-su{unit}-leaf{r}", net.hca(description))
    return net
