"""Enroot and Pyxis through the whole deploy on simulated hosts: the controller builds each once, the other hosts
copy the result, a wrong checksum stops the run before any host is touched, a new Slurm release rebuilds Pyxis, and
a converged cluster gets no command. The real build and `srun --container-image` are tests/e2e's business."""

from __future__ import annotations

import hashlib
import re

import pytest
from deploy.fakedeploy import SimCluster, dump
from deploy.simhost import Sim

from clusterforge.roles.containers import apparmor
from clusterforge.engine.state import State

ALL = ("ctl", "gpu01", "gpu02", "gpu03", "gpu04", "login1")
NODES = ("gpu01", "gpu02", "gpu03", "gpu04")
LIBRARY = "/usr/local/lib/clusterforge/pyxis-0.24.0-slurm-{release}/spank_pyxis.so"
PLUGSTACK = "/etc/slurm/plugstack.conf.d/pyxis.conf"


def artifacts(directory, enroot_as: str = "source", enroot_sha: str | None = None) -> str:
    directory.mkdir(exist_ok=True)
    files = {"enroot-4.1.2.tar.gz": b"enroot source", "enroot_4.1.2-1_amd64.deb": b"enroot package",
             "pyxis-0.24.0.tar.gz": b"pyxis source"}
    sha = {}
    for name, data in files.items():
        (directory / name).write_bytes(data)
        sha[name] = hashlib.sha256(data).hexdigest()
    enroot_file = "enroot-4.1.2.tar.gz" if enroot_as == "source" else "enroot_4.1.2-1_amd64.deb"
    return (f'containers=Containers(artifact_dir="{directory}", '
            f'enroot=Enroot(version="4.1.2", {enroot_as}=Artifact(source="{enroot_file}", '
            f'sha256="{enroot_sha or sha[enroot_file]}"), hooks=("slurm-pmi",)), '
            f'pyxis=Pyxis(version="0.24.0", source=Artifact(source="pyxis-0.24.0.tar.gz", '
            f'sha256="{sha["pyxis-0.24.0.tar.gz"]}")))')


def builds(run) -> list[str]:
    return [f"{h} {'pyxis' if 'make -C' in c else 'enroot'}" for h, c in run.order
            if (" make " in c or "make deb" in c) and "apt-get install" not in c]  # not make, the package


@pytest.fixture
def sim(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=artifacts(tmp_path / "artifacts"))
    first = cluster.deploy()
    assert first.returncode == 0, dump(first)
    cluster.first = first
    return cluster


def test_the_controller_builds_once_and_every_host_gets_what_it_needs(sim):
    first = sim.first
    assert builds(first) == ["ctl enroot", "ctl pyxis"], "Enroot's build is started first, Pyxis' made meanwhile"
    library = LIBRARY.format(release="22.05")
    sims = first.sims
    assert all(library in sims[h].files for h in ALL), "Pyxis on every Slurm host, login and controller included"
    assert sims["ctl"].content(PLUGSTACK).decode().splitlines()[-1].startswith(f"required {library} ")
    for node in NODES:
        assert sims[node].versions["enroot"] == "4.1.2-1"
        assert "/etc/enroot/enroot.conf.d/90-clusterforge.conf" in sims[node].files
        assert sims[node].dirs["/run/enroot"]["mode"] == sims[node].dirs["/tmp/enroot-data"]["mode"] == "1777"
        assert "/etc/enroot/hooks.d/50-slurm-pmi.sh" in sims[node].files
        assert "/etc/enroot/hooks.d/50-sharp.sh" not in sims[node].files
    assert "enroot" not in sims["login1"].packages and "enroot" not in sims["ctl"].packages
    installs = [c for h, c in first.order if h == "ctl" and "apt-get install" in c]
    assert len(installs) == 1 and all(p in installs[0] for p in ("slurmctld", "libslurm-dev", "debhelper")), \
        "the build packages come in the controller's one apt transaction"
    # The build happened before any host copied its result, and before the plugstack line named it.
    order = [f"{h} {c}" for h, c in first.order]
    built = next(i for i, e in enumerate(order) if e.startswith("ctl") and "make -C" in e)
    assert all(built < i for i, e in enumerate(order) if e.startswith("gpu01 chmod 0755 " + library))
    assert built < order.index(f"gpu01 upload {PLUGSTACK}")
    # Enroot's build runs in the background from before Pyxis' until the nodes need its package, after the daemons.
    started = next(i for i, e in enumerate(order) if e.startswith("ctl") and "make deb" in e)
    assert "systemd-run --quiet --collect --unit=clusterforge-enroot-build" in order[started]
    collected = next(i for i, e in enumerate(order)
                     if e.startswith("ctl [ -f /var/cache/clusterforge/artifacts/enroot"))
    slurmd = next(i for i, e in enumerate(order) if e.startswith("gpu01 systemctl start slurmd"))
    copied = [i for i, e in enumerate(order) if e.startswith("gpu0") and "apt-get install" in e and "enroot_4.1.2" in e]
    assert started < built < slurmd < collected < min(copied) and len(copied) == len(NODES)

    again = sim.deploy()
    assert again.returncode == 0, dump(again)
    assert {h: s.events for h, s in again.sims.items() if s.events} == {} and again.operations() == []


