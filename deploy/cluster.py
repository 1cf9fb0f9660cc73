"""The deploy, in order:  pyinfra inventories/prod.py deploy/cluster.py

pyinfra runs each operation on every host before the next one starts, so the order of the steps below is the order
of changes across the cluster: pyinfra orders hosts' operations through the ones they share, so the steps that
must wait for other hosts (each daemon, the reconfigure, the records) are operations every Slurm host gets, a no-op
where they do not apply, and `barrier` marks the other points where every host must be past a step.
Each host's state is read once, before anything changes (roles/state.py); what a change of the Slurm files asks of
the daemons is decided once, for the whole cluster, from the files the daemons last applied (roles/slurm_change.py),
so a run that was interrupted still owes, and makes, the restarts and reconfigures the change needs.
The steps are rehearsed on every host before any operation exists (roles/rehearsal.py): a run with nothing to do
anywhere creates none, not even the shared ones.
"""

from pyinfra import host

from clusterforge.roles import artifacts
from clusterforge.roles.accounting import accounting_entries, accounts
from clusterforge.roles.auth import auth_key, munged
from clusterforge.roles.common import common
from clusterforge.roles.containers import container_builds, enroot, pyxis
from clusterforge.roles.daemons import (
    sackd,
    slurmctld,
    slurmctld_stop_for_nodes,
    slurmd,
    slurmd_restart_for_nodes,
    slurmdbd,
)
from clusterforge.roles.facts import prefetch_accounting
from clusterforge.roles.mariadb import mariadb
from clusterforge.roles.nfs import nfs_client, nfs_server
from clusterforge.roles.ops import barrier
from clusterforge.roles.packages import packages
from clusterforge.roles.rehearsal import converge
from clusterforge.roles.removal import drain_removed_nodes
from clusterforge.roles.run import guard_the_run
from clusterforge.roles.slurm_change import record_applied, slurm_files
from clusterforge.secrets import secrets_for

guard_the_run()
prefetch_accounting()
secrets_for(host.data.clusterforge).prefetch()
artifacts.prefetch(host.data.clusterforge)
drain_removed_nodes()


def order() -> None:
    machine = host.data.clusterforge_machine
    groups = set(machine.groups)

    common()
    packages()
    auth_key()
    munged()
    if "nfs" in groups:
        nfs_server()
    barrier("NFS exports are served")
    nfs_client()
    if "database" in groups:
        mariadb()
    container_builds()
    pyxis()
    enroot()
    if machine.runs_slurm:
        slurmctld_stop_for_nodes()
        slurm_files()
        slurmdbd()
    if "database" in groups:
        accounting_entries()
    if machine.runs_slurm:
        slurmd_restart_for_nodes()
        slurmctld()
        slurmd()
        sackd()
        record_applied()
    if "controller" in groups:
        accounts()


converge(order)
