"""Deploy figures on the local Vagrant test cluster; prints them, asserts nothing (run as root).

    python benchmarks/deploy_figures.py [--dist bookworm|trixie] [--repeat 5] [--grow 12,64]

Brings the test cluster up from nothing (testbed/up.sh) and measures, on the same machines:

* the first deploy to bare machines (its time depends on how warm the apt-cacher-ng cache is; the figure says), and
  where its time went: per step, per host busy and waiting, the slowest operations (engine/profile.py); with no
  build kept (a temporary XDG_CACHE_HOME), then again on new bare machines with the builds the first one kept
  (roles/build_cache.py), and once more on new bare machines with nothing kept but Enroot given as a package, as a
  site that uses NVIDIA's release .deb deploys (the first deploy's `make deb` stands in for it: NVIDIA's is made by
  the same target), so that only Pyxis, which has no package, is built (--no-kept skips both);
* the no-op re-run against the floor, a bare ``pyinfra ... exec -- true`` on the same hosts, interleaved so both see
  the same machine load (median of --repeat each), their ratio, and the remote commands each host gets in a no-op
  run (counted from pyinfra's -vv echo of every command, facts included);
* adding a node: its ``vagrant up``, and the deploy that makes it join;
* then the cluster grown to each size of --grow, in hosts (more compute containers): the deploy that makes the new
  machines nodes, and the no-op and floor again, with the ratio of the grown no-op to the first one. Up to
  VAGRANT_UP_MAX machines the new ones are bare machines from ``vagrant up``; beyond, they are clones of a deployed
  node (testbed/grow.sh), because vagrant-lxc takes minutes a machine once dozens are defined.

Tears everything down at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from clusterforge.engine.profile import summary

REPO = Path(__file__).resolve().parents[1]
STATE = Path(os.environ.get("CLUSTERFORGE_TESTBED_STATE", "/var/lib/clusterforge-testbed"))
CACHE = Path(os.environ.get("CLUSTERFORGE_TESTBED_CACHE", "/var/cache/clusterforge"))
PYINFRA = str(REPO / ".venv" / "bin" / "pyinfra")
CLUSTERFORGE = str(REPO / ".venv" / "bin" / "clusterforge")
NODES = 'Nodes("gpu[01-02]", address="10.77.0.[11-12]"'
VAGRANT_UP_MAX = 16


def run(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    return timed(command, env)[::2]


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall time, the CPU time of the command's process (user and system, its children included), its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run(command, check=False, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return seconds, cpu, result.stdout + result.stderr


def grown(inventory: Path, directory: Path, nodes: int) -> Path:
    path = directory / f"vagrant-{nodes}.py"
    path.write_text(inventory.read_text().replace(
        NODES, f'Nodes("gpu[01-{nodes:02d}]", address="10.77.0.[11-{10 + nodes}]"'))
    return path


class Pair(NamedTuple):
    no_op: float      # wall, median
    floor: float
    no_op_cpu: float  # the pyinfra process's CPU time, median
    floor_cpu: float
    commands: dict[str, int]


def no_op_and_floor(inventory: Path, env: dict[str, str], repeat: int) -> Pair:
    deploy = [PYINFRA, "-y", str(inventory), "deploy/cluster.py"]
    floor = [PYINFRA, "-y", str(inventory), "exec", "--", "true"]
    deploys, floors = [], []
    for _ in range(repeat):  # interleaved: both see the same load
        deploys.append(timed(deploy, env)[:2])
        floors.append(timed(floor, env)[:2])
    _, output = run([*deploy[:2], "-vv", *deploy[2:]], env)
    commands: dict[str, int] = {}
    for match in re.finditer(r"^\s*\[([^\]]+)\]\s+>>> ", output, re.M):
        commands[match.group(1)] = commands.get(match.group(1), 0) + 1
    return Pair(statistics.median(d[0] for d in deploys), statistics.median(f[0] for f in floors),
                statistics.median(d[1] for d in deploys), statistics.median(f[1] for f in floors), commands)


def cpu_figures(figure: Callable[..., None], hosts: int, pair: Pair) -> None:
    """The deploy machine's own work: the pyinfra process's CPU time per host, and what the no-op adds to the
    floor's (the test machines' own work, on the same cores, is not in it)."""
    figure(f"controller CPU per host, no-op, {hosts} hosts", pair.no_op_cpu / hosts * 1000, "ms")
    figure(f"controller CPU per host, exec -- true, {hosts} hosts", pair.floor_cpu / hosts * 1000, "ms")
    figure(f"clusterforge CPU per host (no-op less floor), {hosts} hosts",
           (pair.no_op_cpu - pair.floor_cpu) / hosts * 1000, "ms")


class CpuSampler(threading.Thread):
    """This machine's CPU time every half second (/proc/stat): every test machine runs on these cores, so what the
    deploy leaves idle is what overlapping its work could still use."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float]] = []  # (monotonic time, busy core-seconds since boot)
        self.stop = threading.Event()

    @staticmethod
    def busy() -> float:
        fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle, iowait
        return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((time.monotonic(), self.busy()))
            self.stop.wait(0.5)
        self.samples.append((time.monotonic(), self.busy()))

    def between(self, start: float, end: float) -> float:
        """Busy core-seconds between two monotonic times (interpolated between samples)."""
        def at(moment: float) -> float:
            points = self.samples
            for (t0, b0), (t1, b1) in zip(points, points[1:]):
                if t0 <= moment <= t1:
                    return b0 + (b1 - b0) * ((moment - t0) / (t1 - t0) if t1 > t0 else 0)
            return points[0][1] if moment < points[0][0] else points[-1][1]
        return at(end) - at(start)