def test_a_wrong_checksum_stops_the_run_before_any_host_is_touched(tmp_path):
    wrong = "1" * 64
    cluster = SimCluster(tmp_path / "sim", extra=artifacts(tmp_path / "artifacts", enroot_sha=wrong))
    run = cluster.deploy()
    assert run.returncode != 0
    actual = hashlib.sha256(b"enroot source").hexdigest()
    assert f"artifact enroot-4.1.2.tar.gz ({tmp_path / 'artifacts'}/enroot-4.1.2.tar.gz) has sha256 {actual}" \
        in run.output and f"pins {wrong}" in run.output, run.output[-3000:]
    assert {h: s.events for h, s in run.sims.items() if s.events} == {}


def test_a_placeholder_checksum_stops_pyinfras_own_run_at_the_inventory(tmp_path):
    # 64 zeros: the starter's placeholder digest, refused by host_groups before pyinfra connects (model/placeholders.py).
    cluster = SimCluster(tmp_path / "sim", extra=artifacts(tmp_path / "artifacts", enroot_sha="0" * 64))
    run = cluster.deploy()
    assert run.returncode != 0
    assert ("containers.enroot.source.sha256: a placeholder (64 zeros): take enroot-4.1.2.tar.gz once and pin what "
            "`sha256sum enroot-4.1.2.tar.gz` prints") in run.output, run.output[-3000:]
    assert {h: s.events for h, s in run.sims.items() if s.events} == {}


def test_a_missing_checksum_is_an_inventory_error(tmp_path):
    extra = re.sub(r', sha256="[0-9a-f]+"', "", artifacts(tmp_path / "artifacts"), count=1)
    run = SimCluster(tmp_path / "sim", extra=extra).deploy()
    assert run.returncode != 0 and "sha256" in run.output and "Field required" in run.output, run.output[-2000:]
    assert not run.sims or all(not s.events for s in run.sims.values())


def test_a_new_node_copies_pyxis_and_enroot_without_a_build(sim):
    sim.set_inventory("22.05", "munge", artifacts(sim.directory.parent / "artifacts").replace(
        "containers=", 'nodes=(Nodes("gpu[01-05]", address="10.9.1.[1-5]", profile="gpu", leaf="leaf1"),), '
        "containers=", 1))
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    assert builds(run) == []
    assert run.sims["gpu05"].versions["enroot"] == "4.1.2-1"
    assert LIBRARY.format(release="22.05") in run.sims["gpu05"].files


def test_a_new_slurm_release_rebuilds_pyxis_and_every_host_moves_to_it(sim):
    for name in ALL:  # the hosts were upgraded to Slurm 24.11 and the inventory says so
        path = sim.directory / f"{name}.json"
        host = Sim.load(path)
        host.versions = {k: ("24.11.5-1" if k.startswith(("slurm", "libslurm")) else v)
                         for k, v in host.versions.items()}
        host.save(path)
    sim.set_inventory("24.11", "munge", artifacts(sim.directory.parent / "artifacts"))
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    assert builds(run) == ["ctl pyxis"]
    new = LIBRARY.format(release="24.11")
    assert all(new in run.sims[h].files for h in ALL)
    assert new in run.sims["gpu02"].content(PLUGSTACK).decode()
    assert any(c == "scontrol reconfigure" for h, c in run.order if h == "ctl"), "24.11 applies a plugstack change "\
        "with a reconfigure"


def test_a_reboot_that_lost_the_shared_directories_makes_them_again(sim):
    path = sim.directory / "gpu03.json"
    host = Sim.load(path)
    del host.dirs["/run/enroot"]  # /run is a tmpfs
    host.save(path)
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    assert run.sims["gpu03"].events == ["systemd-tmpfiles --create /etc/tmpfiles.d/clusterforge-enroot.conf"]
    assert {h for h, s in run.sims.items() if s.events} == {"gpu03"}


