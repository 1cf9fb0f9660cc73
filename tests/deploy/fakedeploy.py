"""Running the real deploy/cluster.py under the pyinfra CLI on simulated hosts (simhost.py), in seconds.

Vault is replaced inside the inventory file by fixed secrets; everything else is the deploy as an admin runs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from deploy.simhost import Sim

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
PYINFRA = str(Path(sys.executable).with_name("pyinfra"))
SECRETS = {"munge-key": b"m" * 64, "db-password": b"Tr0ub4dor-and-3", "slurm-key": b"s" * 256,
           "jwt-key": b"J0hnWayne-jwt-" * 4}
BMC_LOGIN = b'{"password": "B4seb0ard-pw", "username": "admin"}'   # every BMC's, as the repair loop's file holds it

INVENTORY = """\
import base64
import os
import threading
import time
from pathlib import Path

from clusters import gpu_profile, small_cluster
from pyinfra.connectors.fake import FakeConnector
from pyinfra.connectors.util import CommandOutput, OutputLine
from deploy.simhost import Peer, Sim, standin_at

from clusterforge.inventory import host_group, host_groups
from clusterforge.model import (
    Accounting, Admission, AptRepository, Artifact, Bmc, Containers, Directory, Enroot, GpuStack, Group, Health, Host,
    Identity, Monitoring, Nccl, Nfs, NfsExport, NfsMount, Nodes, Partition, Person, Profile, Programs, Pyxis, Repair,
    Rest, Setup, Stack, User, Vault,
)
from clusterforge.secrets import Secret
from clusterforge.secrets.cluster import ClusterSecrets

_VALUES = {{k: base64.b64decode(v) for k, v in {secrets!r}.items()}}


def _read(self, kind, version=None):  # Vault stand-in: the deploy's one way to a secret
    return Secret(_VALUES[kind.name], kind.label), None


def _bmc(self, path, name):  # the BMCs' login, as the Vault stand-in's
    return Secret({bmc!r}, f"BMC credentials at {{name}}")


ClusterSecrets.read = _read
ClusterSecrets._bmc = _bmc
_DIR = Path(os.environ["CLUSTERFORGE_SIM_DIR"])
_FAIL = os.environ.get("CLUSTERFORGE_SIM_FAIL", "")  # host:text - the first such command fails (as if killed there)
# text=seconds,...: a command holding the text takes that long (pyinfra's gevent sleep: other hosts' commands and
# the host's other reads go on meanwhile); its start and end are written to reads.log.
_SLOW = dict(item.split("=", 1) for item in os.environ.get("CLUSTERFORGE_SIM_SLOW", "").split(",") if item)


# One host's model is read, changed and written back by one command at a time: a Slurm command runs a subprocess
# (simslurm.py), and while it does gevent runs the other commands, of this host too.
_LOCKS = {{}}


def _sim(connector):
    name = connector.host.name.removeprefix("@fake/")
    return name, _DIR / f"{{name}}.json"


def _controller(name):  # how a command of host `name` reaches the controller's slurmctld: None where it runs it
    ctl = _groups.controller[0][0]
    if ctl == name:
        return None
    return lambda: standin_at(_DIR / f"{{ctl}}.json", _LOCKS.setdefault(ctl, threading.Lock()))


def _lookup(self, command):
    name, path = _sim(self)
    for text, seconds in _SLOW.items():
        if text in command:
            with open(_DIR / "reads.log", "a") as log:
                log.write(f"start {{name}} {{text}}\\n")
            time.sleep(float(seconds))  # before the host's model is loaded: its own reads must not interleave
            with open(_DIR / "reads.log", "a") as log:
                log.write(f"end {{name}} {{text}}\\n")
    with _LOCKS.setdefault(name, threading.Lock()):
        return _answer(name, path, command)


