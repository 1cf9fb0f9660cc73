"""What the test cluster's scripts do on the machine they set up, run against stand-ins: that the packages
testbed/up.sh installs are installed on a machine whose package lists are stale, as a fresh machine's are, and that
a `vagrant up` which crashes is tried again and its crash reported by what it says first.

The stand-in apt-get behaves as Debian's does with stale lists: it refuses to install until the lists are updated.
The stand-in vagrant dies of SIGABRT after a Ruby crash report, as Vagrant's Ruby did on a CI machine; the stand-in
LXC tools list containers and record what is asked of them. Nothing on this machine is installed or changed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from needs import skip_or_fail
from ports import free_port

REPO = Path(__file__).resolve().parents[2]
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


# testbed/stack-repo.sh: the test cluster's apt repository of stand-ins with the names of NVIDIA's packages, built
# here with the real tools (apt-ftparchive, gpg; testbed/apt-packages.txt) and read by the real apt, gpgv and
# apt-cacher-ng. Their daemons and the driver's postinst are run with CLUSTERFORGE_TESTBED_ROOT, a prefix to every
# path they touch, so nothing of this machine's /run is read or written.
STACK_KEYRING = REPO / "testbed" / "stack-repo" / "keyring.gpg"
DRIVERS = ("550.163.01-1", "550.172.05-1")
DCGM4 = ("1:4.5.2-1", "1:4.5.3-1")
EXPORTERS = ("4.8.1-1", "4.8.2-1")
STACK_VERSIONS = {
    **{name: DRIVERS for name in ("cuda-drivers-550", "nvidia-driver-bin", "nvidia-fabricmanager-550",
                                  "nvidia-persistenced")},
    "datacenter-gpu-manager": ("1:3.3.8", "1:3.3.9"),
    **{name: DCGM4 for name in ("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary")},
    "datacenter-gpu-manager-exporter": EXPORTERS,
    **{name: ("1.17.3-1", "1.17.4-1") for name in ("nvidia-container-toolkit", "libnvidia-container-tools",
                                                   "libnvidia-container1")},
}


def _require(*tools: str) -> None:
    absent = [tool for tool in tools if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()]
    if absent:
        skip_or_fail(f"{', '.join(absent)} not installed (testbed/apt-packages.txt)")


def _build(out: Path, state: Path) -> subprocess.CompletedProcess[str]:
    _require("apt-ftparchive", "gpg", "gpgv", "dpkg-deb")
    env = {**os.environ, "CLUSTERFORGE_TESTBED_STATE": str(state)}
    done = subprocess.run(["bash", str(REPO / "testbed" / "stack-repo.sh"), str(out)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def stack_repo(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("stack") / "repo"
    _build(out, out.parent / "state")
    return out


def _stanzas(packages: Path) -> list[dict[str, str]]:
    return [dict(line.split(": ", 1) for line in block.splitlines() if line[:1] != " ")
            for block in packages.read_text().strip().split("\n\n")]


def _extract(repo: Path, name: str, version: str, into: Path) -> Path:
    deb = next(repo.glob(f"{name}_{version.split(':')[-1]}_*.deb"))
    subprocess.run(["dpkg-deb", "-R", str(deb), str(into)], check=True)
    return into


def test_the_stack_repository_has_two_versions_of_each_package_signed_by_the_committed_test_key(stack_repo, tmp_path):
    found = _stanzas(stack_repo / "Packages")
    versions: dict[str, list[str]] = {}
    for stanza in found:
        versions.setdefault(stanza["Package"], []).append(stanza["Version"])
        assert stanza["Description"].endswith("(clusterforge testbed stand-in)")
        assert (stack_repo / stanza["Filename"]).is_file()
    assert {name: tuple(sorted(found)) for name, found in versions.items()} == STACK_VERSIONS
    depends = {s["Version"]: s.get("Depends") for s in found if s["Package"] == "cuda-drivers-550"}
    assert depends == {version: f"nvidia-driver-bin (= {version})" for version in DRIVERS}
    # DCGM 4 as NVIDIA packages it: -proprietary needs -core of its version; -core ships DCGM 3's files, so it
    # takes DCGM 3's place; the exporter needs DCGM 4.
    fields = {(s["Package"], s["Version"]): s for s in found}
    for version in DCGM4:
        assert fields["datacenter-gpu-manager-4-proprietary", version]["Depends"] == \
            f"datacenter-gpu-manager-4-core (= {version})"
        core = fields["datacenter-gpu-manager-4-core", version]
        assert (core["Conflicts"], core["Replaces"], core.get("Depends")) == \
            ("datacenter-gpu-manager", "datacenter-gpu-manager", None)
    for version in EXPORTERS:
        assert fields["datacenter-gpu-manager-exporter", version]["Depends"] == "datacenter-gpu-manager-4-core"
    for signed in (["InRelease"], ["Release.gpg", "Release"]):
        check = subprocess.run(["gpgv", "--homedir", str(tmp_path), "--keyring", str(STACK_KEYRING),
                                *(str(stack_repo / f) for f in signed)], capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stderr


def _apt(stack_repo: Path, tmp_path: Path, prefs: str = "", status: str = "") -> dict[str, str]:
    """The environment of an apt that reads only the stack repository, with these preferences and dpkg status."""
    _require("apt-get", "apt-cache")
    (tmp_path / "lists" / "partial").mkdir(parents=True)
    (tmp_path / "prefs.d").mkdir()
    (tmp_path / "status").write_text(status)
    (tmp_path / "sources.list").write_text(f"deb [signed-by={STACK_KEYRING}] file:{stack_repo} /\n")
    (tmp_path / "prefs").write_text(prefs)
    # Nothing of this machine's apt: its state, sources, preferences and hooks are all elsewhere.
    (tmp_path / "apt.conf").write_text(
        "#clear APT::Update::Post-Invoke;\n#clear APT::Update::Post-Invoke-Success;\n"
        f'Dir::State "{tmp_path}";\nDir::State::lists "{tmp_path}/lists";\nDir::State::status "{tmp_path}/status";\n'
        f'Dir::Cache "{tmp_path}/cache";\nDir::Etc::sourcelist "{tmp_path}/sources.list";\n'
        f'Dir::Etc::sourceparts "{tmp_path}/none";\nDir::Etc::preferences "{tmp_path}/prefs";\n'
        f'Dir::Etc::preferencesparts "{tmp_path}/prefs.d";\nDebug::NoLocking "true";\nAPT::Sandbox::User "root";\n')
    env = {**os.environ, "APT_CONFIG": str(tmp_path / "apt.conf")}
    update = subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert update.returncode == 0 and "W:" not in update.stdout + update.stderr, update.stdout + update.stderr
    return env


def test_apt_reads_the_stack_repository_through_the_committed_keyring_and_a_pin_picks_the_older_driver(
        stack_repo, tmp_path):
    env = _apt(stack_repo, tmp_path, prefs="Package: cuda-drivers-550 nvidia-driver-bin\nPin: version 550.163.01-1\n"
                                           "Pin-Priority: 1001\n")
    policy = subprocess.run(["apt-cache", "policy", "cuda-drivers-550", "nvidia-driver-bin", "datacenter-gpu-manager",
                             "datacenter-gpu-manager-4-core", "datacenter-gpu-manager-exporter"],
                            env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    assert re.findall(r"Candidate: (\S+)", policy) == ["550.163.01-1", "550.163.01-1", "1:3.3.9", "1:4.5.3-1",
                                                        "4.8.2-1"]


def _simulate(env: dict[str, str], *packages: str) -> tuple[int, list[str], str]:
    """apt-get's simulated install: its status, what it would do ("Inst NAME VERSION", "Remv NAME VERSION") and
    what it said."""
    done = subprocess.run(["apt-get", "-s", "install", *packages], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    # "Inst NAME [OLD] (NEW ...": the version it installs; "Remv NAME [VERSION]".
    return done.returncode, [" ".join(m) for m in re.findall(r"^(Inst|Remv) (\S+) (?:\[\S+\] )?[(\[]([^\s\]]+)",
                                                             done.stdout, re.MULTILINE)], done.stdout


def test_apt_installs_dcgm_4_with_the_exporter_at_the_versions_asked_in_dcgm_3s_place_never_beside_it(
        stack_repo, tmp_path):
    # A machine with DCGM 3 installed, as a deploy that moves to DCGM 4 finds it.
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    env = _apt(stack_repo, tmp_path, status="Package: datacenter-gpu-manager\nStatus: install ok installed\n"
               f"Priority: optional\nSection: misc\nMaintainer: x <x@x.invalid>\nArchitecture: {arch}\n"
               "Version: 1:3.3.9\nDescription: DCGM 3\n")
    older = ("datacenter-gpu-manager-4-core=1:4.5.2-1", "datacenter-gpu-manager-4-proprietary=1:4.5.2-1",
             "datacenter-gpu-manager-exporter=4.8.1-1")
    assert _simulate(env, *older)[:2] == (0, [
        "Remv datacenter-gpu-manager 1:3.3.9", "Inst datacenter-gpu-manager-4-core 1:4.5.2-1",
        "Inst datacenter-gpu-manager-4-proprietary 1:4.5.2-1", "Inst datacenter-gpu-manager-exporter 4.8.1-1"])
    # -proprietary of one version with -core of another is refused, and so is DCGM 3 beside DCGM 4.
    mixed = _simulate(env, "datacenter-gpu-manager-4-core=1:4.5.3-1", "datacenter-gpu-manager-4-proprietary=1:4.5.2-1")
    assert mixed[0] == 100 and "Depends: datacenter-gpu-manager-4-core (= 1:4.5.2-1)" in mixed[2], mixed[2]
    both = _simulate(env, "datacenter-gpu-manager=1:3.3.9", "datacenter-gpu-manager-exporter")
    assert both[0] == 100 and "Conflicts: datacenter-gpu-manager" in both[2], both[2]


def test_a_second_build_changes_nothing_and_a_fresh_one_makes_the_same_packages(stack_repo, tmp_path):
    before = {f.name: (f.read_bytes(), f.stat().st_mtime_ns) for f in stack_repo.iterdir()}
    _build(stack_repo, tmp_path / "state")
    assert {f.name: (f.read_bytes(), f.stat().st_mtime_ns) for f in stack_repo.iterdir()} == before
    _build(tmp_path / "fresh", tmp_path / "state")
    same = [f.name for f in stack_repo.iterdir() if f.suffix == ".deb" or f.name in ("Packages", "Release")]
    assert {name: (tmp_path / "fresh" / name).read_bytes() for name in same} == \
        {name: before[name][0] for name in same}


@pytest.mark.parametrize(("name", "unit", "fails"), [
    ("nvidia-fabricmanager-550", "nvidia-fabricmanager.service", "fabricmanager-fails"),
    ("nvidia-persistenced", "nvidia-persistenced.service", "persistenced-fails")])
def test_a_stand_in_daemon_forks_as_nvidias_and_fails_at_once_while_its_fail_file_exists(
        stack_repo, tmp_path, name, unit, fails):
    pkg = _extract(stack_repo, name, DRIVERS[0], tmp_path / "pkg")
    text = (pkg / "usr/lib/systemd/system" / unit).read_text()
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert (fields["Type"], fields["WantedBy"]) == ("forking", "multi-user.target")
    program = pkg / fields["ExecStart"].split()[0].lstrip("/")
    root = tmp_path / "root"
    env = {**os.environ, "CLUSTERFORGE_TESTBED_ROOT": str(root)}
    (root / "run/clusterforge-testbed").mkdir(parents=True)
    (root / "run/clusterforge-testbed" / fails).touch()
    failed = subprocess.run([str(program), *fields["ExecStart"].split()[1:]], env=env, capture_output=True,
                            text=True, timeout=5, check=False)
    assert failed.returncode == 1 and fails in failed.stderr
    assert not (root / fields["PIDFile"].lstrip("/")).exists()
    (root / "run/clusterforge-testbed" / fails).unlink()
    started = subprocess.run([str(program)], env=env, capture_output=True, text=True, timeout=5, check=False)
    assert started.returncode == 0, started.stderr
    pid = int((root / fields["PIDFile"].lstrip("/")).read_text())
    try:
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"infinity"]
    finally:
        os.kill(pid, signal.SIGTERM)


def test_no_maintainer_script_starts_anything_and_only_the_driver_has_one(stack_repo, tmp_path):
    scripts = {}
    for deb in sorted(stack_repo.glob("*.deb")):
        pkg = tmp_path / deb.stem
        subprocess.run(["dpkg-deb", "-e", str(deb), str(pkg)], check=True)
        scripts[deb.stem.split("_")[0]] = sorted(p.name for p in pkg.iterdir() if p.name != "control")
        for script in pkg.iterdir():
            code = "\n".join(line for line in script.read_text().splitlines() if not line.startswith("#"))
            assert not re.search(r"systemctl|deb-systemd|invoke-rc\.d|\bservice\b|start-stop-daemon", code), script
    assert {name for name, found in scripts.items() if found} == {"nvidia-driver-bin"}
    assert scripts["nvidia-driver-bin"] == ["postinst"]


def test_a_driver_installed_on_a_running_machine_is_loaded_and_a_later_one_only_after_a_reboot(stack_repo, tmp_path):
    root = tmp_path / "root"
    env = {**os.environ, "CLUSTERFORGE_TESTBED_ROOT": str(root)}
    loaded = root / "run/clusterforge-testbed/kmod-version"
    for version, configure in ((DRIVERS[0], ["configure", ""]), (DRIVERS[1], ["configure", DRIVERS[0]])):
        pkg = _extract(stack_repo, "nvidia-driver-bin", version, tmp_path / version)
        (root / "usr/lib/clusterforge-testbed").mkdir(parents=True, exist_ok=True)
        shutil.copy(pkg / "usr/lib/clusterforge-testbed/driver-version", root / "usr/lib/clusterforge-testbed")
        subprocess.run(["sh", str(pkg / "DEBIAN/postinst"), *configure], env=env, check=True)
        assert loaded.read_text() == DRIVERS[0].rsplit("-", 1)[0] + "\n"
    # At boot /run is empty and the package's own unit (static, in multi-user.target.wants) says what is loaded.
    unit = (pkg / "usr/lib/systemd/system/clusterforge-testbed-kmod.service").read_text()
    assert "ConditionPathExists=!/run/clusterforge-testbed/kmod-version" in unit
    assert "cp /usr/lib/clusterforge-testbed/driver-version /run/clusterforge-testbed/kmod-version" in unit
    assert (pkg / "usr/lib/systemd/system/multi-user.target.wants/clusterforge-testbed-kmod.service").is_symlink()


def test_nvidia_container_cli_says_its_version_and_does_nothing_else(stack_repo, tmp_path):
    pkg = _extract(stack_repo, "libnvidia-container-tools", "1.17.4-1", tmp_path / "pkg")
    cli = str(pkg / "usr/bin/nvidia-container-cli")
    said = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True).stdout
    assert said.splitlines()[:2] == ["cli-version: 1.17.4", "lib-version: 1.17.4"]
    configure = subprocess.run([cli, "--user", "configure", "--no-cgroups", "/x"], capture_output=True, check=False)
    assert configure.returncode == 0


def _stop(process: subprocess.Popen) -> int:
    """Ends a process a test started, SIGTERM first: its exit status."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    return process.returncode


