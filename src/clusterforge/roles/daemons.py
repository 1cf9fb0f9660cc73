"""The Slurm daemons, each started where it is missing and restarted (or slurmctld reconfigured) where a change
owes it: slurmdbd, then slurmctld, then slurmd, then sackd, each followed by a wait until it answers.

Every Slurm host gets every step, a no-op where it does not apply: pyinfra orders operations across hosts only
through the ones they share, so this is what makes slurmctld wait for slurmdbd and every slurmd for slurmctld.
"""

from __future__ import annotations

import shlex

from pyinfra import host

from ..model import ValidCluster
from ..model.settings import SLURMDBD_PORT
from ..render import slurmd_dropin, slurmdbd_conf
from ..secrets import Secret, secrets_for
from . import ops
from .auth import key, runs_sackd
from .managed import SLURM_KEY, SLURM_LOG_DIR, SLURMD_DROPIN, SLURMD_DROPIN_DIR, SLURMDBD_CONF
from .rehearsal import step
from .slurm_change import change
from .upload import refuse_diff
from .waits import bounded, until

SACK_SOCKET = "/run/slurm/sack.socket"
ANSWERS = until("scontrol ping", "slurmctld answers scontrol ping")
RECONFIGURE_TIMEOUT_S = 120


def _groups() -> set[str]:
    return set(host.data.clusterforge_machine.groups)


def _key_inputs(valid: ValidCluster) -> bytes | Secret | None:
    """The part of a Slurm daemon's inputs the authentication key is: slurm.key is read by the daemon itself,
    munge's by munged alone."""
    return key(valid) if valid.auth == "slurm" else None


def _key_changing(valid: ValidCluster) -> bool:
    return valid.auth == "slurm" and ops.will_change(SLURM_KEY, key(valid))


def responding(name: str) -> str:
    """Whether slurmctld hears this node: sinfo marks a node it does not hear with '*', or shows it down/unknown."""
    quoted = shlex.quote(name)
    return (f"sh -c 's=$(sinfo --noheader --node={quoted} --format=%T); "
            "case $s in \"\"|*\"*\"|down*|unknown*) exit 1;; esac'")


def storage_conf(valid: ValidCluster) -> Secret:
    """slurmdbd.conf as the database host gets it, with the password from Vault; held in memory only."""
    password = secrets_for(valid).db_password()
    text = slurmdbd_conf.with_storage_pass(slurmdbd_conf.render(valid), password.reveal_text())
    return Secret(text.encode(), f"<{SLURMDBD_CONF} with StoragePass>")