def _answer(name, path, command):
    sim = Sim.load(path)
    where, _, text = _FAIL.partition(":")
    if text and where in ("*", name) and text in command and "@container" not in command:
        sim.commands += 1
        if "systemd-run " in command:  # a unit started in the background: it starts, and what it runs fails
            sim.events.append("FAILED in the background " + command)
            sim.save(path)
            return True, CommandOutput([])
        sim.events.append("FAILED " + command)
        sim.save(path)
        return False, CommandOutput([OutputLine("stderr", "simulated failure")])
    before = len(sim.events)
    sim.release = os.environ.get("CLUSTERFORGE_SIM_RELEASE", "")
    ok, out = sim.answer(command, Peer(name, _controller(name)))
    sim.save(path)
    if len(sim.events) > before:  # every host's changes, in the order they happened across the cluster
        with open(_DIR / "order.log", "a") as log:
            log.write(f"{{name}} {{sim.events[-1]}}\\n")
    # "@stderr " marks what the host prints on stderr (a refusal's reason); a failure without any is not understood.
    lines = [OutputLine("stderr", line[8:]) if line.startswith("@stderr ") else OutputLine("stdout", line)
             for line in out]
    explained = any(line.buffer_name == "stderr" for line in lines)
    return ok, CommandOutput(lines if ok or explained else
                             [*lines, OutputLine("stderr", "simhost: not understood: " + command)])


def _put(self, source, remote, *args, **kwargs):
    name, path = _sim(self)
    data = source.read() if hasattr(source, "read") else Path(source).read_bytes()
    with _LOCKS.setdefault(name, threading.Lock()):
        sim = Sim.load(path)
        sim.put(remote, data if isinstance(data, bytes) else data.encode())
        sim.save(path)
    with open(_DIR / "order.log", "a") as log:
        log.write(f"{{name}} upload {{remote}}\\n")
    return True


def _get(self, remote, destination, *args, **kwargs):
    _, path = _sim(self)
    data = Sim.load(path).content(remote)
    if data is None:
        return False
    destination.write(data)
    return True


FakeConnector._lookup_response = _lookup
FakeConnector.put_file = _put
FakeConnector.get_file = _get
_cluster = small_cluster({cluster})
_groups = host_groups(_cluster, fake_delay=0, fake_delay_jitter=0)
controller, compute, login, database, nfs = ([(f"@fake/{{name}}", data) for name, data in group]
                                             for group in _groups)
monitoring = [(f"@fake/{{name}}", data) for name, data in host_group(_cluster, "monitoring", fake_delay=0,
                                                                     fake_delay_jitter=0)]
"""

CLUSTER = ('slurm_version="{version}", auth="{auth}", login=(Host("login1", address="10.9.0.7"),), '
           'vault=Vault(address="http://127.0.0.1:1", allow_plain_http=True), '
           'setup=Setup(etc_hosts=True, apt_proxy="http://10.9.0.1:3142"), '
           'nfs=Nfs(server=Host("ctl", address="10.9.0.1"), software="ganesha", mount_now=False, '
           'exports=(NfsExport(path="/srv/home"),), mounts=(NfsMount(export="/srv/home", mount_point="/shared"),)), '
           '{extra}')


# The releases the deploy tier runs on, each with the authentication the test cluster gives it.
RELEASES = [("22.05", "munge"), ("24.11", "slurm")]
# Inventory edits the tests make (Cluster(...) arguments of tests/clusters.py's small cluster).
NEW_PARTITION = ('partitions=(Partition("batch", profiles=("gpu",), default=True), '
                 'Partition("short", nodes="gpu[01-02]", max_time="1:00:00"))')
FIVE_NODES = 'nodes=(Nodes("gpu[01-05]", address="10.9.1.[1-5]", profile="gpu", leaf="leaf1"),)'


@dataclass
class Run:
    returncode: int
    output: str
    sims: dict[str, Sim]
    order: list[tuple[str, str]]  # (host, command) of every change, in the order they happened
    # ("start" or "end", host, text) of the commands a run was asked to slow down, in the order they happened
    reads: list[tuple[str, ...]] = field(default_factory=list)

    def events(self, host: str) -> list[str]:
        return self.sims[host].events

    def ran(self, host: str, text: str) -> bool:
        return any(text in event for event in self.events(host))

    def operations(self) -> list[str]:
        """The operations of the run, as pyinfra's results table lists them."""
        table = self.output.split("--> Results:", 1)[1].split("Grand total", 1)[0].splitlines()
        return [re.split(r"\s{2,}", row.strip())[0] for row in table[2:] if row.strip()]


    def changed(self) -> dict[str, int]:
        """How many hosts each operation changed, as pyinfra's results table counts them (its "Success")."""
        table = self.output.split("--> Results:", 1)[1].split("Grand total", 1)[0].splitlines()
        counts: dict[str, int] = {}
        for row in table[2:]:
            cells = re.split(r"\s{2,}", row.strip())
            if len(cells) >= 3 and cells[2] != "-":
                counts[cells[0]] = counts.get(cells[0], 0) + int(cells[2])
        return counts


