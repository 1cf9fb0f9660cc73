"""Containers for jobs: Pyxis on every Slurm host (srun, sbatch and salloc load it where they run, slurmd where
jobs run), Enroot on every compute host, from the inventory's checked artifacts (roles/artifacts.py).

What the inventory gives as source is built once, on the controller (a host of the cluster's Slurm release):
Pyxis into a directory named after its release and Slurm's, so a Slurm upgrade, which changes the inventory's
slurm_version, makes a new build and a new plugstack line, never a stale plugin or one overwritten under running
jobs; Enroot into a .deb where no package is given. The other hosts copy the result from the controller, through
the machine that runs the deploy. Whether anything is built or copied is decided from the host states read before
the run: a host that has the files gets no command.
"""

from __future__ import annotations

import posixpath
import shlex
from io import BytesIO

from pyinfra import host
from pyinfra.api import FunctionCommand, operation

from ..errors import DeployError, for_pyinfra
from ..model import ValidCluster
from ..render import containers as render
from . import artifacts, ops
from .managed import (
    ARTIFACT_DIR,
    BUILD_DIR,
    ENROOT_APPARMOR,
    ENROOT_BUILD,
    ENROOT_CONF,
    ENROOT_HOOKS_DIR,
    ENROOT_TMPFILES,
    NVIDIA_SOURCES,
    PYXIS_BUILD,
    artifact_path,
    enroot_package,
)
from .packages import APT_NETWORK, UPDATE_TIMEOUT_S, install_command, installed
from .rehearsal import step
from .run import host_of, once_per_run
from .state import State, host_state, states
from .waits import bounded

BUILD_TIMEOUT_S = 1200  # Enroot's `make deb` takes 35-90 s on two cores; Pyxis' make 2 s


def _valid() -> ValidCluster:
    return host.data.clusterforge


def has_enroot(valid: ValidCluster, found: State) -> bool:
    assert valid.containers is not None
    return found.packages.get("enroot", "").split("-")[0] == valid.containers.spec.enroot.version


def builds(valid: ValidCluster) -> tuple[bool, bool]:
    """Whether the controller builds Pyxis and Enroot in this run: where a host of the run lacks what the build
    makes and the controller has not made it yet. Decided once per run, for the whole cluster."""
    return once_per_run("container builds", lambda: _builds(valid))


def _builds(valid: ValidCluster) -> tuple[bool, bool]:
    assert valid.containers is not None
    found = states()
    builder = found.get(valid.controller.name)
    library = valid.containers.pyxis_library
    slurm_hosts = {m.name for m in valid.machines if m.runs_slurm}
    computes = {m.name for m in valid.machines if "compute" in m.groups}
    pyxis = any(library not in s.paths for name, s in found.items() if name in slurm_hosts)
    enroot = valid.containers.spec.enroot.source is not None and any(
        not has_enroot(valid, s) and enroot_package(valid) not in s.paths
        for name, s in found.items() if name in computes)
    if builder is None:
        if pyxis or enroot:
            raise for_pyinfra(DeployError(
                f"{valid.controller.name}, the controller, builds Pyxis{' and Enroot' if enroot else ''} for the "
                "hosts that lack it, and is not in this run: run the deploy with it"))
        return False, False
    return pyxis and library not in builder.paths, enroot and enroot_package(valid) not in builder.paths


def _refuse_other_architectures(valid: ValidCluster, pyxis: bool, enroot: bool) -> None:
    found = states()
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
    lines = [check, *_unpack(artifact_path(pyxis.source.filename), source), _make(source, f"make -C {source} -j2"),
             f"install -D -m 0755 {source}/spank_pyxis.so {library}.new", f"mv -f {library}.new {library}"]
    return bounded(_script(lines), BUILD_TIMEOUT_S, f"the build of Pyxis {pyxis.version}")


def enroot_build(valid: ValidCluster) -> str:
    """Enroot's `make deb` (outside any git work tree: its clean step runs git clean), the .deb kept where the
    compute hosts copy it from."""
    assert valid.containers is not None
    enroot = valid.containers.spec.enroot
    assert enroot.source is not None
    source = f"{BUILD_DIR}/enroot-{enroot.version}/src"
    package = enroot_package(valid)
    made = f"{source}/dist/enroot_{enroot.version}-*_$(dpkg --print-architecture).deb"
    lines = [*_unpack(artifact_path(enroot.source.filename), source),
             _make(source, f"cd {source} && CPPFLAGS='-DALLOW_SPECULATION -DINHERIT_FDS' make deb"),
             f"ls {made} >/dev/null 2>&1 || {{ echo 'the source did not make Enroot {enroot.version}' >&2; exit 1; }}",
             f"cp {made} {package}.new", f"mv -f {package}.new {package}"]
    return bounded(_script(lines), BUILD_TIMEOUT_S, f"the build of Enroot {enroot.version}")