def cpu_use(sampler: CpuSampler, started: float, profile: dict, top: int = 6) -> list[str]:
    """The machine's CPU during the deploy, and during its longest steps: busy core-seconds of those the cores had."""
    cores = os.cpu_count() or 1

    def share(start: float, end: float) -> str:
        busy, capacity = sampler.between(started + start, started + end), (end - start) * cores
        return f"busy {busy:6.1f} of {capacity:6.1f} core-s ({100 * busy / capacity if capacity else 0:3.0f} %)"

    lines = [f"this machine's {cores} cores, which every test machine shares (/proc/stat)",
             f"  the whole deploy                               {share(0, profile['ended'])}"]
    steps: dict[str, list[tuple[float, float]]] = {}
    for op in profile["operations"]:
        steps.setdefault(op["name"].split(" | ", 1)[0], []).append((op["start"], op["end"]))
    longest = sorted(steps.items(), key=lambda item: -sum(e - s for s, e in item[1]))[:top]
    for name, spans in longest:
        busy = sum(sampler.between(started + s, started + e) for s, e in spans)
        capacity = sum(e - s for s, e in spans) * cores
        lines.append(f"  {name:<45}  busy {busy:6.1f} of {capacity:6.1f} core-s "
                     f"({100 * busy / capacity if capacity else 0:3.0f} %)")
    return lines


def bare_machines_again(env: dict[str, str]) -> None:
    """The test cluster torn down and brought up again: new bare machines, a new OpenBao with a new token."""
    run(["bash", "testbed/down.sh"], env)
    run(["bash", "testbed/up.sh"], env)
    env["VAULT_TOKEN"] = (STATE / "vault-token").read_text().strip()


def first_deploy(inventory: Path, env: dict[str, str]) -> tuple[float, list[str]]:
    """The deploy's time, and where it went (engine/profile.py), with this machine's CPU use."""
    with tempfile.TemporaryDirectory() as scratch:
        recorded = Path(scratch) / "profile.json"
        sampler = CpuSampler()
        sampler.start()
        started = time.monotonic()
        try:
            seconds = run([PYINFRA, "-y", str(inventory), "deploy/cluster.py"],
                          dict(env, CLUSTERFORGE_PROFILE=str(recorded)))[0]
        finally:
            sampler.stop.set()
            sampler.join()
        profile = json.loads(recorded.read_text())
        return seconds, [*summary(profile), "", *cpu_use(sampler, started, profile)]


