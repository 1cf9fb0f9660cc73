"""The controller's own cost per host in a no-op deploy, on many simulated hosts; prints figures, asserts nothing.

    python benchmarks/simulated_noop.py [--hosts 1000] [--repeat 7] [--release 24.11|22.05] [--admission]

No SSH and no machines: the role tier's simulated hosts (tests/deploy/simhost.py), behind pyinfra's ``@fake``
connector. A cluster of a controller, a login host and ``--hosts`` minus two GPU nodes is deployed once (the
controller, the login host and one node, with ``--limit``); the node's simulated host is then copied to every other
node, as testbed/grow.sh clones a deployed machine. With ``--admission`` every node's profile has the admission gate,
and the cluster is as it is once the gate has passed every node: each node keeps the note of its hold, and the
controller the node's admission record. The figures are then taken on the whole cluster, interleaved so
both see the same machine load:

* the no-op re-run (``pyinfra -y INVENTORY deploy/cluster.py``), which must change nothing;
* the floor, pyinfra's own ``exec -- true`` on the same hosts;

each as wall time (the median) and as the CPU time of the pyinfra process (its user and system time, from the
kernel's account of the finished child; the best of the runs, since what else the machine does only ever adds to
it). What a simulated host spends answering a command (reading its model, building its reply) is not
the controller's: the answers are recorded by a first run and replayed from memory afterwards, and the CPU time spent
in the replaying connector is measured and taken off. "clusterforge per host" is the no-op's CPU less the floor's,
divided by the hosts: what the deploy adds on top of pyinfra connecting to each host and running one command there;
it is taken for each no-op and the floor run right after it, and the median of those pairs is printed with their
range (on a shared machine the load moves between runs by more than the figure itself). Each host's state read (the
one command of the run that reads everything the deploy manages there) is sized too: its command's and its output's
bytes, for a node and for the controller, and the commands each host was sent.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "deploy")]

from deploy.fakedeploy import PYINFRA, TESTS, SimCluster  # noqa: E402 - after the path to the tests
from deploy.simhost import Sim  # noqa: E402

from clusterforge.health.expect import EXPECTATIONS_PATH  # noqa: E402
from clusterforge.render import gate  # noqa: E402
from clusterforge.slurm import reservations  # noqa: E402

PER_LEAF = 250  # nodes per Nodes entry (and per /24 of addresses)
ADMISSION = ('profiles=(gpu_profile(admission=Admission(programs=Programs(bin_dir="/opt/cf"), '
             'tests=("dcgm", "allreduce"))),)')

# The inventory the measured runs use: the simulated cluster's own (hosts.py), with a connector that answers each
# command from what a first run recorded, and counts the CPU time it spends doing so.
REPLAY = """\
import atexit, json, os, time
from pathlib import Path

from pyinfra.connectors.fake import FakeConnector
from pyinfra.connectors.util import CommandOutput, OutputLine

from hosts import _lookup as _simulated, compute, controller, database, login, nfs  # noqa: F401

_FILE = Path(os.environ["CLUSTERFORGE_SIM_ANSWERS"])
_ANSWERS = json.loads(_FILE.read_text()) if _FILE.exists() else {}
_RECORDING = not _ANSWERS
_SPENT = [0.0]
_SENT = {}  # host -> [commands, the state read's command bytes, its output bytes]


def _replay(self, command):
    start = time.process_time()
    if command == "true":
        found = [True, []]
    else:
        key = self.host.name + " " + command
        found = _ANSWERS.get(key)
        if found is None:
            if not _RECORDING:
                raise RuntimeError("not recorded: " + key[:200])
            ok, out = _simulated(self, command)
            found = _ANSWERS[key] = [ok, [[line.buffer_name, line.line] for line in out.combined_lines]]
    ok, lines = found
    sent = _SENT.setdefault(self.host.name, [0, 0, 0])
    sent[0] += 1
    if "@container" in command:  # the host-state read (engine/state.py)
        sent[1] += len(command.encode())
        sent[2] += sum(len(line[1].encode()) + 1 for line in lines)
    out = CommandOutput([OutputLine(*line) if isinstance(line, list) else line for line in lines])
    _SPENT[0] += time.process_time() - start
    return ok, out