def test_enroots_package_is_uploaded_not_built(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=artifacts(tmp_path / "artifacts", enroot_as="package"))
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    assert builds(run) == ["ctl pyxis"]
    assert all(run.sims[n].versions["enroot"] == "4.1.2-1" for n in NODES)
    for node in NODES:  # given as a package, Enroot comes in the node's one apt transaction
        installs = [c for h, c in run.order if h == node and "apt-get install" in c]
        assert len(installs) == 1 and "slurmd" in installs[0] and "/enroot_4.1.2_" in installs[0], installs


@pytest.mark.parametrize(("os", "action"), [
    (("ubuntu", "24.04"), "install"), (("ubuntu", "24.10"), "install"), (("ubuntu", "22.04"), "disable"),
    (("debian", "12"), None), (("debian", "13"), None)])
def test_enroots_apparmor_profile_only_where_ubuntu_needs_and_can_read_it(os, action):
    assert apparmor(State(os=os)) == action


def test_a_failed_build_is_made_again_by_the_next_run(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=artifacts(tmp_path / "artifacts"))
    broken = cluster.deploy(fail="ctl:make deb")  # the background build fails: the collection says so
    assert broken.returncode != 0
    assert "the build of Enroot 4.1.2 made no package (journalctl -u clusterforge-enroot-build)" in broken.output
    assert all("enroot" not in broken.sims[n].packages for n in NODES)
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    assert builds(run) == ["ctl enroot"], "Pyxis was built before the failure; only Enroot is built again"
    assert all(run.sims[n].versions["enroot"] == "4.1.2-1" for n in NODES)


def test_a_run_with_a_new_node_alone_uploads_the_kept_builds_and_without_them_needs_the_controller(sim):
    sim.set_inventory("22.05", "munge", artifacts(sim.directory.parent / "artifacts").replace(
        "containers=", 'nodes=(Nodes("gpu[01-05]", address="10.9.1.[1-5]", profile="gpu", leaf="leaf1"),), '
        "containers=", 1))
    kept = sim.directory / "cache" / "clusterforge" / "builds"
    moved = kept.rename(kept.with_name("elsewhere"))
    run = sim.deploy("--limit", "@fake/gpu05")
    assert run.returncode != 0
    assert "ctl, the controller, builds Pyxis and Enroot for the hosts that lack it, and is not in this run" \
        in run.output, run.output[-2000:]
    assert run.sims.get("gpu05") is None or not run.sims["gpu05"].events
    moved.rename(kept)
    # slurmctld learns the node first, in a run of its own: the new node's slurmd registers only with a slurmctld
    # that has it in its slurm.conf, and the deploy waits for that registration.
    assert sim.deploy("--limit", "@fake/ctl").returncode == 0
    run = sim.deploy("--limit", "@fake/gpu05")
    assert run.returncode == 0, dump(run)
    assert builds(run) == [] and run.sims["gpu05"].versions["enroot"] == "4.1.2-1"
    assert run.sims["gpu05"].content(LIBRARY.format(release="22.05")) == b"built " + LIBRARY.format(
        release="22.05").encode()


def test_hosts_running_another_slurm_release_than_the_inventory_are_refused(sim):
    path = sim.directory / "gpu02.json"
    host = Sim.load(path)
    host.versions["slurm-client"] = "24.11.5-1"  # upgraded by apt; the inventory still says 22.05
    host.save(path)
    run = sim.deploy()
    assert run.returncode != 0
    assert "has Slurm 24.11.5-1 installed, but the inventory says slurm_version='22.05'" in run.output, \
        run.output[-2000:]
    assert all(not s.events for s in run.sims.values())


def test_gpu_images_get_nvidia_container_cli_from_nvidias_repository(tmp_path):
    # No GPU and no access to NVIDIA's repository here: this checks what the deploy asks of the hosts, not that
    # nvidia-container-cli works.
    key = tmp_path / "artifacts" / "nvidia.gpg"
    extra = artifacts(tmp_path / "artifacts")
    key.write_bytes(b"a key")
    extra = extra[:-1] + (', nvidia_repository=AptRepository(url="https://nvidia.github.io/libnvidia-container/'
                          f'stable/deb/amd64", key=Artifact(source="nvidia.gpg", sha256="'
                          f'{hashlib.sha256(b"a key").hexdigest()}")))')
    cluster = SimCluster(tmp_path / "sim", extra=extra)
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    gpu = run.sims["gpu01"]
    assert gpu.content("/usr/share/keyrings/clusterforge-nvidia-container.gpg") == b"a key"
    assert gpu.content("/etc/apt/sources.list.d/clusterforge-nvidia-container.list").decode().splitlines()[-1] == (
        "deb [signed-by=/usr/share/keyrings/clusterforge-nvidia-container.gpg] "
        "https://nvidia.github.io/libnvidia-container/stable/deb/amd64 /")
    assert "libnvidia-container-tools" in gpu.packages and "libnvidia-container-tools" not in run.sims["ctl"].packages


