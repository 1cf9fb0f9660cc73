"""Debian's real slurmctld (22.05 on this host, 24.11 in a Debian 13 root, 26.05 in a forky root) accepts every
rendered config, and `scontrol show node|partition|topology` shows exactly the inventory: the prod example and every
golden inventory. On 26.05, slurmd too: one node of each profile starts on the files and registers.

What is adapted to run here, and only that: the controller is this machine (slurmctld starts only on the host
SlurmctldHost names), accounting points at a scratch MariaDB + slurmdbd, and paths, ports and the munge socket are
scratch ones — all passed through the inventory (controller, database, slurm_conf_extra), never by editing
slurm.conf; nodes written without an address (DNS names in production) get loopback addresses, since slurmctld
must resolve every node and this machine's DNS knows none of them. Where slurmd runs (26.05), its GPUs' device files
are stand-ins in its own /dev (harness.running_slurmd).
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from golden_cases import Case, cases, refusal
from realslurm import blocks, harness

from clusterforge import hostlists
from clusterforge.errors import InventoryError
from clusterforge.model import Host, ValidCluster, resolve
from clusterforge.model.rules.times import slurm_time_seconds
from clusterforge.render import render_all
from clusterforge.render.sacctmgr import qos_plan
from clusterforge.versions import SlurmVersion

RUNTIMES = ["22.05", "24.11", "26.05"]
# One case per distinct inventory; the release comes from the runtime.
INVENTORIES = {c.inventory: c for c in cases()}
CASES = sorted(INVENTORIES.values(), key=lambda c: c.name)
SINGLE_NODE = next(c for c in CASES if c.name == "single-node")


def refused_on(case: Case, runtime: harness.SlurmRuntime) -> str | None:
    """What validation says where the case cannot run on the runtime's release (golden_cases.refusal)."""
    return refusal(case.cluster(), SlurmVersion.parse(runtime.version))


class Accounting:
    """A scratch MariaDB + slurmdbd shared by every case of one Slurm release."""

    def __init__(self, runtime: harness.SlurmRuntime, scratch: Path, dbd: harness.Slurmdbd, dbd_port: int):
        self.runtime, self.scratch, self.dbd, self.dbd_port = runtime, scratch, dbd, dbd_port

    def ensure_database_objects(self, valid: ValidCluster) -> None:
        """The QOS and accounts slurm.conf names must exist in the database before slurmctld starts."""
        existing = set(self.dbd.sacctmgr("-n", "-P", "show", "qos", "format=name").split())
        for args in qos_plan(valid).create:
            if args[2] not in existing:
                self.dbd.sacctmgr("-i", *args)
        # An account belongs to clusters; register this one first, as the deploy does.
        if valid.name not in self.dbd.sacctmgr("-n", "-P", "show", "cluster", "format=cluster").split():
            self.dbd.sacctmgr("-i", "add", "cluster", valid.name)
        for account in sorted({a for p in valid.partitions for a in p.spec.allow_accounts}):
            self.dbd.sacctmgr("-i", "add", "account", account, f"cluster={valid.name}")


@pytest.fixture(scope="module", params=RUNTIMES)
def accounting(request):
    runtime = harness.require(request.param, accounting=True)
    dbd_port, storage_port = harness.free_port(), harness.free_port()
    with harness.scratch_dir() as scratch:
        etc = scratch / "dbd-etc"
        etc.mkdir(mode=0o755)
        files = render_all(adapted(SINGLE_NODE, runtime, scratch, harness.free_port(), dbd_port))
        (etc / "slurmdbd.conf").write_text(
            with_keys(files["slurmdbd.conf"], harness.slurmdbd_overrides(scratch, dbd_port, storage_port)))
        (etc / "slurm.conf").write_text(files["slurm.conf"])  # sacctmgr finds slurmdbd through it
        with harness.running_slurmdbd(runtime, etc / "slurmdbd.conf", scratch) as dbd:
            yield Accounting(runtime, scratch, dbd, dbd_port)


