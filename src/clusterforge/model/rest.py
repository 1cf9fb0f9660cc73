"""slurmrestd, Slurm's REST API, on one host of the cluster, its callers authenticated with JSON Web Tokens signed
with a key from Vault (auth/jwt: the key is loaded by slurmctld and slurmdbd alone; slurmrestd passes each
caller's token on)."""

from __future__ import annotations

from pydantic import Field

from .base import Entry
from .hosts import Host


class Rest(Entry):
    """Where slurmrestd runs and listens. Off unless the inventory has one."""

    host: Host | None = Field(default=None, description="runs slurmrestd: a host of the cluster that has slurm.conf, "
                                                        "named as it is there (the backup controller, the database "
                                                        "host, a login host); None: the controller")
    port: int = Field(default=6820, description="the TCP port slurmrestd listens on (Slurm's own example's); 1 to "
                                                "65535, and none of Slurm's or monitoring's ports")
    listen: str = Field(default="0.0.0.0", description="the address slurmrestd listens on: '0.0.0.0' every IPv4 "
                                                       "address of its host, '127.0.0.1' only its own (behind a "
                                                       "proxy on the host), or one of the host's addresses")
