"""What the repair loop's tests start from, on Slurm's stand-in (tests/slurm_standin): H100 nodes, a plan that repairs
them, the loop on the stand-in's clock; and what the others do meanwhile, which slurmctld carries out but the loop did
not ask: the node's health check (its drain for a fault, its lift after a reset it performed, its repaired hold after a
boot), an admin's commands, a user's jobs."""

from __future__ import annotations

from dataclasses import dataclass, field

from slurm_standin import Node, Partition, Slurm

from clusterforge.repair.passes import Loop
from clusterforge.repair.plan import Bmc, NodePlan, Plan, Policy
from clusterforge.repair.store import Store
from clusterforge.slurm import drains, repairs, reservations

GRES = "gpu:h100:8"
XID79 = "cf:gpu:xid79 gpu3 0000:5d:00 GPU has fallen off the bus"
XID48 = "cf:gpu:xid48 gpu3 0000:5d:00 double-bit ECC error: reset the GPU or reboot"
BOUNDS = {"reset": 600, "reboot": 900, "power_cycle": 900}


def plan(names: list[str], mode: str = "on", attempts: int = 2, budget: int = 4, breaker: int = 8,
         power_cycle: bool = False, gate: bool = False, classes: tuple[str, ...] = ("reset", "reboot")) -> Plan:
    bmc = Bmc("127.0.0.1", "ipmi", "/etc/clusterforge/bmc/x.json") if power_cycle else None
    return Plan(nodes={n: NodePlan("dgx", bmc) for n in names},
                profiles={"dgx": Policy(mode, classes, power_cycle, attempts, 86400, dict(BOUNDS), gate)},
                budget=budget, breaker_faults=breaker, breaker_window_s=3600)


@dataclass
class Bench:
    slurm: Slurm
    loop: Loop
    logged: list[str]
    power_cycled: list[str] = field(default_factory=list)
    bmc_refuses: str | None = None
    checks: bool = True    # the node's check runs its gate after a reboot through Slurm (health_checks_registered)
    admission: bool = False

    def tick(self, seconds: float = 10, passes: int = 1) -> None:
        for _ in range(passes):
            self.advance(seconds)
            self.loop.one_pass()

    def advance(self, seconds: float) -> None:
        """Slurm's clock moves on; a node that registers meanwhile after its reboot through Slurm is checked then."""
        booting = {name for name, node in self.slurm.nodes.items() if node.booting}
        self.slurm.advance(seconds)
        for name in sorted(booting):
            # registered: booted (a reboot Slurm timed out is no boot; the node's check runs only once it is up)
            if self.checks and not self.node(name).booting:
                self.health_checks_registered(name)

    def asked(self) -> list[list[str]]:
        """What the loop asked of Slurm beyond reading it."""
        return [a for a in self.slurm.asked
                if a[0] != "sinfo" and [w for w in a if not w.startswith("-")][:2] != ["scontrol", "show"]]

    def node(self, name: str) -> Node:
        return self.slurm.nodes[name]

    # -- the others

    def by_others(self, *argv: str) -> None:
        answer = self.slurm.run(list(argv))
        self.slurm.asked.pop()
        assert answer.ok, (argv, answer)

    def health_drains(self, name: str, reason: str) -> None:
        self.by_others(*drains.drain_argv(name, reason))

    def health_resets(self, name: str) -> None:
        """The node's check performed the reset asked and found the node healthy: its drain lifted."""
        assert repairs.reset_asked(self.node(name).reason) is not None, self.node(name).reason
        self.by_others(*drains.undrain_argv(name))
        self.slurm.answer_registration_requests()

    def health_checks_registered(self, name: str) -> None:
        """The node's check once it has registered after a reboot through Slurm (health/program.py's gate), healthy:
        the loop's reboot reason, which the registration kept, is its own then: with admission it holds the node for
        the gate first, then lifts the drain. A node drained for anything else is left as it is."""
        drain = drains.parse_reason(self.node(name).reason) if "DRAIN" in self.node(name).flags else None
        if drain is None or (drain.cause, drain.code) != (repairs.REPAIR, repairs.REBOOT):
            return
        if self.admission:
            self.health_holds(name)
        self.by_others(*drains.undrain_argv(name))
        self.slurm.answer_registration_requests()

    def health_refuses_reset(self, name: str, why: str) -> None:
        asked = repairs.reset_asked(self.node(name).reason)
        assert asked is not None
        self.by_others(*drains.drain_argv(name, repairs.reset_failed_drain(asked.gpu, asked.bus, why).reason))

    def health_holds(self, name: str) -> None:
        """The check's first run of a new boot, where the profile has admission (health/repaired.py)."""
        self.by_others(*reservations.create_argv(reservations.name(reservations.REPAIRED, name), name))

    def gate_passes(self, name: str) -> None:
        self.by_others(*reservations.delete_argv(reservations.name(reservations.REPAIRED, name)))

    def admin(self, *argv: str) -> None:
        self.by_others(*argv)

    def power_cycle(self, name: str) -> str | None:
        if self.bmc_refuses is not None:
            return self.bmc_refuses
        self.power_cycled.append(name)
        node = self.node(name)
        if "REBOOT_ISSUED" in node.flags or node.booting:
            # its reboot issued (or timed out since): it boots past the reboot's request and registers a minute from
            # now, which completes the reboot (node_mgr.c, validate_node_specs)
            node.registers_at = self.slurm.now + 60
        else:
            node.boot = self.slurm.now   # up again at once, its drain as it was: its check's to lift
        return None


def bench(tmp_path, names: list[str] | None = None, **settings) -> Bench:
    names = names or ["gpu01", "gpu02"]
    slurm = Slurm({n: Node(gres=GRES, cpus=64) for n in names}, {"all": Partition(names, default=True)})
    logged: list[str] = []
    made = Bench(slurm, None, logged, admission=bool(settings.get("gate")))  # type: ignore[arg-type]
    made.loop = Loop(Store(str(tmp_path / "repair")), plan(names, **settings), slurm, made.power_cycle,
                     log=logged.append, clock=lambda: float(slurm.now))
    return made
