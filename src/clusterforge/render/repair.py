"""/etc/clusterforge/repair.json on the controller: the repair loop's plan (repair/plan.py's ``Plan``), from the
resolved cluster's automatic repair.

Every node of a profile whose Repair is 'observe' or 'on', with its profile and, where the profile power cycles and
the node has a BMC, its BMC: the credentials never in the plan, only the root-only file on the controller that
holds them (``credentials_file``, written from Vault by the deploy). Each such profile's policy, every default
filled in; the inventory's Xid classes ('drain' read as 'reboot'); the fleet's budget and breaker. Keys sorted, so
the same inventory gives the same bytes and the loop restarts only when the plan changes.

Nothing (None) where no profile is repaired: the file is then removed from the controller, and the loop repairs no
node.
"""

from __future__ import annotations

from ..model import ValidCluster
from ..repair import PACKAGE
from ..repair import plan as repair_plan
from . import programs
from .health import imports_from
from .text import header
from ..repair.plan import Bmc, NodePlan, Plan, Policy

PATH = repair_plan.PATH
FILE = "repair.json"
# The BMCs' credentials on the controller, one file a node, root's only: {"username": ..., "password": ...}.
BMC_DIR = "/etc/clusterforge/bmc"


def credentials_file(node: str) -> str:
    """Where the controller keeps the credentials of ``node``'s BMC."""
    return f"{BMC_DIR}/{node}.json"


def plan(valid: ValidCluster) -> Plan | None:
    """The plan as the loop reads it; None where no profile is repaired."""
    setup = valid.repair
    if setup is None:
        return None
    nodes: dict[str, NodePlan] = {}
    profiles: dict[str, Policy] = {}
    for policy in setup.policies:
        spec = policy.spec
        profiles[policy.profile] = Policy(
            mode=spec.mode, classes=tuple(spec.classes), power_cycle=policy.power_cycle, attempts=spec.attempts,
            window_s=spec.window, bounds_s=dict(policy.bounds), gate=policy.gate)
        for name in policy.nodes:
            found = setup.cycled.get(name)
            bmc = (Bmc(address=found.address, protocol=found.spec.protocol, credentials=credentials_file(name),
                       port=found.spec.port or 0, system=found.spec.system,
                       cipher_suite=found.spec.cipher_suite, verify_tls=found.spec.verify_tls,
                       ca_file=found.spec.ca_file) if found is not None else None)
            nodes[name] = NodePlan(policy.profile, bmc)
    return Plan(nodes=nodes, profiles=profiles, xid=dict(setup.xid), budget=setup.budget,
                breaker_faults=setup.breaker.faults, breaker_window_s=setup.breaker.window)


def render(valid: ValidCluster) -> str | None:
    """The plan's JSON (``Plan.to_json``: keys sorted, one value to a line), or None where no profile is repaired."""
    found = plan(valid)
    return found.to_json() if found is not None else None


# The loop's service on the controller, beside the gate's: its launcher and unit. The program is repair/ with the
# slurm and health modules it imports, shipped as one file (render/programs.py).
LAUNCHER = "/usr/sbin/clusterforge-repair"
UNIT = "clusterforge-repair.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
# Seconds between passes: a pass is two Slurm queries, and a repair's steps are minutes long.
INTERVAL_S = 10


def launcher() -> str:
    """Isolated mode (-I): no PYTHON* variable, user site or script directory puts another module in its way."""
    return (f"#!/usr/bin/python3 -I\n# {LAUNCHER}: clusterforge's automatic repair.\n"
            "# Written by clusterforge's deploy; a change here is overwritten by the next run.\n"
            f"{imports_from(programs.REPAIR)}from {PACKAGE}.repair.main import main\nsys.exit(main(sys.argv[1:]))\n")


def unit(valid: ValidCluster) -> str:
    """As root: it drains and reboots nodes through scontrol and reads the BMCs' credentials, root's alone.
    Restarted whatever ends it: each pass reads everything again, and every step was recorded before it was taken."""
    return (f"{header(valid, 'automatic repair, which returns faulty nodes to service')}\n"
            "[Unit]\nDescription=clusterforge's automatic repair: faulty nodes back to service within budgets\n"
            "After=network-online.target slurmctld.service\nWants=network-online.target\n\n"
            f"[Service]\nExecStart={LAUNCHER} --interval {INTERVAL_S}\n"
            "Restart=always\nRestartSec=10\n\n"
            "[Install]\nWantedBy=multi-user.target\n")
