"""slurmdbd: its config with the database password from Vault (0600, owned by the slurm user), the service, and the
accounting entries slurm.conf refers to (the cluster and its QOS), created once."""

from __future__ import annotations

import shlex

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.operations import files, server, systemd
from pyinfra.operations.util import any_changed

from ..model import ValidCluster
from ..model.settings import SLURMDBD_PORT
from ..render import slurmdbd_conf
from ..render.sacctmgr import qos_plan
from ..secrets import Secret, secrets_for
from .facts import SacctmgrRows
from .packages import install
from .upload import SecretFile, refuse_diff
from .waits import until

CONF = "/etc/slurm/slurmdbd.conf"
LOG_DIR = "/var/log/slurm"


@deploy("slurmdbd")
def slurmdbd() -> None:
    valid: ValidCluster = host.data.clusterforge
    refuse_diff(CONF)
    install("slurmdbd", ["slurmdbd"])
    password = secrets_for(valid).db_password()
    text = slurmdbd_conf.with_storage_pass(slurmdbd_conf.render(valid), password.reveal_text())
    files.directory(name=f"{LOG_DIR} is the slurm user's", path=LOG_DIR, user="slurm", group="slurm", mode="0755")
    conf = files.put(name=f"{CONF} (0600 slurm, with the database password from Vault)",
                     src=SecretFile(Secret(text.encode(), f"<{CONF} with StoragePass>")), dest=CONF,
                     user="slurm", group="slurm", mode="0600")
    started = systemd.service(name="slurmdbd is running and enabled", service="slurmdbd", running=True, enabled=True)
    restarted = systemd.service(name="restart slurmdbd for its new config", service="slurmdbd", restarted=True,
                                _if=conf.did_change)
    port = valid.slurm_conf.get("AccountingStoragePort", str(SLURMDBD_PORT))
    server.shell(name="wait until slurmdbd answers",
                 commands=[until(f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'", f"slurmdbd listens on port {port}")],
                 _if=any_changed(started, restarted))


@deploy("accounting entries")
def accounting_entries() -> None:
    """The cluster and the QOS partitions name, before slurmctld starts (it refuses a partition QOS it cannot find).
    Needs slurm.conf on this host: sacctmgr finds slurmdbd through it."""
    valid: ValidCluster = host.data.clusterforge
    clusters = {row[0] for row in host.get_fact(SacctmgrRows, entity="cluster", fields="cluster") or []}
    if valid.name not in clusters:
        server.shell(name=f"register cluster {valid.name} with slurmdbd",
                     commands=[f"sacctmgr --immediate add cluster {shlex.quote(valid.name)}"])
    known = {row[0] for row in host.get_fact(SacctmgrRows, entity="qos", fields="name") or []}
    for args in qos_plan(valid).create:
        name = args[2]
        if name not in known:
            server.shell(name=f"create QOS {name}", commands=[shlex.join(["sacctmgr", "--immediate", *args])])