@step("container builds")
def container_builds() -> None:
    """On the controller, where a host of the run lacks what it builds: the build packages, the sources, the
    builds. Every host then waits until they are done."""
    valid = _valid()
    if valid.containers is None:
        return
    pyxis, enroot = builds(valid)
    if host.data.clusterforge_machine.name == valid.controller.name and (pyxis or enroot):
        _refuse_other_architectures(valid, pyxis, enroot)
        spec = valid.containers.spec
        wanted = (PYXIS_BUILD if pyxis else ()) + (ENROOT_BUILD if enroot else ())
        missing = tuple(p for p in wanted if p not in host_state().packages)
        ops.create(installed, bool(missing), name="packages to build Pyxis and Enroot", names=wanted)
        ops.directory(name=f"{ARTIFACT_DIR} exists", path=ARTIFACT_DIR)
        for needed, artifact in ((pyxis, spec.pyxis.source), (enroot, spec.enroot.source)):
            if needed and artifact is not None:
                ops.file(name=f"{artifact.filename} (sha256 checked)", path=artifact_path(artifact.filename),
                         content=artifacts.content(valid, artifact))
        ops.commands(name=f"build Pyxis {spec.pyxis.version} for Slurm {valid.version}",
                     commands=[pyxis_build(valid)] if pyxis else [], otherwise="Pyxis is built")
        ops.commands(name=f"build Enroot {spec.enroot.version}", commands=[enroot_build(valid)] if enroot else [],
                     otherwise="Enroot is built")
    ops.barrier("the container builds are done")


@operation()
def _copied(origin: str, path: str, mode: str = "0644"):
    """``path`` as ``origin`` has it (a build), through the machine that runs the deploy: read from ``origin`` once
    per run, written here under a temporary name and then renamed, so nothing sees half a file."""
    yield FunctionCommand(_copy, (origin, path, mode), {})


@ops.describes(_copied)
def _plan_copied(origin: str, path: str, mode: str = "0644") -> ops.Description:
    return [f"{path}: copied from {origin}, which builds it"], None


def _copy(state, host, origin: str, path: str, mode: str) -> None:  # noqa: ANN001 - pyinfra passes its state and host by these names
    def fetch() -> bytes:
        buffer = BytesIO()
        source = host_of(state, origin)
        try:
            if source is not None and source.get_file(path, buffer):
                return buffer.getvalue()
        except OSError:
            pass
        raise for_pyinfra(DeployError(f"{origin} has no {path} to copy: the build there failed or did not run"))

    data = once_per_run(("copied", origin, path), fetch)
    temporary = f"{path}.clusterforge-new"
    ok, _ = host.run_shell_command(f"mkdir -p {posixpath.dirname(path)}")
    if not ok or not host.put_file(BytesIO(data), temporary):
        raise for_pyinfra(DeployError(f"{host.name}: cannot write {path}"))
    ok, output = host.run_shell_command(f"chmod {mode} {temporary} && mv -f {temporary} {path}")
    if not ok:
        raise for_pyinfra(DeployError(f"{host.name}: cannot install {path}: {output.stderr}"))


def _from_controller(valid: ValidCluster, name: str, path: str, mode: str) -> None:
    here = host.data.clusterforge_machine.name
    ops.create(_copied, here != valid.controller.name and path not in host_state().paths, name=name,
               origin=valid.controller.name, path=path, mode=mode)


@step("Pyxis")
def pyxis() -> None:
    """Pyxis' library on every Slurm host; its plugstack line is one of the Slurm files (roles/slurm_change.py)."""
    valid = _valid()
    if valid.containers is None or not host.data.clusterforge_machine.runs_slurm:
        return
    _from_controller(valid, f"Pyxis {valid.containers.spec.pyxis.version} for Slurm {valid.version} from "
                            f"{valid.controller.name}", valid.containers.pyxis_library, "0755")


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


