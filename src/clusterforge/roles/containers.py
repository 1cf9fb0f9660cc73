"""Containers for jobs: Pyxis on every Slurm host (srun, sbatch and salloc load it where they run, slurmd where
jobs run), Enroot on every compute host, from the inventory's checked artifacts (roles/artifacts.py).

What the inventory gives as source is built once, on the controller (a host of the cluster's Slurm release):
Pyxis into a directory named after its release and Slurm's, so a Slurm upgrade, which changes the inventory's
slurm_version, makes a new build and a new plugstack line, never a stale plugin or one overwritten under running
jobs; Enroot into a .deb where no package is given, in the background (roles/builds.py) until the Enroot step, which
comes late in the deploy because nothing before it needs Enroot. The other hosts copy the result from the
controller, through the machine that runs the deploy. Whether anything is built or copied is decided from the host
states read before the run: a host that has the files gets no command.
"""

from __future__ import annotations

import posixpath
import shlex
from io import BytesIO

from ..errors import DeployError, for_pyinfra
from ..model import ValidCluster
from ..model.containers import Artifact
from ..render import containers as render
from ..render.containers import APPARMOR_PROFILE, ENROOT_HOOKS, NVIDIA_KEYRING
from . import artifacts, build_cache
from ..engine import ops, remote
from .build_cache import BuildInputs
from .builds import (
    ARTIFACT_DIR,
    BUILD_PACKAGES,
    artifact_path,
    enroot_package,
    build_inputs,
    builds,
    cached,
    enroot_build_collected,
    enroot_build_started,
    has_enroot,
    kept,
    pyxis_build,
    refuse_other_architectures,
)
from ..engine.change import Change
from ..engine.apt import install_command
from ..engine.footprint import Footprint
from ..engine.run import DeployRun, Here, call, step
from ..engine.state import State

ENROOT_CONF = "/etc/enroot/enroot.conf.d/90-clusterforge.conf"
ENROOT_TMPFILES = "/etc/tmpfiles.d/clusterforge-enroot.conf"
ENROOT_HOOKS_DIR = "/etc/enroot/hooks.d"
ENROOT_APPARMOR = f"/etc/apparmor.d/{APPARMOR_PROFILE}"
NVIDIA_SOURCES = "/etc/apt/sources.list.d/clusterforge-nvidia-container.list"
KNOWN = ("enroot", "libnvidia-container-tools", *BUILD_PACKAGES)


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """With containers: the artifacts and what is built from them, Enroot's site files and hooks, the shared
    directories; the build packages and Enroot's own, whoever has them."""
    setup = valid.containers
    if setup is None:
        return Footprint(known=KNOWN)
    spec = setup.spec
    sources = [a for a in (spec.enroot.source, spec.pyxis.source) if a is not None]
    hooks = tuple(f"{ENROOT_HOOKS_DIR}/{name}" for name in ENROOT_HOOKS.values())
    texts = (ENROOT_CONF, ENROOT_TMPFILES, ENROOT_APPARMOR, NVIDIA_SOURCES, *hooks)
    return Footprint(paths=(ARTIFACT_DIR, setup.pyxis_library, enroot_package(valid),
                            *(artifact_path(a.filename) for a in sources), *texts[:4], NVIDIA_KEYRING, *hooks,
                            *sorted({d for paths in setup.paths.values() for d in paths.shared})),
                     shown=texts, known=KNOWN)


@step("Enroot's build", footprint=footprint)
def enroot_build(here: Here) -> None:
    """On the controller, where it builds Enroot: the source, and the build started in the background right after
    the controller's packages (which brought its compiler), so that it runs beside the rest of the deploy until the
    Enroot step, late, collects it (roles/builds.py)."""
    valid = here.valid
    if valid.containers is None or here.machine.name != valid.controller.name:
        return
    pyxis, enroot = builds(here.run)
    if not enroot:
        return
    refuse_other_architectures(here.run, pyxis, enroot)
    spec = valid.containers.spec
    _sources(here, spec.enroot.source)
    ops.commands(here, name=f"build Enroot {spec.enroot.version} in the background",
                 commands=[enroot_build_started(valid)], otherwise="Enroot is built")


