"""What the test cluster's scripts do on the machine they set up, run against stand-ins: that the packages
testbed/up.sh installs are installed on a machine whose package lists are stale, as a fresh machine's are, and that
a `vagrant up` which crashes is tried again and its crash reported by what it says first.

The stand-in apt-get behaves as Debian's does with stale lists: it refuses to install until the lists are updated.
The stand-in vagrant dies of SIGABRT after a Ruby crash report, as Vagrant's Ruby did on a CI machine; the stand-in
LXC tools list containers and record what is asked of them. Nothing on this machine is installed or changed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

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


# Dies as Ruby does on a [BUG]: the report (its head, then pages of memory maps) on stderr, then abort().
VAGRANT = """#!/bin/sh
echo "vagrant $*" >> "$CALLS"
crashes=$(cat "$CRASHES"); [ "$crashes" -gt 0 ] || { echo "machines up"; exit 0; }
echo $((crashes - 1)) > "$CRASHES"
echo "/usr/lib/ruby/vendor_ruby/vagrant/batch_action.rb:86: [BUG] Segmentation fault at 0x0000000000000010" >&2
for i in $(seq 300); do echo "7f9d7797e000-7f9d77980000 rw-p 00000000 00:00 0" >&2; done
ulimit -c 0; kill -ABRT $$
"""
RECORDING = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CALLS"
"""


@pytest.fixture
def lxc_host(tmp_path):
    """Stand-ins for vagrant and LXC's tools, over four containers: cf-ctl, which Vagrant knows; cf-gpu01, which it
    died creating; cf-gpu09, a clone testbed/grow.sh made outside Vagrant; web, which is not the testbed's."""
    bin_dir, lxcpath, dot = tmp_path / "bin", tmp_path / "lxc", tmp_path / "dot"
    bin_dir.mkdir()
    tools = {"vagrant": VAGRANT, "lxc-ls": "#!/bin/sh\necho cf-ctl cf-gpu01 cf-gpu09 web\n",
             "lxc-config": f"#!/bin/sh\necho {lxcpath}\n", "lxc-stop": RECORDING, "lxc-destroy": RECORDING}
    for name, text in tools.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    for container, rootfs in {"cf-gpu01": "dir:/x/rootfs", "cf-gpu09": "overlay:/a:/b"}.items():
        (lxcpath / container).mkdir(parents=True)
        (lxcpath / container / "config").write_text(f"lxc.rootfs.path = {rootfs}\n")
    (dot / "machines" / "ctl" / "lxc").mkdir(parents=True)
    (dot / "machines" / "ctl" / "lxc" / "id").write_text("cf-ctl")
    (tmp_path / "state").mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls"),
           "CRASHES": str(tmp_path / "crashes"), "VAGRANT_DOTFILE_PATH": str(dot),
           "CLUSTERFORGE_TESTBED_STATE": str(tmp_path / "state"), "CLUSTERFORGE_TESTBED_CACHE": str(tmp_path)}

    def vagrant_up(crashes: int, *machines: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "crashes").write_text(str(crashes))
        return subprocess.run(["bash", "-c", f"source {REPO / 'testbed' / 'lib.sh'}; vagrant_up \"$@\"", "up",
                               *machines], env=env, capture_output=True, text=True, timeout=60, check=False)

    return vagrant_up, tmp_path / "calls"


def test_a_vagrant_up_that_crashes_is_tried_again_one_machine_at_a_time_without_the_container_it_lost(lxc_host):
    vagrant_up, calls = lxc_host
    done = vagrant_up(1, "ctl", "gpu01")
    assert done.returncode == 0, done.stderr
    assert "machines up" in done.stdout
    assert calls.read_text().splitlines() == [
        "vagrant up --provider=lxc ctl gpu01",
        "lxc-stop -k -n cf-gpu01", "lxc-destroy -n cf-gpu01",
        "vagrant up --no-parallel --provider=lxc ctl gpu01"]
    assert "vagrant up died of signal 6; its report begins:" in done.stderr
    assert "[BUG] Segmentation fault at 0x0000000000000010" in done.stderr


def test_a_vagrant_up_that_crashes_twice_fails_and_its_report_ends_with_what_the_crash_said_first(lxc_host):
    vagrant_up, calls = lxc_host
    done = vagrant_up(2)
    assert done.returncode == 128 + 6
    assert calls.read_text().splitlines()[-1] == "vagrant up --no-parallel --provider=lxc"
    # A caller that keeps only the tail of stderr (the e2e tests keep 4,000 characters) still sees the [BUG] line.
    assert "[BUG] Segmentation fault" in done.stderr[-4000:]
    assert done.stderr.count("vagrant up died of signal 6") == 2


def test_a_vagrant_up_that_fails_without_crashing_is_not_tried_again(lxc_host, tmp_path):
    vagrant_up, calls = lxc_host
    (tmp_path / "bin" / "vagrant").write_text("#!/bin/sh\necho \"vagrant $*\" >> \"$CALLS\"\n"
                                               "echo \"The box 'local/bookworm' could not be found.\" >&2; exit 1\n")
    done = vagrant_up(0)
    assert done.returncode == 1
    assert calls.read_text().splitlines() == ["vagrant up --provider=lxc"]
    assert "The box 'local/bookworm' could not be found." in done.stderr
