"""Day two at 4, 16 and 64 compute machines (issue 50): each operation's time at each size, its cost per added node (a
least-squares line over the sizes) and the deploy machine's peak memory; prints figures, asserts nothing (run as
root, from a clone).

    python benchmarks/scale.py [--dist bookworm|trixie] [--sizes 4,16,64] [--repeat 3] [--job-seconds 60] [--reuse]
                               [--configless] [--skip roll,accept,scrapes]

Brings the test cluster up (testbed/up.sh: a controller, a login host and two compute machines) with the admission
gate on, as a site's starter inventory has it, and deploys it: the gate tests both nodes and releases them. Then,
for each size, the cluster is grown to that many compute machines by cloning a deployed node (testbed/grow.sh; each
clone's slurmd stopped, so that the deploy finds a new node, as a machine racked and installed is) and measured:

* growing: the deploy that makes the new machines nodes, and the time from its end until the gate has admitted them
  all (the testbed's stand-in tools answer in about a second where the real ones take minutes: the figure is the
  gate's own work, its passes and Slurm's jobs, not the tests');
* the no-op deploy and its floor, ``pyinfra INVENTORY exec -- true``, interleaved (medians of --repeat; the remote
  commands a host gets in a no-op run);
* `clusterforge plan` of one partition change (the partition's MaxTime);
* `clusterforge check`, and `check --smoke` (a job on every node);
* `clusterforge roll --reboot --batch 8` over every compute node while a job array of alice's runs on them (two
  jobs a node, --job-seconds each, all running when the roll starts): the time, the most nodes out of service at
  once (sinfo, every second), and whether every job ended COMPLETED;
* `clusterforge accept` over every compute node with the last one slow (its HCAs at 190 Gb/s: every multi-node test
  with it is slow): the time, its rounds and the nodes it names;
* the Slurm exporter's scrape from this machine (median of 5), and Prometheus's scrape of each target (its own
  scrape_duration_seconds: the slowest and the sum);
* with --configless, the deploy of that partition change, and of its undoing, without configless Slurm and with it
  (Cluster(configless=True): one upload to the controller and a reconfigure, where without it every node gets the
  files).

Each command's peak memory on this machine is its process tree's largest resident set (wait4's ru_maxrss). The
machines all share this machine's cores: the figures are upper bounds of what separate machines would take.

--reuse measures the cluster already up and deployed (testbed/up.sh, a deploy), grows it, and at the end deploys the
test inventory again (the grown nodes leave Slurm, admission is off again) and removes the clones, so that what ran
before finds the cluster as it was: the end-to-end tier runs it so (tests/e2e/test_scale.py), small. Without it, the
cluster is torn down at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from deploy_figures import CLUSTERFORGE, PYINFRA, REPO, STATE, grown, no_op_and_floor

from clusterforge.model.settings import PROMETHEUS_PORT, SLURM_EXPORTER_PORT

INVENTORY = REPO / "inventories" / "vagrant.py"
RESULTS = STATE / "home" / ".clusterforge-testbed" / "accept.json"  # the stand-ins' figures, on the shared /home
CTL, LOGIN, BASE_NODES = "10.77.0.10", "10.77.0.9", 2
SLOW_HCAS = {hca: 190 for hca in ("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9")}
OUT_STATES = ("drain", "down", "reboot", "maint", "fail")


@dataclass(frozen=True)
class Ran:
    seconds: float
    cpu: float  # user and system time of the command's process tree on this machine
    peak_mib: float  # the largest resident set of the command's process tree
    returncode: int
    output: str


def measured(command: Sequence[str], env: dict[str, str], ok: Sequence[int] = (0,), timeout: float = 3600) -> Ran:
    """The command's wall time and peak memory; stops the benchmark, with its output, if it exits otherwise."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.monotonic()
        process = subprocess.Popen(list(command), cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        deadline = start + timeout
        while (waited := os.wait4(process.pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                process.kill()
            time.sleep(0.05)
        seconds = time.monotonic() - start
        process.returncode = os.waitstatus_to_exitcode(waited[1])
        out.seek(0)
        output = out.read()
    if process.returncode not in ok:
        sys.exit(f"{' '.join(command)} exited {process.returncode}:\n{output[-4000:]}")
    used = waited[2]
    return Ran(seconds, used.ru_utime + used.ru_stime, used.ru_maxrss / 1024, process.returncode, output)


def on(machine: str, command: str, env: dict[str, str], timeout: float = 600) -> str:
    """A command as root on a test machine (ctl, or gpuNN at 10.77.0.(10+NN)), as testbed/ssh.sh runs it, without
    asking clusterforge for the address each time (the roll's watcher asks every second)."""
    address = CTL if machine == "ctl" else f"10.77.0.{10 + int(machine.removeprefix('gpu'))}"
    done = subprocess.run(["ssh", "-i", str(STATE / "id_ed25519"), "-o", "StrictHostKeyChecking=no", "-o",
                           "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "BatchMode=yes",
                           f"vagrant@{address}", f"sudo -n sh -c {shlex.quote(command)}"],
                          env=env, text=True, capture_output=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"{machine}: {command} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def testbed_env(dist: str) -> dict[str, str]:
    env = dict(os.environ, CLUSTERFORGE_TESTBED_DIST=dist, CLUSTERFORGE_INVENTORY=str(INVENTORY))
    env.setdefault("CLUSTERFORGE_ARTIFACTS", str(REPO.parent / "shared" / "artifacts"))
    exports = subprocess.run(["bash", "testbed/env.sh"], cwd=REPO, env=env, text=True, capture_output=True,
                             check=True).stdout
    return dict(env, **dict(re.findall(r"(\w+)=(\S+)", exports)))


def holds(env: dict[str, str]) -> list[str]:
    """The admission gate's holds of new nodes (slurm/reservations.py's cf-gate-new-<node>)."""
    return re.findall(r"ReservationName=cf-gate-new-(\S+)", on("ctl", "scontrol -o show reservation", env))


def admitted_after(env: dict[str, str], nodes: int, timeout: float = 3600) -> float:
    """Seconds until the gate holds no new node (each of ``nodes`` then admitted, or drained and named)."""
    start = time.monotonic()
    while held := holds(env):
        if time.monotonic() - start > timeout:
            sys.exit(f"the gate still holds {len(held)} of {nodes} new nodes after {timeout:g} s: {held}")
        time.sleep(2)
    drained = on("ctl", "sinfo --noheader --Node --states=drain --format='%N %E'", env).strip()
    if drained:
        sys.exit(f"the gate drained nodes it should have admitted:\n{drained}")
    return time.monotonic() - start


def grow(size: int, directory: Path, env: dict[str, str]) -> Path:
    """The inventory of ``size`` compute machines, the missing ones cloned (testbed/grow.sh) with slurmd stopped: new
    nodes to the deploy and the gate."""
    inventory = grown(INVENTORY, directory, size)
    env["CLUSTERFORGE_INVENTORY"] = str(inventory)
    before = set(machines(env))
    measured(["bash", "testbed/grow.sh", "gpu01"], env)
    added = sorted(set(machines(env)) - before)
    for name in added:
        on(name, "systemctl stop slurmd", env)
    # Machines racked new: no record of an earlier admission of their names (an earlier run on a cluster kept up).
    on("ctl", "rm -f " + " ".join(f"/var/lib/clusterforge/gate/admitted/{name}" for name in added), env)
    return inventory


def machines(env: dict[str, str]) -> list[str]:
    listed = subprocess.run(["lxc-ls", "--running"], text=True, capture_output=True, check=True).stdout.split()
    return [name.removeprefix("cf-") for name in listed if re.fullmatch(r"cf-gpu\d+", name)]


def partition_changed(inventory: Path) -> Path:
    path = inventory.with_name(inventory.stem + "-maxtime.py")
    text = inventory.read_text()
    assert 'max_time="01:00:00"' in text, "the test inventory's partition MaxTime moved: edit scale.py"
    path.write_text(text.replace('max_time="01:00:00"', 'max_time="02:00:00"'))
    return path


def most_out(env: dict[str, str], stop: threading.Event, seen: list[int]) -> None:
    """The compute nodes out of service (drained, rebooting, down) every second, until ``stop``."""
    while not stop.is_set():
        states = on("ctl", "sinfo --noheader --Node --format='%N %T' | sort -u", env).split("\n")
        seen.append(sum(any(s in line.lower() for s in OUT_STATES) for line in states if line.strip()))
        stop.wait(1)


def rolled(inventory: Path, size: int, env: dict[str, str], job_seconds: int) -> list[tuple[str, str]]:
    """roll --reboot --batch 8 while an array of jobs, two a node, runs: its time, the most nodes out at once, and
    how the jobs ended."""
    array = on("ctl", f"su alice -c 'sbatch --parsable --array=1-{2 * size} --output=/dev/null "
                      f"--wrap=\"sleep {job_seconds}\"'", env).strip()
    # Every job of the array running before the roll starts (two a node, a core each): the roll waits for them.
    deadline = time.monotonic() + 300
    while on("ctl", f"squeue --noheader --jobs={array} --states=pending --format=%i", env).strip():
        if time.monotonic() > deadline:
            sys.exit(f"the array {array} still has pending jobs after 300 s")
        time.sleep(1)
    stop, seen = threading.Event(), []
    watcher = threading.Thread(target=most_out, args=(env, stop, seen), daemon=True)
    watcher.start()
    try:
        roll = measured([CLUSTERFORGE, "roll", "--reboot", "--batch", "8", str(inventory)], env, timeout=7200)
    finally:
        stop.set()
        watcher.join()
    while on("ctl", f"squeue --noheader --jobs={array} --format=%i", env).strip():
        time.sleep(2)
    ended = on("ctl", f"sacct --noheader --allocations --jobs={array} --format=State%20", env).split()
    completed = ended.count("COMPLETED")
    return [(f"roll --reboot --batch 8, {size} nodes", seconds(roll.seconds)),
            (f"  most nodes out at once, {size} nodes", str(max(seen, default=0))),
            (f"  jobs of the array COMPLETED, {size} nodes", f"{completed}/{len(ended)}"),
            (f"  peak memory, roll, {size} nodes", mib(roll.peak_mib))]


def accepted(inventory: Path, size: int, env: dict[str, str]) -> list[tuple[str, str]]:
    slow = f"gpu{size:02d}"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({slow: {"hca": SLOW_HCAS}}))
    try:
        run = measured([CLUSTERFORGE, "accept", "--json", str(inventory)], env, ok=(0, 1), timeout=7200)
    finally:
        RESULTS.write_text("{}")
    # The document is stdout's last part; accept's progress (stderr, merged here) may hold braces of its own.
    start = re.search(r'^\{\s*"', run.output, re.M)
    assert start is not None, f"accept --json printed no document:\n{run.output[-3000:]}"
    report = json.loads(run.output[start.start():])
    named = sorted({f["node"] for f in report["findings"]})
    on("ctl", f"scontrol update NodeName={slow} State=RESUME", env)
    idle(slow, env)
    # Its HCAs mended: a passing run is its last record, or the next size's check would name it (records.py).
    measured([CLUSTERFORGE, "accept", "--limit", slow, str(inventory)], env)
    return [(f"accept, {size} nodes, {slow} slow", seconds(run.seconds)),
            (f"  rounds, {size} nodes", str(len(report["rounds"]) if isinstance(report["rounds"], list)
                                            else report["rounds"])),
            (f"  nodes named, {size} nodes", ",".join(named) or "none")]


def partition_change_applied(inventory: Path, size: int, env: dict[str, str]) -> list[tuple[str, str]]:
    """The deploy of one partition change (a MaxTime) and of its undoing, without configless and with it (the deploy
    that turns configless on or off, which restarts every Slurm daemon, not timed); configless off again after."""
    changed = partition_changed(inventory)
    rows = []
    for mode in ("off", "on"):
        in_mode = dict(env, CLUSTERFORGE_TESTBED_CONFIGLESS=mode)
        measured([PYINFRA, "-y", str(inventory), "deploy/cluster.py"], in_mode)
        change = measured([PYINFRA, "-y", str(changed), "deploy/cluster.py"], in_mode)
        undo = measured([PYINFRA, "-y", str(inventory), "deploy/cluster.py"], in_mode)
        rows += [(f"deploy of one partition change, configless {mode}, {size} nodes", seconds(change.seconds)),
                 (f"  and of its undoing, configless {mode}, {size} nodes", seconds(undo.seconds))]
    measured([PYINFRA, "-y", str(inventory), "deploy/cluster.py"], dict(env, CLUSTERFORGE_TESTBED_CONFIGLESS="off"))
    return rows


def idle(node: str, env: dict[str, str], timeout: float = 300) -> None:
    """Until slurmctld hears the node idle (a resumed node answers its next ping: idle* until then)."""
    deadline = time.monotonic() + timeout
    while (state := on("ctl", f"sinfo --noheader --Node --nodes={node} --format=%T", env).strip()) != "idle":
        if time.monotonic() > deadline:
            sys.exit(f"{node} is {state}, not idle, {timeout:g} s after its resume")
        time.sleep(2)


def scraped(size: int) -> list[tuple[str, str]]:
    times = []
    for _ in range(5):
        start = time.monotonic()
        with urllib.request.urlopen(f"http://{CTL}:{SLURM_EXPORTER_PORT}/metrics", timeout=60) as answer:
            body = answer.read()
        times.append(time.monotonic() - start)
    query = urllib.parse.quote("scrape_duration_seconds")
    with urllib.request.urlopen(f"http://{LOGIN}:{PROMETHEUS_PORT}/api/v1/query?query={query}", timeout=60) as answer:
        targets = [float(r["value"][1]) for r in json.load(answer)["data"]["result"]]
    return [(f"Slurm exporter scrape, {size} nodes (median of 5)", seconds(statistics.median(times))),
            (f"  exposition, {size} nodes", f"{len(body) / 1024:.0f} KiB"),
            (f"Prometheus scrapes, {size} nodes: targets, slowest, sum",
             f"{len(targets)}, {max(targets, default=0):.3f} s, {sum(targets):.3f} s")]


def seconds(value: float) -> str:
    return f"{value:.1f} s"


def mib(value: float) -> str:
    return f"{value:.0f} MiB"


def measure(size: int, inventory: Path, env: dict[str, str], repeat: int, job_seconds: int, configless: bool,
            skip: set[str], say: Callable[[str, str], None]) -> None:
    pair = no_op_and_floor(inventory, env, repeat)
    say(f"no-op deploy, {size} nodes (median of {repeat})", seconds(pair.no_op))
    say(f"  pyinfra exec -- true, {size} nodes", seconds(pair.floor))
    say(f"  no-op / floor, {size} nodes", f"{pair.no_op / pair.floor:.2f} x")
    per_host = sorted(set(pair.commands.values()))
    say(f"  remote commands a host, no-op, {size} nodes", "-".join(str(n) for n in (per_host[0], per_host[-1]))
        if per_host else "?")
    say(f"  peak memory, no-op deploy, {size} nodes",
        mib(measured([PYINFRA, "-y", str(inventory), "deploy/cluster.py"], env).peak_mib))
    changed = partition_changed(inventory)
    plans = [measured([CLUSTERFORGE, "plan", str(changed)], env) for _ in range(repeat)]
    assert all("Plan: nothing to do" not in p.output for p in plans), plans[0].output[-2000:]
    say(f"plan, one partition change, {size} nodes (median of {repeat})",
        seconds(statistics.median(p.seconds for p in plans)))
    say(f"  plan's CPU on this machine, {size} nodes", seconds(statistics.median(p.cpu for p in plans)))
    say(f"  peak memory, plan, {size} nodes", mib(max(p.peak_mib for p in plans)))
    checks = [measured([CLUSTERFORGE, "check", str(inventory)], env, ok=(0, 1)) for _ in range(repeat)]
    say(f"check, {size} nodes (median of {repeat})", seconds(statistics.median(c.seconds for c in checks)))
    say(f"  check's CPU on this machine, {size} nodes", seconds(statistics.median(c.cpu for c in checks)))
    say(f"  check's exit, {size} nodes", ",".join(str(c.returncode) for c in checks))
    for found in {c.output for c in checks if c.returncode}:  # what it found, to read beside the figures
        print(found[-3000:], file=sys.stderr, flush=True)
    smoke = measured([CLUSTERFORGE, "check", "--smoke", str(inventory)], env, ok=(0, 1))
    say(f"check --smoke, {size} nodes (exit {smoke.returncode})", seconds(smoke.seconds))
    measurings = {"roll": lambda: rolled(inventory, size, env, job_seconds),
                  "accept": lambda: accepted(inventory, size, env),
                  "scrapes": lambda: scraped(size)}
    if configless:
        measurings["configless"] = lambda: partition_change_applied(inventory, size, env)
    for name, measuring in measurings.items():
        if name in skip:
            continue
        for label, value in measuring():  # each said as it comes: a later one that fails keeps the earlier
            say(label, value)


def per_node(figures: dict[str, dict[int, float]]) -> list[tuple[str, str]]:
    """Each timed operation's cost of an added node: the slope of a least-squares line over the sizes."""
    lines = []
    for label, by_size in figures.items():
        if len(by_size) < 2:
            continue
        sizes, values = zip(*sorted(by_size.items()))
        slope = statistics.linear_regression(sizes, values).slope
        lines.append((f"{label}: per added node", f"{slope * 1000:.0f} ms"))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist", default="bookworm", choices=["bookworm", "trixie"])
    parser.add_argument("--sizes", default="4,16,64", help="compute machines, ascending, each more than 2")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reuse", action="store_true", help="the cluster already up and deployed, left as it was")
    parser.add_argument("--job-seconds", type=int, default=60, help="each job of the array the roll waits for")
    parser.add_argument("--skip", default="", help="measurings left out, comma-separated: roll, accept, scrapes")
    parser.add_argument("--configless", action="store_true",
                        help="also a partition change's deploy without and with configless Slurm")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if sizes != sorted(set(sizes)) or sizes[0] <= BASE_NODES:
        parser.error(f"--sizes: ascending, each more than the test cluster's {BASE_NODES} compute machines")
    figures: list[tuple[str, str]] = []
    timed: dict[str, dict[int, float]] = {}

    def say(label: str, value: str) -> None:
        figures.append((label, value))
        print(f"  {label:<64}  {value}", file=sys.stderr, flush=True)  # as it comes, in case of a kill
        if (size := re.search(r", (\d+) nodes", label)) and re.fullmatch(r"[\d.]+ s", value):
            timed.setdefault(re.sub(r", \d+ nodes", "", label).strip(), {})[int(size[1])] = float(value[:-2])

    env = dict(os.environ, CLUSTERFORGE_TESTBED_DIST=args.dist, CLUSTERFORGE_INVENTORY=str(INVENTORY))
    env.setdefault("CLUSTERFORGE_ARTIFACTS", str(REPO.parent / "shared" / "artifacts"))
    if not args.reuse:
        subprocess.run(["bash", "testbed/down.sh"], cwd=REPO, env=env, capture_output=True)
        measured(["bash", "testbed/up.sh"], env)
    env = testbed_env(args.dist)
    env["CLUSTERFORGE_TESTBED_ADMISSION"] = "on"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("{}")
    failed: BaseException | None = None
    try:
        first = measured([PYINFRA, "-y", str(INVENTORY), "deploy/cluster.py"], env)
        say(f"deploy, admission on, {BASE_NODES} nodes", seconds(first.seconds))
        with tempfile.TemporaryDirectory() as scratch:
            nodes = BASE_NODES
            for size in sizes:
                inventory = grow(size, Path(scratch), env)
                joined = measured([PYINFRA, "-y", str(inventory), "deploy/cluster.py"], env)
                say(f"grow {nodes} -> {size}: deploy, {size} nodes", seconds(joined.seconds))
                say(f"  peak memory, that deploy, {size} nodes", mib(joined.peak_mib))
                say(f"  gate: {size - nodes} new nodes admitted after, {size} nodes",
                    seconds(admitted_after(env, size - nodes)))
                nodes = size
                measure(size, inventory, env, args.repeat, args.job_seconds, args.configless,
                        set(filter(None, args.skip.split(","))), say)
    except BaseException as stop:  # the figures so far, then why
        failed = stop
    finally:
        RESULTS.write_text("{}")
        env["CLUSTERFORGE_INVENTORY"] = str(INVENTORY)
        if args.reuse:
            shrunk(env)
        else:
            subprocess.run(["bash", "testbed/down.sh"], cwd=REPO, env=env, capture_output=True)
    print(f"Scale figures, Debian {args.dist}, {os.cpu_count()} CPUs, {args.sizes} compute machines")
    for label, value in [*figures, *per_node(timed)]:
        print(f"  {label:<64}  {value}")
    if failed is not None:
        raise failed


def shrunk(env: dict[str, str]) -> None:
    """The test inventory deployed again, admission off (the grown nodes leave Slurm, the gate stops), and the
    clones removed. The grown nodes leave in one deploy of a copy whose disruption budget takes them all (the
    deploy refuses more than the budget at once), then the test inventory itself is deployed: the hosts' stamp
    names its digest again."""
    env = dict(env, CLUSTERFORGE_TESTBED_ADMISSION="off")
    text = INVENTORY.read_text()
    named = 'Cluster(\n    "vagrant",\n'
    assert text.count(named) == 1, "the test inventory's Cluster( moved: edit scale.py"
    with tempfile.TemporaryDirectory() as scratch:
        wide = Path(scratch) / "vagrant-shrink.py"
        wide.write_text(text.replace(named, named + "    disruption_budget=1024,\n"))
        measured([PYINFRA, "-y", str(wide), "deploy/cluster.py"], env)
    for name in machines(env):
        if int(name.removeprefix("gpu")) > BASE_NODES:
            subprocess.run(["lxc-destroy", "--force", "--name", f"cf-{name}"], capture_output=True, check=True)
    measured([PYINFRA, "-y", str(INVENTORY), "deploy/cluster.py"], env)


if __name__ == "__main__":
    main()