@step("slurmdbd")
def slurmdbd() -> None:
    """On the database host: slurmdbd.conf (0600 slurm, with the database password from Vault) and the daemon."""
    valid: ValidCluster = host.data.clusterforge
    here = "database" in _groups()
    if here:
        refuse_diff(SLURMDBD_CONF)
        ops.directory(name=f"{SLURM_LOG_DIR} is the slurm user's", path=SLURM_LOG_DIR, user="slurm", group="slurm")
        conf = storage_conf(valid)
        ops.file(name=f"{SLURMDBD_CONF} (0600 slurm, with the database password from Vault)", path=SLURMDBD_CONF,
                 content=conf, mode="0600", user="slurm", group="slurm")
        inputs = ops.digest(conf, _key_inputs(valid))
        port = valid.slurm_conf.get("AccountingStoragePort", str(SLURMDBD_PORT))
        ops.daemon(name="slurmdbd runs with its config", unit="slurmdbd", inputs=inputs,
                   restart=ops.owed("slurmdbd", inputs, ops.will_change(SLURMDBD_CONF, conf) or _key_changing(valid)),
                   why="slurmdbd.conf or the key changed since it last started",
                   ready=until(f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'", f"slurmdbd listens on port {port}"))
    else:
        ops.commands(name="slurmdbd runs with its config", commands=[], otherwise="no slurmdbd here", shared=True)


@step("slurmctld stop before nodes change")
def slurmctld_stop_for_nodes() -> None:
    """Slurm <= 24.05 adds or removes nodes with slurmctld stopped while every host gets the new files."""
    change_ = change()
    stop = "controller" in _groups() and change_.stop_first
    ops.commands(name="stop slurmctld: nodes change", commands=["systemctl stop slurmctld.service"] if stop else [],
                 otherwise="slurmctld keeps running", shared=True)


@step("slurmd restart while slurmctld is stopped")
def slurmd_restart_for_nodes() -> None:
    change_ = change()
    restart = "compute" in _groups() and change_.stop_first and ops.host_state().unit("slurmd").active
    ops.commands(name="restart slurmd while slurmctld is stopped",
                 commands=["systemctl restart slurmd.service"] if restart else [],
                 otherwise="no slurmd restarts before slurmctld starts", shared=True)


@step("slurmctld")
def slurmctld() -> None:
    valid: ValidCluster = host.data.clusterforge
    change_ = change()
    here = "controller" in _groups()
    if here:
        state_dir = valid.slurm_conf["StateSaveLocation"]
        ops.directory(name=f"{state_dir} (StateSaveLocation)", path=state_dir, mode="0700", user="slurm",
                      group="slurm")
        ops.directory(name=f"{SLURM_LOG_DIR} is the slurm user's", path=SLURM_LOG_DIR, user="slurm", group="slurm")
    inputs = ops.digest(_key_inputs(valid))
    restart = here and (change_.restart_slurmctld or ops.owed("slurmctld", inputs, _key_changing(valid)))
    ops.daemon(name="slurmctld runs with the current files" + (f" ({change_.reasons()})" if restart else ""),
               unit="slurmctld", inputs=inputs, restart=restart, ready=ANSWERS, here=here,
               why=change_.reasons() if change_.restart_slurmctld else "the authentication key changed")
    reconfigure = here and change_.reconfigure and not restart
    ops.commands(name="scontrol reconfigure" + (f": {change_.reasons()}" if reconfigure else ""),
                 commands=[bounded("scontrol reconfigure", RECONFIGURE_TIMEOUT_S, "scontrol reconfigure"), ANSWERS]
                 if reconfigure else [],
                 otherwise="nothing to reconfigure", shared=True)


@step("slurmd")
def slurmd() -> None:
    valid: ValidCluster = host.data.clusterforge
    change_ = change()
    here = "compute" in _groups()
    dropin = slurmd_dropin.render(valid, host.data.clusterforge_machine) if here else None
    if here:
        ops.directory(name=f"{valid.slurm_conf['SlurmdSpoolDir']} (SlurmdSpoolDir)",
                      path=valid.slurm_conf["SlurmdSpoolDir"])
        ops.directory(name=f"{SLURM_LOG_DIR} is the slurm user's", path=SLURM_LOG_DIR, user="slurm", group="slurm")
        if dropin is not None:
            ops.directory(name="slurmd drop-in directory", path=SLURMD_DROPIN_DIR)
            ops.file(name="slurmd waits for the GPU device files and the local disk", path=SLURMD_DROPIN,
                     content=dropin)
        else:
            ops.absent(name="slurmd waits for nothing", path=SLURMD_DROPIN)
        units = ops.digest(dropin)
        ops.commands(name="systemd reads the slurmd drop-in",
                     commands=["systemctl daemon-reload", ops.record_command("systemd", units)]
                     if ops.owed("systemd", units, ops.will_change(SLURMD_DROPIN, dropin)) else [],
                     otherwise="systemd has read the slurmd drop-in")
    inputs = ops.digest(_key_inputs(valid), dropin)
    early = change_.stop_first  # restarted while slurmctld was stopped
    restart = here and not early and (change_.restart_slurmd(host.data.clusterforge_machine.name)
                                      or ops.owed("slurmd", inputs, ops.will_change(SLURMD_DROPIN, dropin)
                                                  or _key_changing(valid)))
    name = host.data.clusterforge_node.name if here else host.name
    ops.daemon(name="slurmd runs with the current files", unit="slurmd", inputs=inputs, restart=restart,
               ready=until(responding(name), f"node {name} responds"), here=here,
               settle=here and early and ops.host_state().unit("slurmd").active,
               why=change_.reasons() if here and change_.restart_slurmd(host.data.clusterforge_machine.name)
               else "its drop-in or the authentication key changed")


@step("sackd")
def sackd() -> None:
    """sackd on a login host with auth/slurm: it hands out credentials there, signed with slurm.key."""
    valid: ValidCluster = host.data.clusterforge
    here = valid.auth == "slurm" and runs_sackd(_groups())
    inputs = ops.digest(_key_inputs(valid))
    ops.daemon(name="sackd runs with the key", unit="sackd", inputs=inputs,
               restart=here and ops.owed("sackd", inputs, _key_changing(valid)), why="the key changed",
               ready=until(f"test -S {SACK_SOCKET}", f"sackd serves {SACK_SOCKET}"), here=here)
