"""The deploy, in order. pyinfra runs it through cluster.py beside this module (`clusterforge apply INVENTORY`), or
through a clone's deploy/cluster.py: `pyinfra inventories/prod.py deploy/cluster.py`.

pyinfra runs each operation on every host before the next one starts, so the order of the steps below is the order
of changes across the cluster: pyinfra orders hosts' operations through the ones they share, so the steps that
must wait for other hosts (each daemon, the reconfigure, the records) are operations every Slurm host gets, a no-op
where they do not apply, and a barrier marks the other points where every host must be past a step. pyinfra orders
operations by the lines they are called from, so each step is called on its own line, in order. Each step says on
which hosts it runs and what it manages there (its footprint, beside it in its module): a new role is its module and
its line below.
Each host's state is read once, before anything changes, covering what the steps below manage (engine/state.py);
what a change of the Slurm files asks of the daemons is decided once, for the whole cluster, from the files the
daemons last applied (roles/slurm_change.py), so a run that was interrupted still owes, and makes, the restarts and
reconfigures the change needs.
The steps are rehearsed on every host before any operation exists (engine/converge.py): a run with nothing to do
anywhere creates none, not even the shared ones.
"""

from ..engine.converge import converge
from ..engine.ops import barrier
from ..engine.run import DeployRun, Here, steps_of
from ..roles import artifacts
from ..roles.access import access
from ..roles.accounting import accounting_entries, accounts, refusals
from ..roles.auth import auth_key, munged
from ..roles.common import common
from ..roles.containers import container_builds, enroot, enroot_build, pyxis
from ..roles.directory import directory, refuse_without_sssd
from ..roles.daemons import (
    sackd,
    slurmctld,
    slurmctld_stop_for_nodes,
    slurmd,
    slurmd_restart_for_nodes,
    slurmdbd,
)
from ..roles.disruption import refuse_beyond_budget
from ..roles.driver_move import drain_for_driver_moves, reboot_into_new_driver
from ..engine.facts import prefetch_accounting
from ..roles.gate import gate, gate_holds
from ..roles.repair import repair
from ..roles.health import health_check, health_check_leftovers
from ..roles.identity import homes, people
from ..roles.mariadb import mariadb
from ..roles.monitoring import monitoring_daemons
from ..roles.nfs import nfs_client, nfs_server
from ..roles.packages import packages, refuse_slurm_jumps
from ..roles.removal import drain_removed_nodes, nodes_back
from ..roles.rest import jwt_key_file, slurmrestd
from ..roles.slurm_change import fetched_only, record_applied, slurm_files
from ..roles.stack import nccl, stack, stack_daemons, stack_held
from ..roles.stamp import stamp


def order(here: Here) -> None:
    common(here)
    people(here)  # every host knows the people before any Slurm daemon or account names them
    stack(here)
    packages(here)
    # Every host reads the site directory before any Slurm daemon starts (munged is the first) or the accounts
    # name a user; SSSD's packages came in the host's one apt transaction just above.
    directory(here)
    enroot_build(here)  # on the controller, where it builds Enroot: in the background from here to the Enroot step
    stack_daemons(here)
    auth_key(here)
    munged(here)
    jwt_key_file(here)
    nfs_server(here)
    homes(here)  # on the NFS server, in the export that holds them; or on each login and compute host
    barrier(here, "NFS exports are served")
    nfs_client(here)
    mariadb(here)
    container_builds(here)
    pyxis(here)
    stack_held(here)
    nccl(here)
    health_check(here)
    access(here)  # once libpam-slurm-adopt is installed: the stack names it
    slurmctld_stop_for_nodes(here)
    slurm_files(here)
    slurmdbd(here)
    accounting_entries(here)
    slurmd_restart_for_nodes(here)
    slurmctld(here)
    gate_holds(here)  # after slurmctld knows the new nodes, before their slurmd first starts
    slurmd(here)
    fetched_only(here)  # once slurmd runs with --conf-server: the local files served it until then
    sackd(here)
    slurmrestd(here)
    record_applied(here)
    health_check_leftovers(here)
    monitoring_daemons(here)
    gate(here)
    repair(here)  # beside the gate, once slurmctld runs
    accounts(here)
    nodes_back(here)
    enroot(here)  # late, as nothing before needs it: the controller's build of Enroot runs in the background until here
    reboot_into_new_driver(here)
    refusals(here)
    stamp(here)  # last: a host whose run failed or stopped before keeps the stamp it had


def deploy() -> None:
    """The deploy on the host pyinfra is loading: the run's checks once, before any operation exists, then the
    steps in order. pyinfra calls the deploy file once per host; the first host makes the run, the others share it."""
    run = DeployRun.current(steps_of(order))
    run.refuse_unlisted_machines()
    prefetch_accounting(run)
    run.secrets.prefetch()
    artifacts.prefetch(run)
    refuse_slurm_jumps(run)
    refuse_without_sssd(run)
    refuse_beyond_budget(run)
    drain_removed_nodes(run)
    drain_for_driver_moves(run)
    converge(order)
