"""The deploy, in order:  pyinfra inventories/prod.py deploy/cluster.py

pyinfra runs each operation on every host before the next one starts, so the order of the steps below is the order
of changes across the cluster. Every secret is read from Vault and checked before any host is changed.

What it does so far: installs munge and the cluster's munge key (munged restarted only when the key changed).
The database, slurmdbd, slurmctld, slurmd and NFS steps follow in this same file.
"""

from pyinfra import host
from pyinfra.operations import apt

from clusterforge.roles.munge import munge_key
from clusterforge.secrets import secrets_for

secrets_for(host.data.clusterforge).prefetch()

apt.packages(name="munge is installed", packages=["munge"], update=True, cache_time=3600)
munge_key()
