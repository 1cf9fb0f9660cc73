"""Make the captures in this directory: what the Slurm exporter's commands print on a real cluster of one release.
Not a test; run by hand, as root, with the project's virtualenv (it imports the exporter's command lines):

    cd /tmp && apt-get download slurmd                 # Debian 12's 22.05; Debian 13's 24.11 through an apt
    dpkg-deb -x slurmd_22.05*.deb slurmd-22.05         # configured for trixie, unpacked to slurmd-24.11
    SLURMD_DIR=/tmp .venv/bin/python tests/exporter/captures/capture.py 22.05 tests/exporter/captures/22.05

tests/realslurm/harness.py starts munged, MariaDB, slurmdbd and slurmctld (the host's 22.05, or 24.11 in the Debian
13 root it uses); this script adds one real slurmd per node, from the release's slurmd package unpacked in
SLURMD_DIR/slurmd-<release> (neither the host nor that root has slurmd installed, and neither is changed: slurmd and
slurmstepd are bound over a copy of /usr/sbin in slurmd's own mount namespace, where it also has its own hostname).
All nodes are on this machine, 2 CPUs each. Then it sets up the state the tests read (test_parsers.py's docstring),
prints the commands' output into OUT, stops slurmdbd for the failure, and stops everything it started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TESTS))

from realslurm import harness as h  # noqa: E402 - after the path to the tests

from clusterforge.exporter.collector import COMMANDS, SACCTMGR_ARGV  # noqa: E402

SLURMD_DIR = Path(os.environ.get("SLURMD_DIR", "/tmp"))
REAL = ["gpu1", "gpu2", "gpu3", "cpu1", "cpu3", "cpu4"]   # a slurmd each
ABSENT = ["gpu4", "cpu2", "spare1"]                        # never started; spare1 is in no partition
NODES = REAL + ABSENT
ADDRESS = {name: f"127.0.0.{i + 2}" for i, name in enumerate(NODES)}
GRES = {"gpu1": "gpu:h100:4", "gpu2": "gpu:a100:2,gpu:h100:2", "gpu3": "gpu:h100:4", "gpu4": "gpu:h100:4"}

# slurmd's namespace: its hostname, its own node directory at the path slurm.conf names, the hosts file naming
# every node, the /usr/sbin copy with slurmd; in a Debian 13 root also what the harness mounts there.
ENTER = r"""
root=$1; node=$2; scratch=$3; shift 3
hostname "$node"
mount --bind "$scratch/nodes/$node" "$scratch/node"
if [ "$root" = / ]; then
  mount --bind "$scratch/hosts" /etc/hosts
  mount --bind "$scratch/sbin" /usr/sbin
  exec "$@"
fi
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
mount --bind "$scratch/hosts" "$root/etc/hosts"
mkdir -p "$root$scratch"; mount --rbind "$scratch" "$root$scratch"
mount --bind "$scratch/sbin" "$root/usr/sbin"
exec chroot "$root" "$@"
"""


def slurm_conf(scratch: Path, ports: dict[str, int]) -> str:
    keys = h.overrides(scratch, ports["slurmctld"], dbd_port=ports["slurmdbd"])
    lines = [
        "ClusterName=capture", "SlurmUser=slurm", "AuthType=auth/munge", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "MpiDefault=none", "GresTypes=gpu", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/slurmdbd", "SlurmdTimeout=30", "ReturnToService=1",
        "DefMemPerCPU=100", "SchedulerType=sched/backfill", "RebootProgram=/bin/true", "ResumeTimeout=900",
        f"SlurmdSpoolDir={scratch}/node/spool", f"SlurmdPidFile={scratch}/node/slurmd.pid",
        f"SlurmdLogFile={scratch}/node/slurmd.log", *(f"{k}={v}" for k, v in keys.items()),
        *(f"NodeName={n} NodeAddr={ADDRESS[n]} Port={ports[n]} CPUs=2 RealMemory=1000"
          + (f" Gres={GRES[n]}" if n in GRES else "") + " State=UNKNOWN" for n in NODES),
        "PartitionName=gpu Nodes=gpu[1-4] Default=YES MaxTime=INFINITE State=UP",
        "PartitionName=cpu Nodes=cpu[1-4] MaxTime=INFINITE State=UP",
        "PartitionName=all Nodes=gpu[1-4],cpu[1-4] MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def gres_conf(scratch: Path) -> str:
    dev = scratch / "dev"  # links to /dev/null: slurmd wants character devices
    return (f"NodeName=gpu[1,3-4] Name=gpu Type=h100 File={dev}/nvidia[0-3]\n"
            f"NodeName=gpu2 Name=gpu Type=a100 File={dev}/nvidia[0-1]\n"
            f"NodeName=gpu2 Name=gpu Type=h100 File={dev}/nvidia[2-3]\n")


def write_configs(runtime: h.SlurmRuntime, scratch: Path, ports: dict[str, int]) -> Path:
    etc = scratch / "etc"
    etc.mkdir(mode=0o755)
    (scratch / "node").mkdir()
    (scratch / "dev").mkdir()
    for i in range(4):
        (scratch / "dev" / f"nvidia{i}").symlink_to("/dev/null")
    (scratch / "hosts").write_text("".join(f"{a} {n}\n" for n, a in ADDRESS.items()) + Path("/etc/hosts").read_text())
    (etc / "slurm.conf").write_text(slurm_conf(scratch, ports))
    (etc / "gres.conf").write_text(gres_conf(scratch))
    # 24.11's slurmd sets up cgroups unless told not to; 22.05 knows no "disabled" and needs none with these plugins.
    (etc / "cgroup.conf").write_text("CgroupPlugin=disabled\n" if runtime.version != "22.05"
                                     else "CgroupPlugin=autodetect\n")
    dbd = h.slurmdbd_overrides(scratch, ports["slurmdbd"], ports["storage"])
    (etc / "slurmdbd.conf").write_text("SlurmUser=slurm\nAuthType=auth/munge\nStorageType=accounting_storage/mysql\n"
                                       + "".join(f"{k}={v}\n" for k, v in dbd.items()))
    sbin = scratch / "sbin"
    shutil.copytree(Path(runtime.root or "/") / "usr/sbin", sbin, symlinks=True)
    for name in ("slurmd", "slurmstepd"):
        shutil.copy2(SLURMD_DIR / f"slurmd-{runtime.version}" / "usr/sbin" / f"{name}-wlm", sbin / name)
    return etc


@contextlib.contextmanager
def slurmd(runtime: h.SlurmRuntime, scratch: Path, node: str) -> Iterator[None]:
    (scratch / "nodes" / node / "spool").mkdir(parents=True)
    argv = ["unshare", "--uts", "--mount", "--propagation", "private", "--", "sh", "-euc", ENTER, "sh",
            str(runtime.root or "/"), node, str(scratch), "slurmd", "-D", "-f", str(scratch / "etc" / "slurm.conf")]
    with open(scratch / "nodes" / node / "out", "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait(what: str, done: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not reached in {timeout:.0f} s: {what}")
        time.sleep(2)


def kill_leftovers(scratch: Path) -> None:
    """A job's processes that outlived the cancel: found by this run's scratch directory in their command line."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if str(scratch).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(int(pid), signal.SIGKILL)


