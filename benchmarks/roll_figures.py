"""Rolling-maintenance figures on the running, deployed test cluster; prints them, asserts nothing (run as root).

    bash scripts/example.sh && python benchmarks/roll_figures.py [--repeat 3]

Interleaved, on gpu01 with no job: the bare reboot of one node through Slurm (`scontrol reboot ASAP
nextstate=resume gpu01`, then sinfo polled every 0.2 s until the node is idle with no REBOOT flag and a BootTime after
the request), against `clusterforge roll --reboot --limit gpu01` (one batch of one node: drain, look for jobs,
reboot, wait until back, its health check, over SSH), each start to end; medians of --repeat. The difference is
what the roll adds to a node's reboot. The test cluster's reboot is a restart of slurmd (a container cannot reboot
its kernel): a real node's firmware and kernel add minutes to both figures alike.
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


def back(requested: str) -> bool:
    shown = on_ctl("scontrol show node -o gpu01")
    state = re.search(r"State=(\S+)", shown).group(1)
    boot = re.search(r"BootTime=(\S+)", shown).group(1)
    return "REBOOT" not in state and "DRAIN" not in state and state.startswith("IDLE") and boot >= requested


def bare_reboot() -> float:
    start = time.monotonic()
    # Never in the second of the node's last boot, as the roll does (roll/run.py says why): Slurm would take that
    # boot for this one and leave the node REBOOT_ISSUED.
    while True:
        requested = on_ctl("date +%Y-%m-%dT%H:%M:%S").strip()
        if re.search(r"BootTime=(\S+)", on_ctl("scontrol show node -o gpu01")).group(1) < requested:
            break
        time.sleep(0.2)
    on_ctl("scontrol reboot ASAP nextstate=resume gpu01")
    while not back(requested):
        time.sleep(0.2)
    return time.monotonic() - start


def rolled(environment: dict[str, str]) -> float:
    start = time.monotonic()
    subprocess.run([CLUSTERFORGE, "roll", "--reboot", "--limit", "gpu01", INVENTORY], check=True, env=environment,
                   capture_output=True, timeout=600)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    environment = env()
    bare, roll = [], []
    for _ in range(repeat):
        bare.append(bare_reboot())
        roll.append(rolled(environment))
    print(f"one node (gpu01, no job), median of {repeat}:")
    print(f"  bare reboot through Slurm      {statistics.median(bare):6.1f} s   runs {', '.join(f'{b:.1f}' for b in bare)}")
    print(f"  clusterforge roll, one batch   {statistics.median(roll):6.1f} s   runs {', '.join(f'{r:.1f}' for r in roll)}")
    print(f"  what the roll adds             {statistics.median(roll) - statistics.median(bare):6.1f} s")


if __name__ == "__main__":
    main()