def _done():
    if _RECORDING:
        _FILE.write_text(json.dumps(_ANSWERS))
    Path(os.environ["CLUSTERFORGE_SIM_SPENT"]).write_text(str(_SPENT[0]))
    Path(os.environ["CLUSTERFORGE_SIM_SENT"]).write_text(json.dumps(_SENT))


atexit.register(_done)
FakeConnector._lookup_response = _replay
"""


def nodes_entry(count: int) -> str:
    entries = []
    for first in range(1, count + 1, PER_LEAF):
        last = min(first + PER_LEAF - 1, count)
        block = (first - 1) // PER_LEAF
        entries.append(f'Nodes("gpu[{first:04d}-{last:04d}]", address="10.{10 + block}.0.[{first - block * PER_LEAF}-'
                       f'{last - block * PER_LEAF}]", profile="gpu", leaf="leaf1")')
    return f"nodes=({', '.join(entries)},)"


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Wall time, the child's CPU time (user + system), and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run(command, check=False, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return wall, cpu, result.stdout + result.stderr


def clone(seed: Sim, name: str) -> Sim:
    """gpu0001's machine as another node's: the files the deploy writes for each node alone, the health check's
    expectations (health/expect.py, which name the node) and the note of its admission hold (roles/gate.py), as that
    node's own deploy wrote them."""
    copy = Sim(**{**asdict(seed), "files": dict(seed.files)})
    entry = seed.files.get(EXPECTATIONS_PATH)
    if entry is not None:
        content = base64.b64decode(entry["content"]).replace(b'"gpu0001"', f'"{name}"'.encode())
        copy.files[EXPECTATIONS_PATH] = {**entry, "content": base64.b64encode(content).decode()}
    note = copy.files.pop(gate.hold_path("gpu0001"), None)
    if note is not None:
        hold = f"{reservations.name(reservations.NEW, name)}\n".encode()
        copy.files[gate.hold_path(name)] = {**note, "content": base64.b64encode(hold).decode()}
    return copy


def admitted_everywhere(controller: Sim, nodes: list[str]) -> None:
    """The controller's admission record of every node, as the gate's pass writes it (gate/store.py)."""
    for node in nodes:
        record = json.dumps({"how": "passed", "node": node, "time": "2025-01-01T00:00:00Z"}, sort_keys=True) + "\n"
        controller.files[gate.admitted_path(node)] = {"content": base64.b64encode(record.encode()).decode(),
                                                      "user": "root", "group": "root", "mode": "644"}