@step("container builds", footprint=footprint)
def container_builds(here: Here) -> None:
    """On the controller, where a host of the run lacks it: Pyxis' source and build (its packages came with the
    controller's others, roles/builds.py). Every host then waits until Pyxis is built."""
    valid = here.valid
    if valid.containers is None:
        return
    pyxis, enroot = builds(here.run)
    if here.machine.name == valid.controller.name and pyxis:
        refuse_other_architectures(here.run, pyxis, enroot)
        spec = valid.containers.spec
        _sources(here, spec.pyxis.source, made=enroot)
        ops.commands(here, name=f"build Pyxis {spec.pyxis.version} for Slurm {valid.version}",
                     commands=[pyxis_build(valid)], otherwise="Pyxis is built")
        _kept(here, "pyxis", valid.containers.pyxis_library)
    ops.barrier(here, "the container builds are done")


def _sources(here: Here, artifact: Artifact | None, made: bool = False) -> None:
    """A source the controller builds from, uploaded where the build reads it (checked); ``made``: its directory
    was made by an earlier step of this run."""
    if not made:
        ops.directory(here, name=f"{ARTIFACT_DIR} exists", path=ARTIFACT_DIR)
    if artifact is not None:
        ops.file(here, name=f"{artifact.filename} (sha256 checked)", path=artifact_path(artifact.filename),
                 content=artifacts.content(here.run, artifact))


def _kept(here: Here, what: str, path: str) -> None:
    """What the controller built, kept on the machine that runs the deploy for later runs and clusters."""
    inputs = build_inputs(here.valid, what, here.state)
    here.apply(Change(f"{'Pyxis' if what == 'pyxis' else 'Enroot'}'s build kept on the machine that runs the deploy",
                      (call(_keep, origin=here.valid.controller.name, path=path, inputs=inputs),),
                      (f"{path}: kept for later runs (roles/build_cache.py)",)))


def _enroot_built(here: Here) -> None:
    """On the controller, where it builds Enroot: the build started by the container builds has ended and made
    the package, which is kept; every host waits for that."""
    valid = here.valid
    if here.machine.name == valid.controller.name and builds(here.run)[1]:
        ops.commands(here, name=f"Enroot {valid.containers.spec.enroot.version} is built",
                     commands=enroot_build_collected(valid), otherwise="Enroot is built")
        _kept(here, "enroot", enroot_package(valid))
    ops.barrier(here, "Enroot's build is done")


def _fetched(run: DeployRun, origin: str, path: str) -> bytes:
    """``path`` as ``origin`` has it (a build), read through the machine that runs the deploy once per run."""

    def fetch() -> bytes:
        buffer = BytesIO()
        source = run.host_of(origin)
        try:
            if source is not None and remote.get(source, path, buffer):
                return buffer.getvalue()
        except OSError:
            pass
        raise for_pyinfra(DeployError(f"{origin} has no {path} to copy: the build there failed or did not run"))

    return run.once(("copied", origin, path), fetch)


def _keep(here: Here, origin: str, path: str, inputs: BuildInputs) -> None:
    build_cache.keep(inputs, _fetched(here.run, origin, path))


def _copy(here: Here, origin: str, path: str, mode: str) -> None:
    """``path`` as ``origin`` has it, written here."""
    _install(here, _fetched(here.run, origin, path), path, mode)


def _from_cache(here: Here, inputs: BuildInputs, path: str, mode: str) -> None:
    data = kept(here.run, inputs)
    if data is None:
        raise for_pyinfra(DeployError(f"the kept build for {path} went from {inputs.entry} during the run: run the "
                                      "deploy again, which builds it"))
    _install(here, data, path, mode)


