"""The deploy, in order:  pyinfra inventories/prod.py deploy/cluster.py

pyinfra runs each operation on every host before the next one starts, so the order of the steps below is the
order of changes across the cluster: packages, then the authentication key everywhere (munge's, or slurm.key for
auth/slurm), then the database, then the Slurm files on every host, then the daemons in the order slurmdbd,
slurmctld, slurmd (and sackd on login hosts with auth/slurm). What a change of the Slurm files needs (restart or
`scontrol reconfigure`, and the add-node procedure of the cluster's Slurm release) is decided in
clusterforge.restarts from the installed and the new files, before anything runs. Every secret is read from Vault
and checked before any host is changed.
"""

from pyinfra import host

from clusterforge.roles.common import common
from clusterforge.roles.mariadb import mariadb
from clusterforge.roles.munge import munge_key
from clusterforge.roles.nfs import nfs_client, nfs_server
from clusterforge.roles.packages import install
from clusterforge.roles.slurm_files import pmix_library, slurm_files
from clusterforge.roles.slurm_key import munge_unused, runs_sackd, sackd, sackd_packages, slurm_key
from clusterforge.roles.slurmctld import (
    slurmctld,
    slurmctld_packages,
    slurmctld_stop_for_nodes,
)
from clusterforge.roles.slurmd import slurmd, slurmd_packages, slurmd_restart_for_nodes
from clusterforge.roles.slurmdbd import accounting_entries, slurmdbd
from clusterforge.secrets import secrets_for

valid = host.data.clusterforge
secrets_for(valid).prefetch()
groups = host.data.clusterforge_machine.groups
slurm_host = bool({"controller", "compute", "login", "database"} & set(groups))
# auth/slurm: slurm.key instead of munge, and sackd where no Slurm daemon hands out credentials.
munge = valid.auth == "munge"
with_sackd = not munge and runs_sackd(groups)

common()
if munge:
    install("munge", ["munge"])
if "controller" in groups:
    slurmctld_packages()
if "compute" in groups:
    slurmd_packages()
if {"login", "database"} & set(groups):
    install("Slurm client", ["slurm-client"])
if with_sackd:
    sackd_packages()
if slurm_host:
    install("PMIx for MpiDefault=pmix", pmix_library(valid))
if munge:
    munge_key()
elif slurm_host:
    slurm_key()

if "nfs" in groups:
    nfs_server()
nfs_client()

if "database" in groups:
    mariadb()
    slurmdbd()
if "controller" in groups:
    slurmctld_stop_for_nodes()
if slurm_host:
    slurm_files()
if "database" in groups:
    accounting_entries()
if "compute" in groups:
    slurmd_restart_for_nodes()
if "controller" in groups:
    slurmctld()
if "compute" in groups:
    slurmd()
if with_sackd:
    sackd()
if not munge:
    munge_unused()