def with_keys(text: str, keys: dict[str, str]) -> str:
    """slurmdbd.conf pointed at the scratch database: its keys replaced in place, missing ones appended."""
    lines, seen = [], set()
    for line in text.splitlines():
        key = line.split("=", 1)[0]
        if key in keys:
            line, _ = f"{key}={keys[key]}", seen.add(key)
        lines.append(line)
    lines += [f"{k}={v}" for k, v in keys.items() if k not in seen]
    return "\n".join(lines) + "\n"


def adapted(case: Case, runtime: harness.SlurmRuntime, scratch: Path, port: int, dbd_port: int,
            **changes: object) -> ValidCluster:
    """The case's inventory with this machine as controller and the scratch slurmdbd as database, without
    slurmrestd (whose JWT key the rendered files name in /etc/slurm: test_rest.py runs it), and with ``changes``
    to any Cluster field."""
    keys = harness.overrides(scratch, port, dbd_port=dbd_port)
    controller_name = socket.gethostname().split(".")[0]
    assert keys.pop("SlurmctldHost") == f"{controller_name}(127.0.0.1)"
    assert keys.pop("AccountingStorageHost") == "localhost"
    cluster = case.cluster()
    unaddressed = iter(f"127.1.{i // 250}.{i % 250 + 1}" for i in range(64_000))
    nodes = tuple(entry if entry.address else entry.model_copy(
        update={"address": ",".join(next(unaddressed) for _ in hostlists.expand(entry.names))})
        for entry in cluster.nodes)
    cluster = cluster.model_copy(update={
        "nodes": nodes,
        "controller": Host(controller_name, address="127.0.0.1"),
        "backup_controller": None,
        # Another loopback address: two names at one address are refused (a machine is one name). The daemons reach
        # slurmdbd by its name, localhost, whatever the entry's address.
        "database": Host("localhost", address="127.0.0.2", memory=4096),
        "slurm_conf_extra": {**cluster.slurm_conf_extra, **keys},
        "rest": None,
        **changes,
    })
    return resolve(cluster, SlurmVersion.parse(runtime.version))


def _blocks_lacking(valid: ValidCluster) -> list[str]:
    """slurmctld's warning for each block topology of topology.yaml that leaves some of the cluster's nodes out."""
    every = [n.name for n in valid.nodes]
    said = []
    for topology in valid.topologies[1:]:
        inside = {node for block in topology.blocks for node in block.nodes}
        if topology.plugin == "block" and (outside := [n for n in every if n not in inside]):
            said.append(f"warning: Blocks lack access to {len(outside)} nodes: {hostlists.compress(outside, valid.version)}")
    return said


LOCAL_DESPITE_CONFIGLESS = "warning: Running with local config file despite slurmctld having been setup for " \
    "configless operation"


# What slurmd and slurmctld say because this machine is not the node (fewer CPUs, cores and memory, the host booted
# with cgroup v1) or lacks what the deploy installs there (the health check): nothing about the rendered files.
NOT_THE_NODE = re.compile("|".join((
    r"cgroup/v1 plugin is deprecated", r"xcpuinfo_abs_to_mac: failed", r"Invalid GRES data for gpu, Cores=",
    r"invalid GRES core specification", r"Low socket\*core\*thread count", r"_slurm_rpc_node_registration node=.*: "
    r"Invalid argument", r"health_check can not be executed \(/usr/sbin/clusterforge-health\)",
    r"health_check didn't run: status:127",
)))