def _install(here: Here, data: bytes, path: str, mode: str) -> None:
    """Written under a temporary name and then renamed, so nothing sees half a file."""
    temporary = ops.staged(path)
    ok, _ = remote.run(here.host, f"mkdir -p {posixpath.dirname(path)}")
    if not ok or not remote.put(here.host, BytesIO(data), temporary):
        raise for_pyinfra(DeployError(f"{here.name}: cannot write {path}"))
    ok, output = remote.run(here.host, f"chmod {mode} {temporary} && mv -f {temporary} {path}")
    if not ok:
        raise for_pyinfra(DeployError(f"{here.name}: cannot install {path}: {output.stderr}"))


def _from_controller(here: Here, what: str, label: str, path: str, mode: str) -> None:
    """``path`` from the kept build where there is one (roles/build_cache.py), else from the controller, which
    built it."""
    origin = here.valid.controller.name
    if path not in here.state.paths and cached(here.run, what, here.state) is not None:
        inputs = build_inputs(here.valid, what, here.state)
        here.apply(Change(f"{label} from the kept build", (call(_from_cache, inputs=inputs, path=path, mode=mode),),
                          (f"{path}: uploaded from the build kept in {inputs.entry}",)))
        return
    acts = here.machine.name != origin and path not in here.state.paths
    here.apply(Change(f"{label} from {origin}", (call(_copy, origin=origin, path=path, mode=mode),)
                      if acts else (), (f"{path}: copied from {origin}, which builds it",)))


@step("Pyxis", footprint=footprint)
def pyxis(here: Here) -> None:
    """Pyxis' library on every Slurm host; its plugstack line is one of the Slurm files (roles/slurm_change.py)."""
    valid = here.valid
    if valid.containers is None or not here.machine.runs_slurm:
        return
    _from_controller(here, "pyxis", f"Pyxis {valid.containers.spec.pyxis.version} for Slurm {valid.version}",
                     valid.containers.pyxis_library, "0755")


def apparmor(found: State) -> str | None:
    """What Enroot's AppArmor profile needs on this host: 'install' on Ubuntu 24.04 and newer (which deny user
    namespaces to unconfined programs), 'disable' on older Ubuntu (whose AppArmor cannot parse the profile Enroot's
    package ships), None elsewhere."""
    name, version = found.os
    if name != "ubuntu":
        return None
    try:
        release = tuple(int(p) for p in version.split("."))
    except ValueError:
        return None
    return "install" if release >= (24, 4) else "disable"


def _early(here: Here) -> bool:
    """Enroot's package is at hand before the run for this compute host (a package given, or a kept build): it
    comes in the host's one apt transaction (roles/packages.py) rather than in an apt run of its own."""
    valid = here.valid
    if valid.containers is None or "compute" not in here.machine.groups or has_enroot(valid, here.state):
        return False
    return valid.containers.spec.enroot.package is not None or cached(here.run, "enroot", here.state) is not None


def _put_package(here: Here) -> None:
    """Enroot's package on this host: uploaded where it is given, else copied from the kept build or the controller."""
    spec = here.valid.containers.spec
    package = enroot_package(here.valid)
    if spec.enroot.package is not None:
        ops.directory(here, name=f"{ARTIFACT_DIR} exists", path=ARTIFACT_DIR)
        ops.file(here, name=f"{spec.enroot.package.filename} (sha256 checked)", path=package,
                 content=artifacts.content(here.run, spec.enroot.package))
    else:
        _from_controller(here, "enroot", f"Enroot {spec.enroot.version}", package, "0644")


def enroot_package_ready(here: Here) -> tuple[str, ...]:
    """For the packages step: where Enroot's package is at hand before the run, it is put on this compute host now
    and its path returned, to be installed with the host's other packages; () otherwise."""
    if not _early(here):
        return ()
    _put_package(here)
    return (enroot_package(here.valid),)