ENROOT_SOURCE = re.compile(
    r'enroot=Enroot\(version="([^"]+)", source=Artifact\(\s*source="[^"]+",\s*sha256="[0-9a-f]+"\)\)')


def enroot_as_package(inventory: Path, kept: Path, directory: Path) -> Path:
    """A copy of the inventory whose Enroot is given as a package (as NVIDIA releases it: the same `make deb`), the
    one the first deploy built standing in for NVIDIA's release .deb, which this machine cannot download."""
    built = next((kept / "clusterforge" / "builds").glob("enroot-*/product")).read_bytes()
    package = directory / "enroot_amd64.deb"
    package.write_bytes(built)
    digest = hashlib.sha256(built).hexdigest()
    text, found = ENROOT_SOURCE.subn(
        lambda m: f'enroot=Enroot(version="{m.group(1)}", package=Artifact(source="{package}", sha256="{digest}"))',
        inventory.read_text())
    if found != 1:
        sys.exit(f"{inventory}: no Enroot(version=..., source=Artifact(...)) to give as a package")
    path = directory / "vagrant-enroot-package.py"
    path.write_text(text)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist", default="bookworm", choices=["bookworm", "trixie"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--grow", default="12", help="hosts in the grown clusters, e.g. 12,64 (0: do not grow)")
    parser.add_argument("--no-kept", dest="kept", action="store_false",
                        help="skip the second and third first deploys, on new bare machines: with the builds kept, "
                             "and with Enroot given as a package and Pyxis built")
    parser.add_argument("--monitoring", action="store_true",
                        help="deploy the test inventory's monitoring and slurmrestd too (left out by default: the "
                             "figures compare with the Ansible peer's, which has neither)")
    args = parser.parse_args()
    inventory = REPO / "inventories" / "vagrant.py"
    env = dict(os.environ, CLUSTERFORGE_TESTBED_DIST=args.dist, CLUSTERFORGE_INVENTORY=str(inventory),
               CLUSTERFORGE_TESTBED_MONITORING="on" if args.monitoring else "off")
    # The builds kept by the deploy (roles/build_cache.py) start empty, so that the first deploy builds.
    kept_builds = tempfile.TemporaryDirectory()
    env["XDG_CACHE_HOME"] = kept_builds.name
    # The grown clusters are edited copies of the inventory elsewhere: their artifact directory stays the repo's.
    env.setdefault("CLUSTERFORGE_ARTIFACTS", str(REPO.parent / "shared" / "artifacts"))
    cache_warm = any((CACHE / "apt-cacher-ng").glob("debrep/pool/main/s/slurm-wlm/*"))
    figures: list[tuple[str, str]] = []
    hosts = len(subprocess.run([CLUSTERFORGE, "hosts", str(inventory)], cwd=REPO,
                               env=env, capture_output=True, text=True, check=True).stdout.splitlines())
    base_nodes = 2

    def figure(label: str, value: float, unit: str = "s") -> None:
        figures.append((label, f"{value:7.1f} {unit}" if unit in ("s", "ms") else f"{value:7.2f} {unit}"))
        print(f"  {label:<58} {figures[-1][1]}", file=sys.stderr, flush=True)  # as it comes, in case of a kill

    subprocess.run(["bash", "testbed/down.sh"], cwd=REPO, env=env, capture_output=True)
    failed = None
    profile: list[str] = []
    try:
        figure(f"testbed up ({hosts} machines)", run(["bash", "testbed/up.sh"], env)[0])
        env.update(VAULT_ADDR="http://127.0.0.1:8210", VAULT_TOKEN=(STATE / "vault-token").read_text().strip())
        apt = f"apt cache {'warm' if cache_warm else 'cold'}"
        first, profile = first_deploy(inventory, env)
        figure(f"first deploy, {hosts} bare machines, builds made ({apt})", first)
        print("\n".join(["  where the first deploy's time went:", *(f"    {line}" for line in profile)]),
              file=sys.stderr, flush=True)
        if args.kept:
            bare_machines_again(env)
            again, kept_profile = first_deploy(inventory, env)
            figure(f"first deploy, {hosts} bare machines, builds kept ({apt})", again)
            print("\n".join(["  with the builds kept:", *(f"    {line}" for line in kept_profile)]),
                  file=sys.stderr, flush=True)
            # As a site that gives Enroot as NVIDIA's package deploys: nothing kept, Pyxis (no package) built.
            with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory() as empty:
                given = enroot_as_package(inventory, Path(kept_builds.name), Path(scratch))
                bare_machines_again(env)
                packaged, packaged_profile = first_deploy(given, dict(env, XDG_CACHE_HOME=empty))
            figure(f"first deploy, {hosts} bare machines, Enroot's package, Pyxis built ({apt})", packaged)
            print("\n".join(["  with Enroot given as a package, Pyxis built:",
                              *(f"    {line}" for line in packaged_profile)]), file=sys.stderr, flush=True)
        first_pair = no_op_and_floor(inventory, env, args.repeat)
        no_op = first_pair.no_op
        figure(f"no-op re-run, {hosts} hosts (median of {args.repeat})", no_op)
        figure(f"pyinfra exec -- true, same hosts (median of {args.repeat})", first_pair.floor)
        figure("no-op / floor", no_op / first_pair.floor, "x")
        cpu_figures(figure, hosts, first_pair)
        figures.append(("remote commands per host, no-op run",
                        ", ".join(f"{h} {n}" for h, n in first_pair.commands.items())))
        with tempfile.TemporaryDirectory() as tmp:
            three = grown(inventory, Path(tmp), base_nodes + 1)
            env["CLUSTERFORGE_INVENTORY"] = str(three)
            figure("add a node: vagrant up gpu03", run(["bash", "testbed/up.sh", "gpu03"], env)[0])
            add = run([PYINFRA, "-y", str(three), "deploy/cluster.py"], env)[0]
            figure("add a node: deploy until it is idle", add)
            # Its machines are deployed in parallel, so the first deploy is what one bare node's first deploy costs.
            figure("add-node deploy / first deploy", add / first, "x")
            for size in (int(g) for g in args.grow.split(",") if int(g) > hosts + 1):
                bigger = grown(inventory, Path(tmp), size - (hosts - base_nodes))
                env["CLUSTERFORGE_INVENTORY"] = str(bigger)
                if size <= VAGRANT_UP_MAX:
                    figure(f"grow to {size} hosts: vagrant up", run(["bash", "testbed/up.sh"], env)[0])
                    joined = "deploy"
                else:
                    figure(f"grow to {size} hosts: clone gpu01 (testbed/grow.sh)",
                           run(["bash", "testbed/grow.sh", "gpu01"], env)[0])
                    joined = "deploy, the clones joining"
                figure(f"grow to {size} hosts: {joined}", run([PYINFRA, "-y", str(bigger), "deploy/cluster.py"],
                                                           env)[0])
                big = no_op_and_floor(bigger, env, args.repeat)
                figure(f"no-op re-run, {size} hosts (median of {args.repeat})", big.no_op)
                figure(f"pyinfra exec -- true, {size} hosts (median of {args.repeat})", big.floor)
                figure(f"no-op {size} hosts / no-op {hosts} hosts", big.no_op / no_op, "x")
                cpu_figures(figure, size, big)
    except (SystemExit, KeyboardInterrupt) as stop:  # a step failed, or Ctrl-C: the figures so far, then why
        failed = stop
    finally:  # down with the first inventory: Vagrant is slow to go through dozens of machines it never made
        env["CLUSTERFORGE_INVENTORY"] = str(inventory)
        subprocess.run(["bash", "testbed/down.sh"], cwd=REPO, env=env, capture_output=True)
    kept_builds.cleanup()
    print(f"Deploy figures, Debian {args.dist}, {os.cpu_count()} CPUs, monitoring {'on' if args.monitoring else 'off'}")
    for label, value in figures:
        print(f"  {label:<58} {value}")
    if profile:
        print("Where the first deploy's time went (CLUSTERFORGE_PROFILE, engine/profile.py)")
        print("\n".join(f"  {line}" for line in profile))
    if failed is not None:
        raise failed


if __name__ == "__main__":
    main()