def state_reads(sent: dict[str, list[int]]) -> str:
    """The state read's bytes and the commands a host was sent: the controller's, and a node's (their median)."""
    nodes = [v for k, v in sent.items() if k.removeprefix("@fake/").startswith("gpu")]
    ctl = sent.get("@fake/ctl", [0, 0, 0])
    node = [statistics.median(v[i] for v in nodes) for i in range(3)] if nodes else [0, 0, 0]
    return (f"  {'state read, command / output bytes: controller':<52} {ctl[1]:7.0f} B {ctl[2]:7.0f} B\n"
            f"  {'state read, command / output bytes: a node (median)':<52} {node[1]:7.0f} B {node[2]:7.0f} B\n"
            f"  {'commands sent: controller, a node (median)':<52} {ctl[0]:7.0f}   {node[0]:7.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1000, help="hosts in all: a controller, a login host, nodes")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--release", default="24.11", choices=["22.05", "24.11"],
                        help="the Slurm release; 22.05 authenticates with munge, 24.11 with auth/slurm")
    parser.add_argument("--admission", action="store_true",
                        help="the admission gate on every node, each node admitted and its hold's note kept")
    args = parser.parse_args()
    count = args.hosts - 2
    with tempfile.TemporaryDirectory(prefix="clusterforge-sim-") as tmp:
        directory = Path(tmp) / "sim"
        auth = "munge" if args.release == "22.05" else "slurm"
        extra = f"{ADMISSION}, {nodes_entry(count)}" if args.admission else nodes_entry(count)
        cluster = SimCluster(directory, version=args.release, auth=auth, extra=extra)
        started = time.monotonic()
        first = cluster.deploy("--limit", "@fake/ctl", "--limit", "@fake/login1", "--limit", "@fake/gpu0001",
                               timeout=1800)
        if first.returncode != 0:
            sys.exit(first.output[-3000:])
        print(f"  first deploy of ctl, login1, gpu0001 ({args.hosts}-host inventory): "
              f"{time.monotonic() - started:.1f} s", file=sys.stderr)
        seed = Sim.load(directory / "gpu0001.json")
        seed.events, seed.commands = [], 0
        for index in range(2, count + 1):
            clone(seed, f"gpu{index:04d}").save(directory / f"gpu{index:04d}.json")
        if args.admission:
            controller = Sim.load(directory / "ctl.json")
            admitted_everywhere(controller, [f"gpu{index:04d}" for index in range(1, count + 1)])
            controller.save(directory / "ctl.json")
        for path in directory.glob("*.json"):  # what the recording run does, alone
            sim = Sim.load(path)
            sim.events, sim.commands = [], 0
            sim.save(path)
        (directory / "replay.py").write_text(REPLAY)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "BAO_"))}
        env.update(PYINFRA_PROGRESS="off", CLUSTERFORGE_SIM_DIR=str(directory), CLUSTERFORGE_SIM_RELEASE=args.release,
                   CLUSTERFORGE_SIM_ANSWERS=str(directory / "answers.json"),
                   CLUSTERFORGE_SIM_SPENT=str(directory / "spent"), CLUSTERFORGE_SIM_SENT=str(directory / "sent"),
                   PYTHONPATH=os.pathsep.join([str(directory), str(TESTS), str(TESTS / "deploy")]))
        deploy = [PYINFRA, "-y", str(directory / "replay.py"), str(REPO / "deploy" / "cluster.py")]
        floor = [PYINFRA, "-y", str(directory / "replay.py"), "exec", "--", "true"]
        _, _, output = timed(deploy, env, directory)  # records the answers
        sent = json.loads((directory / "sent").read_text())
        if output.split("--> Results:", 1)[1].split("Grand total", 1)[0].count("\n") > 2:
            sys.exit(f"the no-op run on the copied nodes changed something:\n{output[-3000:]}")
        changed = [p.stem for p in directory.glob("gpu*.json") if Sim.load(p).events]
        if changed:
            sys.exit(f"the no-op run changed {changed[:5]}")
        figures: dict[str, list[float]] = {"noop wall": [], "noop cpu": [], "floor wall": [], "floor cpu": []}
        for _ in range(args.repeat):
            for name, command in (("noop", deploy), ("floor", floor)):
                wall, cpu, _ = timed(command, env, directory)
                replaying = float((directory / "spent").read_text())
                figures[f"{name} wall"].append(wall)
                figures[f"{name} cpu"].append(cpu - replaying)
        figure = {k: (min if "cpu" in k else statistics.median)(v) for k, v in figures.items()}
    hosts = args.hosts
    # Each no-op against the floor run right after it: the machine's load moves between pairs more than within one.
    added = sorted((n - f) / hosts * 1000 for n, f in zip(figures["noop cpu"], figures["floor cpu"], strict=True))
    print(f"No-op on {hosts} simulated hosts, Slurm {args.release} ({auth}), admission "
          f"{'on' if args.admission else 'off'}, {os.cpu_count()} CPUs, {args.repeat} runs each: wall the median, "
          "CPU the best")
    print(f"  {'no-op deploy: wall, controller CPU':<52} {figure['noop wall']:7.2f} s {figure['noop cpu']:7.2f} s")
    print(f"  {'pyinfra exec -- true: wall, controller CPU':<52} {figure['floor wall']:7.2f} s "
          f"{figure['floor cpu']:7.2f} s")
    print(f"  {'no-op / floor (wall)':<52} {figure['noop wall'] / figure['floor wall']:7.2f} x")
    print(f"  {'controller CPU per host: no-op, floor':<52} {figure['noop cpu'] / hosts * 1000:7.1f} ms "
          f"{figure['floor cpu'] / hosts * 1000:6.1f} ms")
    print(f"  {'clusterforge per host (no-op CPU less the floor)':<52} {statistics.median(added):7.1f} ms "
          f"(pairs: {added[0]:.1f} to {added[-1]:.1f})")
    print(state_reads(sent))
    shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
