"""Paths of the inventory that reach root's shell on a host are plain: a shell word in one (``;``, ``$(...)``, a
quote, a space, ``|``) is refused at its line before anything runs, never handed to root as a second command."""

from __future__ import annotations

import pytest
from clusters import gpu_profile, only_problem, small_cluster

from clusterforge.model import Health, Host, Nfs, NfsExport, NfsMount, resolve
from clusterforge.model.rules.paths import plain_command, plain_path


@pytest.mark.parametrize("path", ["/srv/home; rm -rf /", "/srv/$(id)", "/srv/home dir", "/srv/a|b", "/srv/'x'",
                                  "/srv/a\nb", "srv/home", "/srv/*"])
def test_a_path_with_a_shell_word_is_not_plain(path):
    assert not plain_path(path)


def test_the_paths_a_site_writes_are_plain():
    assert all(plain_path(p) for p in ("/srv/home", "/home", "/mnt/local-nvme0", "/opt/site_1.2/bin", "/a/b+c@d"))
    assert plain_command("/usr/bin/systemctl --no-block restart slurmd")
    assert not plain_command("/usr/sbin/reboot; curl evil") and not plain_command("/sbin/reboot $(id)")


def _nfs(export: str, mount_point: str = "/shared") -> Nfs:
    return Nfs(server=Host("ctl", address="10.9.0.1"), exports=(NfsExport(path=export),),
               mounts=(NfsMount(export=export, mount_point=mount_point),))


def test_an_export_with_a_second_command_in_it_is_refused_at_its_line():
    problem = only_problem(small_cluster(nfs=_nfs("/srv/home;touch /pwned")))
    assert "nfs.exports[/srv/home;touch /pwned]" in problem and "the deploy hands it to root's shell" in problem
    assert "test_paths.py" in problem


def test_a_mount_point_a_reboot_program_and_a_local_disk_with_shell_words_are_each_named():
    assert "a mount point must be an absolute path of letters" in only_problem(
        small_cluster(nfs=_nfs("/srv/home", "/shared $(id)")))
    assert "health.reboot_program" in only_problem(small_cluster(health=Health(reboot_program="/sbin/reboot;id")))
    profile = gpu_profile().model_copy(update={"local_disk": "/mnt/nvme|id"})
    assert "local_disk" in only_problem(small_cluster(profiles=(profile,)))


def test_plain_paths_validate():
    resolve(small_cluster(nfs=_nfs("/srv/home")))


def test_a_home_base_with_a_shell_word_is_refused_at_its_line():
    from clusterforge.model import Identity, Person

    people = (Person("alice", uid=20001),)
    problem = only_problem(small_cluster(identity=Identity(people=people, home_base="/home/$(id)")))
    assert "identity.home_base" in problem and "the deploy hands it to root's shell" in problem
