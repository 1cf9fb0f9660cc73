"""Driving the local test cluster from the tests: testbed/up.sh and down.sh, the deploy, commands on the machines.

Everything goes through the same scripts and commands the docs give an admin (docs/getting-started.md).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import testinfra

REPO = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("CLUSTERFORGE_TESTBED_STATE", "/var/lib/clusterforge-testbed"))
INVENTORY = REPO / "inventories" / "vagrant.py"
SLURM_OF = {"bookworm": "22.05", "trixie": "24.11", "forky": "26.05"}
# The machines of inventories/vagrant.py, and the daemons any of them runs.
# testbed/lib.sh's bridge, the MAC it is given (which no machine coming or going changes) and this host's address.
BRIDGE, BRIDGE_MAC, HOST_IP = "cfbr0", "02:77:00:00:00:01", "10.77.0.1"
MACHINES = {"ctl": "10.77.0.10", "login1": "10.77.0.9", "gpu01": "10.77.0.11", "gpu02": "10.77.0.12"}
# Who the deploy, check, roll and the tests log in as; root's login over SSH is refused (testbed/build-box.sh).
SSH_USER = "vagrant"
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DAEMONS = "munge slurmctld slurmdbd slurmd sackd mariadb"
_GRAND_TOTAL = re.compile(r"Grand total\s+(\d+|-)\s+(\d+|-)\s+(\d+|-)\s+(\d+|-)")  # all "-": no operation


@dataclass
class DeployRun:
    returncode: int
    output: str
    seconds: float

    @property
    def changed(self) -> int:
        """Operations that changed something, summed over hosts (pyinfra's "Success" column of the grand total)."""
        found = _GRAND_TOTAL.findall(self.output)
        assert found, f"no pyinfra summary in the output:\n{self.output[-3000:]}"
        return 0 if found[-1][1] == "-" else int(found[-1][1])

    def changed_operations(self) -> list[str]:
        rows = []
        for line in self.output.splitlines():
            cells = line.split()
            if "|" in line and len(cells) >= 4 and cells[-3] not in ("-", "Success") and not line.startswith("-->"):
                rows.append(" ".join(line.split()))
        return rows


class Testbed:
    __test__ = False  # not a test class, despite its name

    def __init__(self, dist: str) -> None:
        self.dist = dist
        self.slurm = SLURM_OF[dist]
        # forky's systemd mounts cgroup v2 alone, which has no controller in a container on this host (its
        # controllers are v1): the forky test cluster runs Slurm without cgroups (inventories/vagrant.py), so no job
        # is confined to its GPUs there.
        self.confines = dist != "forky"
        self.inventory = INVENTORY

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, CLUSTERFORGE_TESTBED_DIST=self.dist, CLUSTERFORGE_INVENTORY=str(self.inventory),
                   **extra)
        # The tests deploy edited copies of the inventory from elsewhere: its artifact directory stays the repo's.
        env.setdefault("CLUSTERFORGE_ARTIFACTS", str(REPO.parent / "shared" / "artifacts"))
        token = STATE / "vault-token"
        if token.exists():
            env.update(VAULT_ADDR="http://127.0.0.1:8210", VAULT_TOKEN=token.read_text().strip())
        return env

    def script(self, name: str, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(REPO / "testbed" / name), *args], cwd=REPO, env=self.env(), text=True,
                              capture_output=True, timeout=timeout)

    def up(self, *machines: str) -> None:
        result = self.script("up.sh", *machines)
        assert result.returncode == 0, f"testbed/up.sh failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"

    def down(self) -> None:
        self.script("down.sh", timeout=300)

    def deploy(self, *extra: str) -> DeployRun:
        start = time.monotonic()
        result = subprocess.run([str(REPO / ".venv" / "bin" / "pyinfra"), "-y", *extra, str(self.inventory),
                                 str(REPO / "deploy" / "cluster.py")], cwd=REPO, env=self.env(), text=True,
                                capture_output=True, timeout=1800)
        return DeployRun(result.returncode, result.stdout + result.stderr, time.monotonic() - start)

    def plan(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`clusterforge plan` of the current inventory, as an admin runs it; stdout and stderr together."""
        return subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "plan", *args, str(self.inventory)],
                              check=False, cwd=REPO, env=self.env(), text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=600)

    def deploy_killed_at(self, operation: str, signum: int) -> DeployRun:
        """A deploy sent ``signum`` when pyinfra starts ``operation`` (its "Starting operation" line), as an admin's
        Ctrl-C or a dropped session would stop it; it must stop there or earlier."""
        start = time.monotonic()
        process = subprocess.Popen([str(REPO / ".venv" / "bin" / "pyinfra"), "-y", str(self.inventory),
                                    str(REPO / "deploy" / "cluster.py")], cwd=REPO, env=self.env(), text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines = []
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if f"Starting operation: {operation}" in line:
                process.send_signal(signum)
                break
        rest, _ = process.communicate(timeout=600)
        output = "".join(lines) + (rest or "")
        assert f"Starting operation: {operation}" in output, f"the deploy never reached {operation}:\n{output[-4000:]}"
        return DeployRun(process.returncode, output, time.monotonic() - start)

    def fingerprint(self) -> dict[str, str]:
        """What a read-only command (plan, check) must leave as it was on every machine: the checksum of every file
        the deploy manages under /etc and of its records, and when each daemon last started (0: not running)."""
        # The health check's own state (its cursor, when it last ran) changes at every check slurmd runs.
        command = ("find /etc/slurm /etc/munge /etc/hosts /etc/mysql /var/lib/clusterforge "
                   "-path /var/lib/clusterforge/health -prune -o -type f -exec sha256sum {} + 2>/dev/null | sort; "
                   f"systemctl show --property=Id,ActiveEnterTimestampMonotonic {DAEMONS}")
        return {name: self.run(address, command) for name, address in MACHINES.items()}

    def ssh_config(self) -> Path:
        """The test cluster's logins: vagrant with the testbed's key (root may not log in over SSH)."""
        config = STATE / "ssh_config"
        text = (f"Host *\n  User {SSH_USER}\n  IdentityFile {STATE / 'id_ed25519'}\n  StrictHostKeyChecking no\n"
                "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  BatchMode yes\n")
        if not config.exists() or config.read_text() != text:
            config.write_text(text)
        return config

    def host(self, address: str):
        """A machine as root: logged in as vagrant, each command through sudo."""
        return testinfra.get_host(f"ssh://{SSH_USER}@{address}", ssh_config=str(self.ssh_config()), sudo=True)

    def run(self, address: str, command: str, timeout: int = 120) -> str:
        """Output of a command on a machine; fails the test with its output if it fails."""
        # With root's usual PATH: sudo's secure_path on forky leaves /usr/local out, where the test cluster's
        # nvidia-smi and ibstat are (a login shell as root would have it).
        try:
            result = self.host(address).run(f"PATH={ROOT_PATH} timeout {timeout} sh -c {shlex.quote(command)}")
        except RuntimeError as lost:   # testinfra's word for ssh's own failure (255): the machine was not reached
            raise AssertionError(f"{address}: `{command}` did not reach the machine: {lost}\n"
                                 f"{network_state(address)}") from None
        assert result.rc == 0, f"{address}: `{command}` exited {result.rc}:\n{result.stdout}\n{result.stderr}"
        return result.stdout


# A machine ssh did not reach, seen from this host without ssh (testbed/lib.sh's bridge, the Vagrantfile's "cf-"
# containers): whether its container runs, what this host's ARP and bridge hold for it, and, through lxc-attach, its
# own addresses, its neighbour entry for this host, whether its sshd listens and what sshd last logged. What a CI
# failure needs to tell a machine that was down from a network that lost it.
_HOST_SIDE = ("lxc-info -n {container} -sH; ip neigh show {address}; ip -br link show " + BRIDGE + "; "
              "ss -Htn dst {address} | wc -l")
_INSIDE = (f"ip -br addr; ip neigh show {HOST_IP}; ss -Htln sport = :22; systemctl is-active ssh; "
           "cat /proc/loadavg; journalctl -u ssh -n 8 --no-pager -o short-precise")


def network_state(address: str) -> str:
    names = [name for name, known in MACHINES.items() if known == address]
    container = f"cf-{names[0]}" if names else "?"
    return "\n".join((_seen("this host", ["sh", "-c", _HOST_SIDE.format(container=container, address=address)]),
                      _seen(f"inside {container}", ["lxc-attach", "-n", container, "--", "sh", "-c", _INSIDE])))


def _seen(where: str, argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as failed:
        return f"--- {where}: {failed}"
    return f"--- {where}:\n{done.stdout}{done.stderr}"