@step("Enroot")
def enroot() -> None:
    """Enroot on every compute host: the package, its site settings, the directories every user shares (made at
    every boot), the hooks the inventory enables."""
    valid = _valid()
    machine = host.data.clusterforge_machine
    if valid.containers is None or "compute" not in machine.groups:
        return
    spec = valid.containers.spec
    found = host_state()
    package = enroot_package(valid)
    if not has_enroot(valid, found):
        if spec.enroot.package is not None:
            ops.directory(name=f"{ARTIFACT_DIR} exists", path=ARTIFACT_DIR)
            ops.file(name=f"{spec.enroot.package.filename} (sha256 checked)", path=package,
                     content=artifacts.content(valid, spec.enroot.package))
        else:
            _from_controller(valid, f"Enroot {spec.enroot.version} from {valid.controller.name}", package, "0644")
    version = shlex.quote(spec.enroot.version)
    ops.commands(name=f"Enroot {spec.enroot.version}", otherwise=f"Enroot {spec.enroot.version} is installed",
                 commands=[] if has_enroot(valid, found) else [
                     install_command([package]),
                     f"dpkg-query -W -f='${{Version}}' enroot | grep -q '^'{version}'-' || {{ echo \"the package "
                     f"{package} is not Enroot {spec.enroot.version}\" >&2; exit 1; }}"])
    assert machine.node is not None
    paths = valid.containers.paths[machine.node.profile.name]
    ops.file(name=ENROOT_CONF, path=ENROOT_CONF, content=render.enroot_conf(valid, paths))
    tmpfiles = render.enroot_tmpfiles(valid, paths)
    ops.file(name=ENROOT_TMPFILES, path=ENROOT_TMPFILES, content=tmpfiles)
    stale = [d for d in paths.shared if (s := found.paths.get(d)) is None or s.mode != "1777"]
    ops.commands(name="the directories every user's Enroot shares",
                 commands=[f"systemd-tmpfiles --create {ENROOT_TMPFILES}"] if stale or ops.will_change(
                     ENROOT_TMPFILES, tmpfiles) else [], otherwise="they exist, 1777")
    for name, file in render.ENROOT_HOOKS.items():
        path = f"{ENROOT_HOOKS_DIR}/{file}"
        if name in spec.enroot.hooks:
            ops.commands(name=f"Enroot hook {file}", otherwise=f"{file} is enabled",
                         commands=[] if path in found.paths else [f"cp /usr/share/enroot/hooks.d/{file} {path}"])
        else:
            ops.absent(name=f"Enroot hook {file} is not enabled", path=path)
    action = apparmor(found)
    if action == "install":
        ops.file(name=ENROOT_APPARMOR, path=ENROOT_APPARMOR, content=render.enroot_apparmor(valid))
        ops.commands(name="AppArmor loads Enroot's profile", otherwise="AppArmor has Enroot's profile",
                     commands=[f"apparmor_parser -r {ENROOT_APPARMOR}"] if ops.will_change(
                         ENROOT_APPARMOR, render.enroot_apparmor(valid)) else [])
    elif action == "disable":
        ops.absent(name="no Enroot AppArmor profile: this AppArmor cannot read it", path=ENROOT_APPARMOR)
    _nvidia_container_cli(valid, found)


def _nvidia_container_cli(valid: ValidCluster, found: State) -> None:
    """GPU images need nvidia-container-cli (Enroot's NVIDIA hook), from NVIDIA's repository: Debian has none."""
    from ..render.containers import NVIDIA_KEYRING

    assert valid.containers is not None
    repo = valid.containers.spec.nvidia_repository
    if repo is None:
        return
    ops.file(name=f"{NVIDIA_KEYRING} (sha256 checked)", path=NVIDIA_KEYRING, content=artifacts.content(valid, repo.key))
    ops.file(name=NVIDIA_SOURCES, path=NVIDIA_SOURCES, content=render.nvidia_sources(valid))
    # The repository may be new in this run: its package lists are fetched before the install, whatever the age of
    # the others.
    ops.commands(name="libnvidia-container-tools", otherwise="libnvidia-container-tools is installed",
                 commands=[] if "libnvidia-container-tools" in found.packages else [
                     bounded(f"apt-get update -qq {APT_NETWORK}", UPDATE_TIMEOUT_S, "apt-get update"),
                     install_command(["libnvidia-container-tools"])])
