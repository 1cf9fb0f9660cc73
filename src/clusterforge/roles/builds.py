"""The builds of Pyxis and Enroot from their sources, on the controller: whether this run makes them (decided once,
for the whole cluster, from the host states and the kept builds, roles/build_cache.py), the commands that make them,
and the packages the controller needs for them, which the packages step installs in the controller's one apt
transaction.

Enroot's build (most of it the musl libc Enroot builds for itself: half a minute of every core) runs in the
background, in a systemd unit of its own, from right after the controller's packages until the compute hosts need
its package, which is late in the deploy: pyinfra runs each operation on every host before the next, so a build run
as an operation holds every other host still for its length. A build still running from an interrupted run is
waited for, not started twice.
"""

from __future__ import annotations

import shlex

from ..errors import DeployError, for_pyinfra
from ..model import ValidCluster
from . import build_cache
from .build_cache import BuildInputs
from ..engine import ops
from ..engine.run import DeployRun
from ..engine.state import State
from ..engine.waits import Shown, bounded, shown, until

# Artifacts uploaded to a host, and what the controller builds from them.
ARTIFACT_DIR = "/var/cache/clusterforge/artifacts"
BUILD_DIR = "/var/cache/clusterforge/build"
# What building Pyxis needs (a C compiler, make, Slurm's headers: not build-essential, whose C++ compiler and Debian
# packaging tools it never uses), and what Enroot's `make deb` needs: each alone, since a kept build of the other
# (roles/build_cache.py), or Enroot given as a package, may spare it.
PYXIS_BUILD = ("gcc", "make", "libc6-dev", "libslurm-dev")
# util-linux-extra: Enroot's packaging renames its files with util-linux's rename.ul, which forky moved there from
# util-linux (Debian 12 and 13 carry the package too); without it `make deb` stops with "Command not found: rename".
ENROOT_BUILD = ("build-essential", "debhelper", "dh-make", "devscripts", "dh-apparmor", "autotools-dev", "fakeroot",
                "util-linux-extra")
BUILD_PACKAGES = tuple(dict.fromkeys(PYXIS_BUILD + ENROOT_BUILD))
BUILD_TIMEOUT_S = 1200  # Enroot's `make deb` takes 25-90 s on two cores; Pyxis' make 2 s
ENROOT_BUILD_UNIT = "clusterforge-enroot-build"  # its output: journalctl -u clusterforge-enroot-build
ENROOT_BUILD_ERRORS = f"{BUILD_DIR}/enroot-build.stderr"
# A build's product is staged under the name it always was: the build's commands are its kept build's key
# (build_cache.py), which another name would change, building again what the site has kept.
BUILT_STAGED = ".new"


def artifact_path(filename: str) -> str:
    return f"{ARTIFACT_DIR}/{filename}"


def enroot_package(valid: ValidCluster) -> str:
    """Where a compute host keeps the Enroot package it installs (and the controller the one it built)."""
    assert valid.containers is not None
    enroot = valid.containers.spec.enroot
    artifact = enroot.package or enroot.source
    assert artifact is not None
    return artifact_path(f"enroot_{enroot.version}_{artifact.sha256[:12]}.deb")


def has_enroot(valid: ValidCluster, found: State) -> bool:
    assert valid.containers is not None
    return found.packages.get("enroot", "").split("-")[0] == valid.containers.spec.enroot.version


def build_inputs(valid: ValidCluster, what: str, found: State) -> BuildInputs:
    """What a build of Pyxis or Enroot for a host like ``found`` is made from (roles/build_cache.py)."""
    assert valid.containers is not None
    spec = valid.containers.spec
    source = spec.pyxis.source if what == "pyxis" else spec.enroot.source
    assert source is not None
    commands = pyxis_build(valid) if what == "pyxis" else enroot_build(valid)
    return BuildInputs(what, source.sha256, commands, found.os, found.arch)


def cached(run: DeployRun, what: str, found: State) -> bytes | None:
    """The kept build for a host like ``found``, looked up once per run for each OS release and architecture."""
    return kept(run, build_inputs(run.valid, what, found))


def kept(run: DeployRun, inputs: BuildInputs) -> bytes | None:
    """The kept build of ``inputs``, read and checked once per run however many hosts get it."""
    return run.once(("kept build", inputs.key), lambda: build_cache.lookup(inputs))


def builds(run: DeployRun) -> tuple[bool, bool]:
    """Whether the controller builds Pyxis and Enroot in this run: where a host of the run lacks what the build
    makes, no build of the same inputs is kept (roles/build_cache.py), and the controller has not made it yet.
    Decided once per run, for the whole cluster."""
    return run.once("container builds", lambda: _builds(run))


def _builds(run: DeployRun) -> tuple[bool, bool]:
    valid = run.valid
    assert valid.containers is not None
    found = run.states
    builder = found.get(valid.controller.name)
    library = valid.containers.pyxis_library
    slurm_hosts = {m.name for m in valid.machines if m.runs_slurm}
    computes = {m.name for m in valid.machines if "compute" in m.groups}
    pyxis = any(library not in s.paths and cached(run, "pyxis", s) is None
                for name, s in found.items() if name in slurm_hosts)
    enroot = valid.containers.spec.enroot.source is not None and any(
        not has_enroot(valid, s) and enroot_package(valid) not in s.paths and cached(run, "enroot", s) is None
        for name, s in found.items() if name in computes)
    if builder is None:
        if pyxis or enroot:
            raise for_pyinfra(DeployError(
                f"{valid.controller.name}, the controller, builds Pyxis{' and Enroot' if enroot else ''} for the "
                "hosts that lack it, and is not in this run: run the deploy with it"))
        return False, False
    return pyxis and library not in builder.paths, enroot and enroot_package(valid) not in builder.paths