def test_a_kept_build_serves_another_cluster_only_where_source_release_and_os_are_the_same(tmp_path):
    # Four clusters sharing one deploy machine's cache (roles/build_cache.py).
    cache = tmp_path / "cache"
    first = SimCluster(tmp_path / "first", extra=artifacts(tmp_path / "artifacts"), cache=cache)
    assert builds(first.deploy()) == ["ctl enroot", "ctl pyxis"]
    same = SimCluster(tmp_path / "same", extra=artifacts(tmp_path / "artifacts"), cache=cache)
    run = same.deploy()
    assert run.returncode == 0, dump(run)
    assert builds(run) == [] and "debhelper" not in run.sims["ctl"].packages, "nothing built, no build packages"
    for node in NODES:  # the kept build is at hand before the run: it comes in the node's one apt transaction
        installs = [c for h, c in run.order if h == node and "apt-get install" in c]
        assert len(installs) == 1 and "slurmd" in installs[0] and "/enroot_4.1.2_" in installs[0], installs
    library = LIBRARY.format(release="22.05")
    assert all(run.sims[h].content(library) == f"built {library}".encode() for h in ALL)
    assert all(run.sims[h].versions["enroot"] == "4.1.2-1" for h in NODES)

    other_source = tmp_path / "artifacts2"
    extra = artifacts(other_source)
    (other_source / "pyxis-0.24.0.tar.gz").write_bytes(b"pyxis source, patched")
    patched = hashlib.sha256(b"pyxis source, patched").hexdigest()
    extra = re.sub(r'(pyxis-0\.24\.0\.tar\.gz", sha256=")[0-9a-f]+', rf"\g<1>{patched}", extra)
    run = SimCluster(tmp_path / "patched", extra=extra, cache=cache).deploy()
    assert builds(run) == ["ctl pyxis"]
    # Pyxis alone: a C compiler, make and Slurm's headers, not build-essential nor Enroot's packaging tools.
    assert {"gcc", "make", "libc6-dev", "libslurm-dev"} <= set(run.sims["ctl"].packages)
    assert not {"build-essential", "debhelper"} & set(run.sims["ctl"].packages)

    # Enroot alone built (Pyxis kept): it gets the compiler too, which Pyxis' build packages used to bring.
    other_source = tmp_path / "artifacts3"
    extra = artifacts(other_source)
    (other_source / "enroot-4.1.2.tar.gz").write_bytes(b"enroot source, patched")
    patched = hashlib.sha256(b"enroot source, patched").hexdigest()
    extra = re.sub(r'(enroot-4\.1\.2\.tar\.gz", sha256=")[0-9a-f]+', rf"\g<1>{patched}", extra)
    run = SimCluster(tmp_path / "enroot", extra=extra, cache=cache).deploy()
    assert builds(run) == ["ctl enroot"]
    assert {"build-essential", "debhelper"} <= set(run.sims["ctl"].packages)

    newer = SimCluster(tmp_path / "newer", version="24.11", extra=artifacts(tmp_path / "artifacts"), cache=cache)
    for name in ALL:  # Debian 13's machines, with Debian 13's Slurm
        Sim(os="debian 13").save(tmp_path / "newer" / f"{name}.json")
    assert builds(newer.deploy()) == ["ctl enroot", "ctl pyxis"]


def test_a_kept_build_whose_bytes_changed_is_built_again(tmp_path):
    cache = tmp_path / "cache"
    assert builds(SimCluster(tmp_path / "first", extra=artifacts(tmp_path / "artifacts"), cache=cache).deploy()) == [
        "ctl enroot", "ctl pyxis"]
    pyxis = next((tmp_path / "cache" / "clusterforge" / "builds").glob("pyxis-*"))
    (pyxis / "product").write_bytes(b"a different library")
    assert builds(SimCluster(tmp_path / "second", extra=artifacts(tmp_path / "artifacts"), cache=cache).deploy()) == [
        "ctl pyxis"]
