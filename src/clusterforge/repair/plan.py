"""The repair loop's plan: ``/etc/clusterforge/repair.json`` on the controller, rendered by the deploy from the
inventory (render/repair.py) and read by the loop at every pass. Plain data, the standard library only.

A node absent from the plan is never repaired (its profile has no Repair, or mode "off"). The BMC's credentials are
never in the plan: it names a root-only file on the controller that holds them (written by the deploy from Vault).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

PATH = "/etc/clusterforge/repair.json"
VERSION = 1

OBSERVE = "observe"
ON = "on"
MODES = (OBSERVE, ON)

# The fault classes (repair/faults.py reads a drain into one) and the actions the loop takes.
RESET = "reset"
REBOOT = "reboot"
CLASSES = (RESET, REBOOT)
POWER_CYCLE = "power_cycle"
ACTIONS = (RESET, REBOOT, POWER_CYCLE)


@dataclass(frozen=True)
class Bmc:
    address: str
    protocol: str              # "ipmi" or "redfish"
    credentials: str           # a root-only file on the controller: {"username": ..., "password": ...}
    port: int = 0              # 0: the protocol's own (623 for IPMI over LAN, 443 for Redfish)
    system: str = ""           # Redfish: the system's id under /redfish/v1/Systems; "": the only one
    cipher_suite: int | None = None   # IPMI: ipmitool's -C; None: ipmitool asks the BMC
    verify_tls: bool = True    # Redfish: the certificate checked, against ca_file or the trust store
    ca_file: str = ""          # Redfish: the CA certificates the BMC's is checked against; "": the trust store


@dataclass(frozen=True)
class Policy:
    """A profile's Repair: what the loop does for each class of fault, how often, and for how long."""

    mode: str                                    # observe: says what it would do; on: does it
    classes: tuple[str, ...] = CLASSES           # the fault classes repaired; another class waits for an admin
    power_cycle: bool = False                    # a node not back within its bound is power cycled (has a BMC)
    attempts: int = 2                            # per node and fault class within window_s
    window_s: int = 86400
    bounds_s: dict[str, int] = field(default_factory=lambda: {RESET: 900, REBOOT: 1800, POWER_CYCLE: 1800})
    gate: bool = False                           # the profile has admission: a repaired node is tested first


@dataclass(frozen=True)
class NodePlan:
    profile: str
    bmc: Bmc | None = None


@dataclass(frozen=True)
class Plan:
    nodes: dict[str, NodePlan] = field(default_factory=dict)
    profiles: dict[str, Policy] = field(default_factory=dict)
    xid: dict[int, str] = field(default_factory=dict)   # Health(xid=...), over the health check's table
    budget: int = 1                                      # nodes in repair at once, fleet-wide
    breaker_faults: int = 3                              # more nodes than this faulting within breaker_window_s
    breaker_window_s: int = 3600                         # open the breaker

    def policy(self, node: str) -> Policy | None:
        planned = self.nodes.get(node)
        return self.profiles.get(planned.profile) if planned is not None else None

    def to_json(self) -> str:
        data = asdict(self)
        data["xid"] = {str(k): v for k, v in sorted(self.xid.items())}
        return json.dumps({"version": VERSION, **data}, sort_keys=True, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        if data.get("version") != VERSION:
            raise ValueError(f"repair plan version {data.get('version')!r}, this loop reads {VERSION}")
        return cls(
            nodes={name: NodePlan(n["profile"], Bmc(**n["bmc"]) if n.get("bmc") else None)
                   for name, n in data.get("nodes", {}).items()},
            profiles={name: Policy(p["mode"], tuple(p.get("classes", CLASSES)), bool(p.get("power_cycle")),
                                   int(p["attempts"]), int(p["window_s"]), {k: int(v) for k, v in p["bounds_s"].items()},
                                   bool(p.get("gate")))
                      for name, p in data.get("profiles", {}).items()},
            xid={int(k): str(v) for k, v in data.get("xid", {}).items()},
            budget=int(data.get("budget", 1)), breaker_faults=int(data.get("breaker_faults", 3)),
            breaker_window_s=int(data.get("breaker_window_s", 3600)))


def load(path: str = PATH) -> Plan | None:
    """The plan; None where it is missing or cannot be read (the loop then acts on no node, and says so)."""
    try:
        with open(path, encoding="utf-8") as file:
            return Plan.from_json(file.read())
    except (OSError, ValueError, KeyError, TypeError):
        return None