def refuse_other_architectures(run: DeployRun, pyxis: bool, enroot: bool) -> None:
    valid = run.valid
    found = run.states
    builder = found[valid.controller.name]
    need = [m.name for m in valid.machines if m.name in found and (
        (pyxis and m.runs_slurm) or (enroot and "compute" in m.groups and not has_enroot(valid, found[m.name])))]
    other = sorted(name for name in need if found[name].arch and found[name].arch != builder.arch)
    if other:
        raise for_pyinfra(DeployError(
            f"{', '.join(other)}: not {builder.arch} like the controller, which builds Pyxis and Enroot; build them "
            "on a host of that architecture, or give Enroot as a package for it"))


def _script(lines: list[str]) -> str:
    return "sh -c " + shlex.quote("set -e; " + "; ".join(lines))


def _unpack(tarball: str, into: str) -> list[str]:
    return [f"rm -rf {into}", f"mkdir -p {into}", f"tar -xzf {tarball} -C {into} --strip-components=1"]


def _make(directory: str, make: str) -> str:
    log = f"{directory}.log"
    return f"{make} > {log} 2>&1 || {{ tail -n 40 {log} >&2; exit 1; }}"


def pyxis_build(valid: ValidCluster) -> str:
    """Build Pyxis against this host's Slurm headers, which must be the inventory's release, into its
    release-named directory."""
    assert valid.containers is not None
    pyxis = valid.containers.spec.pyxis
    source = f"{BUILD_DIR}/pyxis-{pyxis.version}"
    library = valid.containers.pyxis_library
    check = (f"slurm=$(dpkg-query -W -f='${{Version}}' libslurm-dev | cut -d. -f1,2); "
             f"[ \"$slurm\" = {valid.version} ] || {{ echo \"libslurm-dev here is Slurm $slurm, the inventory says "
             f"{valid.version}\" >&2; exit 1; }}")
    lines = [check, *_unpack(artifact_path(pyxis.source.filename), source),
             _make(source, f"make -C {source} -j$(nproc)"),
             *ops.renamed_over(library, f"install -D -m 0755 {source}/spank_pyxis.so",
                               staged_as=library + BUILT_STAGED)]
    return bounded(_script(lines), BUILD_TIMEOUT_S, f"the build of Pyxis {pyxis.version}")


def enroot_build(valid: ValidCluster) -> str:
    """Enroot's `make deb` (outside any git work tree: its clean step runs git clean), the .deb kept where the
    compute hosts copy it from. (debhelper already runs make on every core: most of the build is the musl libc
    Enroot builds for itself.)"""
    assert valid.containers is not None
    enroot = valid.containers.spec.enroot
    assert enroot.source is not None
    source = f"{BUILD_DIR}/enroot-{enroot.version}/src"
    package = enroot_package(valid)
    made = f"{source}/dist/enroot_{enroot.version}-*_$(dpkg --print-architecture).deb"
    lines = [*_unpack(artifact_path(enroot.source.filename), source),
             _make(source, f"cd {source} && CPPFLAGS='-DALLOW_SPECULATION -DINHERIT_FDS' make deb"),
             f"ls {made} >/dev/null 2>&1 || {{ echo 'the source did not make Enroot {enroot.version}' >&2; exit 1; }}",
             *ops.renamed_over(package, f"cp {made}", staged_as=package + BUILT_STAGED)]
    return bounded(_script(lines), BUILD_TIMEOUT_S, f"the build of Enroot {enroot.version}")


def enroot_build_started(valid: ValidCluster) -> Shown:
    """Enroot's build started in the background (enroot_build_collected waits for it), niced, so that the deploy's
    own work on the controller comes first; what it says on stderr is kept for the collection to show."""
    assert valid.containers is not None
    version = valid.containers.spec.enroot.version
    script = f"{{ {enroot_build(valid)}; }} 2> {ENROOT_BUILD_ERRORS}"
    unit = ENROOT_BUILD_UNIT
    described = shlex.quote(f"clusterforge: the build of Enroot {version}")
    return shown(f"mkdir -p {BUILD_DIR} && {{ systemctl is-active --quiet {unit} || systemd-run --quiet --collect "
                 f"--unit={unit} --description={described} --nice=10 --setenv=HOME=/root "
                 f"/bin/sh -c {shlex.quote(script)}; }}",
                 f"start the build of Enroot {version} in the background (systemd unit {unit}, at most "
                 f"{BUILD_TIMEOUT_S} s)")


def enroot_build_collected(valid: ValidCluster) -> list[str]:
    """Wait until Enroot's background build ends; fail, with what it said, where it made no package."""
    assert valid.containers is not None
    version = valid.containers.spec.enroot.version
    failed = shlex.quote(f"the build of Enroot {version} made no package (journalctl -u {ENROOT_BUILD_UNIT})")
    return [until(f"! systemctl is-active --quiet {ENROOT_BUILD_UNIT}", "Enroot's build ends",
                  timeout_s=BUILD_TIMEOUT_S + 60),
            f"[ -f {enroot_package(valid)} ] || {{ cat {ENROOT_BUILD_ERRORS} >&2; echo {failed} >&2; exit 1; }}"]


def build_packages(run: DeployRun, machine: str) -> tuple[str, ...]:
    """What ``machine`` needs installed for this run's builds: the controller's, where it builds."""
    if run.valid.containers is None or machine != run.valid.controller.name:
        return ()
    pyxis, enroot = builds(run)
    return tuple(dict.fromkeys((PYXIS_BUILD if pyxis else ()) + (ENROOT_BUILD if enroot else ())))
