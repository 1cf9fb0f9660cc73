"""Rules for automatic repair: each profile's Repair, the fleet's budget and breaker, the nodes' BMCs. What cannot
work is refused where the inventory writes it: a bound no action fits in, a power cycle without a BMC, a BMC
without the Vault its credentials come from, a repair with nothing to act on (no health check draining nodes, no
node allowed in repair at once)."""

from __future__ import annotations

import re
from collections import Counter

from ...repair.plan import POWER_CYCLE, REBOOT, RESET
from ..cluster import Cluster
from ..health import Health
from ..nodes import Nodes
from ..repair import Bmc, Repair
from .check import Check, address_ok
from .hosts import Expanded

MIN_SECONDS = 60          # no reset, reboot or power cycle is over sooner; nor is a breaker's window
REBOOT_MARGIN = 300       # a repair's reboot may take the health check's reboot_timeout (ResumeTimeout) and this
MAX_PORT = 65535
SYSTEM_ID = re.compile(r"^[A-Za-z0-9._-]+$")
PATH = re.compile(r"^(/[A-Za-z0-9._+@=-]+)+$")

BmcOf = dict[str, tuple[Bmc, str]]  # a node with a BMC -> its Bmc entry and its own BMC's address


def reboot_bound(spec: Repair, health: Health) -> int:
    """Seconds a repair's reboot may take: the inventory's, else Slurm's ResumeTimeout and a margin."""
    return spec.reboot_timeout if spec.reboot_timeout is not None else health.reboot_timeout + REBOOT_MARGIN


def budget(cluster: Cluster) -> int:
    """Nodes in repair at once, fleet-wide: the inventory's repair_budget, else its disruption_budget."""
    return cluster.repair_budget if cluster.repair_budget is not None else cluster.disruption_budget


def power_cycles(spec: Repair, bmcs: int) -> bool:
    """Whether a profile's nodes are power cycled, given how many of them have a BMC."""
    return spec.power_cycle if spec.power_cycle is not None else bmcs > 0


def bounds(spec: Repair, health: Health) -> dict[str, int]:
    """Each action's bound in seconds, by the repair plan's names (repair/plan.py's ACTIONS)."""
    return {RESET: spec.reset_timeout, REBOOT: reboot_bound(spec, health), POWER_CYCLE: spec.power_cycle_timeout}


def _protocol_settings(check: Check, where: str, bmc: Bmc) -> None:
    """A setting of the other protocol is refused, not ignored: whoever wrote it believes it does something."""
    if bmc.protocol != "redfish":
        if bmc.ca_file:
            check.add(f"{where}.ca_file", f"{bmc.ca_file!r}: a Redfish setting, and these BMCs speak {bmc.protocol}",
                      bmc, "ca_file")
        if not bmc.verify_tls:
            check.add(f"{where}.verify_tls", f"a Redfish setting, and these BMCs speak {bmc.protocol}", bmc,
                      "verify_tls")
    elif bmc.cipher_suite is not None:
        check.add(f"{where}.cipher_suite", f"{bmc.cipher_suite}: an IPMI setting, and these BMCs speak redfish", bmc,
                  "cipher_suite")
    if not bmc.ca_file:
        return
    if not PATH.match(bmc.ca_file) or "/../" in f"{bmc.ca_file}/" or "/./" in f"{bmc.ca_file}/":
        check.add(f"{where}.ca_file", f"{bmc.ca_file!r} is not an absolute path on the controller (no '.', '..' or "
                  "spaces)", bmc, "ca_file")
    elif not bmc.verify_tls:
        check.add(f"{where}.ca_file", f"{bmc.ca_file!r}: certificates to check against, and verify_tls=False checks "
                  "none; keep one of the two", bmc, "ca_file")


def bmcs(check: Check, expanded: Expanded) -> BmcOf:
    """Every node with a BMC -> its Bmc and address, the n-th address the n-th node's; the problems recorded."""
    by_entry: dict[int, tuple[Nodes, list[str]]] = {}
    for entry, name, _ in expanded:
        by_entry.setdefault(id(entry), (entry, []))[1].append(name)
    found: BmcOf = {}
    owner: dict[str, str] = {}
    for entry, names in by_entry.values():
        bmc = entry.bmc
        if bmc is None:
            continue
        where = f"nodes[{entry.names}].bmc"
        if check.cluster.vault is None:
            check.add(f"{where}.credentials", "the BMCs' credentials come from Vault, and this cluster has none: "
                      "give Cluster(vault=Vault(...))", bmc, "credentials")
        _protocol_settings(check, where, bmc)
        if bmc.port is not None and not 1 <= bmc.port <= MAX_PORT:
            check.add(f"{where}.port", f"{bmc.port}: a port is 1 to {MAX_PORT}", bmc, "port")
        if bmc.system and bmc.protocol != "redfish":
            check.add(f"{where}.system", f"{bmc.system!r}: a Redfish system's id, and these BMCs speak "
                      f"{bmc.protocol}", bmc, "system")
        elif bmc.system and not SYSTEM_ID.match(bmc.system):
            check.add(f"{where}.system", f"{bmc.system!r} is not a Redfish system id: letters, digits, '.', '-' or "
                      "'_'", bmc, "system")
        addresses = check.expand(f"{where}.address", bmc.address, bmc, "address")
        if addresses is None:
            continue
        if len(addresses) != len(names):
            check.add(f"{where}.address", f"{bmc.address} gives {len(addresses)} addresses for {len(names)} nodes",
                      bmc, "address")
            continue
        wrong = [a for a in dict.fromkeys(addresses) if not address_ok(a)]
        for address in wrong[:3]:
            check.add(f"{where}.address", f"{address!r} is neither an IP address nor a DNS name", bmc, "address")
        if wrong:
            continue
        for name, address in zip(names, addresses):
            first = owner.setdefault(address, name)
            if first != name:
                # Power cycling one would power cycle the other.
                check.add(f"{where}.address", f"{address}, the BMC of {name}, is already the BMC of {first}", bmc,
                          "address")
            found.setdefault(name, (bmc, address))
    return found


