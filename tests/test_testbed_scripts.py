"""What the test cluster's scripts do on the machine they set up, run against stand-ins: here, that the packages
testbed/up.sh installs are installed on a machine whose package lists are stale, as a fresh machine's are.

The stand-in apt-get behaves as Debian's does with stale lists: it refuses to install until the lists are updated.
Nothing on this machine is installed or changed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APT_GET = """#!/bin/sh
echo "apt-get $*" >> "$CALLS"
case "$1" in
  update) touch "$LISTS/fresh" ;;
  install) [ -e "$LISTS/fresh" ] || { echo "E: There were unauthenticated packages and -y was used without \
--allow-unauthenticated" >&2; exit 100; } ;;
esac
"""


def test_packages_are_installed_whatever_the_age_of_the_package_lists(tmp_path):
    bin_dir, lists, calls = tmp_path / "bin", tmp_path / "lists", tmp_path / "calls"
    bin_dir.mkdir()
    lists.mkdir()
    (bin_dir / "apt-get").write_text(APT_GET)
    (bin_dir / "apt-get").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls), "LISTS": str(lists),
           "CLUSTERFORGE_TESTBED_STATE": str(tmp_path / "state"), "CLUSTERFORGE_TESTBED_CACHE": str(tmp_path)}
    done = subprocess.run(["bash", "-c", f"source {REPO / 'testbed' / 'lib.sh'}; apt_install lxc vagrant"],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [
        "apt-get update -qq", "apt-get install -y -qq --no-install-recommends lxc vagrant"]
