"""slurmrestd's systemd drop-in on its host (Rest), over Debian's slurmrestd.service.

Debian's unit, as shipped, runs slurmrestd as root, which slurmrestd refuses ("slurmrestd should not be run as the
root user", 22.05 and 24.11 alike; 24.11 refuses the slurm user and group too), on a unix socket that a user of its
own could not create. The drop-in runs it as its own user, listening on the inventory's address and port only, with
each request authenticated by the caller's JSON Web Token (rest_auth/jwt), and SLURM_JWT set so that slurmrestd's
own client side uses auth/jwt too: it hands each caller's token on to slurmctld and slurmdbd, and needs neither
munged nor slurm.key. Its OpenAPI plugins are named, the release's newest API for slurmctld's paths and
slurmdbd's, rather than every plugin the release ships.
"""

from __future__ import annotations

from ..model import RestSetup, ValidCluster
from ..versions import OPENAPI_BY_DAEMON, OPENAPI_NEWEST, SlurmVersion
from .text import header

UNIT = "slurmrestd.service"
DROPIN_DIR = f"/etc/systemd/system/{UNIT}.d"
DROPIN = f"{DROPIN_DIR}/clusterforge.conf"
FLAT_NAME = "slurmrestd.service.d-clusterforge.conf"  # its name in `clusterforge render`'s one directory
USER = "slurmrestd"
EXECUTABLE = "/usr/sbin/slurmrestd"


def plugins(version: SlurmVersion) -> tuple[str, ...]:
    """The OpenAPI plugins slurmrestd loads: slurmctld's paths (/slurm/...) and slurmdbd's (/slurmdb/...); every
    cluster has slurmdbd, which the slurmdbd plugins need (22.05's exit at start without it)."""
    if version >= OPENAPI_BY_DAEMON:
        return ("openapi/slurmctld", "openapi/slurmdbd")
    api = OPENAPI_NEWEST[version]
    return (f"openapi/{api}", f"openapi/db{api}")


def endpoint(rest: RestSetup) -> str:
    """address:port as slurmrestd takes it; an IPv6 address in brackets, as in a URL."""
    return f"[{rest.listen}]:{rest.port}" if ":" in rest.listen else f"{rest.listen}:{rest.port}"


def local_address(rest: RestSetup) -> str:
    """Where a check on slurmrestd's own host reaches it: the address it listens on, loopback for a wildcard."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(rest.listen, rest.listen)


def dropin(valid: ValidCluster) -> str | None:
    """The drop-in, or None for a cluster without Rest."""
    rest = valid.rest
    if rest is None:
        return None
    command = f"{EXECUTABLE} -a rest_auth/jwt -s {','.join(plugins(valid.version))} {endpoint(rest)}"
    purpose = "slurmrestd as its own user, on the inventory's address and port, with JSON Web Tokens"
    return (f"{header(valid, purpose)}\n"
            "[Service]\n"
            f"User={USER}\nGroup={USER}\n"
            "# Its value is not used: set, it makes slurmrestd send each caller's token on to slurmctld and slurmdbd.\n"
            "Environment=SLURM_JWT=daemon\n"
            "# The packaged command (a unix socket, root's) is replaced, not added to.\n"
            "ExecStart=\n"
            f"ExecStart={command}\n"
            "# Debian's unit reloads with SIGHUP, which no slurmrestd handles: it ends (upstream dropped the line in\n"
            "# 25.05). Without it, `systemctl reload` is refused instead.\n"
            "ExecReload=\n"
            "Restart=on-failure\nRestartSec=5\n")
