"""The Slurm daemons, each started where it is missing and restarted (or slurmctld reconfigured) where a change
owes it: slurmdbd, then slurmctld, then slurmd, then sackd, each followed by a wait until it answers.

Every Slurm host gets every step, a no-op where it does not apply: pyinfra orders operations across hosts only
through the ones they share, so this is what makes slurmctld wait for slurmdbd and every slurmd for slurmctld.
"""

from __future__ import annotations

from ..model import ValidCluster
from ..model.settings import JWT_KEY, SLURM_DIR, SLURM_LOG_DIR, SLURMDBD_PORT
from ..render import slurmd_configless, slurmd_dropin, slurmdbd_conf
from ..secrets import Secret
from ..slurm import controller, nodes
from ..engine import ops
from ..engine.change import Change
from .auth import SLURM_KEY, key
from .packages import runs_sackd
from ..engine.footprint import Footprint
from ..engine.ops import SYSTEMD_DIR
from ..engine.run import Here, step
from .slurm_change import change, fetches
from .stack import new_release, slurm_moves
from ..engine.upload import refuse_diff
from ..engine.waits import TIMEOUT_S, bounded, until

SACK_SOCKET = "/run/slurm/sack.socket"
SLURMDBD_CONF = f"{SLURM_DIR}/slurmdbd.conf"
SLURMD_DROPIN_DIR = f"{SYSTEMD_DIR}/slurmd.service.d"
SLURMD_DROPIN = f"{SLURMD_DROPIN_DIR}/clusterforge-gpus.conf"
SLURMD_CONFIGLESS = f"{SLURMD_DROPIN_DIR}/clusterforge-configless.conf"
ANSWERS = until(controller.PING, f"slurmctld answers {controller.PING}")
RECONFIGURE_TIMEOUT_S = 120
DATABASE_CONVERSION_S = 4 * 3600  # slurmdbd's first start on a new release (SchedMD: "may take hours")


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """slurmdbd.conf, the log, state and spool directories, slurmd's drop-in; the units of the daemons the host
    runs."""
    daemons = {"database": "slurmdbd.service", "controller": "slurmctld.service", "compute": "slurmd.service"}
    units = [daemons[g] for g in groups if g in daemons]
    if valid.auth != "munge" and runs_sackd(groups):
        units.append("sackd.service")
    conf = valid.slurm_conf
    return Footprint(paths=(SLURMDBD_CONF, SLURM_LOG_DIR, conf.get("StateSaveLocation", ""),
                            conf.get("SlurmdSpoolDir", ""), SLURMD_DROPIN_DIR, SLURMD_DROPIN, SLURMD_CONFIGLESS),
                     shown=(SLURMD_DROPIN, SLURMD_CONFIGLESS), units=tuple(units))


def _key_inputs(here: Here) -> bytes | Secret | None:
    """The part of a Slurm daemon's inputs the authentication key is: slurm.key is read by the daemon itself,
    munge's by munged alone."""
    return key(here) if here.valid.auth == "slurm" else None


def _key_changing(here: Here) -> bool:
    return here.valid.auth == "slurm" and ops.will_change(here.state, SLURM_KEY, key(here))


def _jwt_inputs(here: Here) -> tuple[Secret, ...]:
    """The JWT key, part of slurmctld's and slurmdbd's inputs where the inventory has Rest (they load it when they
    start); nothing otherwise, so that a cluster without Rest keeps the inputs, and the records, it had."""
    return (here.run.secrets.jwt_key(),) if here.valid.rest is not None else ()


def _jwt_changing(here: Here) -> bool:
    return any(ops.will_change(here.state, JWT_KEY, secret) for secret in _jwt_inputs(here))


def moved(here: Here, unit: str) -> str:
    """Why ``unit``, a Slurm daemon, owes a restart for its package, or "": Slurm's packages move on this host in
    this run (roles/stack.py), or the daemon still runs an executable a package replaced since it started (an
    earlier run moved them and was interrupted before the restart, or an admin's apt did)."""
    if not here.state.unit(unit).active:
        return ""
    moving = slurm_moves(here)
    if moving:
        return f"Slurm's packages move to {moving[0][1]}"
    return "it runs an executable its package has replaced since" if here.state.unit(unit).replaced else ""


