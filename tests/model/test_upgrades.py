"""Slurm's upgrade window, one table in code (versions.py, with its sources): which releases each one takes over
from, the fewest steps between two releases, and the reason a jump outside the window is refused (Debian 12's
22.05 to Debian 13's 24.11 among them)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from clusterforge.versions import RELEASES, upgrade_path, upgrade_problem, upgrades_from, v


@pytest.mark.parametrize(("release", "takes_over_from"), [
    ("22.05", ("20.11", "21.08")), ("23.02", ("21.08", "22.05")), ("23.11", ("22.05", "23.02")),
    ("24.05", ("23.02", "23.11")), ("24.11", ("23.02", "23.11", "24.05")),
    ("25.05", ("23.11", "24.05", "24.11")), ("25.11", ("24.05", "24.11", "25.05")),
    ("26.05", ("24.11", "25.05", "25.11")),
])
def test_two_releases_back_until_24_05_and_three_from_24_11_as_schedmd_lists_them(release, takes_over_from):
    assert upgrades_from(v(release)) == tuple(v(r) for r in takes_over_from)


def test_every_step_of_every_path_is_within_the_window():
    for old in RELEASES:
        for new in RELEASES:
            path = upgrade_path(old, new)
            if new < old:
                assert path is None
                continue
            assert path is not None and path[0] == old and path[-1] == new
            assert all(a in upgrades_from(b) for a, b in pairwise(path))


def test_debian_12_to_13_is_refused_with_the_supported_path_written_out():
    problem = upgrade_problem(v("22.05"), v("24.11"))
    assert problem.startswith("Slurm 24.11 takes over only from 23.02, 23.11, 24.05, not from 22.05")
    assert "Go through 22.05 -> 23.02 -> 24.11, each release in Slurm's order (slurmdbd, then slurmctld" in problem


def test_debian_13_to_forky_is_one_step_and_debian_12_to_forky_goes_through_two_releases_debian_lacks():
    assert upgrade_problem(v("24.11"), v("26.05")) is None
    problem = upgrade_problem(v("22.05"), v("26.05"))
    assert problem.startswith("Slurm 26.05 takes over only from 24.11, 25.05, 25.11, not from 22.05")
    assert "Go through 22.05 -> 23.02 -> 24.11 -> 26.05" in problem


def test_a_step_within_the_window_a_patch_release_and_a_downgrade():
    assert upgrade_problem(v("23.02"), v("24.11")) is None
    assert upgrade_problem(v("24.11"), v("24.11")) is None
    assert "is a downgrade" in upgrade_problem(v("24.11"), v("24.05"))
