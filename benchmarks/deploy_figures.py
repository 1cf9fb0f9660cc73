"""Deploy figures on the local Vagrant test cluster; prints them, asserts nothing (run as root).

    python benchmarks/deploy_figures.py [--dist bookworm|trixie] [--repeat 3]

Brings the test cluster up from nothing (testbed/up.sh), then times: the first deploy to bare machines, the
no-op re-run (median of --repeat), a bare `pyinfra ... exec -- true` against the same hosts (median) for
comparison, and adding a node (its `vagrant up`, and the deploy that makes it join). Tears everything down at
the end. The first deploy's time depends on how warm the apt-cacher-ng cache is; the figure says which it was.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STATE = Path(os.environ.get("CLUSTERFORGE_TESTBED_STATE", "/var/lib/clusterforge-testbed"))
CACHE = Path(os.environ.get("CLUSTERFORGE_TESTBED_CACHE", "/var/cache/clusterforge"))
PYINFRA = str(REPO / ".venv" / "bin" / "pyinfra")


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.monotonic()
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist", default="bookworm", choices=["bookworm", "trixie"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    inventory = REPO / "inventories" / "vagrant.py"
    env = dict(os.environ, CLUSTERFORGE_TESTBED_DIST=args.dist, CLUSTERFORGE_INVENTORY=str(inventory))
    cache_warm = any((CACHE / "apt-cacher-ng").glob("debrep/pool/main/s/slurm-wlm/*"))
    figures: list[tuple[str, float]] = []
    subprocess.run(["bash", "testbed/down.sh"], cwd=REPO, env=env, capture_output=True)
    try:
        figures.append(("testbed up (3 machines)", timed(["bash", "testbed/up.sh"], env)))
        env.update(VAULT_ADDR="http://127.0.0.1:8210", VAULT_TOKEN=(STATE / "vault-token").read_text().strip())
        deploy = [PYINFRA, "-y", str(inventory), "deploy/cluster.py"]
        figures.append((f"first deploy, bare machines (apt cache {'warm' if cache_warm else 'cold'})",
                        timed(deploy, env)))
        figures.append(("no-op re-run (median)", statistics.median(timed(deploy, env) for _ in range(args.repeat))))
        bare = [PYINFRA, "-y", str(inventory), "exec", "--", "true"]
        figures.append(("pyinfra exec -- true, same hosts (median)",
                        statistics.median(timed(bare, env) for _ in range(args.repeat))))
        with tempfile.TemporaryDirectory() as tmp:
            grown = Path(tmp) / "vagrant.py"
            grown.write_text(inventory.read_text().replace('Nodes("gpu[01-02]", address="10.77.0.[11-12]"',
                                                           'Nodes("gpu[01-03]", address="10.77.0.[11-13]"'))
            env["CLUSTERFORGE_INVENTORY"] = str(grown)
            figures.append(("add a node: vagrant up gpu03", timed(["bash", "testbed/up.sh", "gpu03"], env)))
            figures.append(("add a node: deploy until it is idle", timed([PYINFRA, "-y", str(grown),
                                                                          "deploy/cluster.py"], env)))
    finally:
        subprocess.run(["bash", "testbed/down.sh"], cwd=REPO, env=env, capture_output=True)
    print(f"Deploy figures, Debian {args.dist}, {os.cpu_count()} CPUs")
    for label, seconds in figures:
        print(f"  {label:<58} {seconds:7.1f} s")


if __name__ == "__main__":
    main()