class SimCluster:
    """A cluster of simulated hosts that keeps its state between runs of the deploy."""

    def __init__(self, directory: Path, version: str = "22.05", auth: str = "munge", extra: str = "",
                 cache: Path | None = None) -> None:
        """``cache``: the XDG_CACHE_HOME of the machine that runs the deploy, where it keeps its builds
        (roles/build_cache.py); this cluster's own where not given, never the machine's."""
        self.directory = directory
        self.cache = cache or directory / "cache"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.set_inventory(version, auth, extra)

    def set_inventory(self, version: str = "22.05", auth: str = "munge", extra: str = "",
                      secrets: dict[str, bytes] | None = None) -> None:
        import base64

        self.release = version
        secrets = {k: base64.b64encode(v).decode() for k, v in {**SECRETS, **(secrets or {})}.items()}
        (self.directory / "hosts.py").write_text(INVENTORY.format(
            secrets=secrets, bmc=BMC_LOGIN, cluster=CLUSTER.format(version=version, auth=auth, extra=extra)))

    def sims(self) -> dict[str, Sim]:
        return {p.stem: Sim.load(p) for p in self.directory.glob("*.json")}

    def deploy(self, *args: str, fail: str = "", slow: dict[str, float] | None = None, timeout: int = 300) -> Run:
        return self._run([PYINFRA, "-y", *args, str(self.directory / "hosts.py"), str(REPO / "deploy" / "cluster.py")],
                         fail, timeout, slow)

    def plan(self, *args: str, timeout: int = 300) -> Run:
        """`clusterforge plan` of this cluster, as an admin runs it."""
        return self._run([sys.executable, "-m", "clusterforge.cli", "plan", *args, str(self.directory / "hosts.py")],
                         "", timeout)

    def _run(self, command: list[str], fail: str, timeout: int, slow: dict[str, float] | None = None,
             answer: str | None = None) -> Run:
        for path in self.directory.glob("*.json"):  # count each run's commands and events afresh
            sim = Sim.load(path)
            sim.events, sim.commands = [], 0
            sim.save(path)
        (self.directory / "order.log").write_text("")
        (self.directory / "reads.log").write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "BAO_"))}
        env["XDG_CACHE_HOME"] = str(self.cache)
        env.update(PYINFRA_PROGRESS="off", CLUSTERFORGE_SIM_DIR=str(self.directory), CLUSTERFORGE_SIM_FAIL=fail,
                   CLUSTERFORGE_SIM_SLOW=",".join(f"{text}={seconds}" for text, seconds in (slow or {}).items()),
                   CLUSTERFORGE_SIM_RELEASE=self.release,
                   PYTHONPATH=os.pathsep.join([str(TESTS), str(TESTS / "deploy"), env.get("PYTHONPATH", "")]))
        result = subprocess.run(command, check=False, cwd=self.directory, capture_output=True, env=env,
                                timeout=timeout, input=answer.encode() if answer is not None else None)
        order = [tuple(line.split(" ", 1)) for line in (self.directory / "order.log").read_text().splitlines()]
        reads = [tuple(line.split(" ", 2)) for line in (self.directory / "reads.log").read_text().splitlines()]
        return Run(result.returncode, (result.stdout + result.stderr).decode(errors="replace"), self.sims(), order,
                   reads)


def dump(run: Run) -> str:
    return run.output[-6000:] + "\n" + json.dumps({h: s.events for h, s in run.sims.items()}, indent=1)[-6000:]


__all__ = ["BMC_LOGIN", "FIVE_NODES", "NEW_PARTITION", "RELEASES", "SECRETS", "Run", "SimCluster", "dump", "re"]