@pytest.mark.parametrize(("name", "version", "upstream"), [("datacenter-gpu-manager", "1:3.3.9", "3.3.9"),
                                                           ("datacenter-gpu-manager-4-core", DCGM4[1], "4.5.3")])
def test_dcgms_host_engine_runs_in_the_foreground_as_nvidias_and_fails_at_once_while_its_fail_file_exists(
        stack_repo, tmp_path, name, version, upstream):
    pkg = _extract(stack_repo, name, version, tmp_path / "pkg")
    text = (pkg / "usr/lib/systemd/system/nvidia-dcgm.service").read_text()
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert (fields["Type"], fields["ExecStart"], fields["WantedBy"]) == (
        "simple", "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm", "multi-user.target")
    program = [str(pkg / "usr/bin/nv-hostengine"), *fields["ExecStart"].split()[1:]]
    said = subprocess.run([program[0], "--version"], capture_output=True, text=True, timeout=5, check=True).stdout
    assert said == f"nv-hostengine {upstream} (clusterforge testbed stand-in)\n"
    root = tmp_path / "root"
    env = {**os.environ, "CLUSTERFORGE_TESTBED_ROOT": str(root)}
    (root / "run/clusterforge-testbed").mkdir(parents=True)
    (root / "run/clusterforge-testbed/dcgm-fails").touch()
    failed = subprocess.run(program, env=env, capture_output=True, text=True, timeout=5, check=False)
    assert failed.returncode == 1 and "dcgm-fails" in failed.stderr
    (root / "run/clusterforge-testbed/dcgm-fails").unlink()
    engine = subprocess.Popen(program, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 5   # runs on, in the foreground: exec sleep infinity, its own pid
        while Path(f"/proc/{engine.pid}/cmdline").read_bytes().split(b"\0")[:2] != [b"sleep", b"infinity"]:
            assert engine.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        _stop(engine)


def test_dcgm_4_core_ships_dcgm_3s_host_engine_and_unit(stack_repo, tmp_path):
    three = _extract(stack_repo, "datacenter-gpu-manager", "1:3.3.9", tmp_path / "3")
    four = _extract(stack_repo, "datacenter-gpu-manager-4-core", DCGM4[1], tmp_path / "4")
    files = sorted(str(f.relative_to(four)) for f in four.rglob("*") if f.is_file() and "DEBIAN" not in f.parts)
    assert files == ["usr/bin/nv-hostengine", "usr/lib/systemd/system/nvidia-dcgm.service"]
    for name in files:
        assert (four / name).read_text() == (three / name).read_text().replace("3.3.9", "4.5.3"), name
    proprietary = _extract(stack_repo, "datacenter-gpu-manager-4-proprietary", DCGM4[1], tmp_path / "p")
    assert [f.name for f in proprietary.iterdir()] == ["DEBIAN"]


# The DCGM exporter stand-in: NVIDIA's unit; a python3 /usr/bin/dcgm-exporter that serves Prometheus text.
EXPORTER_UNIT = "usr/lib/systemd/system/nvidia-dcgm-exporter.service"


@pytest.fixture
def dcgm_exporter(stack_repo, tmp_path):
    """The newer exporter package, extracted; a run of its dcgm-exporter with CLUSTERFORGE_TESTBED_ROOT=tmp_path
    and the environment given (None: unset), a process the fixture ends if the test did not."""
    pkg = _extract(stack_repo, "datacenter-gpu-manager-exporter", EXPORTERS[1], tmp_path / "pkg")
    started: list[subprocess.Popen] = []

    def env(**given: str | None) -> dict[str, str]:
        merged = {**os.environ, "CLUSTERFORGE_TESTBED_ROOT": str(tmp_path), **given}
        for name in ("DCGM_REMOTE_HOSTENGINE_INFO", "DCGM_EXPORTER_LISTEN"):
            if name not in given:
                merged.pop(name, None)
        return {name: value for name, value in merged.items() if value is not None}

    def run(*args: str, **given: str | None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(pkg / "usr/bin/dcgm-exporter"), *args], env=env(**given), capture_output=True,
                              text=True, timeout=10, check=False)

    def start(*args: str, **given: str | None) -> subprocess.Popen:
        process = subprocess.Popen([str(pkg / "usr/bin/dcgm-exporter"), *args], env=env(**given),
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(process)
        return process

    yield pkg, run, start
    for process in started:
        _stop(process)
        process.communicate(timeout=5)


def test_the_dcgm_exporter_says_its_version(dcgm_exporter):
    _, run, _ = dcgm_exporter
    done = run("--version")
    assert (done.returncode, done.stdout) == (0, "DCGM Exporter version 4.8.2 (clusterforge testbed stand-in)\n")


def test_the_dcgm_exporter_refuses_to_start_without_a_remote_host_engine(dcgm_exporter):
    pkg, run, _ = dcgm_exporter
    unit = (pkg / EXPORTER_UNIT).read_text()
    args = re.search(r"^ExecStart=/usr/bin/dcgm-exporter (.*)$", unit, re.MULTILINE)[1].split()
    for remote in (None, ""):   # unset, or set to nothing: no drop-in gave it
        done = run(*args, DCGM_REMOTE_HOSTENGINE_INFO=remote, DCGM_EXPORTER_LISTEN=f"127.0.0.1:{free_port()}")
        assert done.returncode == 1 and "DCGM_REMOTE_HOSTENGINE_INFO" in done.stderr, done.stderr


def test_the_dcgm_exporter_fails_at_once_while_its_fail_file_exists(dcgm_exporter, tmp_path):
    _, run, _ = dcgm_exporter
    (tmp_path / "run/clusterforge-testbed").mkdir(parents=True)
    (tmp_path / "run/clusterforge-testbed/dcgm-exporter-fails").touch()
    done = run(DCGM_REMOTE_HOSTENGINE_INFO="localhost:5555", DCGM_EXPORTER_LISTEN=f"127.0.0.1:{free_port()}")
    assert done.returncode == 1 and "dcgm-exporter-fails" in done.stderr, done.stderr


def _scrape(process: subprocess.Popen, url: str) -> str:
    """What url serves, asked until the process listens (5 s at most)."""
    deadline = time.monotonic() + 5
    while True:
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=5) as got:
                assert got.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                return got.read().decode()
        except OSError:
            assert process.poll() is None, process.communicate(timeout=5)
            assert time.monotonic() < deadline, f"{url} not served within 5 s"
            time.sleep(0.05)


