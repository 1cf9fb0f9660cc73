"""What each operating system clusterforge deploys to ships: its Slurm release, munge and MariaDB, named once.

A host installs Slurm from its OS's own archive unless the inventory pins an exact version (stack.slurm), which only a
repository that carries it (a site's) can satisfy. So the release an inventory names must be the one its hosts' OS
ships, or pinned. Debian's versions were read from each suite's packages on the development machine (Debian 12 on the
host, Debian 13 and forky in the real-Slurm tier's roots); Ubuntu's are the archive's for each release, not seen here
(no Ubuntu mirror is reachable), and no real Ubuntu machine has run a deploy.
"""

from __future__ import annotations

from dataclasses import dataclass

from .versions import SlurmVersion, v

# MariaDB turned innodb_snapshot_isolation on by default in 11.6.2; slurmdbd 26.05.3 stops at a write conflict it
# causes ("Set innodb_snapshot_isolation=OFF in MariaDB", src/database/mysql_common.c), older ones log an SQL error.
SNAPSHOT_ISOLATION_DEFAULT_ON = (11, 6, 2)


@dataclass(frozen=True)
class Distribution:
    name: str
    os: tuple[str, str]             # /etc/os-release ID and VERSION_ID, as the host-state read reports them
    slurm: SlurmVersion
    slurm_package: str              # the slurmctld version its archive carries
    munge: str
    mariadb: tuple[int, int, int]
    nvidia_repository: str | None   # the folder of NVIDIA's CUDA repository for it (…/cuda/repos/<folder>/x86_64)
    proven: str                     # how clusterforge's own tests prove this release
    # Its Slurm daemons' packages Depend on munge (so munge arrives with them, and its postinst starts munged);
    # forky's only Recommend it, and the deploy installs no recommends.
    slurm_pulls_munge: bool = True
    # The SSSD its archive carries (sssd-ldap), for a site directory (roles/directory.py); None where it has none.
    # Debian's read from each suite's index here (2026-11-27); Ubuntu's not read here (no Ubuntu mirror reachable).
    sssd: str | None = None
    # Its sssd.service makes /etc/sssd group-readable each time it starts (ExecStartPre=chmod -R g+r, Debian 13), and
    # its SSSD accepts sssd.conf 0640; Debian 12's refuses anything but 0600 (sssctl config-check in both).
    sssd_conf_group_read: bool = False

    def __str__(self) -> str:
        return self.name


DISTRIBUTIONS: tuple[Distribution, ...] = (
    Distribution("Debian 12 (bookworm)", ("debian", "12"), v("22.05"), "22.05.8-4+deb12u3", "0.5.15-2+deb12u1",
                 (10, 11, 19), "debian12", "real daemons (real-Slurm tier) and the test cluster",
                 sssd="2.8.2-4+deb12u1"),
    Distribution("Debian 13 (trixie)", ("debian", "13"), v("24.11"), "24.11.5-4+deb13u1", "0.5.16-1.1~deb13u1",
                 (11, 8, 9), "debian13", "real daemons (real-Slurm tier) and the test cluster",
                 sssd="2.10.1-2+deb13u1", sssd_conf_group_read=True),
    # Debian's testing suite (and unstable) has no VERSION_ID in its os-release. No SSSD: forky's index of
    # 2026-10-30 has no sssd, sssd-ldap, sssd-common, libnss-sss or libpam-sss (sid has 2.13.1); nslcd is there.
    Distribution("Debian testing (forky)", ("debian", ""), v("26.05"), "26.05.5-1", "0.5.18-1", (11, 8, 9), None,
                 "real daemons (real-Slurm tier) and the test cluster", slurm_pulls_munge=False),
    Distribution("Ubuntu 22.04 (jammy)", ("ubuntu", "22.04"), v("21.08"), "21.08.5-2ubuntu1", "0.5.14-6",
                 (10, 6, 0), "ubuntu2204", "rules and simulated hosts only: not proven on a real Ubuntu machine",
                 sssd="2.6.3-1ubuntu3"),
    Distribution("Ubuntu 24.04 (noble)", ("ubuntu", "24.04"), v("23.11"), "23.11.4-1.2ubuntu5", "0.5.15-4build1",
                 (10, 11, 7), "ubuntu2404", "rules and simulated hosts only: not proven on a real Ubuntu machine",
                 sssd="2.9.4-1.1ubuntu6"),
)


def of_os(os: tuple[str, str]) -> Distribution | None:
    """The distribution a host runs, from its os-release ID and VERSION_ID; None for one clusterforge does not know."""
    return next((d for d in DISTRIBUTIONS if d.os == os), None)


def pulls_munge(os: tuple[str, str]) -> bool:
    """Whether installing Slurm's daemons on a host of this OS installs munge too; an OS clusterforge does not know
    is taken to, as Debian's and Ubuntu's stable releases do."""
    found = of_os(os)
    return found.slurm_pulls_munge if found is not None else True


def shipping(release: SlurmVersion) -> tuple[Distribution, ...]:
    """The distributions whose own archive carries ``release``; () for a release only a site repository provides."""
    return tuple(d for d in DISTRIBUTIONS if d.slurm == release)


def lacks_sssd(os: tuple[str, str]) -> Distribution | None:
    """The distribution a host runs where its archive has no SSSD; None where it has one, or clusterforge does not
    know the OS (apt's own refusal then stands)."""
    found = of_os(os)
    return found if found is not None and found.sssd is None else None


def snapshot_isolation_on(release: SlurmVersion) -> bool:
    """Whether the MariaDB beside ``release``'s slurmdbd has innodb_snapshot_isolation on by default, on the
    distribution that ships that release."""
    return any(d.mariadb >= SNAPSHOT_ISOLATION_DEFAULT_ON for d in shipping(release))


def os_problem(host: str, os: tuple[str, str], release: SlurmVersion, pinned: str | None) -> str | None:
    """Why ``host`` cannot get ``release`` from its OS's archive, or None: it ships that release, the inventory pins
    an exact version (a site repository's), or clusterforge does not know the OS (the install's own check stands)."""
    found = of_os(os)
    if found is None or found.slurm == release or pinned is not None:
        return None
    shipped = ", ".join(f"{d.name} ships {d.slurm}" for d in shipping(release)) or "no supported OS ships it"
    return (f"{host} runs {found.name}, which ships Slurm {found.slurm} ({found.slurm_package}), but the inventory "
            f"says slurm_version={str(release)!r} ({shipped}): set slurm_version={str(found.slurm)!r}, or pin the "
            f"exact version a site repository provides (stack.slurm)")
