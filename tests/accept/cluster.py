"""The cluster `clusterforge accept` runs on in tests/accept: many nodes on one machine, which the real-Slurm tier
cannot give (one slurmd per machine). Slurm is the one stand-in (tests/slurm_standin): the controller's commands run
in a real shell with its sinfo, scontrol, sbatch, squeue and scancel, and a job runs its real script at once, with
bash, the testbed's stand-in tools (testbed/accept/) as its programs and tests/accept/bin/srun as srun, so the output
judged is those tools' output. What is here is accept's own, not Slurm's:

- the controller's one file accept writes, the gate's records (records.append_commands), goes to
  ``controller_records``, a directory of the test's in the place of /var/lib/clusterforge/gate/records;
- the nodes' commands (making the run's output directory, reading an output, removing the directory) run in a real
  shell, every node sharing this machine's filesystem, a command stalled past NODE_TIMEOUT_S cut as the CLI's
  `timeout` cuts it; ``output_base`` (a directory of the test's) is where accept is told to make its run
  directories, in the place of /var/lib/clusterforge/accept."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from slurm_standin import Job, Node, Partition, Runner, Slurm, cluster

from clusterforge.admission import records
from clusterforge.slurm import reservations
from clusterforge.slurm.commands import Answer

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "testbed" / "accept"
BIN = Path(__file__).resolve().parent / "bin"
NODE_TIMEOUT_S = 10   # a node command that takes longer is stalled (the CLI's bound is 60 s)


@dataclass
class Cluster:
    """Slurm (the stand-in) and what accept is given around it: the controller's shell, each node's."""

    slurm: Slurm
    root: Path                                    # the test's directory: the testbed's root, the nodes' and ours
    commands: list[str] = field(default_factory=list)   # the controller's, as accept sent them
    node_commands: list[tuple[str, str]] = field(default_factory=list)
    stalled: list[tuple[str, str]] = field(default_factory=list)      # node commands cut at NODE_TIMEOUT_S

    @classmethod
    def of(cls, names: Iterable[str], root: Path, partitions: Mapping[str, Partition] | None = None,
           never_ends: Iterable[str] = (), times_out: Iterable[str] = (), no_output: Iterable[str] = ()) -> Cluster:
        """Idle nodes, in ``partitions`` or else in one default partition without a time limit; a job on a node
        of ``never_ends``, ``times_out`` or ``no_output`` meets that fate (slurm_standin.Runner)."""
        # The tools by name too, as an image's PATH has them (Programs(image=...) names no directory); and
        # tests/accept/bin/srun before the stand-in's, for the task's environment (SLURM_NTASKS, SLURM_PROCID,
        # SLURM_STEP_NODELIST, ...) that the tools read.
        runner = Runner(path=[str(BIN), str(TOOLS)], env={"CLUSTERFORGE_TESTBED_ROOT": str(root)},
                        never_ends=set(never_ends), times_out=set(times_out), no_output=set(no_output))
        names = list(names)
        slurm = (Slurm({n: Node() for n in names}, dict(partitions), runner=runner) if partitions
                 else Slurm.of(names, runner=runner))
        (root / "node").mkdir(exist_ok=True)
        return cls(slurm, root)

    # ------------------------------------------------------------------ what accept is given

    def controller(self, command: str) -> Answer:
        """The controller's shell: Slurm's commands the stand-in's, the gate's records directory the test's."""
        self.commands.append(command)
        return self.slurm.shell(command.replace(records.ON_CONTROLLER, str(self.controller_records)))

    def node(self, name: str):
        def run(command: str) -> Answer:
            self.node_commands.append((name, command))
            try:
                done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False,
                                      timeout=NODE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                # What the CLI's `timeout 60 sh -c` gives (check/run.py): exit 124. A stall, recorded.
                self.stalled.append((name, command))
                return Answer(124, "", "")
            return Answer(done.returncode, done.stdout, done.stderr)
        return run

    @property
    def controller_records(self) -> Path:
        return self.root / "controller" / "gate" / "records"

    @property
    def output_base(self) -> str:
        return str(self.root / "node" / "var-lib-clusterforge" / "accept-runs")

    # ------------------------------------------------------------------ the test's hand in Slurm, and its view

    def scontrol(self, *argv: str) -> None:
        """An admin's scontrol request, which slurmctld must take."""
        answer = self.slurm.run(["scontrol", *argv])
        assert answer.rc == 0, (argv, answer)

    def drain(self, name: str, reason: str) -> None:
        self.scontrol("update", f"NodeName={name}", "State=DRAIN", f"Reason={reason}")

    def hold(self, reservation: str, nodes: str) -> None:
        """``nodes`` held in ``reservation`` as the gate holds a node (reservations.create_argv)."""
        self.scontrol(*reservations.create_argv(reservation, nodes)[1:])

    def busy(self, name: str) -> None:
        """A user's job on some of the node's CPUs (sinfo: mixed), still running when the test is over."""
        self.slurm.place("alice", [name], 24 * 3600, cpus=1)

    def state(self, name: str) -> tuple[str, str]:
        """The node's long state and reason, as sinfo's %T and %E list them."""
        return cluster.long_state(*self.slurm.state_of(name)), self.slurm.nodes[name].reason

    @property
    def reserved(self) -> dict[str, str]:
        """Each reservation's nodes, as it was given them."""
        return {name: r.nodes for name, r in self.slurm.reservations.items()}

    @property
    def submitted(self) -> list[Job]:
        """The jobs accept submitted (sbatch's, root's: a user's job placed by the test is not), in order."""
        return [j for j in sorted(self.slurm.jobs.values(), key=lambda j: j.job_id) if j.user == "root"]
