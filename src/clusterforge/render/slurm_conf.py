"""slurm.conf: the controller, daemons' paths and plugins, nodes grouped by hardware, partitions."""

from __future__ import annotations

from collections.abc import Sequence

from .. import hostlists
from ..hostlists import Numbered
from ..model import Host, Node, ValidCluster
from ..model.settings import yes_no
from .text import fill, header, pairs


def quoted(value: str) -> str:
    """A value with blanks in double quotes, as slurm.conf's parser reads one (a RebootProgram with arguments);
    unquoted, the line is a parse error that stops every daemon and command."""
    return f'"{value}"' if any(c.isspace() for c in value) and not value.startswith('"') else value


def _controller(host: Host) -> str:
    return f"{host.name}({host.address})" if host.address else host.name


def _hardware(node: Node) -> list[tuple[str, object | None]]:
    profile = node.profile
    gres = f"gpu:{profile.gpus.type}:{profile.gpus.count}" if profile.gpus else None
    return [
        ("CPUs", profile.cpus),
        ("Sockets", profile.sockets),
        ("CoresPerSocket", profile.cores_per_socket),
        ("ThreadsPerCore", profile.threads_per_core),
        ("RealMemory", profile.real_memory),
        ("Gres", gres),
        ("Features", ",".join(node.features) or None),
        ("State", "UNKNOWN"),
    ]


def _address_runs(nodes: Sequence[Node], valid: ValidCluster) -> list[tuple[str, str]]:
    """(NodeName, NodeAddr) hostlist pairs, each covering nodes whose names and addresses both count up by one."""
    allow_suffix = hostlists.suffix_allowed(valid.version)

    def numbered(text: str, is_address: bool) -> Numbered | None:
        if is_address and ":" in text:  # IPv6: colons are not hostlist syntax
            return None
        parts = hostlists.split(text)
        return None if parts is None or (parts.suffix and not allow_suffix and not is_address) else parts

    blocks: list[list[tuple[Node, Numbered | None, Numbered | None]]] = []
    for node in nodes:
        name, addr = numbered(node.name, False), numbered(node.address or "", True)
        if blocks and name and addr:
            start, last = blocks[-1][0], blocks[-1][-1]
            if (start[1] and start[2] and last[1] and last[2]
                    and hostlists.continues(start[1], last[1], name)
                    and hostlists.continues(start[2], last[2], addr)):
                blocks[-1].append((node, name, addr))
                continue
        blocks.append([(node, name, addr)])
    out = []
    for block in blocks:
        names = [n.name for n, _, _ in block]
        addresses = [n.address or "" for n, _, _ in block]
        if len(block) == 1:
            out.append((names[0], addresses[0]))
        else:
            out.append((hostlists.compress(names, valid.version), hostlists.compress(addresses, valid.version)))
    return out


def node_lines(valid: ValidCluster) -> list[str]:
    groups: dict[tuple[str, tuple[str, ...]], list[Node]] = {}
    for node in valid.nodes:
        groups.setdefault((node.profile.name, node.features), []).append(node)
    lines = []
    for (_, _), nodes in groups.items():
        hardware = _hardware(nodes[0])
        unaddressed = [n.name for n in nodes if n.address is None]
        if unaddressed:
            lines.append(pairs([("NodeName", hostlists.compress(unaddressed, valid.version)), *hardware]))
        for names, addresses in _address_runs([n for n in nodes if n.address is not None], valid):
            lines.append(pairs([("NodeName", names), ("NodeAddr", addresses), *hardware]))
    return lines


def partition_lines(valid: ValidCluster) -> list[str]:
    lines = []
    for member in valid.partitions:
        part = member.spec
        lines.append(pairs([
            ("PartitionName", part.name),
            ("Nodes", hostlists.compress(member.nodes, valid.version)),
            ("Default", yes_no(part.default)),
            ("MaxTime", part.max_time or "UNLIMITED"),
            ("DefaultTime", part.default_time),
            ("MaxNodes", part.max_nodes),
            ("PriorityTier", part.priority_tier),
            ("PreemptMode", member.preempt_mode),
            ("QOS", member.qos),
            ("AllowQos", ",".join(member.allow_qos) or None),
            ("AllowAccounts", ",".join(part.allow_accounts) or None),
            ("DefMemPerCPU", member.def_mem_per_cpu),
            ("DefMemPerGPU", member.def_mem_per_gpu),
            ("DefCpuPerGPU", member.def_cpu_per_gpu),
            ("ExclusiveUser", yes_no(True) if part.exclusive_user else None),
            # Validation refuses it before 25.05, where PartitionName has no Topology=.
            ("Topology", part.topology),
            ("State", "UP"),
        ]))
    return lines


def render(valid: ValidCluster) -> str:
    controllers = [_controller(h) for h in (valid.controller, valid.backup_controller) if h is not None]
    return fill(
        "slurm.conf.j2",
        header=header(valid),
        controllers=controllers,
        settings=[(key, quoted(value)) for key, value in valid.slurm_conf.items()],
        nodes=node_lines(valid),
        partitions=partition_lines(valid),
    )
