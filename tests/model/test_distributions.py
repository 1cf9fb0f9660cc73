"""The one table of what each OS ships (distributions.py): which OS a host's os-release names, and the refusal of an
inventory whose release a host's OS does not ship. The Debian rows are checked against the real packages in
tests/realslurm/test_distributions.py."""

from __future__ import annotations

import pytest

from clusterforge.distributions import DISTRIBUTIONS, of_os, os_problem, shipping
from clusterforge.versions import SUPPORTED, v


@pytest.mark.parametrize(("os", "release"), [
    (("debian", "12"), "22.05"), (("debian", "13"), "24.11"), (("debian", ""), "26.05"),
    (("ubuntu", "22.04"), "21.08"), (("ubuntu", "24.04"), "23.11"),
])
def test_each_os_ships_one_release_clusterforge_renders_for(os, release):
    found = of_os(os)
    assert found is not None and found.slurm == v(release) and found.slurm in SUPPORTED
    assert found.slurm_package.startswith(release + ".")
    assert shipping(v(release)) == (found,)


def test_an_os_clusterforge_does_not_know_is_left_to_the_install():
    assert of_os(("rocky", "9")) is None
    assert os_problem("gpu01", ("rocky", "9"), v("24.11"), None) is None


def test_a_release_the_hosts_os_does_not_ship_is_refused_naming_the_host_its_os_and_what_it_ships():
    problem = os_problem("gpu01", ("debian", "12"), v("24.11"), None)
    assert problem == ("gpu01 runs Debian 12 (bookworm), which ships Slurm 22.05 (22.05.8-4+deb12u3), but the "
                       "inventory says slurm_version='24.11' (Debian 13 (trixie) ships 24.11): set "
                       "slurm_version='22.05', or pin the exact version a site repository provides (stack.slurm)")
    assert "no supported OS ships it" in os_problem("gpu01", ("debian", "13"), v("25.11"), None)


def test_the_release_the_os_ships_or_a_pinned_one_passes():
    assert os_problem("gpu01", ("debian", ""), v("26.05"), None) is None
    assert os_problem("gpu01", ("ubuntu", "22.04"), v("25.11"), "25.11.2-1site1") is None


def test_one_row_per_os_and_ubuntu_said_to_be_unproven():
    assert len({d.os for d in DISTRIBUTIONS}) == len(DISTRIBUTIONS)
    for found in DISTRIBUTIONS:
        assert ("not proven on a real Ubuntu machine" in found.proven) == (found.os[0] == "ubuntu")