def storage_conf(here: Here) -> Secret:
    """slurmdbd.conf as the database host gets it, with the password from Vault; held in memory only."""
    password = here.run.secrets.db_password()
    text = slurmdbd_conf.with_storage_pass(slurmdbd_conf.render(here.valid), password.reveal_text())
    return Secret(text.encode(), f"<{SLURMDBD_CONF} with StoragePass>")


def _log_dir(here: Here) -> None:
    ops.directory(here, name=f"{SLURM_LOG_DIR} is the slurm user's", path=SLURM_LOG_DIR, user="slurm", group="slurm")


@step("slurmdbd", footprint=footprint, on=("slurm",))
def slurmdbd(here: Here) -> None:
    """On the database host: slurmdbd.conf (0600 slurm, with the database password from Vault) and the daemon."""
    valid = here.valid
    if "database" in here.groups:
        refuse_diff(here.run, SLURMDBD_CONF)
        _log_dir(here)
        conf = ops.file(here, name=f"{SLURMDBD_CONF} (0600 slurm, with the database password from Vault)",
                        path=SLURMDBD_CONF, content=storage_conf(here), mode="0600", user="slurm", group="slurm")
        port = valid.slurm_conf.get("AccountingStoragePort", str(SLURMDBD_PORT))
        ops.service(here, name="slurmdbd runs with its config", unit="slurmdbd",
                    inputs=(conf, _key_inputs(here), *_jwt_inputs(here)),
                    changing=_key_changing(here) or _jwt_changing(here), restart_for=moved(here, "slurmdbd"),
                    why="slurmdbd.conf or a key changed since it last started",
                   # A new release converts the accounting database as it starts: hours for a large one.
                    ready=until(f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'", f"slurmdbd listens on port {port}",
                                timeout_s=DATABASE_CONVERSION_S if new_release(here) else TIMEOUT_S))
    else:
        ops.commands(here, name="slurmdbd runs with its config", commands=[], otherwise="no slurmdbd here",
                     shared=True)


@step("slurmctld stop before nodes change", on=("slurm",))
def slurmctld_stop_for_nodes(here: Here) -> None:
    """Slurm <= 24.05 adds or removes nodes with slurmctld stopped while every host gets the new files."""
    stop = "controller" in here.groups and change(here.run).stop_first
    ops.commands(here, name="stop slurmctld: nodes change",
                 commands=["systemctl stop slurmctld.service"] if stop else [],
                 otherwise="slurmctld keeps running", shared=True)


@step("slurmd restart while slurmctld is stopped", on=("slurm",))
def slurmd_restart_for_nodes(here: Here) -> None:
    restart = "compute" in here.groups and change(here.run).stop_first and here.state.unit("slurmd").active
    ops.commands(here, name="restart slurmd while slurmctld is stopped",
                 commands=["systemctl restart slurmd.service"] if restart else [],
                 otherwise="no slurmd restarts before slurmctld starts", shared=True)


@step("slurmctld", footprint=footprint, on=("slurm",))
def slurmctld(here: Here) -> None:
    valid = here.valid
    change_ = change(here.run)
    there = "controller" in here.groups
    if there:
        state_dir = valid.slurm_conf["StateSaveLocation"]
        ops.directory(here, name=f"{state_dir} (StateSaveLocation)", path=state_dir, mode="0700", user="slurm",
                      group="slurm")
        _log_dir(here)
    inputs = ops.digest(_key_inputs(here), *(_jwt_inputs(here) if there else ()))
    package = moved(here, "slurmctld") if there else ""
    restart = there and (change_.restart_slurmctld or bool(package)
                         or ops.owed(here.state, "slurmctld", inputs, _key_changing(here) or _jwt_changing(here)))
    why = change_.reasons() if change_.restart_slurmctld else package or "the authentication key or the JWT key changed"
    ops.daemon(here, name="slurmctld runs with the current files" + (f" ({why})" if restart else ""),
               unit="slurmctld", inputs=inputs, restart=restart, ready=ANSWERS, there=there, why=why)
    reconfigure = there and change_.reconfigure and not restart
    ops.commands(here, name=controller.RECONFIGURE + (f": {change_.reasons()}" if reconfigure else ""),
                 commands=[bounded(controller.RECONFIGURE, RECONFIGURE_TIMEOUT_S, controller.RECONFIGURE), ANSWERS]
                 if reconfigure else [],
                 otherwise="nothing to reconfigure", shared=True)


