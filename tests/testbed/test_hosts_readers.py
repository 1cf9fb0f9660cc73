"""The test cluster's scripts that read `clusterforge hosts --json` read its shape ({"schema": 1, "hosts": [...]}):
testbed/ssh.sh finds a machine's address in it, testbed/grow.sh the compute machines no container holds yet. Each
runs against stand-ins of ssh and LXC's tools, on an inventory of its own; nothing on this machine is changed. (The
Vagrantfile, Ruby, reads the same shape; no Ruby here to run it.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INVENTORY = """\
from clusterforge.inventory import host_groups
from clusterforge.model import Cluster, Host, Nodes, Partition, Profile

cluster = Cluster(
    "readers", slurm_version="22.05",
    controller=Host("ctl", address="10.77.0.10"), database=Host("db", address="10.77.0.20", memory=4096),
    profiles=(Profile("cpu", sockets=1, cores_per_socket=2, threads_per_core=1, real_memory=1000),),
    nodes=(Nodes("gpu[01-03]", address="10.77.0.[11-13]", profile="cpu"),),
    partitions=(Partition("batch", profiles=("cpu",), default=True),),
)
controller, compute, login, database, nfs = host_groups(cluster, ssh_user="root")
"""
# Records its arguments; exits 1 for the containers named in $ABSENT, as lxc-info does for one that does not exist.
RECORDING = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CALLS"
case " $ABSENT " in *" $2 "*) exit 1 ;; esac
"""


def stand_ins(tmp_path: Path, *tools: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        (bin_dir / tool).write_text(RECORDING)
        (bin_dir / tool).chmod(0o755)
    (tmp_path / "state").mkdir()
    inventory = tmp_path / "readers.py"
    inventory.write_text(INVENTORY)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls"),
            "CLUSTERFORGE_TESTBED_STATE": str(tmp_path / "state"), "CLUSTERFORGE_TESTBED_CACHE": str(tmp_path),
            "CLUSTERFORGE_INVENTORY": str(inventory), "ABSENT": ""}


def test_ssh_sh_logs_in_at_the_address_hosts_json_gives(tmp_path):
    env = stand_ins(tmp_path, "ssh")
    done = subprocess.run(["bash", str(REPO / "testbed" / "ssh.sh"), "gpu02", "sinfo"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    [call] = (tmp_path / "calls").read_text().splitlines()
    assert call.startswith("ssh -i ") and "vagrant@10.77.0.12 sudo -n sh -c sinfo" in call


def test_grow_sh_clones_the_compute_machines_hosts_json_lists_without_a_container(tmp_path):
    env = stand_ins(tmp_path, "lxc-info", "lxc-copy")
    lxcpath = tmp_path / "lxc"
    (lxcpath / "cf-gpu01").mkdir(parents=True)
    (lxcpath / "cf-gpu01" / "config").write_text("lxc.net.0.ipv4.address = 10.77.0.11/24\n")
    (tmp_path / "bin" / "lxc-config").write_text(f"#!/bin/sh\necho {lxcpath}\n")
    (tmp_path / "bin" / "lxc-config").chmod(0o755)
    (tmp_path / "bin" / "lxc-copy").write_text(RECORDING + "exit 1\n")  # stops the clone: nothing further to see
    # Enough inotify instances already: the real sysctl would raise this machine's.
    (tmp_path / "bin" / "sysctl").write_text("#!/bin/sh\necho 4096\n")
    (tmp_path / "bin" / "sysctl").chmod(0o755)
    env["ABSENT"] = "cf-gpu02 cf-gpu03"
    done = subprocess.run(["bash", str(REPO / "testbed" / "grow.sh")], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert "[testbed] clone gpu02 (10.77.0.12)" in done.stderr, done.stderr
    asked = [line.split()[-1] for line in (tmp_path / "calls").read_text().splitlines() if "lxc-info" in line]
    assert asked == ["cf-gpu01", "cf-gpu01", "cf-gpu02", "cf-gpu03", "cf-seed"]  # compute only: not ctl nor db


def test_grow_sh_with_every_compute_machine_up_has_nothing_to_do(tmp_path):
    env = stand_ins(tmp_path, "lxc-info")
    (tmp_path / "lxc" / "cf-gpu01").mkdir(parents=True)
    (tmp_path / "lxc" / "cf-gpu01" / "config").write_text("lxc.net.0.ipv4.address = 10.77.0.11/24\n")
    (tmp_path / "bin" / "lxc-config").write_text(f"#!/bin/sh\necho {tmp_path / 'lxc'}\n")
    (tmp_path / "bin" / "lxc-config").chmod(0o755)
    done = subprocess.run(["bash", str(REPO / "testbed" / "grow.sh")], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0 and "every compute machine of" in done.stderr, done.stderr
