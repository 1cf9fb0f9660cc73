"""slurmrestd with JWT authentication, where the inventory has Rest (model/rest.py).

The HS256 key comes from Vault and goes where it is loaded, and nowhere else: slurmctld (every controller) makes
tokens with it (`scontrol token`) and checks them, slurmdbd checks them; clients and slurmd never load auth/jwt.
Both read it only when they start, so a new key restarts them (roles/daemons.py counts it in their inputs, and a
restart owed stays owed until it has happened); every token made with the old key is refused from then on.

slurmrestd itself runs on one Slurm host (the controller unless the inventory says), as a user of its own (created
by roles/common.py), from a drop-in over Debian's unit (render/slurmrestd.py). It reads slurm.conf only when it
starts: it restarts when its drop-in changes, its package moves, or slurmctld restarts for a change of the Slurm
files (ports, SlurmctldHost, the authentication: what a reconfigure cannot apply), a restart owed until made.
"""

from __future__ import annotations

from ..errors import DeployError, for_pyinfra
from ..model import ValidCluster
from ..model.settings import JWT_KEY, SLURM_DIR
from ..render import slurmrestd as render
from ..secrets import Secret
from ..engine import ops
from .daemons import moved
from ..engine.footprint import Footprint
from ..engine.run import Here, step
from .slurm_change import change
from ..engine.upload import refuse_diff
from ..engine.waits import until

KEY_GROUPS = frozenset({"controller", "database"})
SLURMRESTD_DROPIN = render.DROPIN
JWT_PLUGIN = "slurm-wlm-jwt-plugin"
# auth/jwt where the key is loaded (slurmctld, slurmdbd), and where slurmrestd authenticates with tokens.
PACKAGES = {"controller": (JWT_PLUGIN,), "database": (JWT_PLUGIN,), "rest": ("slurmrestd", JWT_PLUGIN)}


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The JWT key, slurmrestd's drop-in; with Rest, auth/jwt's package where the key is loaded, and slurmrestd on
    its host."""
    there = valid.rest is not None and "rest" in groups
    packages = [p for g in groups for p in PACKAGES.get(g, ())] if valid.rest is not None else []
    return Footprint(paths=(JWT_KEY, render.DROPIN_DIR, SLURMRESTD_DROPIN), shown=(SLURMRESTD_DROPIN,),
                     units=(render.UNIT,) if there else (), packages=tuple(packages),
                     known=("slurmrestd", JWT_PLUGIN))


def holds_jwt_key(here: Here) -> bool:
    """Whether this host loads the JWT key: a controller or the database host of a cluster with Rest."""
    return here.valid.rest is not None and bool(KEY_GROUPS & here.groups)


def jwt_key(here: Here) -> Secret:
    return here.run.secrets.jwt_key()


def _refuse_partial_key_change(here: Here, secret: Secret) -> None:
    installed = here.state.paths.get(JWT_KEY)
    if here.run.partial and installed is not None and installed.sha256 != ops.sha256(secret):
        raise for_pyinfra(DeployError(
            f"{here.name}: {JWT_KEY} differs from the {secret.label} in Vault, and this run is limited "
            "(--limit/--exclude). Deploy a new key to the controllers and the database host in one run: slurmdbd "
            "refuses the tokens slurmctld makes with another key"))


@step("jwt key", footprint=footprint)
def jwt_key_file(here: Here) -> None:
    """The JWT key from Vault, 0600 slurm:slurm (Slurm 24.11 refuses one others may read), on the controllers and
    the database host, and removed from the cluster's other hosts. Without Rest the path is left alone: it is
    Slurm's usual one, and a site may run auth/jwt of its own through slurm_conf_extra."""
    if here.valid.rest is None:
        return
    if not holds_jwt_key(here):
        ops.absent(here, name=f"no {JWT_KEY} here: neither slurmctld nor slurmdbd runs here", path=JWT_KEY)
        return
    refuse_diff(here.run, JWT_KEY)
    secret = jwt_key(here)
    _refuse_partial_key_change(here, secret)
    ops.directory(here, name=f"{SLURM_DIR} exists", path=SLURM_DIR)
    ops.file(here, name=f"{JWT_KEY} from Vault", path=JWT_KEY, content=secret, mode="0600", user="slurm",
             group="slurm")


@step("slurmrestd", footprint=footprint, on=("slurm",))
def slurmrestd(here: Here) -> None:
    """On its host: the drop-in, read by systemd, and slurmrestd running with it once slurmctld runs. Every Slurm
    host gets the daemon's operation (a no-op elsewhere), so that it comes after slurmctld's on the controller."""
    valid = here.valid
    rest = valid.rest
    there = rest is not None and "rest" in here.groups
    dropin = render.dropin(valid) if there else None
    written = None
    if dropin is not None:
        written = ops.dropin(here, "slurmrestd", SLURMRESTD_DROPIN, dropin,
                             "slurmrestd runs as its own user with JWT authentication")
    else:
        # The inventory moved it elsewhere, or has no Rest.
        ops.dropin_gone(here, "slurmrestd", render.UNIT, SLURMRESTD_DROPIN)
    slurm_files = change(here.run).restart_slurmctld
    package = moved(here, "slurmrestd") if there else ""
    ready = (until(f"bash -c 'exec 3<>/dev/tcp/{render.local_address(rest)}/{rest.port}'",
                   f"slurmrestd listens on port {rest.port}") if rest is not None else None)
    ops.service(here, name="slurmrestd runs with its drop-in", unit="slurmrestd", inputs=(written,),
                restart_for="slurmctld restarts for the Slurm files, which slurmrestd reads when it starts"
                if slurm_files else package, why="its drop-in changed", ready=ready, there=there)