def repair(check: Check, expanded: Expanded, bmc_of: BmcOf) -> None:
    cluster = check.cluster
    nodes_of: dict[str, dict[str, bool]] = {}  # profile -> its nodes -> whether their entry gives a BMC
    for entry, name, _ in expanded:
        # A BMC left out for a type mistake is one given: its nodes are not said to have none.
        given = entry.bmc is not None or check.refers_to_left_out(f"nodes[{entry.names}].bmc")
        nodes_of.setdefault(entry.profile, {}).setdefault(name, given)
    on = []
    for profile in cluster.profiles:
        spec = profile.repair
        if spec is None:
            continue
        where = f"profiles[{profile.name}].repair"
        nodes = nodes_of.get(profile.name, {})
        _profile(check, where, spec, nodes, sum(1 for n in nodes if n in bmc_of))
        if spec.mode != "off" and not cluster.health.enabled:
            check.add(f"{where}.mode", f"{spec.mode!r} with the health check off (Health(enabled=False)): nothing "
                      "drains a node for a fault, and a GPU reset is the check's to do; turn the check on, or say "
                      "mode='off'", spec, "mode")
        if spec.mode == "on":
            on.append(profile.name)
    if cluster.repair_budget is not None and cluster.repair_budget < 1 and on:
        check.add("repair_budget", f"{cluster.repair_budget}: at least 1 while a profile's repair is on "
                  f"({', '.join(on)}): no node could ever be repaired; say mode='observe' there, or give a budget",
                  cluster, "repair_budget")
    elif cluster.repair_budget is not None and cluster.repair_budget < 0:
        check.add("repair_budget", f"{cluster.repair_budget}: not negative", cluster, "repair_budget")
    breaker = cluster.repair_breaker
    if breaker.faults < 1:
        check.add("repair_breaker.faults", f"{breaker.faults}: at least 1 (with {breaker.faults}, the first node to "
                  "fault opens the breaker and no node is ever repaired)", breaker, "faults")
    if breaker.window < MIN_SECONDS:
        check.add("repair_breaker.window", f"{breaker.window} s: at least {MIN_SECONDS}", breaker, "window")


def _profile(check: Check, where: str, spec: Repair, nodes: dict[str, bool], with_bmc: int) -> None:
    """One profile's Repair: its numbers, its classes, its power cycle."""
    if spec.attempts < 1:
        check.add(f"{where}.attempts", f"{spec.attempts}: at least 1 (a node with no attempt is quarantined at its "
                  "first fault; say mode='off' for no repair)", spec, "attempts")
    for field in ("reset_timeout", "reboot_timeout", "power_cycle_timeout"):
        value = getattr(spec, field)
        if value is not None and value < MIN_SECONDS:
            check.add(f"{where}.{field}", f"{value} s: at least {MIN_SECONDS} (no reset, reboot or power cycle is "
                      "over sooner)", spec, field)
    for name, times in Counter(spec.classes).items():
        if times > 1:
            check.add(f"{where}.classes", f"{name} is listed {times} times", spec, "classes")
    if spec.mode != "off" and not spec.classes:
        check.add(f"{where}.classes", "no fault class: nothing would be repaired; say mode='off'", spec, "classes")
    if spec.power_cycle:
        missing = [name for name, has in nodes.items() if not has]
        if missing:
            check.add(f"{where}.power_cycle", f"True needs every node's BMC, and {check.sample(missing)} have none: "
                      "give their Nodes a bmc, or leave power_cycle None (only the nodes with one)", spec,
                      "power_cycle")
    # The actions a fault may go through: a reset (its class), a reboot (both classes' next step), a power cycle.
    used = bounds(spec, check.cluster.health)
    if RESET not in spec.classes:
        del used[RESET]
    if not spec.classes:
        del used[REBOOT]
    if not power_cycles(spec, with_bmc):
        del used[POWER_CYCLE]
    longest = max(used, key=lambda action: used[action], default=None)
    if longest is not None and spec.window < used[longest]:
        check.add(f"{where}.window", f"{spec.window} s is shorter than one {longest.replace('_', ' ')} "
                  f"({used[longest]} s): attempts could never be counted across it; at least {used[longest]}", spec,
                  "window")
    elif spec.window < MIN_SECONDS:
        check.add(f"{where}.window", f"{spec.window} s: at least {MIN_SECONDS}", spec, "window")
