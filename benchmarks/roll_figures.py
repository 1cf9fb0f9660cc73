"""Rolling-maintenance figures on the running, deployed test cluster; prints them, asserts nothing (run as root).

    bash scripts/example.sh && python benchmarks/roll_figures.py [--repeat 3] [--nodes gpu[57-64] --inventory FILE]

Interleaved, on --nodes (gpu01 by default) with no job: the bare reboot of those nodes through Slurm, all at once
(`scontrol reboot ASAP nextstate=resume NODES`, then `scontrol show node` polled every 0.2 s until each is idle with
no REBOOT flag and a BootTime after the request), against `clusterforge roll --reboot --limit NODES --batch N` (one
batch of all of them: drain, look for jobs, reboot, wait until back, their health check, over SSH), each start to
end; medians of --repeat. The difference is what the roll adds to a batch's reboot. The test cluster's reboot is a
restart of slurmd (a container cannot reboot its kernel): a real node's firmware and kernel add minutes to both
figures alike. On a grown cluster (benchmarks/scale.py, testbed/grow.sh) give its inventory.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLUSTERFORGE = str(REPO / ".venv" / "bin" / "clusterforge")
INVENTORY = str(REPO / "inventories" / "vagrant.py")


def on_ctl(command: str) -> str:
    return subprocess.run(["bash", str(REPO / "testbed" / "ssh.sh"), "ctl", command], check=True, text=True,
                          capture_output=True, timeout=300).stdout


def env() -> dict[str, str]:
    exports = subprocess.run(["bash", str(REPO / "testbed" / "env.sh")], check=True, text=True,
                             capture_output=True).stdout
    return dict(os.environ, **dict(re.findall(r"(\w+)=(\S+)", exports)))


def shown(nodes: str) -> list[tuple[str, str]]:
    """Each node's (State, BootTime)."""
    return [(re.search(r"State=(\S+)", line).group(1), re.search(r"BootTime=(\S+)", line).group(1))
            for line in on_ctl(f"scontrol show node -o {nodes}").splitlines() if line.strip()]


def back(nodes: str, requested: str) -> bool:
    return all("REBOOT" not in state and "DRAIN" not in state and state.startswith("IDLE") and boot >= requested
               for state, boot in shown(nodes))


def bare_reboot(nodes: str) -> float:
    start = time.monotonic()
    # Never in the second of a node's last boot, as the roll does (roll/run.py says why): Slurm would take that
    # boot for this one and leave the node REBOOT_ISSUED.
    while True:
        requested = on_ctl("date +%Y-%m-%dT%H:%M:%S").strip()
        if all(boot < requested for _, boot in shown(nodes)):
            break
        time.sleep(0.2)
    on_ctl(f"scontrol reboot ASAP nextstate=resume {nodes}")
    while not back(nodes, requested):
        time.sleep(0.2)
    return time.monotonic() - start


def rolled(environment: dict[str, str], nodes: str, count: int, inventory: str) -> float:
    start = time.monotonic()
    subprocess.run([CLUSTERFORGE, "roll", "--reboot", "--limit", nodes, "--batch", str(count), inventory],
                   check=True, env=environment, capture_output=True, timeout=600)
    return time.monotonic() - start


def _runs(seconds: list[float]) -> str:
    return ", ".join(f"{each:.1f}" for each in seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nodes", default="gpu01", help="a hostlist of compute nodes, rebooted together")
    parser.add_argument("--inventory", default=INVENTORY)
    args = parser.parse_args()
    count = len(on_ctl(f"scontrol show hostnames {args.nodes}").split())
    environment = env()
    bare, roll = [], []
    for _ in range(args.repeat):
        bare.append(bare_reboot(args.nodes))
        roll.append(rolled(environment, args.nodes, count, args.inventory))
    print(f"{count} node(s) ({args.nodes}, no job), median of {args.repeat}:")
    print(f"  bare reboot through Slurm      {statistics.median(bare):6.1f} s   runs {_runs(bare)}")
    print(f"  clusterforge roll, one batch   {statistics.median(roll):6.1f} s   runs {_runs(roll)}")
    print(f"  what the roll adds             {statistics.median(roll) - statistics.median(bare):6.1f} s")


if __name__ == "__main__":
    main()