def started_nodes(ctld: harness.Slurmctld, valid: ValidCluster) -> dict[str, tuple[dict[str, str], list[str]]]:
    """slurmd started in turn for the first node of each profile, with stand-ins for its GPUs' device files: it
    reads slurm.conf, cgroup.conf and gres.conf and registers, or raises DaemonFailed with what it rejected. What
    slurmctld then showed of each node, and what its slurmd logged as an error or warning."""
    first = {}
    for node in valid.nodes:
        first.setdefault(node.profile.name, node)
    shown = {}
    for node in first.values():
        with harness.running_slurmd(ctld, node.name, node.device_files) as slurmd:
            shown[node.name] = (slurmd.node, slurmd.errors())
    return shown


def by_name(records: list[dict[str, str]], key: str) -> dict[str, dict[str, str]]:
    return {r[key]: r for r in records}


@pytest.mark.realslurm
@pytest.mark.parametrize("case", CASES, ids=[c.name.removesuffix("-22.05") for c in CASES])
def test_slurmctld_shows_exactly_the_inventory(case, accounting):
    runtime, scratch = accounting.runtime, accounting.scratch
    refused = refused_on(case, runtime)
    if refused is not None:
        with pytest.raises(InventoryError, match=refused):
            adapted(case, runtime, scratch, harness.free_port(), accounting.dbd_port)
        return
    valid = adapted(case, runtime, scratch, harness.free_port(), accounting.dbd_port)
    etc = scratch / f"etc-{case.name}"
    etc.mkdir(mode=0o755)
    for name, text in render_all(valid).items():
        if name != "slurmdbd.conf":  # slurmdbd is the shared one already running
            (etc / name).write_text(text)
    accounting.ensure_database_objects(valid)

    with harness.running_slurmctld(runtime, etc, scratch) as ctld:
        nodes = by_name(harness.parse_oneliner(ctld.scontrol("-o", "show", "node")), "NodeName")
        partitions = by_name(harness.parse_oneliner(ctld.scontrol("-o", "show", "partition")), "PartitionName")
        topology = harness.parse_topology(ctld.scontrol("show", "topology")) if valid.topology else {}
        # topology.yaml (25.05+): each topology after the default, by its name.
        others = {t.name: harness.parse_topology(ctld.scontrol("show", "topology", t.name))
                  for t in valid.topologies[1:]}
        config = ctld.scontrol("show", "config")
        for args in qos_plan(valid).limits:
            ctld.run("sacctmgr", "-i", *args)
        qos_table = ctld.run("sacctmgr", "-n", "-P", "show", "qos", "format=name,priority,maxtrespu,grptres").stdout
        errors = ctld.errors()
        registered = started_nodes(ctld, valid) if runtime.version in harness.SLURMD else {}
        errors += [line for line in ctld.errors() if line not in errors and not NOT_THE_NODE.search(line)]

    # A block topology that leaves nodes out (an NVL72 block topology beside an H100 tree) is what the inventory
    # says: slurmctld warns of it, in these words, and of nothing else.
    expected = _blocks_lacking(valid)
    assert [line for line in errors if line.split("] ", 1)[-1] not in expected] == [], \
        "slurmctld complained about the rendered files"
    assert {line.split("] ", 1)[-1] for line in errors} >= set(expected), errors
    # Here slurmd reads the rendered files (-f), as a node that fetches them would read the same: slurmctld set up to
    # serve them says so, in these words (tests/e2e/test_configless.py runs slurmd with --conf-server).
    local = [LOCAL_DESPITE_CONFIGLESS] if valid.configless else []
    for name, (shown, logged) in registered.items():  # one node of each profile ran slurmd on the files
        assert shown["Version"].startswith(runtime.version + "."), name
        assert shown["Gres"] == nodes[name]["Gres"], name
        assert [line for line in logged if not NOT_THE_NODE.search(line)
                and line.split("] ", 1)[-1] not in [*expected, *local]] == [], f"slurmd {name} complained"
        # slurmctld's verdict on this machine as the node, and nothing about the files.
        assert set(shown.get("Reason", "").split(" (")[0].split(", ")) <= {"Low socket*core*thread count", "Low CPUs",
                                                                         "Low RealMemory", ""}, name
    assert f"SLURM_VERSION           = {runtime.version}." in config
    for key, value in valid.slurm_conf.items():
        if key in ("SelectType", "TopologyPlugin", "PriorityType", "ProctrackType", "GresTypes"):
            assert re.search(rf"^{key}\s+= {re.escape(value)}$", config, re.M), key

    shown_qos = {line.split("|")[0]: line.split("|")[1:] for line in qos_table.splitlines() if line}
    for q in valid.accounting.qos:
        assert shown_qos[q.name] == [str(q.priority), q.max_tres_per_user or "", q.grp_tres or ""], q.name

    assert sorted(nodes) == sorted(n.name for n in valid.nodes)
    for node in valid.nodes:
        shown, profile = nodes[node.name], node.profile
        assert shown["CPUTot"] == str(profile.cpus), node.name
        assert shown["RealMemory"] == str(profile.real_memory), node.name
        assert (shown["Sockets"], shown["CoresPerSocket"], shown["ThreadsPerCore"]) == (
            str(profile.sockets), str(profile.cores_per_socket), str(profile.threads_per_core)), node.name
        assert shown["Gres"] == (f"gpu:{profile.gpus.type}:{profile.gpus.count}" if profile.gpus else "(null)")
        assert shown["NodeAddr"] == (node.address or node.name), node.name
        assert shown["AvailableFeatures"].split(",") == list(node.features), node.name

    assert sorted(partitions) == sorted(p.spec.name for p in valid.partitions)
    for member in valid.partitions:
        part, shown = member.spec, partitions[member.spec.name]
        assert sorted(hostlists.expand(shown["Nodes"])) == sorted(member.nodes), part.name
        assert shown["Default"] == ("YES" if part.default else "NO"), part.name
        assert slurm_time_seconds(shown["MaxTime"]) == slurm_time_seconds(part.max_time or "UNLIMITED"), part.name
        if part.default_time:
            assert slurm_time_seconds(shown["DefaultTime"]) == slurm_time_seconds(part.default_time), part.name
        assert shown["PriorityTier"] == str(part.priority_tier), part.name
        assert shown["MaxNodes"] == (str(part.max_nodes) if part.max_nodes else "UNLIMITED"), part.name
        assert shown["QoS"] == (part.qos or "N/A"), part.name
        assert shown["AllowQos"] == (",".join(part.allow_qos) or "ALL"), part.name
        if valid.preemption:
            assert shown["PreemptMode"] == (part.preempt_mode.upper() if member.preemptable else "OFF"), part.name
        # What a job that asks for nothing gets: memory per CPU, and per GPU with CPUs per GPU on GPU nodes.
        assert shown["DefMemPerCPU"] == str(member.def_mem_per_cpu), part.name
        for key, value in (("DefMemPerGPU", member.def_mem_per_gpu), ("DefCpuPerGPU", member.def_cpu_per_gpu)):
            if value is not None:
                assert f"{key}={value}" in shown["JobDefaults"], part.name
        assert shown.get("Topology") == part.topology, part.name

    for other in valid.topologies[1:]:  # block topologies of the inventory, besides the fabric
        assert blocks.shown(others[other.name]) == blocks.expected(other), other.name

    if valid.topology is not None and valid.topology.plugin == "block":
        assert blocks.shown(topology) == blocks.expected(valid.topology)
    elif valid.topology is not None:
        leaves = valid.topology.leaves
        expected = {leaf.name: ("0", list(leaf.nodes), []) for leaf in leaves}
        for spine in valid.topology.spines:
            expected[spine.name] = (None, None, list(spine.switches))
        assert sorted(topology) == sorted(expected)
        for name, (level, members, below) in expected.items():
            shown = topology[name]
            if level is not None:
                assert shown["Level"] == level and sorted(hostlists.expand(shown["Nodes"])) == sorted(members), name
            else:
                assert sorted(hostlists.expand(shown["Switches"])) == sorted(below), name
                under = {n for leaf in leaves if leaf.name in below for n in leaf.nodes}
                assert set(hostlists.expand(shown["Nodes"])) == under, name


