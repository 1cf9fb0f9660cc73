"""`clusterforge accept` over 8 nodes of the real Slurm 26.05: a slurmctld and nine slurmd side by side on this
machine (gpu01-gpu08 for accept, gpu09 drained by an admin), each node 2 CPUs and 8 stand-in GPUs, running the
product's own jobs: admission.tests' entries as render/admission.py writes them for a profile whose programs are the
test cluster's stand-ins (bin_dir=<repo>/testbed/accept), their batch scripts (tests.job_script), their judging
(tests.judge), Accept's rounds, bisection, rail round and drains (slurm/drains.py).

The stand-ins print the real tools' output with the numbers a results file sets per node (testbed/accept/results.py)
under a scratch CLUSTERFORGE_TESTBED_ROOT, which reaches every job step through sbatch's and srun's environment: a
node whose HCAs are slow slows every multi-node all_reduce it is in while its own all_reduce is fine, one slow HCA
does the same and shows in its rail's run, and a node set to hang stalls its run until the bound cuts it.

Each test prints accept's progress lines and the seconds it took (pytest -s shows them)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from clusters import gpu_profile, small_cluster
from realslurm import harness

from clusterforge.admission import records, tests
from clusterforge.accept import bisect
from clusterforge.accept.run import Accept, Report
from clusterforge.reach.controller import Controller
from clusterforge.slurm import nodes as slurm_nodes
from clusterforge.slurm.commands import Answer
from clusterforge.model import Admission, Nodes, Programs, ValidCluster, resolve
from clusterforge.model.hardware import Gpus
from clusterforge.render import admission

BIN = Path(__file__).resolve().parents[2] / "testbed" / "accept"
NODES = [f"gpu{i:02d}" for i in range(1, 9)]
HELD = "gpu09"                     # drained by an admin before accept starts
ADMIN = "RMA: fan (admin)"
GPUS = tuple(f"/dev/nvidia{i}" for i in range(8))
CPUS = 2                           # no more than this machine has: slurmctld drains no node for its hardware
# The tests' bounds, each entry's "timeout" (the real tools' run for minutes, the stand-ins a second or two): a hung
# run is cut there, and a job Slurm ends a minute later still. 30 s, not less: eight healthy runs start at once on this
# machine's 2 cores, each a Python stand-in under srun, and a loaded machine (CI's, or a test cluster beside) must not
# cut a healthy one.
BOUNDS_S = {"allreduce": 30, "allreduce_multi": 60}
SLOW_GBITS = 190.0                 # an HCA's ib_write_bw average where the results file slows it (healthy 392.77)


def stand_in_hcas() -> tuple[str, ...]:
    """The HCAs the stand-ins give every node (testbed/accept/results.py)."""
    sys.path.insert(0, str(BIN))
    try:
        import results
    finally:
        sys.path.remove(str(BIN))
    return tuple(results.HCAS)


def inventory(names: tuple[str, ...] = ("allreduce", "allreduce_multi")) -> ValidCluster:
    """Nine nodes of one profile on one leaf: 2 CPUs, 8 H100 GPUs, the stand-ins' HCAs, admission with the test
    cluster's stand-ins as its programs and the tests ``names``."""
    spec = Admission(programs=Programs(bin_dir=str(BIN)), tests=names)
    profile = gpu_profile(sockets=1, cores_per_socket=CPUS, real_memory=100, hcas=stand_in_hcas(), admission=spec,
                          gpus=Gpus(type="h100", count=len(GPUS), files="/dev/nvidia[0-7]"))
    return resolve(small_cluster(profiles=(profile,), nodes=(
        Nodes(f"gpu[01-{len(NODES) + 1:02d}]", address="10.9.1.[1-9]", profile="gpu", leaf="leaf1"),)))


def plan(valid: ValidCluster, bounds: dict[str, int] = BOUNDS_S) -> dict[str, list[dict]]:
    """Each node's entries as admission.json holds them, with the bounds of ``bounds`` where it has one."""
    nodes = json.loads(admission.render(valid) or "{}")["nodes"]
    return {name: [{**e, "timeout": bounds.get(e["name"], e["timeout"])} for e in node["tests"]]
            for name, node in nodes.items()}


def first_job_id() -> int:
    """This process's own range of job ids: the names a job user would plant at, where outputs were named by id in
    the forky root's /tmp (shared by every cluster of the harness; accept's own outputs now go to a directory of the
    run's, accept/jobs.py). 64 ids a process (a cluster here submits some 25 jobs), below Slurm's MaxJobId
    (67043328) for any pid."""
    return 1000 + os.getpid() % 1_000_000 * 64


