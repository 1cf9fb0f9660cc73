"""A session with the cluster's controller, as `check`, `roll`, `accept` and `admit` hold one: a command asked (a
refusal raised), Slurm's view read (the nodes' states, the reservations, the hostnames of a hostlist, the jobs on
some nodes) and batch jobs submitted, read, cancelled and waited for. Whatever goes wrong is one
``ControllerRefused`` naming the host and the cause: a command refused (its exit status and words), an answer that is
not Slurm's, or the controller not reached (``ControllerUnreachable``, which is also an ``Unreachable``).

The Slurm commands and their readers are slurm/'s (nodes.py, jobs.py, reservations.py, controller.py, parse.py):
this module only carries them to the controller and says a refusal the one way.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from ..errors import ClusterforgeError
from ..slurm import controller as slurm_controller
from ..slurm import jobs as slurm_jobs
from ..slurm import nodes as slurm_nodes
from ..slurm import reservations
from ..slurm.commands import TIMED_OUT, Answer
from ..slurm.parse import ParseError
from . import failures
from .ssh import Connections, Run, Unreachable

POLL_S = 2
# How long a job must be seen waiting in vain before it is given up: longer than a node's missed ping and the
# registration a lift asks for (a second or so), short beside any test's budget.
PATIENCE_S = 60
T = TypeVar("T")


class ControllerRefused(ClusterforgeError):
    """The controller did not do what it was asked; ``said``: what and why. Nothing more was asked of it."""

    def __init__(self, host: str, said: str) -> None:
        Exception.__init__(self, f"{host}: {said}")
        self.host, self.said = host, said


class ControllerUnreachable(ControllerRefused, Unreachable):
    """The controller could not be reached, or the connection broke: refused for the operations that stop on it,
    unreachable for `check`, which reports the host as not checked."""

    def __init__(self, host: str, cause: str, kind: str = failures.OTHER) -> None:
        ControllerRefused.__init__(self, host, cause)  # the Unreachable's line (failures.py's), saying whose it is
        Exception.__init__(self, f"the controller {host}: {cause}")
        self.cause, self.kind = cause, kind


class Controller:
    """The controller ``name``, its commands run by ``run`` (reach.ssh's runner; a local shell in tests)."""

    def __init__(self, name: str, run: Run) -> None:
        self.name, self.run = name, run

    @classmethod
    def over(cls, connections: Connections, name: str) -> Controller:
        """The controller ``name`` over ``connections`` (ssh.py's)."""
        return cls(name, connections.runner(name))

    def answer(self, command: str) -> Answer:
        """Its answer, whatever it is: for a caller that judges a refusal itself. Not reached: raised."""
        try:
            return self.run(command)
        except Unreachable as error:
            raise ControllerUnreachable(self.name, error.cause, error.kind) from None

    def ask(self, command: str, what: str = "") -> str:
        """Its output; a refusal raised, said as ``what`` failed (the command itself where no ``what`` is given)."""
        return self.judged(command, what).out

    def judged(self, command: str, what: str = "", accepted: tuple[int, ...] = (0,)) -> Answer:
        """Its answer where its exit status is one of ``accepted`` (a command whose 1 is a finding, not a failure);
        any other raised, as ask raises it."""
        answer = self.answer(command)
        what = what or f"`{command[:80]}`"
        if answer.rc == TIMED_OUT:
            raise ControllerRefused(self.name, f"{what} gave no answer in time")
        if answer.rc not in accepted:
            raise ControllerRefused(self.name, f"{what} failed (exit {answer.rc}): "
                                               f"{(answer.err.strip() or answer.out.strip())[-300:]}")
        return answer

    def read(self, command: str, what: str, parse: Callable[[str], T]) -> T:
        """``parse`` of its output: an answer that is not Slurm's (ParseError) is a refusal."""
        out = self.ask(command, what)
        try:
            return parse(out)
        except ParseError as error:
            raise ControllerRefused(self.name, f"{what}: {error}") from None

    # ------------------------------------------------------------------ Slurm's view

    def states(self) -> dict[str, slurm_nodes.Node]:
        """Every node's state and reason, as sinfo lists them (slurm/nodes.py's reader)."""
        nodes = self.read(slurm_nodes.sinfo_command(), "reading the nodes' states (sinfo)", slurm_nodes.parse_sinfo)
        return {n.name: n for n in nodes}

    def reservations(self) -> list[reservations.Reservation]:
        return self.read(shlex.join(reservations.show_argv()), "reading the reservations",
                         reservations.parse_reservations)

    def hostnames(self, hostlist: str) -> list[str]:
        """A Slurm hostlist's node names, as Slurm expands it."""
        if not hostlist or hostlist == "(null)":
            return []
        return self.ask(slurm_controller.hostnames_command(hostlist), f"expanding {hostlist}").split()

    def shown(self, nodes: str) -> list[slurm_nodes.Node]:
        """``scontrol show node`` of the hostlist ``nodes`` (its boot time, which sinfo does not list)."""
        return self.read(shlex.join(slurm_nodes.show_argv(nodes)), "reading the nodes (scontrol show node)",
                         slurm_nodes.parse_show)

    def running(self, nodes: str) -> list[str]:
        """The jobs on the hostlist ``nodes``, each "job user nodes" (slurm/jobs.py's ON_NODES), sorted."""
        out = self.ask(slurm_jobs.on_nodes_command(nodes), "listing the jobs (squeue)")
        return sorted({line.strip() for line in out.splitlines() if line.strip()})

    # ------------------------------------------------------------------ batch jobs

    def submit(self, command: str, what: str) -> str:
        """The id of the job that ``command`` (``sbatch --parsable ...``) submits."""
        return str(self.read(command, what, slurm_jobs.submitted))

    def jobs(self, job_ids: Iterable[str]) -> dict[str, slurm_jobs.Shown]:
        """The jobs of ``job_ids`` Slurm still knows, by id."""
        shown = self.read(slurm_jobs.show_command(job_ids), "reading the jobs (scontrol show job)",
                          slurm_jobs.parse_jobs)
        return {str(job.job_id): job for job in shown}

    def cancel(self, job_id: str) -> None:
        self.ask(shlex.join(slurm_jobs.cancel_argv([job_id])), f"cancelling job {job_id}")

    def wait(self, job_ids: list[str], bounds: Mapping[str, int], sleep: Callable[[float], None] = time.sleep,
             poll: float = POLL_S, gives_up: Callable[[slurm_jobs.Shown], bool] | None = None,
             patience_s: float = PATIENCE_S) -> tuple[dict[str, slurm_jobs.Shown], set[str], dict[str, str]]:
        """Until every job of ``job_ids`` has ended: each as last read (a job Slurm forgets past MinJobAge stays as
        it was last seen), those cancelled for running past their bound (``bounds``: seconds of RunTime), each
        once, and those cancelled while they waited for what no wait cures (``gives_up``, seen so for
        ``patience_s``: a node not responding for a ping is no reason), with Slurm's reason. A job Slurm does not
        know from the first read is a refusal."""
        shown: dict[str, slurm_jobs.Shown] = {}
        cancelled: set[str] = set()
        never_started: dict[str, str] = {}
        hopeless_s: dict[str, float] = {}
        while True:
            shown.update(self.jobs(job_ids))
            lost = [i for i in job_ids if i not in shown]
            if lost:
                raise ControllerRefused(self.name, f"Slurm does not know the jobs {', '.join(lost)} it was given")
            for job_id in job_ids:
                seen = shown[job_id]
                if seen.ended or job_id in cancelled or job_id in never_started:
                    continue
                if job_id in bounds and seen.run_s > bounds[job_id]:
                    self.cancel(job_id)
                    cancelled.add(job_id)
                elif gives_up is not None and seen.state == "PENDING" and gives_up(seen):
                    if hopeless_s.setdefault(job_id, 0.0) >= patience_s:
                        self.cancel(job_id)
                        never_started[job_id] = seen.reason.replace("_", " ")
                    hopeless_s[job_id] += poll
                else:
                    hopeless_s.pop(job_id, None)
            if all(shown[i].ended for i in job_ids):
                return shown, cancelled, never_started
            sleep(poll)