@pytest.mark.parametrize("host", ["127.0.0.1", ""])   # "" as the default, ":9400": every address
def test_the_dcgm_exporter_serves_a_gpu_temperature_for_each_gpu_device_and_ends_on_sigterm(dcgm_exporter, tmp_path,
                                                                                             host):
    _, _, start = dcgm_exporter
    (tmp_path / "dev").mkdir()
    for device in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-caps"):
        (tmp_path / "dev" / device).touch()
    port = free_port()
    exporter = start("-f", "/etc/dcgm-exporter/default-counters.csv", DCGM_REMOTE_HOSTENGINE_INFO="localhost:5555",
                     DCGM_EXPORTER_LISTEN=f"{host}:{port}")
    metrics = _scrape(exporter, f"http://127.0.0.1:{port}/metrics")
    hostname = socket.gethostname()
    assert [line for line in metrics.splitlines() if not line.startswith("#")] == [
        *(f'DCGM_FI_DEV_GPU_TEMP{{gpu="{n}",UUID="GPU-standin-{n}",device="nvidia{n}",Hostname="{hostname}"}} 40'
          for n in (0, 1)),
        'clusterforge_testbed_standin{remote="localhost:5555",version="4.8.2"} 1']
    assert "# TYPE DCGM_FI_DEV_GPU_TEMP gauge" in metrics.splitlines()
    if shutil.which("promtool"):
        lint = subprocess.run(["promtool", "check", "metrics"], input=metrics, capture_output=True, text=True,
                              timeout=10, check=False)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    (tmp_path / "dev/nvidia1").unlink()   # each scrape looks again
    assert 'gpu="1"' not in _scrape(exporter, f"http://127.0.0.1:{port}/metrics")
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(timeout=5) == 0