def capture(runtime: h.SlurmRuntime, out: Path) -> None:
    with h.scratch_dir() as scratch:
        ports = {name: h.free_port() for name in ["slurmctld", "slurmdbd", "storage", *NODES]}
        etc = write_configs(runtime, scratch, ports)
        with contextlib.ExitStack() as stack:
            dbd = stack.enter_context(h.running_slurmdbd(runtime, etc / "slurmdbd.conf", scratch))
            dbd.sacctmgr("add", "cluster", "capture")
            dbd.sacctmgr("add", "account", "physics,chemistry")
            dbd.sacctmgr("add", "user", "root", "account=physics,chemistry")
            ctld = stack.enter_context(h.running_slurmctld(runtime, etc, scratch))
            for node in REAL:
                stack.enter_context(slurmd(runtime, scratch, node))

            def states() -> dict[str, str]:
                text = ctld.run("sinfo", "-h", "-N", "-o", "%N %T", check=False).stdout
                return dict(line.split() for line in text.splitlines() if line.strip())

            def sbatch(*args: str) -> None:
                ctld.run("sbatch", "--wrap", "sleep 3000", "-o", "/dev/null", *args)

            wait("every slurmd registered", lambda: all(states().get(n) == "idle" for n in REAL))
            ctld.run("scontrol", "update", "NodeName=gpu3", "State=DRAIN",
                     "Reason=bad DIMM B2 | ticket OPS-4711, ask Anna")
            sbatch("-p", "gpu", "-A", "physics", "-w", "gpu1", "--gres=gpu:h100:3")
            sbatch("-p", "gpu", "-A", "chemistry", "-w", "gpu2", "--gres=gpu:a100:1")
            sbatch("-p", "cpu", "-A", "chemistry", "-w", "cpu1", "-n", "2")
            sbatch("-p", "gpu", "-A", "physics", "--gres=gpu:h100:4", "--array=0-2")
            sbatch("-p", "gpu", "-A", "chemistry", "--gres=gpu:h100:4")
            sbatch("-p", "cpu", "-A", "physics", "--hold")
            sbatch("-p", "all", "-A", "chemistry", "--begin=now+1hour")
            wait("three jobs running", lambda: len(ctld.run("squeue", "-h", "-t", "R").stdout.splitlines()) == 3)
            ctld.run("scontrol", "update", "NodeName=gpu2", "State=DRAIN", "Reason=cf:gpu:xid79 gpu1 0000:9b:00.0")
            ctld.run("scontrol", "reboot", "cpu3")
            ctld.run("scontrol", "update", "NodeName=gpu4", "State=DOWN", "Reason=PSU replaced, waiting for test")
            time.sleep(35)  # a main and a backfill scheduler cycle, for sdiag
            print(ctld.run("sinfo", "-V").stdout.strip(), states(), flush=True)
            for name, argv in {name: COMMANDS[name] for name in ("sinfo", "squeue", "sdiag", "sacctmgr")}.items():
                (out / f"{name}.txt").write_text(ctld.run(*argv).stdout)
            dbd._daemon.stop()  # the context's own stop then finds it stopped
            down = ctld.run(*SACCTMGR_ARGV, check=False)
            assert down.returncode == 1 and not down.stdout, down
            (out / "sacctmgr-dbd-down.stderr").write_text(down.stderr)
            ctld.run("scancel", "-u", "root")
            with contextlib.suppress(RuntimeError):
                wait("every job ended", lambda: not ctld.run("squeue", "-h", "-t", "R,CG").stdout.strip(), 60)
        kill_leftovers(scratch)


if __name__ == "__main__":
    release, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    runtime = h.SlurmRuntime(release)
    ok, why = runtime.available(accounting=True)
    if not ok:
        raise SystemExit(why)
    capture(runtime, out)
