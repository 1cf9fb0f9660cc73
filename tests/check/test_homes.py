"""`clusterforge check`'s homes check: a home or ``.ssh`` that is not a directory of the person's own (a link a person
made to /etc, a file, another's directory) is named, read with this machine's own stat without following links, as
the deploy leaves it untouched (roles/identity.py)."""

from __future__ import annotations

import getpass
import os
import subprocess

from golden_cases import cases

from clusterforge.check import homes as judge
from clusterforge.check.probes import checks_for
from clusterforge.model import Identity, Person

ME = getpass.getuser()  # the files made here are this user's: the person is named after them
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHkdpqRbBT6ybJEhpxSUcU1xw07q7O6WZCVeLUmsohHF me@site"


def _seen(spec: Identity, base: str) -> str:
    done = subprocess.run(["sh", "-c", judge.read_command(spec, base)], capture_output=True, text=True, check=True)
    return done.stdout


def test_a_home_whose_ssh_is_a_link_to_etc_is_named_and_a_plain_one_is_not(tmp_path):
    spec = Identity(people=(Person(ME, uid=os.getuid(), ssh_keys=(KEY,)),))
    (tmp_path / ME / ".ssh").mkdir(parents=True)
    detail, findings = judge.homes(spec, str(tmp_path), _seen(spec, str(tmp_path)))
    assert findings == [] and detail == f"1 of 1 homes in {tmp_path} take the inventory's keys"
    (tmp_path / ME / ".ssh").rmdir()
    (tmp_path / ME / ".ssh").symlink_to("/etc")
    detail, findings = judge.homes(spec, str(tmp_path), _seen(spec, str(tmp_path)))
    assert [f.message for f in findings] == [
        f"{tmp_path}/{ME}/.ssh is a symbolic link, not a directory of {ME}'s own: left untouched, and the "
        f"inventory's keys for {ME} are not written (make it a directory {ME} owns, or remove it)"]
    assert detail.startswith("0 of 1 homes")


def test_a_home_that_is_a_file_is_named_and_a_missing_one_is_not(tmp_path):
    spec = Identity(people=(Person(ME, uid=os.getuid(), ssh_keys=(KEY,)),))
    assert judge.homes(spec, str(tmp_path), _seen(spec, str(tmp_path)))[1] == []  # made by the next deploy
    (tmp_path / ME).write_text("")
    findings = judge.homes(spec, str(tmp_path), _seen(spec, str(tmp_path)))[1]
    assert [f.message.split(",")[0] for f in findings] == [f"{tmp_path}/{ME} is a file"]


def test_homes_are_checked_where_a_host_makes_them():
    valid = next(c for c in cases() if c.name == "people").valid()
    names = {m.name: [c.name for c in checks_for(m, valid, smoke=False)] for m in valid.machines}
    assert any("homes" in found for found in names.values())
    prod = next(c for c in cases() if c.name == "prod-24.11").valid()
    assert not any(c.name == "homes" for m in prod.machines for c in checks_for(m, prod, smoke=False))