def test_the_dcgm_exporter_unit_is_nvidias_reading_dcgms_host_engine_and_its_counters_file(dcgm_exporter):
    pkg, _, _ = dcgm_exporter
    unit = (pkg / EXPORTER_UNIT).read_text()
    fields = dict(line.split("=", 1) for line in unit.splitlines() if "=" in line)
    assert {name: fields[name] for name in ("Wants", "After", "User", "ExecStart", "Restart", "WantedBy")} == {
        "Wants": "nvidia-dcgm.service", "After": "nvidia-dcgm.service", "User": "root",
        "ExecStart": "/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv", "Restart": "on-abort",
        "WantedBy": "multi-user.target"}
    assert fields["Description"].endswith("(clusterforge testbed stand-in)")
    assert (fields["StandardOutput"], fields["StandardError"]) == ("append:/var/log/dcgm-exporter.log",) * 2
    counters = (pkg / "etc/dcgm-exporter/default-counters.csv").read_text().splitlines()
    assert [line for line in counters if not line.startswith("#")] == [
        "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C)."]
    assert (pkg / "usr/bin/dcgm-exporter").read_text().startswith("#!/usr/bin/python3\n")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_apt_cacher_ng_serves_the_stack_repository_asked_directly_and_as_apts_proxy(stack_repo, tmp_path):
    _require("apt-cacher-ng")
    state = tmp_path / "state"
    _build(state / "acng-www" / "clusterforge-stack", state)   # where lib.sh's TB_STACK_REPO is for this state
    # apt-cacher-ng 3.7 cannot bind a port above 32767 ("Error resolving address for binding").
    port = next(p for p in range(23000 + os.getpid() % 5000, 32768) if _free(p))
    conf = tmp_path / "conf"
    # security.conf holds the admin page's password, readable by root and apt-cacher-ng only; the test needs none.
    shutil.copytree("/etc/apt-cacher-ng", conf, ignore=shutil.ignore_patterns("security.conf"))
    lines = subprocess.run(["bash", "-c", f"source {REPO / 'testbed' / 'lib.sh'}; stack_repo_acng_conf 127.0.0.1 {port}"],
                           env={**os.environ, "CLUSTERFORGE_TESTBED_STATE": str(state)},
                           capture_output=True, text=True, check=True).stdout
    with open(conf / "acng.conf", "a") as acng_conf:
        acng_conf.write(lines)
    for sub in ("cache", "log", "run"):
        (tmp_path / sub).mkdir()
    acng = subprocess.Popen([shutil.which("apt-cacher-ng") or "/usr/sbin/apt-cacher-ng", "-c", str(conf), "ForeGround=1", "BindAddress=127.0.0.1", f"Port={port}",
                             f"CacheDir={tmp_path}/cache", f"LogDir={tmp_path}/log",
                             f"SocketPath={tmp_path}/run/socket", f"PidFile={tmp_path}/run/pid"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/clusterforge-stack/"
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        proxied = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
        deb = next(stack_repo.glob("nvidia-driver-bin_550.172.05-1_*.deb")).name
        for opener in (direct, proxied):
            for name in ("InRelease", deb):
                with opener.open(url + name, timeout=10) as got:
                    assert got.read() == (state / "acng-www" / "clusterforge-stack" / name).read_bytes()
        assert not any(p.is_file() for p in (tmp_path / "cache").rglob("*stack*"))   # served, not cached
    finally:
        acng.terminate()
        acng.wait(timeout=10)


# testbed/nvidia-smi, testbed/ibstat, testbed/reboot: the test cluster's stand-ins for NVIDIA's and InfiniBand's
# tools and its RebootProgram, run here with CLUSTERFORGE_TESTBED_ROOT, a prefix to every path they read or write:
# under it the real captures (tests/check/fixtures, where the Vagrantfile binds them), the control files and the
# stand-in driver's version file.
FIXTURES = REPO / "tests" / "check" / "fixtures"
SMI_Q = FIXTURES / "h100-sxm-x8.nvidia-smi-q.txt"
OLD, NEW = (version.rsplit("-", 1)[0] for version in DRIVERS)


@pytest.fixture
def machine(tmp_path) -> Path:
    """A GPU machine's root as the testbed's scripts see it: the captures bind-mounted, an empty control dir."""
    (tmp_path / "usr/local/share").mkdir(parents=True)
    (tmp_path / "usr/local/share/clusterforge-testbed").symlink_to(FIXTURES)
    (tmp_path / "run/clusterforge-testbed").mkdir(parents=True)
    return tmp_path


def _run(root: Path, script: str, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **extra, "CLUSTERFORGE_TESTBED_ROOT": str(root)}
    return subprocess.run([str(REPO / "testbed" / script), *args], env=env, capture_output=True, text=True,
                          timeout=10, check=False)


def _driver(root: Path, installed: str | None, loaded: str | None) -> None:
    """The stand-in driver's files as stack-repo.sh's package writes them (a version and a newline); None: absent."""
    for path, version in ((root / "usr/lib/clusterforge-testbed/driver-version", installed),
                          (root / "run/clusterforge-testbed/kmod-version", loaded)):
        path.parent.mkdir(parents=True, exist_ok=True)
        if version is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(version + "\n")


def test_ibstat_replays_the_real_capture_byte_for_byte_and_lists_its_cas(machine):
    done = _run(machine, "ibstat")
    assert done.returncode == 0, done.stderr
    assert done.stdout.encode() == (FIXTURES / "h100.ibstat.txt").read_bytes()
    listed = _run(machine, "ibstat", "-l")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [*(f"mlx5_{n}" for n in (0, 1, 4, 5, 6, 7, 8, 9)), "mlx5_bond_0"]
    assert listed.stdout.splitlines() == re.findall(r"^CA '(.+)'$", done.stdout, re.MULTILINE)


@pytest.mark.parametrize("args", [("-p",), ("mlx5_0",), ("-l", "mlx5_0"), ("-s",)])
def test_ibstat_refuses_anything_else_with_a_one_line_usage_error(machine, args):
    done = _run(machine, "ibstat", *args)
    assert (done.returncode, done.stdout) == (1, "")
    assert len(done.stderr.splitlines()) == 1 and "usage" in done.stderr


@pytest.mark.parametrize(("installed", "loaded"), [(None, None), (OLD, None), (None, OLD), (OLD, OLD)])
def test_nvidia_smi_answers_as_before_where_the_loaded_driver_is_the_installed_one_or_none_is(
        machine, installed, loaded):
    _driver(machine, installed, loaded)
    (machine / "run/clusterforge-testbed/gpus-gone").write_text("3\n")
    query = _run(machine, "nvidia-smi", "-q")
    assert query.returncode == 0, query.stderr
    expected = SMI_Q.read_text().replace("Driver Version                            : 565.57.01",
                                         f"Driver Version                            : {loaded or '565.57.01'}")
    gpus = [m.start() for m in re.finditer(r"^GPU 0", expected, re.MULTILINE)]
    assert len(gpus) == 8
    assert query.stdout == expected[:gpus[3]] + expected[gpus[4]:]   # GPU 3 (minor 3) taken away
    versions = _run(machine, "nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
    assert versions.returncode == 0, versions.stderr
    assert versions.stdout == f"{loaded or '565.57.01'}\n" * 7
    topo = _run(machine, "nvidia-smi", "topo", "-m")
    assert topo.returncode == 0 and topo.stdout.startswith("\tGPU0\tGPU1"), topo.stderr


def test_nvidia_smi_says_which_driver_version_each_gpu_it_sees_runs(machine):
    _driver(machine, NEW, NEW)
    (machine / "run/clusterforge-testbed/gpus-gone").write_text("0\n6\n")
    for args, header in ((["--query-gpu=driver_version", "--format=csv,noheader"], []),
                         (["--format=csv,noheader", "--query-gpu=driver_version"], []),
                         (["--query-gpu=driver_version", "--format=csv"], ["driver_version"])):
        done = _run(machine, "nvidia-smi", *args)
        assert (done.returncode, done.stdout.splitlines()) == (0, [*header, *[NEW] * 6]), done.stderr
    for args in (["--query-gpu=name", "--format=csv"], ["--query-gpu=driver_version", "--format=xml"],
                 ["--query-gpu=driver_version"]):
        assert _run(machine, "nvidia-smi", *args).returncode == 2


@pytest.mark.parametrize("args", [("-q",), ("topo", "-m"), ("--query-gpu=driver_version", "--format=csv,noheader"),
                                  ()])
def test_nvidia_smi_fails_as_the_real_one_while_the_loaded_kernel_module_is_not_the_installed_driver(machine, args):
    _driver(machine, NEW, OLD)   # a driver moved under a running kernel module, before the reboot
    done = _run(machine, "nvidia-smi", *args)
    assert (done.returncode, done.stderr) == (18, "")
    assert done.stdout.splitlines() == ["Failed to initialize NVML: Driver/library version mismatch",
                                        f"NVML library version: {'.'.join(NEW.split('.')[:2])}"]


def test_nvidia_smi_still_hangs_while_its_hang_file_exists(machine):
    (machine / "run/clusterforge-testbed/smi-hangs").touch()
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([str(REPO / "testbed" / "nvidia-smi"), "-q"], env={
            **os.environ, "CLUSTERFORGE_TESTBED_ROOT": str(machine)}, capture_output=True, timeout=1, check=False)


# The stand-in systemctl records what it is asked; `restart` of the kmod unit runs the unit's ExecStart, as systemd
# does for a oneshot whose condition (no kmod-version) holds.
SYSTEMCTL = """#!/bin/sh
echo "systemctl $*" >> "$CALLS"
case "$*" in
  "restart clusterforge-testbed-kmod.service")
    [ -e "$FAILS" ] && exit 1
    mkdir -p "$CLUSTERFORGE_TESTBED_ROOT/run/clusterforge-testbed"
    cp "$CLUSTERFORGE_TESTBED_ROOT/usr/lib/clusterforge-testbed/driver-version" \
       "$CLUSTERFORGE_TESTBED_ROOT/run/clusterforge-testbed/kmod-version" ;;
esac
"""


# The restart comes seconds after the reboot request, through a transient timer: at once, Slurm could place the
# "boot" before the request and wait for another one until ResumeTimeout (testbed/reboot says why).
LATER = "systemd-run --quiet --on-active=3 --timer-property=AccuracySec=100ms"


@pytest.fixture
def rebooting(machine, tmp_path_factory):
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "systemctl").write_text(SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    (bin_dir / "systemd-run").write_text('#!/bin/sh\necho "systemd-run $*" >> "$CALLS"\n')
    (bin_dir / "systemd-run").chmod(0o755)
    calls = bin_dir / "calls"

    def reboot() -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        done = _run(machine, "reboot", PATH=f"{bin_dir}:{os.environ['PATH']}", CALLS=str(calls),
                    FAILS=str(bin_dir / "kmod-fails"))
        assert time.monotonic() - started < 2   # slurmd waits for it
        return done

    return reboot, calls, bin_dir


def test_the_reboot_program_loads_the_installed_driver_and_restarts_slurmd_without_waiting(machine, rebooting):
    reboot, calls, _ = rebooting
    _driver(machine, NEW, OLD)
    (machine / "usr/lib/systemd/system").mkdir(parents=True)
    (machine / "usr/lib/systemd/system/clusterforge-testbed-kmod.service").write_text("[Unit]\n")
    (machine / "run/clusterforge-testbed/gpus-gone").write_text("2\n")   # a fault of the hardware: stays
    assert _run(machine, "nvidia-smi", "-q").returncode == 18
    done = reboot()
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == ["systemctl restart clusterforge-testbed-kmod.service",
                                              f"{LATER} /usr/bin/systemctl restart slurmd"]
    assert (machine / "run/clusterforge-testbed/kmod-version").read_text() == NEW + "\n"
    assert (machine / "run/clusterforge-testbed/gpus-gone").read_text() == "2\n"
    versions = _run(machine, "nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
    assert (versions.returncode, versions.stdout) == (0, f"{NEW}\n" * 7)


def test_the_reboot_program_starts_a_new_boot_id_and_an_empty_kernel_log(machine, rebooting):
    reboot, _, _ = rebooting
    control = machine / "run/clusterforge-testbed"
    control.mkdir(parents=True, exist_ok=True)
    (control / "kernel-records").write_text("4,1,1000,-;NVRM: Xid (PCI:0000:5d:00): 79, GPU has fallen off the bus.\n")
    ids = []
    for _ in range(2):
        assert reboot().returncode == 0
        ids.append((control / "boot-id").read_text().strip())
        assert (control / "kernel-records").read_text() == ""
    assert len(set(ids)) == 2 and all(len(i) == 36 for i in ids)


def test_the_reboot_program_has_only_this_start_of_slurmd_count_as_a_boot(machine, rebooting):
    reboot, calls, _ = rebooting
    (machine / "lib/systemd/system").mkdir(parents=True)
    (machine / "lib/systemd/system/slurmd.service").write_text(
        "[Service]\nEnvironmentFile=-/etc/default/slurmd\nExecStart=/usr/sbin/slurmd -D -s $SLURMD_OPTIONS\n")
    done = reboot()
    assert done.returncode == 0, done.stderr
    dropin = machine / "run/systemd/system/slurmd.service.d/zz-clusterforge-testbed-boot.conf"
    # The start that reads the drop-in removes it: no timer of an earlier reboot can take it from this one.
    assert dropin.read_text() == (
        "[Service]\nExecStart=\nExecStart=/usr/sbin/slurmd -b -D -s $SLURMD_OPTIONS\n"
        f"ExecStartPost=/bin/sh -c 'rm -f {dropin}; systemd-run --quiet --on-active=5 /usr/bin/systemctl "
        "daemon-reload || :'\n")
    said = calls.read_text().splitlines()
    assert said == ["systemctl daemon-reload", f"{LATER} /usr/bin/systemctl restart slurmd"]


def test_the_reboot_program_without_a_stand_in_driver_only_restarts_slurmd(machine, rebooting):
    reboot, calls, _ = rebooting
    done = reboot()
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [f"{LATER} /usr/bin/systemctl restart slurmd"]
    assert not (machine / "run/clusterforge-testbed/kmod-version").exists()


def test_the_reboot_program_starts_the_gpu_daemons_again_with_slurmd_as_a_boot_does(machine, rebooting):
    reboot, calls, _ = rebooting
    units = machine / "usr/lib/systemd/system"
    units.mkdir(parents=True)
    for unit in ("nvidia-fabricmanager.service", "nvidia-persistenced.service"):   # no DCGM on this one
        (units / unit).write_text("[Unit]\n")
    done = reboot()
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [
        f"{LATER} /usr/bin/systemctl restart nvidia-persistenced.service nvidia-fabricmanager.service slurmd"]


def test_the_reboot_program_starts_dcgms_exporter_again_with_dcgm(machine, rebooting):
    reboot, calls, _ = rebooting
    units = machine / "usr/lib/systemd/system"
    units.mkdir(parents=True)
    for unit in ("nvidia-dcgm-exporter.service", "nvidia-dcgm.service", "nvidia-persistenced.service"):
        (units / unit).write_text("[Unit]\n")
    done = reboot()
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [f"{LATER} /usr/bin/systemctl restart nvidia-persistenced.service "
                                              "nvidia-dcgm.service nvidia-dcgm-exporter.service slurmd"]


def test_the_reboot_program_restarts_slurmd_even_where_the_driver_does_not_load(machine, rebooting):
    reboot, calls, bin_dir = rebooting
    _driver(machine, NEW, OLD)
    (machine / "usr/lib/systemd/system").mkdir(parents=True)
    (machine / "usr/lib/systemd/system/clusterforge-testbed-kmod.service").write_text("[Unit]\n")
    (bin_dir / "kmod-fails").touch()
    done = reboot()
    assert done.returncode == 0
    assert "clusterforge-testbed-kmod.service failed" in done.stderr
    assert calls.read_text().splitlines()[-1] == f"{LATER} /usr/bin/systemctl restart slurmd"
    assert not (machine / "run/clusterforge-testbed/kmod-version").exists()


def test_nvidia_smi_resets_a_gpu_and_refuses_one_in_use_as_the_real_one_does(machine):
    """-r -i BUS: the reset the health check runs for the repair loop; the words and exit statuses are those NVIDIA's
    own trackers quote (NVIDIA/NVSentinel#1690: "was successfully reset." exit 0; "could not be reset ... In use by
    another client" exit 255)."""
    control = machine / "run/clusterforge-testbed"
    done = _run(machine, "nvidia-smi", "-r", "-i", "00000000:3A:00.0")
    assert (done.returncode, done.stdout) == (0, "GPU 00000000:3A:00.0 was successfully reset.\n"), done.stderr
    assert (control / "resets").read_text() == "00000000:3A:00.0\n"
    minor = re.search(r"^GPU 00000000:3A:00.0\n(?:.*\n)*?    Minor Number\s+: (\d+)", SMI_Q.read_text(),
                      re.MULTILINE)[1]
    (control / "gpu-processes").write_text(f"{minor} 4242 python 30000\n")
    busy = _run(machine, "nvidia-smi", "-r", "-i", "00000000:3A:00.0")
    assert busy.returncode == 255
    assert busy.stdout.startswith("The following GPUs could not be reset:\n  GPU 00000000:3A:00.0: In use by another "
                                  "client\n\n1 device is currently being used")
    (control / "gpu-processes").unlink()
    (control / "reset-refused").touch()
    assert _run(machine, "nvidia-smi", "-r", "-i", "00000000:18:00.0").returncode == 255
    assert _run(machine, "nvidia-smi", "-r", "-i", "00000000:FF:00.0").returncode == 6
    assert (control / "resets").read_text() == "00000000:3A:00.0\n"


def test_a_reboot_that_hangs_powers_the_machine_off_and_changes_nothing_else(machine, rebooting):
    """Issue 48's node that does not come back: the machine goes off, and only its BMC brings it back."""
    reboot, calls, _ = rebooting
    _driver(machine, NEW, OLD)
    control = machine / "run/clusterforge-testbed"
    (control / "reboot-hangs").touch()
    (control / "boot-id").write_text("before\n")
    (control / "kernel-records").write_text("a record\n")
    done = reboot()
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [f"{LATER} /usr/bin/systemctl poweroff"]
    assert (control / "kmod-version").read_text() == OLD + "\n"
    assert (control / "boot-id").read_text() == "before\n"
    assert (control / "kernel-records").read_text() == "a record\n"


def test_no_script_run_with_pipefail_ends_a_pipeline_in_grep_q():
    # `grep -q` leaves at its first match; a writer that flushes line by line (`ip -o addr`) then dies of SIGPIPE and
    # pipefail fails the pipeline as if nothing matched: testbed/up.sh added a BMC address the bridge already had and
    # failed ("Address already assigned") in a CI run. `grep ... >/dev/null` reads to the end.
    offenders = []
    for script in sorted(REPO.glob("testbed/**/*.sh")) + sorted(REPO.glob("scripts/*.sh")) + [REPO / ".ci/run"]:
        text = script.read_text()
        pipefail = "pipefail" in text or 'lib.sh"' in text
        for number, line in enumerate(text.splitlines(), 1):
            if pipefail and re.search(r"\|\s*grep\s+-\w*q", line):
                offenders.append(f"{script.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