@step("Enroot", footprint=footprint)
def enroot(here: Here) -> None:
    """Enroot on every compute host, once the controller's build of it is done: the package (unless it came with
    the host's other packages), its site settings, the directories every user shares (made at every boot), the
    hooks the inventory enables."""
    valid = here.valid
    machine = here.machine
    if valid.containers is None:
        return
    _enroot_built(here)
    if "compute" not in machine.groups:
        return
    spec = valid.containers.spec
    found = here.state
    package = enroot_package(valid)
    early = _early(here)
    if not has_enroot(valid, found) and not early:
        _put_package(here)
    version = shlex.quote(spec.enroot.version)
    check = (f"dpkg-query -W -f='${{Version}}' enroot | grep -q '^'{version}'-' || {{ echo \"the package "
             f"{package} is not Enroot {spec.enroot.version}\" >&2; exit 1; }}")
    ops.commands(here, name=f"Enroot {spec.enroot.version}", otherwise=f"Enroot {spec.enroot.version} is installed",
                 commands=[] if has_enroot(valid, found) else [*([] if early else [install_command([package])]),
                                                               check])
    assert machine.node is not None
    paths = valid.containers.paths[machine.node.profile.name]
    ops.file(here, name=ENROOT_CONF, path=ENROOT_CONF, content=render.enroot_conf(valid, paths))
    tmpfiles = ops.file(here, name=ENROOT_TMPFILES, path=ENROOT_TMPFILES,
                        content=render.enroot_tmpfiles(valid, paths))
    stale = [d for d in paths.shared if (s := found.paths.get(d)) is None or s.mode != "1777"]
    ops.commands(here, name="the directories every user's Enroot shares",
                 commands=[f"systemd-tmpfiles --create {ENROOT_TMPFILES}"] if stale or tmpfiles.writes else [],
                 otherwise="they exist, 1777")
    for name, file in render.ENROOT_HOOKS.items():
        path = f"{ENROOT_HOOKS_DIR}/{file}"
        if name in spec.enroot.hooks:
            ops.commands(here, name=f"Enroot hook {file}", otherwise=f"{file} is enabled",
                         commands=[] if path in found.paths else [f"cp /usr/share/enroot/hooks.d/{file} {path}"])
        else:
            ops.absent(here, name=f"Enroot hook {file} is not enabled", path=path)
    action = apparmor(found)
    if action == "install":
        profile = ops.file(here, name=ENROOT_APPARMOR, path=ENROOT_APPARMOR, content=render.enroot_apparmor(valid))
        ops.commands(here, name="AppArmor loads Enroot's profile", otherwise="AppArmor has Enroot's profile",
                     commands=[f"apparmor_parser -r {ENROOT_APPARMOR}"] if profile.writes else [])
    elif action == "disable":
        ops.absent(here, name="no Enroot AppArmor profile: this AppArmor cannot read it", path=ENROOT_APPARMOR)
    _nvidia_container_cli(here)


def _nvidia_container_cli(here: Here) -> None:
    """GPU images need nvidia-container-cli (Enroot's NVIDIA hook), from NVIDIA's repository: Debian has none."""
    valid = here.valid
    assert valid.containers is not None
    repo = valid.containers.spec.nvidia_repository
    if repo is None:
        return
    ops.file(here, name=f"{NVIDIA_KEYRING} (sha256 checked)", path=NVIDIA_KEYRING,
             content=artifacts.content(here.run, repo.key))
    ops.file(here, name=NVIDIA_SOURCES, path=NVIDIA_SOURCES, content=render.nvidia_sources(valid))
    # The repository may be new in this run: its package lists are fetched before the install, whatever the age of
    # the others.
    ops.commands(here, name="libnvidia-container-tools", otherwise="libnvidia-container-tools is installed",
                 commands=[] if "libnvidia-container-tools" in here.state.packages else [
                     install_command(["libnvidia-container-tools"], refresh=True)])
