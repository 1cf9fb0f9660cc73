"""The node health check's files on a compute node: its expectations, from the resolved node (health/expect.py
reads them there), and the launchers slurmd runs: HealthCheckProgram, Prolog, Epilog and RebootProgram."""

from __future__ import annotations

from ..health.expect import LINK_ERRORS, Expectations, Hca
from ..model import Machine, ValidCluster
from ..model.settings import EPILOG_PROGRAM, HEALTH_PROGRAM, PROLOG_PROGRAM, REBOOT_PROGRAM, TEXTFILE_DIR

LIB_DIR = "/usr/lib/clusterforge"
# The health package's name in its one file on the node (render/programs.py): the modules import each other
# relatively, so any name works.
PACKAGE = "clusterforge_health"
# In clusterforge's layout (health/ beside the slurm/ it imports) since the Slurm modules left health/; a new name, so
# that no launcher ever imports from a file of the other layout while the deploy replaces them one by one.
PROGRAM = f"{LIB_DIR}/clusterforge-node-health.pyz"
# The program in the old layout (the health package alone), which launchers before that change import.
OLD_PROGRAM = f"{LIB_DIR}/clusterforge-health.pyz"


def expectations(valid: ValidCluster, machine: Machine) -> Expectations | None:
    """What the node should have, or None where no check runs (not a compute node, or no health check)."""
    node, health = machine.node, valid.health
    if node is None or health is None:
        return None
    spec, profile = health.spec, node.profile
    # The NFS mounts of compute hosts, where the deploy mounts them (mount_now=False: hosts that cannot mount now).
    nfs = valid.nfs
    mounts = [m.mount_point for m in nfs.mounts if "compute" in m.on] if nfs is not None and nfs.mount_now else []
    if profile.local_disk and valid.containers is not None:
        mounts.append(profile.local_disk)
    return Expectations(
        node=node.name,
        probes=spec.probes,
        gpu_type=profile.gpus.type if profile.gpus else None,
        device_files=node.device_files,
        sockets=profile.sockets, cores_per_socket=profile.cores_per_socket,
        threads_per_core=profile.threads_per_core, real_memory=profile.real_memory,
        hcas=tuple(Hca(name, profile.ib_rate) for name in dict.fromkeys((*profile.hcas, *health.hcas))),
        ib_rate=profile.ib_rate,
        mounts=tuple(dict.fromkeys([*mounts, *spec.mounts])),
        daemons=("munge",) if valid.auth == "munge" else (),
        fabric_manager=profile.nvswitch,
        xid_actions=dict(spec.xid),
        kernel_log_extra=spec.kernel_log_extra,
        boot_id_file=spec.boot_id_file,
        link_errors={**LINK_ERRORS, **spec.link_errors},
        infiniband_sysfs=spec.infiniband_sysfs,
        probe_timeout_s=spec.probe_timeout,
        profile=profile.name,
        metrics_dir=TEXTFILE_DIR if valid.monitoring is not None else None,
        reboot_wait_s=spec.reboot_timeout,
        reboot_program=spec.reboot_program,
        admission=profile.admission is not None,
    )


# The launchers slurmd runs, each one mode of the same program.
LAUNCHERS = {HEALTH_PROGRAM: ("check", "node health check, Slurm's HealthCheckProgram"),
             PROLOG_PROGRAM: ("prolog", "GPU check before a job, Slurm's Prolog"),
             EPILOG_PROGRAM: ("epilog", "GPU check after a job, Slurm's Epilog"),
             REBOOT_PROGRAM: ("reboot", "evidence of hardware faults before the inventory's reboot program, Slurm's "
                                        "RebootProgram")}


def launchers(valid: ValidCluster) -> dict[str, str]:
    """Path -> text of each launcher slurm.conf names (model/settings.py decides which): slurmd runs them as root
    with no argument and no PATH. Isolated mode (-I): no PYTHON* variable, no user site and no script directory can
    put another module in its way. The program is imported from its one file (render/programs.py)."""
    named = {valid.slurm_conf.get(key) for key in ("HealthCheckProgram", "Prolog", "Epilog", "RebootProgram")}
    return {path: launcher(path) for path in LAUNCHERS if path in named}


def launcher(path: str) -> str:
    """Slurm passes no argument: each launcher runs its mode. The health program's also takes one by hand
    (`clusterforge-health report`, which `clusterforge check` runs)."""
    mode, what = LAUNCHERS[path]
    # slurmd passes RebootProgram a node's new features where their change asks for the reboot: passed on.
    argv = {"check": f"sys.argv[1:] or [{mode!r}]", "reboot": f"[{mode!r}, *sys.argv[1:]]"}.get(mode, f"[{mode!r}]")
    return (f"#!/usr/bin/python3 -I\n# {path}: clusterforge's {what}.\n"
            "# Written by clusterforge's deploy; a change here is overwritten by the next run.\n"
            f"{imports_from(PROGRAM)}from {PACKAGE}.health.program import main\nsys.exit(main({argv}))\n")


def imports_from(program: str) -> str:
    """A launcher's lines that put ``program`` on the path through a descriptor of its own: python's zipimport
    reads a zip's index once and then opens the zip again, by its name, for each module, so a newer program renamed
    over it while the launcher imports would be read with the old index (and fail to import). The file opened here
    is the one every import reads, old or new, whatever the deploy renames meanwhile."""
    return ("import os, sys\n# Every import reads the file opened here, though a newer one is renamed over it.\n"
            f"program = os.open({program!r}, os.O_RDONLY)\nsys.path.insert(0, f\"/proc/self/fd/{{program}}\")\n")
