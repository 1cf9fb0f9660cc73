"""Placement on real slurmds by the topologies clusterforge renders (Slurm 26.05, the forky root): a slurmctld and
eight slurmd side by side on this machine, reading the topology.yaml and the partition lines rendered from one
inventory: the fabric as a tree (two leaves of four nodes under a spine), the cluster's default, bound to partition
``tree``; a block topology (four blocks of two nodes, block sizes 2 and 4) bound to partition ``block``; and the
blocks the nodes' profile derives from its NVLink domain (``Profile(nvlink_domain=)``: two nodes a domain, so the
same four blocks, named gpu-nvlink1 to 4), bound to partition ``nvlink``; every partition holds all eight nodes.
Each test holds some nodes with a job of their own, so that where a job lands when
the topology is ignored (topology/flat: the tightest run of consecutive free nodes, or the longest runs where none
is long enough, common/eval_nodes.c _eval_nodes_consec) crosses a leaf or a block, and shows where the job ran: each
of its nodes' slurmd ran a step of it and printed its node's name.

What Slurm's source says (slurm-26.05, src/plugins/topology/):

- tree/eval_nodes_tree.c: ``--switches=1`` counts the leaf switches of an allocation (level 0) and leaves the job
  pending (best_switch false) while it would take more than one, until its wait (``--switches=1@time``, at most
  SchedulerParameters' max_switch_wait, 300 s by default) is over.
- block/eval_nodes_block.c: a job of N nodes is kept within one block of the smallest level that holds N
  (``_get_block_level``: ceil(log2(N / base)) base blocks, raised to a level BlockSizes lists; with none that
  large, the whole topology): 2 nodes within one base block, 4 nodes within one aggregate of two neighbouring base
  blocks (b1+b2 or b3+b4, counted from the first), and it waits while none has enough free nodes (26.05's reason:
  No_suitable_topology_unit_found). Among blocks that fit, it takes the one with the fewest free nodes.
  ``--segment=S`` splits the job into N/S segments (N must be a multiple of S, or the job cannot be placed; S larger
  than N is ignored), each placed as a job of S nodes on its own: each within one block of its level, the segments
  anywhere (``--consolidate-segments`` keeps them in one aggregate).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from clusters import small_cluster
from realslurm import harness

from clusterforge import hostlists
from clusterforge.model import (
    Block,
    BlockTopology,
    Fabric,
    Gpus,
    Leaf,
    Nodes,
    Partition,
    Profile,
    Spine,
    ValidCluster,
    resolve,
)
from clusterforge.render import render_all
from clusterforge.versions import SlurmVersion

NODES = [f"node{i:02d}" for i in range(1, 9)]
LEAVES = {"leaf1": NODES[:4], "leaf2": NODES[4:]}
BLOCKS = {f"b{i}": NODES[2 * i - 2:2 * i] for i in range(1, 5)}
WAIT_S = 30


def inventory(bound: bool = True) -> ValidCluster:
    """Eight nodes of two CPUs (no more than this machine has: slurmctld drains none for its hardware) under two
    leaves, in blocks of two, in NVLink domains of two (two GPUs a node, four a domain); ``bound``: each partition
    names its topology (without, all take the default, the tree)."""
    listed = ",".join   # a hostlist of names, as written by hand
    gpus = Gpus(type="gb200", count=2, files="/dev/nvidia[0-1]", sockets={0: [0, 1]})
    return resolve(small_cluster(
        slurm_version="26.05",
        profiles=(Profile("gpu", sockets=1, cores_per_socket=2, real_memory=100, gpus=gpus, nvlink_domain=4),),
        nodes=(Nodes(listed(NODES), profile="gpu"),),
        fabric=Fabric(topology="leaves", leaves=tuple(Leaf(name, nodes=listed(nodes)) for name, nodes in
                                                      LEAVES.items()),
                      spines=(Spine("spine", switches=listed(LEAVES)),)),
        topologies=(BlockTopology("nvl", block_sizes=(2, 4), blocks=tuple(
            Block(name, nodes=listed(nodes)) for name, nodes in BLOCKS.items())),),
        partitions=(Partition("tree", profiles=("gpu",), default=True, topology="leaves" if bound else None),
                    Partition("block", profiles=("gpu",), topology="nvl" if bound else None),
                    Partition("nvlink", profiles=("gpu",), topology="gpu" if bound else None)),
    ), SlurmVersion.parse("26.05"))


def rendered(valid: ValidCluster) -> tuple[str, str, str]:
    """topology.yaml, the nodes' hardware (the rendered NodeName line after its names and addresses: the harness
    gives each node its own address and port; and without its GPUs, which these slurmd lack: the topology is what
    is under test) and the partition lines, as clusterforge renders them."""
    files = render_all(valid)
    lines = files["slurm.conf"].splitlines()
    [node_line] = [line for line in lines if line.startswith("NodeName=")]
    hardware = " ".join(word for word in node_line.split()
                        if not word.startswith(("NodeName=", "NodeAddr=", "State=", "Gres=")))
    return files["topology.yaml"], hardware, "".join(f"{line}\n" for line in lines if line.startswith("PartitionName"))


@dataclass
class Placement:
    ctld: harness.Slurmctld
    jobs: Path                      # the jobs' outputs, a directory they see at the same path

    def submit(self, *args: str) -> str:
        """A job printing the name of each node it ran a step on (the slurmd's own SLURMD_NODENAME)."""
        return self.ctld.run("sbatch", "--parsable", f"--output={self.jobs}/%j.out", *args,
                             "--wrap=srun printenv SLURMD_NODENAME").stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict[str, str]:
        [record] = harness.parse_oneliner(self.ctld.scontrol("-o", "show", "job", job_id))
        return record

    def until(self, job_id: str, done, what: str) -> dict[str, str]:
        deadline = time.monotonic() + WAIT_S
        while not done(record := self.job(job_id)):
            assert time.monotonic() < deadline, f"job {job_id} not {what} after {WAIT_S} s: {record}"
            time.sleep(0.2)
        return record

    def busy(self, *nodes: str) -> dict[str, str]:
        """Each node held by a job of its own (the whole node), running; their ids by node."""
        held = {node: self.ctld.run("sbatch", "--parsable", "--exclusive", f"--nodelist={node}",
                                    "--wrap=sleep 600").stdout.strip() for node in nodes}
        for job_id in held.values():
            self.until(job_id, lambda r: r["JobState"] == "RUNNING", "running")
        return held

    def pending(self, job_id: str) -> str:
        """The job's reason once the scheduler has looked at it and left it pending."""
        record = self.until(job_id, lambda r: r["JobState"] != "PENDING" or r["Reason"] != "None", "looked at")
        assert record["JobState"] == "PENDING", record
        print(f"job {job_id} pending: {record['Reason']}")
        return record["Reason"]

    def ran(self, job_id: str) -> list[str]:
        """Where the job ran: the nodes whose slurmd ran its step, which are the nodes slurmctld gave it."""
        record = self.until(job_id, lambda r: r["JobState"] not in ("PENDING", "RUNNING", "COMPLETING"), "done")
        assert record["JobState"] == "COMPLETED", record
        said = sorted((self.jobs / f"{job_id}.out").read_text().split())
        assert said == sorted(hostlists.expand(record["NodeList"])), (said, record)
        return said

    def reset(self) -> None:
        """Every job cancelled and every node idle again."""
        self.ctld.run("scancel", "--user=root")
        deadline = time.monotonic() + WAIT_S
        while (states := set(self.ctld.run("sinfo", "--noheader", "--format=%T").stdout.split())) != {"idle"}:
            assert time.monotonic() < deadline, states
            time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster():
    runtime = harness.require("26.05")
    topology, hardware, partitions = rendered(inventory())
    started = time.monotonic()
    with harness.scratch_dir() as scratch:
        etc = harness.side_by_side_etc(scratch, "placement", dict.fromkeys(NODES, hardware), partitions,
                                       {"MinJobAge": "300"})   # a finished job's record kept for the checks
        (etc / "topology.yaml").write_text(topology)
        jobs = scratch / "jobs"
        jobs.mkdir()
        with harness.running_slurmctld(runtime, etc, scratch) as ctld, harness.running_slurmds(ctld, NODES):
            print(f"slurmctld and {len(NODES)} slurmd up in {time.monotonic() - started:.1f} s")
            yield Placement(ctld, jobs)
            assert ctld.errors() == []
    print(f"placement cluster: {time.monotonic() - started:.1f} s in all")


@pytest.fixture
def placement(cluster):
    cluster.reset()
    return cluster


def leaves_of(nodes: list[str]) -> set[str]:
    return {leaf for leaf, members in LEAVES.items() for node in nodes if node in members}


def blocks_of(nodes: list[str]) -> list[str]:
    """The blocks the nodes fill, each wholly; fails where they fill one only in part."""
    filled = [name for name, members in BLOCKS.items() if set(members) <= set(nodes)]
    assert sorted(n for name in filled for n in BLOCKS[name]) == sorted(nodes), nodes
    return filled


@pytest.mark.realslurm
def test_switches_one_lands_on_one_leaf(placement):
    """node01-03 held: flat would take node04 (leaf1) and node05 (leaf2); --switches=1 runs on leaf2."""
    placement.busy("node01", "node02", "node03")
    ran = placement.ran(placement.submit("--partition=tree", "--nodes=2", "--switches=1"))
    assert len(ran) == 2 and leaves_of(ran) == {"leaf2"}, ran


@pytest.mark.realslurm
def test_switches_one_waits_for_a_leaf_with_room_and_lands_there(placement):
    """node01 and node05 held: each leaf has three nodes free, six in all. A job of four with --switches=1 waits (it
    would start at once across the leaves); once node05 is let go it runs on leaf2, the one leaf then with room."""
    held = placement.busy("node01", "node05")
    job_id = placement.submit("--partition=tree", "--nodes=4", "--switches=1")
    reason = placement.pending(job_id)
    placement.ctld.run("scancel", held["node05"])
    assert placement.ran(job_id) == LEAVES["leaf2"], reason


@pytest.mark.realslurm
def test_a_job_of_one_block_lands_within_one_block(placement):
    """node01, node04 and node05 held: the free nodes are node02 (b1), node03 (b2), node06 (b3) and node07-08 (b4);
    flat (the tightest run) and the tree (leaf1, the tightest leaf) would run a job of two on node02-03, across b1
    and b2. The block topology runs it on b4, the one block with two free nodes."""
    placement.busy("node01", "node04", "node05")
    ran = placement.ran(placement.submit("--partition=block", "--nodes=2"))
    assert blocks_of(ran) == ["b4"], ran


@pytest.mark.realslurm
def test_segments_need_only_whole_blocks_and_a_job_of_two_blocks_waits_for_an_aggregate(placement):
    """node03 and node08 held: b1 (node01-02) and b3 (node05-06) are free, b2 and b4 have a node free each; the
    aggregates of block size 4 are b1+b2 and b3+b4, three nodes free in each. A job of four nodes in segments of two
    (--segment=2) runs at once on b1 and b3: each segment one whole block, the two in different aggregates (flat would
    take the run node04-07, the tree three nodes of one leaf and one of the other: it knows no segments). The same
    job without segments waits (flat and the tree would start it at once); once node03 is let go, it runs on b1+b2."""
    held = placement.busy("node03", "node08")
    segmented = placement.submit("--partition=block", "--nodes=4", "--segment=2")
    assert blocks_of(placement.ran(segmented)) == ["b1", "b3"]
    whole = placement.submit("--partition=block", "--nodes=4")
    reason = placement.pending(whole)
    assert reason == "No_suitable_topology_unit_found", reason   # 26.05's reason for a job no block can hold
    placement.ctld.run("scancel", held["node03"])
    assert blocks_of(placement.ran(whole)) == ["b1", "b2"], reason


def domains_of(nodes: list[str]) -> list[str]:
    """The NVLink domains (the blocks of the profile's topology) the nodes fill, each wholly; fails where they fill
    one only in part."""
    [topology] = [t for t in inventory().topologies if t.name == "gpu"]
    filled = [block.name for block in topology.blocks if set(block.nodes) <= set(nodes)]
    assert sorted(n for b in topology.blocks if b.name in filled for n in b.nodes) == sorted(nodes), nodes
    return filled


@pytest.mark.realslurm
def test_a_job_of_one_nvlink_domain_lands_within_one_domain(placement):
    """The profile's NVLink domains place a job as blocks written by hand do: node01, node04 and node05 held, flat
    and the tree would run a job of two across gpu-nvlink1 and 2 (node02-03); partition nvlink runs it on
    gpu-nvlink4, the one domain with two free nodes."""
    placement.busy("node01", "node04", "node05")
    ran = placement.ran(placement.submit("--partition=nvlink", "--nodes=2"))
    assert domains_of(ran) == ["gpu-nvlink4"], ran
