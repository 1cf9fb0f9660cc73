"""MariaDB settings for slurmdbd, as SchedMD's accounting guide recommends, sized from the database host's RAM."""

from __future__ import annotations

from ..distributions import snapshot_isolation_on
from ..model import ValidCluster
from .text import fill, header

MIB_PER_GIB = 1024
POOL_CHUNK_MIB = 128  # InnoDB rounds the buffer pool to whole chunks


def buffer_pool_mib(memory_mib: int) -> int:
    """A quarter of RAM, raised to SchedMD's 4 GiB floor wherever that is still at most half of RAM."""
    pool = memory_mib // 4
    if pool < 4 * MIB_PER_GIB <= memory_mib // 2:
        pool = 4 * MIB_PER_GIB
    return max(POOL_CHUNK_MIB, pool // POOL_CHUNK_MIB * POOL_CHUNK_MIB)


def render(valid: ValidCluster) -> str:
    database = valid.database
    assert database.memory is not None
    pool = buffer_pool_mib(database.memory)
    settings = [
        ("innodb_buffer_pool_size", f"{pool}M"),
        ("innodb_log_file_size", f"{max(pool // 4, 64)}M"),
        ("innodb_lock_wait_timeout", "900"),
        ("max_allowed_packet", "16M"),
        ("innodb_default_row_format", "dynamic"),
    ]
    if snapshot_isolation_on(valid.version):
        # On by default in the MariaDB beside this release (11.6.2 and later): a write conflict then fails
        # slurmdbd's statement, and slurmdbd 26.05.3 and later stop on it. Older MariaDB has no such variable.
        settings.append(("innodb_snapshot_isolation", "OFF"))
    return fill("mariadb.cnf.j2", header=header(valid, f"{database.name} has {database.memory} MiB of RAM."),
                settings=settings)