@step("slurmd", footprint=footprint, on=("slurm",))
def slurmd(here: Here) -> None:
    valid = here.valid
    change_ = change(here.run)
    machine = here.machine
    there = "compute" in here.groups
    dropin = slurmd_dropin.render(valid, machine) if there else None
    written = None
    fetching: Change | None = None
    if there:
        # slurmd's maintainer script gives its spool directory to the slurm user; slurmd runs as root.
        ops.directory(here, name=f"{valid.slurm_conf['SlurmdSpoolDir']} (SlurmdSpoolDir)",
                      path=valid.slurm_conf["SlurmdSpoolDir"], reset=any(p == "slurmd" for p, _ in slurm_moves(here)))
        _log_dir(here)
        if dropin is not None:
            ops.directory(here, name="slurmd drop-in directory", path=SLURMD_DROPIN_DIR)
            written = ops.file(here, name="slurmd waits for the GPU device files and the local disk",
                               path=SLURMD_DROPIN, content=dropin)
        else:
            written = ops.absent(here, name="slurmd waits for nothing", path=SLURMD_DROPIN)
        ops.systemd_reads(here, "the slurmd drop-in", "systemd", [written])
        fetching = _configless_dropin(here)
        if fetching is not None:
            ops.systemd_reads(here, "the slurmd configless drop-in", "systemd-slurmd-configless", [fetching])
    early = change_.stop_first  # restarted while slurmctld was stopped
    ordered = there and change_.restart_slurmd(machine.name)
    package = moved(here, "slurmd") if there else ""
    name = machine.node.name if there and machine.node is not None else here.name
    heard = until(nodes.responding_command(name), f"slurmctld hears the slurmd of this start on node {name} "
                  f"({nodes.SLURMD_UNIT} active, registered since it started, responding)",
                  hint="" if here.run.host_of(valid.controller.name) is not None else
                  f"the controller {valid.controller.name} is not in this run (--limit, or it failed), and "
                  "slurmctld takes no node its slurm.conf does not name: deploy a new node with the controller")
    ops.service(here, name="slurmd runs with the current files", unit="slurmd",
                inputs=(_key_inputs(here), written, *((fetching,) if fetching is not None and fetching.holds else ())),
                changing=_key_changing(here),
                restart_for=(change_.reasons() or "the Slurm files changed") if ordered else package or (
                    "it no longer fetches the Slurm files" if fetching is not None and fetching.acts
                    and not fetching.holds else ""),
                why="its drop-ins or the authentication key changed",
                ready=heard, there=there,
                settle=there and early and here.state.unit("slurmd").active)


def _configless_dropin(here: Here) -> Change | None:
    """slurmd's configless drop-in (render/slurmd_configless.py), written on a node that fetches the Slurm files and
    removed where it no longer does: its Change, None where it neither is nor was. Only a written one is among
    slurmd's inputs, so a cluster that never ran configless, or no longer does, keeps the inputs and records it had
    (the removal restarts slurmd by its reason)."""
    if fetches(here.valid, here.groups):
        text = slurmd_configless.render(here.valid)
        assert text is not None
        return ops.file(here, name="slurmd fetches the Slurm files from slurmctld", path=SLURMD_CONFIGLESS,
                        content=text)
    if SLURMD_CONFIGLESS in here.state.paths:
        return ops.absent(here, name="slurmd reads the local Slurm files", path=SLURMD_CONFIGLESS)
    return None


@step("sackd", footprint=footprint, on=("slurm",))
def sackd(here: Here) -> None:
    """sackd on a login host with auth/slurm: it hands out credentials there, signed with slurm.key."""
    there = here.valid.auth == "slurm" and runs_sackd(here.groups)
    ops.service(here, name="sackd runs with the key", unit="sackd", inputs=(_key_inputs(here),),
                changing=_key_changing(here), restart_for=moved(here, "sackd") if there else "", why="the key changed",
                ready=until(f"test -S {SACK_SOCKET}", f"sackd serves {SACK_SOCKET}"), there=there)