def slurm_conf(scratch: Path, nodes: list[str], partitions: str = "") -> Path:
    etc = harness.side_by_side_etc(
        scratch, "eight", {node: f"CPUs={CPUS} RealMemory=100 Gres=gpu:h100:{len(GPUS)}" for node in nodes},
        partitions or f"PartitionName=all Nodes={','.join(nodes)} Default=YES State=UP\n",
        {"ReturnToService": "2", "GresTypes": "gpu", "MinJobAge": "300", "FirstJobId": str(first_job_id())})
    (etc / "gres.conf").write_text(f"Name=gpu Type=h100 File=/dev/nvidia[0-{len(GPUS) - 1}]\n")
    return etc


@dataclass
class Cluster:
    """The running cluster: the controller's commands run here with the stand-ins' root in their environment."""

    ctld: harness.Slurmctld
    valid: ValidCluster
    env: dict[str, str]
    scratch: Path                   # seen by the jobs at the same path
    said: list[str] = field(default_factory=list)
    timeline: list[tuple[float, str]] = field(default_factory=list)   # each line said, with the seconds since start

    def controller(self, command: str) -> Answer:
        done = self.ctld.run("sh", "-c", command, check=False, timeout=60, env=self.env)
        return Answer(done.returncode, done.stdout, done.stderr)

    def states(self) -> dict[str, slurm_nodes.Node]:
        return {s.name: s for s in slurm_nodes.parse_sinfo(self.controller(slurm_nodes.sinfo_command()).out)}

    def accept(self, records_dir: Path, heard: Callable[[str], None] | None = None, **kwargs) -> Report:
        """Accept as the CLI builds it (cli/accept.py): admission.json's entries, the leaves, each node's HCAs.
        ``heard``: told each line accept says, as it says it; ``kwargs``: Accept's (reserve, partitions)."""
        entries = plan(self.valid)
        order = [n.name for n in self.valid.nodes if n.name in entries]
        assert self.valid.topology is not None
        leaves = [(s.name, [n for n in s.nodes if n in entries]) for s in self.valid.topology.leaves]
        hcas = {n: self.valid.admission[n].hcas for n in order}
        started = time.monotonic()

        def say(line: str) -> None:
            self.said.append(line)
            self.timeline.append((time.monotonic() - started, line))
            print(f"{self.timeline[-1][0]:6.1f} s  {line}")
            if heard is not None:
                heard(line)

        run = Accept({n: entries[n] for n in order}, leaves, hcas, Controller("ctl", self.controller),
                     lambda node: self.controller, say, tests.job_script, tests.judge, records_dir, **kwargs)
        self.run = run
        report = run.run()
        print(f"accept took {time.monotonic() - started:.1f} s in {report.rounds} rounds")
        return report


