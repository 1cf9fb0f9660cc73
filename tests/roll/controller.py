"""The controller as the roll reaches it (reach/controller.py's Controller takes a callable answering shell text),
over the one Slurm stand-in (tests/slurm_standin): each command the roll sends runs in a real sh by ``Slurm.shell``,
so drains.py's loops read the stand-in's sinfo and ask its scontrol as they do over SSH.

What is the roll's and not Slurm's stays here: the controller's clock (the roll asks `date` before a reboot request,
answered from the stand-in's clock, in UTC as the stand-in prints BootTime), the roll's sleep (it moves that clock,
so jobs end and reboots complete while the roll waits), what the roll sent, and how many nodes were out of service
at most."""

from __future__ import annotations

import shlex
import time

from slurm_standin import Slurm
from slurm_standin.shell import COMMANDS

from clusterforge.slurm.commands import Answer

# What in a node's state keeps a new job off it (slurm_standin's Slurm.usable; a job running there is no reason).
OUT_FLAGS = frozenset({"DRAIN", "FAIL", "REBOOT_REQUESTED", "REBOOT_ISSUED", "NOT_RESPONDING"})
OUT_BASES = frozenset({"DOWN", "UNKNOWN", "FUTURE"})


class Controller:
    """``slurm``'s controller. ``sent``: each command the roll sent, in order; after a script (drains.py's drain,
    resume and reboot), the Slurm commands it ran, each as "scontrol reboot ASAP ... gpu01" (words joined by spaces).
    ``out_most``: the most nodes out of service at once, seen after each command and each sleep."""

    def __init__(self, slurm: Slurm) -> None:
        self.slurm = slurm
        self.sent: list[str] = []
        self.out_most = 0

    def clock(self) -> float:
        return self.slurm.now

    def sleep(self, seconds: float) -> None:
        self.slurm.advance(seconds)
        self._count_out()

    def __call__(self, command: str) -> Answer:
        self.sent.append(command)
        if command.startswith("date +"):
            return Answer(0, time.strftime(command[len("date +"):], time.gmtime(self.slurm.now)) + "\n", "")
        first = command.split()[0]
        if first not in COMMANDS and first != "rc=0;":   # rc=0;: drains.py's drain, resume and reboot
            raise AssertionError(f"not a command the roll sends the controller: {command}")
        before = len(self.slurm.asked)
        answer = self.slurm.shell(command)
        ran = self.slurm.asked[before:]
        if first == "rc=0;" or ran != [shlex.split(command)]:
            self.sent += [" ".join(argv) for argv in ran]
        self._count_out()
        return answer

    def _count_out(self) -> None:
        out = 0
        for name in self.slurm.nodes:
            base, flags = self.slurm.state_of(name)
            out += base in OUT_BASES or bool(flags & OUT_FLAGS)
        self.out_most = max(self.out_most, out)