def renamed(text: str, kind: str, old: str, new: str) -> str:
    """A file with one node or partition renamed where slurm.conf and gres.conf name it."""
    keys = ("PartitionName",) if kind == "partition" else ("NodeName", "Nodes")
    for key in keys:
        text = text.replace(f"{key}={old} ", f"{key}={new} ")
    return text


@pytest.mark.realslurm
@pytest.mark.parametrize("kind, name, outcome", [
    ("partition", "all", "accepted"),
    ("partition", "none", "accepted"),
    ("partition", "default", "lost"),  # 22.05 then has no partition and exits; 24.11 runs without one
    ("node", "none", "accepted"),
    ("node", "default", "lost"),  # "NodeAddr not allowed with NodeName=DEFAULT": slurmctld exits
    ("node", "all", "lost"),  # "'all' is a reserved word disallowed for use with NodeName": slurmctld exits
])
def test_the_names_slurm_reserves_are_the_ones_validation_refuses(accounting, tmp_path, kind, name, outcome):
    """What the real slurmctld does with each name validation might treat specially (tests/model checks the
    refusals): DEFAULT makes a line of defaults instead of a node or partition, NodeName=ALL is fatal; any other
    name is an ordinary one."""
    from clusterforge.model.rules.check import RESERVED_NODE_NAMES, RESERVED_PARTITION_NAMES

    reserved = RESERVED_NODE_NAMES if kind == "node" else RESERVED_PARTITION_NAMES
    assert (name in reserved) == (outcome != "accepted")
    case = SINGLE_NODE  # node "solo", partition "main"
    valid = adapted(case, accounting.runtime, accounting.scratch, harness.free_port(), accounting.dbd_port)
    accounting.ensure_database_objects(valid)
    etc = accounting.scratch / f"etc-reserved-{kind}-{name}"
    etc.mkdir(mode=0o755)
    old = "main" if kind == "partition" else "solo"
    for file, text in render_all(valid).items():
        if file != "slurmdbd.conf":
            (etc / file).write_text(renamed(text, kind, old, name))
    try:
        with harness.running_slurmctld(accounting.runtime, etc, accounting.scratch) as ctld:
            shown = harness.parse_oneliner(ctld.scontrol("-o", "show", kind))
    except harness.DaemonFailed:
        assert outcome == "lost", f"slurmctld refused {kind} {name}"
        return
    names = [record.get("PartitionName" if kind == "partition" else "NodeName") for record in shown]
    assert (name in names) == (outcome == "accepted"), names


@pytest.mark.realslurm
def test_slurmd_refuses_a_gres_conf_it_cannot_read(accounting):
    """The check above would see a gres.conf slurmd rejects (slurmctld no longer reads gres.conf): an unknown key
    added to the rendered one stops slurmd before it registers."""
    runtime = accounting.runtime
    if runtime.version not in harness.SLURMD:
        pytest.skip(f"no slurmd in the {runtime.version} runtime (harness.SLURMD)")
    valid = adapted(SINGLE_NODE, runtime, accounting.scratch, harness.free_port(), accounting.dbd_port)
    accounting.ensure_database_objects(valid)
    etc = accounting.scratch / "etc-bad-gres"
    etc.mkdir(mode=0o755)
    for name, text in render_all(valid).items():
        if name != "slurmdbd.conf":
            (etc / name).write_text(text + ("NoSuchGresKey=1\n" if name == "gres.conf" else ""))
    node = valid.nodes[0]
    with harness.running_slurmctld(runtime, etc, accounting.scratch) as ctld:
        with pytest.raises(harness.DaemonFailed, match="NoSuchGresKey"):
            with harness.running_slurmd(ctld, node.name, node.device_files):
                pass