@contextlib.contextmanager
def running_cluster(results: dict, valid: ValidCluster | None = None, partitions: str = "") -> Iterator[Cluster]:
    """slurmctld 26.05 and a slurmd per node, gpu09 drained by an admin; ``results`` the stand-ins' per node;
    ``valid`` the inventory (inventory()'s where none is given); ``partitions`` slurm.conf's partition lines (one
    default partition of every node where none are given)."""
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        root = scratch / "testbed"
        (root / "home" / ".clusterforge-testbed").mkdir(parents=True)
        (root / "home" / ".clusterforge-testbed" / "accept.json").write_text(json.dumps(results))
        etc = slurm_conf(scratch, [*NODES, HELD], partitions)
        # The jobs write no bytecode into the repository's testbed/accept.
        env = {"CLUSTERFORGE_TESTBED_ROOT": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
        with harness.running_slurmctld(runtime, etc, scratch) as ctld, \
                harness.running_slurmds(ctld, [*NODES, HELD], GPUS, binds=(BIN,)):
            ctld.scontrol("update", f"NodeName={HELD}", "State=DRAIN", f"Reason={ADMIN}")
            yield Cluster(ctld, valid or inventory(), env, scratch)


def rounds(said: list[str]) -> list[str]:
    return [line for line in said if line.startswith("round ")]


def assert_a_line_per_round(said: list[str], report: Report) -> None:
    assert [line.partition(":")[0] for line in rounds(said)] == [f"round {n}" for n in range(1, report.rounds + 1)]


def assert_admins_drain_kept(cluster: Cluster, report: Report) -> None:
    held = cluster.states()[HELD]
    assert held.state == "drained" and held.reason == ADMIN, held
    assert report.left_alone == {HELD: f"drained, {ADMIN!r}"}


@pytest.mark.realslurm
def test_the_multi_node_script_lays_one_rank_per_gpu_on_each_node_with_fewer_cpus_than_gpus():
    """Where each rank of allreduce_multi's script ran, as Slurm says (SLURM_PROCID, SLURMD_NODENAME)."""
    with running_cluster({}) as cluster:
        [entry] = [e for e in plan(cluster.valid)["gpu01"] if e["name"] == "allreduce_multi"]
        assert entry["cpus"] < entry["gpus"]
        where = {**entry, "argv": ["sh", "-c", 'echo "rank $SLURM_PROCID $SLURMD_NODENAME $SLURM_LOCALID"']}
        out = cluster.scratch / "ranks.out"
        done = cluster.controller(f"sbatch --wait --output={out} <<'END'\n"
                                  f"{tests.job_script(where, NODES).rstrip()}\nEND\ncat {out}")
        assert done.rc == 0, done.out + done.err
        ranks = sorted((int(rank), node, int(local)) for word, rank, node, local in
                       (line.split() for line in done.out.splitlines() if line.startswith("rank ")))
        gpus = entry["gpus"]
        # Block by block: ranks 0-7 on gpu01, 8-15 on gpu02, ..., each node's local ranks 0-7 (its GPUs).
        assert ranks == [(i, NODES[i // gpus], i % gpus) for i in range(gpus * len(NODES))], ranks


@pytest.mark.realslurm
def test_a_slow_node_among_eight_is_found_by_bisection_within_the_bound_and_drained_with_its_number(tmp_path):
    hcas = stand_in_hcas()
    with running_cluster({"gpu05": {"hca": {h: SLOW_GBITS for h in hcas}}}) as cluster:
        report = cluster.accept(tmp_path / "records")
        said = cluster.said
        assert report.tested == NODES, said
        assert_a_line_per_round(said, report)
        # Its own all_reduce is fine: every node passes round 1; every multi-node run it is in is slow.
        assert rounds(said)[0].startswith("round 1: single-node tests on 8 nodes: 8 runs, 8 passed"), said
        assert rounds(said)[1].startswith("round 2: allreduce_multi across 1 leaf: 1 run, 0 passed; failed: "
                                          "gpu01+gpu02+gpu03+gpu04+gpu05+gpu06+gpu07+gpu08 (allreduce_multi "), said
        [found] = report.bisections
        assert found.nodes == ["gpu05"] and found.rounds <= bisect.bound(len(NODES)) == math.ceil(math.log2(8)) + 1
        assert f"leaf1: {found.summary()} in {found.rounds} round" + "s" * (found.rounds > 1) in said
        # Every rail is slow beside a known-good peer: the node, not one HCA.
        [rails] = report.rails
        assert rails.node == "gpu05" and sorted(rails.slow) == sorted(hcas)
        [finding] = report.findings
        assert (finding.node, finding.test, finding.rail) == ("gpu05", "allreduce_multi", "")
        state = cluster.states()["gpu05"]
        assert state.state == "drained" and state.drain == finding.drain, state
        assert state.reason.startswith("cf:accept:allreduce_multi 182.4 GB/s < 350 (") and "gpu05" in state.reason
        assert f"gpu05 drained: {finding.drain.reason!r}" in said
        assert all(cluster.states()[n].state == "idle" for n in NODES if n != "gpu05")
        assert_admins_drain_kept(cluster, report)
        assert report.exit_status == 1
        kept = records.read(tmp_path / "records", "gpu05")
        assert [(r["test"], r["passed"]) for r in kept][:2] == [("allreduce", True), ("allreduce_multi", False)]


@pytest.mark.realslurm
def test_a_slow_rail_is_named_and_a_hung_node_is_cut_at_its_bound_beside_an_admins_drain(tmp_path):
    with running_cluster({"gpu02": {"hca": {"mlx5_4": SLOW_GBITS}}, "gpu07": {"hang": 3600}}) as cluster:
        started = time.monotonic()
        report = cluster.accept(tmp_path / "records")
        said = cluster.said
        cut_s = BOUNDS_S["allreduce"]
        assert_a_line_per_round(said, report)
        # The hung node: its all_reduce cut by timeout(1) at the bound, a failure, and its node left out of the
        # multi-node rounds; the round took its bound, not the hang's hour.
        first = rounds(said)[0]
        assert first.startswith("round 1: single-node tests on 8 nodes: 8 runs, 7 passed; failed: gpu07 (allreduce "
                                f"cut at its bound of {cut_s} s (hung or too slow))"), said
        assert time.monotonic() - started < 3600
        # The slow rail: gpu02 found by bisection among the other 7, then its rails one at a time beside a peer.
        [found] = report.bisections
        assert found.nodes == ["gpu02"] and found.rounds <= bisect.bound(7)
        [rails] = report.rails
        assert rails.slow == ["mlx5_4"], rails.summary()
        assert {f.node: (f.test, f.rail) for f in report.findings} == {
            "gpu07": ("allreduce", ""), "gpu02": ("allreduce_multi", "mlx5_4")}
        states = cluster.states()
        assert states["gpu07"].reason == f"cf:accept:allreduce cut at its bound of {cut_s} s (hung or too slow)", said
        assert states["gpu02"].reason.startswith("cf:accept:allreduce_multi 182.4 GB/s < 350 (")
        assert states["gpu02"].reason.endswith(" rail mlx5_4") and states["gpu02"].state == "drained"
        assert_admins_drain_kept(cluster, report)
        kept = records.read(tmp_path / "records", "gpu07")
        # Its run and the confirming one, alone, before the drain: cut both times.
        assert [(r["test"], r["passed"], r["value"]) for r in kept] == [("allreduce", False, None)] * 2


NOBODY = "65534"


def as_nobody(cluster: Cluster, command: str) -> Answer:
    """A command of a job user's (nobody, no groups) in the nodes' filesystem, as her job could run it there."""
    done = cluster.ctld.run("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sh", "-c",
                            command, check=False, timeout=60)
    return Answer(done.returncode, done.stdout, done.stderr)


@pytest.mark.realslurm
def test_links_and_fifos_a_job_user_plants_at_every_output_name_change_nothing_of_roots_and_stall_nothing(tmp_path):
    """Job ids are sequential: a user plants, at every name accept's outputs had in /tmp (this run's ids), a link to
    a file of root's under /etc or a FIFO, and tries the directory accept writes to now. slurmstepd writes root's job
    output through a link (fs.protected_symlinks=0 here, as on the test machines), and a read of a FIFO blocks: on the
    old code the file of root's was overwritten with a test's table. Now the slow node is still found and drained,
    the file of root's is as it was, and every round ended (no read stalled at the controller's 60 s)."""
    with running_cluster({"gpu03": {"allreduce": 300}}) as cluster:
        victim = cluster.scratch / "etc" / "victim.conf"   # /etc/slurm/victim.conf in the nodes' filesystem too
        victim.write_text("# root's\n")
        first = first_job_id()
        names = f"$(for i in $(seq {first} {first + 63}); do echo /tmp/cf-accept-$i.out; done)"
        try:
            # Counted by this run's own names: the root's /tmp is the cache's and outlives a run killed here.
            planted = as_nobody(cluster, f"for f in {names}; do rm -f $f; case $f in *[02468].out) "
                                         "ln -s /etc/slurm/victim.conf $f;; *) mkfifo -m 0666 $f;; esac; done; "
                                         f"ls -ld {names} | grep -c '^[lp]'")
            assert planted.rc == 0 and planted.out.split() == ["64"], planted
            base = "/var/lib/clusterforge/accept-runs"
            before = cluster.controller(f"ls -A {base} 2>/dev/null").out.split()   # a killed run's, in the cache
            report = cluster.accept(tmp_path / "records")
            said = cluster.said
            assert victim.read_text() == "# root's\n"
            assert [(f.node, f.drain.reason) for f in report.findings] == [
                ("gpu03", "cf:accept:allreduce 300 GB/s < 460")], said
            states = cluster.states()
            assert states["gpu03"].state == "drained" and states["gpu03"].reason == "cf:accept:allreduce 300 GB/s < 460"
            assert all(states[n].state == "idle" for n in NODES if n != "gpu03"), states
            assert rounds(said)[0].startswith("round 1: single-node tests on 8 nodes: 8 runs, 7 passed"), said
            # What she may see of where the outputs go now: nothing; and she can plant nothing there.
            tried = as_nobody(cluster, f"ls {base}; touch {base}/run-x; ln -s /etc/slurm/victim.conf {base}/x.out")
            assert tried.rc != 0 and "Permission denied" in tried.err, tried
            left = cluster.controller(f"stat -c '%U %a' {base}; ls -A {base}")
            assert left.out.split() == ["root", "700", *before], left   # the run's own directory removed at the end
        finally:
            cluster.controller(f"rm -f {names}")


@pytest.mark.realslurm
def test_an_intermittent_node_padding_a_healthy_nodes_run_leaves_the_healthy_node_undrained(tmp_path):
    """gpu08's HCAs are slow, so the leaf fails; gpu01 passes its first bisection half and turns slow then (an
    intermittent node, its results file rewritten as accept says that round ended). The halving pads gpu07 with
    gpu01: gpu07 fails beside it, and the old code drained gpu07. Now each node blamed runs again first: gpu07 passes
    beside another node while gpu01 fails again, so gpu01 is reported flaky with its numbers and nothing but gpu08,
    confirmed beside a node that passed two runs, is drained."""
    hcas = stand_in_hcas()
    slow = {h: SLOW_GBITS for h in hcas}
    with running_cluster({"gpu08": {"hca": slow}}) as cluster:
        results = cluster.scratch / "testbed" / "home" / ".clusterforge-testbed" / "accept.json"

        def heard(line: str) -> None:
            if line.startswith("round 3: bisecting "):   # the first halves ran: gpu01 passed one; slow from now on
                results.write_text(json.dumps({"gpu08": {"hca": slow}, "gpu01": {"hca": slow}}))

        report = cluster.accept(tmp_path / "records", heard)
        said = cluster.said
        assert_a_line_per_round(said, report)
        states = cluster.states()
        assert states["gpu07"].state == "idle", (states["gpu07"], said)
        assert states["gpu01"].state == "idle", (states["gpu01"], said)
        [finding] = report.findings
        assert finding.node == "gpu08" and states["gpu08"].state == "drained", said
        assert states["gpu08"].drain == finding.drain
        confirmed = {c.node: c for c in report.confirmations}
        assert confirmed["gpu07"].verdict == "cleared" and confirmed["gpu07"].peer == "gpu01", said
        assert confirmed["gpu08"].verdict == "slow" and confirmed["gpu08"].last.passes >= 2, said
        [flaky] = report.flaky
        assert flaky.node == "gpu01", flaky
        assert ">= 350" in flaky.figures[0] and "< 350 (gpu07+gpu01)" in flaky.figures[1], flaky
        assert all(states[n].state == "idle" for n in NODES if n != "gpu08"), states
        assert_admins_drain_kept(cluster, report)
        assert report.exit_status == 1


@pytest.mark.realslurm
def test_with_reserve_a_node_outside_the_default_partition_is_tested_and_the_reservation_ends_by_itself(tmp_path):
    """gpu08 is in the partition solo alone, the rest in all (the default), so a job that names no partition never
    runs on gpu08: slurmctld refuses it. accept --reserve names each job's partition, finds gpu08 slow there and drains
    it; its cf-accept reservation, as slurmctld holds it, ends after the most the run can take (Duration in minutes),
    not after the year Slurm allows."""
    lines = (f"PartitionName=all Nodes={','.join(NODES[:7])},{HELD} Default=YES State=UP\n"
             "PartitionName=solo Nodes=gpu08 State=UP\n")
    with running_cluster({"gpu08": {"allreduce": 300}}, partitions=lines) as cluster:
        refused = cluster.controller("sbatch --parsable --nodelist=gpu08 --wrap=true")
        assert refused.rc != 0, refused   # what a job naming no partition gets on gpu08
        held = {}

        def heard(line: str) -> None:
            if line.startswith("reservation cf-accept holds"):
                shown = cluster.controller("scontrol -o show reservation cf-accept").out
                held.update(kv.split("=", 1) for kv in shown.split() if "=" in kv)

        partitions = [("all", NODES[:7], math.inf, True), ("solo", ["gpu08"], math.inf, False)]
        report = cluster.accept(tmp_path / "records", heard, reserve=True, partitions=partitions)
        said = cluster.said
        minutes = math.ceil(cluster.run.most_s(NODES) / 60)
        days, _, clock = held["Duration"].rpartition("-")
        hours, mins, secs = (int(x) for x in clock.split(":"))
        assert (int(days or 0) * 1440 + hours * 60 + mins, secs) == (minutes, 0), held
        assert minutes < 24 * 60
        assert [(f.node, f.drain.reason) for f in report.findings] == [("gpu08", "cf:accept:allreduce 300 GB/s < 460")]
        assert cluster.states()["gpu08"].state == "drained", said
        assert report.tested == NODES, said
        assert "reservation cf-accept deleted" in said
        assert cluster.controller("scontrol -o show reservation").out.strip() == "No reservations in the system"
