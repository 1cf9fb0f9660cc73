"""Deploying through sudo (engine/remote.py), on this machine's real sudo through pyinfra's @local connector: the
command a secret is written with, watched with strace, leaves no copy anywhere but its file (pyinfra's own sudo
upload, watched the same way, leaves one in /tmp: the watch sees copies), shows the secret on no command line, and
gives the file its owner's mode alone; a sudo that wants a password is refused by name before anything runs."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clusterforge.errors import ClusterforgeError
from clusterforge.inventory import host_groups

from clusters import small_cluster

REPO = Path(__file__).resolve().parents[2]
SECRET = bytes(range(256)) * 4  # binary, as a munge key is
needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("strace") is None,
                                reason="needs root (sudo without a password) and strace")

# A pyinfra run of one host, @local with pyinfra's _sudo, that writes SECRET to argv[1] the way argv[2] says.
WRITER = textwrap.dedent("""
    import sys
    from io import BytesIO
    from pyinfra.api import Config, Inventory, State
    from pyinfra.api.connect import connect_all
    from clusterforge.engine.remote import secret_write, sudo_arguments
    from clusterforge.secrets import Secret

    inventory = Inventory((["@local"], {"_sudo": True}))
    state = State(inventory, Config())
    connect_all(state)
    host = inventory.get_host("@local")
    secret = Secret(bytes(range(256)) * 4, "<test key>")
    if sys.argv[2] == "clusterforge":
        ok = secret_write(secret, sys.argv[1]).execute(state, host, sudo_arguments(host))[0]
    else:  # pyinfra's own sudo upload
        ok = host.put_file(BytesIO(secret.reveal()), sys.argv[1], **sudo_arguments(host))
    sys.exit(0 if ok else 1)
""")


def traced_write(tmp_path: Path, how: str) -> tuple[Path, list[str], str]:
    """The file written, every path opened for writing by the run and its children, and every command line run."""
    target = tmp_path / "keys" / "munge.key"
    target.parent.mkdir()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    log = tmp_path / "strace.log"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(["strace", "-f", "-qq", "-s", "65536", "-e", "trace=openat,creat,execve", "-o", str(log),
                           sys.executable, str(script), str(target), how], check=False, capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    trace = log.read_text()
    written = [m.group(1) for m in re.finditer(r'openat\([^,]+, "([^"]+)", [^)]*O_(?:WRONLY|RDWR)[^)]*\)', trace)]
    commands = "\n".join(line for line in trace.splitlines() if "execve(" in line)
    return target, written, commands


def staged(written: list[str], target: Path) -> list[str]:
    """What a run wrote besides the target, where a copy could lie (not devices, kernel files, nor sudo's own records:
    PAM's session modules write the process's cgroup there, pam_cgfs where lxc's recommends installed it)."""
    return sorted({p for p in written if p != str(target)
                   and not p.startswith(("/dev/", "/proc/", "/sys/", "/run/sudo"))})


@needs_root
def test_a_secret_through_sudo_is_written_from_stdin_with_no_copy_and_private(tmp_path):
    target, written, commands = traced_write(tmp_path, "clusterforge")
    assert target.read_bytes() == SECRET
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert str(target) in written and staged(written, target) == []
    assert "sudo" in commands and str(target) in commands
    assert "base64" in commands and SECRET.hex() not in commands
    import base64
    assert base64.b64encode(SECRET).decode()[:40] not in commands


@needs_root
def test_the_watch_sees_the_copy_pyinfras_own_sudo_upload_stages(tmp_path):
    target, written, _ = traced_write(tmp_path, "pyinfra")
    assert target.read_bytes() == SECRET
    # The local connector stages it in a temporary file of its own (over SSH: /tmp/pyinfra-..., the SSH user's).
    assert [p for p in staged(written, target) if p.startswith("/tmp/")], written


def refusal(tmp_path: Path, sudo: str, data: str = "") -> subprocess.CompletedProcess[str]:
    """The sudo check of a deploy host @local with pyinfra's _sudo (and ``data``, more host data as Python), its
    `sudo` being the script ``sudo``."""
    script = tmp_path / "refused.py"
    script.write_text(textwrap.dedent("""
        from pyinfra.api import Config, Inventory, State
        from pyinfra.api.connect import connect_all
        from clusterforge.engine.remote import refuse_sudo_password

        inventory = Inventory((["@local"], {"_sudo": True, "ssh_user": "nobody", DATA}))
        state = State(inventory, Config())
        connect_all(state)
        refuse_sudo_password(inventory.get_host("@local"))
    """).replace("DATA", data))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sudo").write_text(f"#!/bin/sh\n{sudo}\n")
    (bin_dir / "sudo").chmod(0o755)
    return subprocess.run([sys.executable, str(script)], check=False, text=True, capture_output=True, timeout=120,
                          env=dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}"))


@pytest.mark.skipif(os.geteuid() != 0, reason="runs sudo as nobody, whom it asks for a password")
def test_a_sudo_that_wants_a_password_is_refused_by_name(tmp_path):
    # The deploy host is root here: its sudo is this machine's real one, run as nobody, whom it asks for a password.
    done = refusal(tmp_path, f'exec runuser -u nobody -- {shutil.which("sudo")} "$@"')
    assert done.returncode != 0
    assert "@local: sudo asks nobody for a password (sudo: a password is required)" in done.stderr
    assert "NOPASSWD" in done.stderr and "command line" in done.stderr and "Nothing was changed" in done.stderr


def test_pyinfra_puts_a_sudo_password_on_every_remote_command_line():
    # Why the inventory may not give one: any user of the host reads the command line in ps while it runs.
    from pyinfra.api import Config, Inventory, State, StringCommand
    from pyinfra.connectors.util import make_unix_command_for_host

    inventory = Inventory((["node.example"], {"_sudo": True}))
    state = State(inventory, Config())
    host = inventory.get_host("node.example")
    host.connector_data["sudo_askpass_path__/tmp"] = "/tmp/pyinfra-sudo-askpass-x"  # not asked of a host here
    state.config.TEMP_DIR = "/tmp"
    line = make_unix_command_for_host(state, host, StringCommand("true"), _sudo=True, _sudo_password="hunter2")
    assert "hunter2" in line.get_raw_value()


def test_a_sudo_password_in_the_inventory_is_refused_before_anything_runs(tmp_path):
    ran = tmp_path / "ran"
    done = refusal(tmp_path, f'touch {ran}; exec {shutil.which("sudo")} "$@"', data='"_sudo_password": "hunter2"')
    assert done.returncode != 0 and not ran.exists()
    assert ("@local: the inventory gives nobody's sudo password (_sudo_password), which pyinfra would put on the "
            "command line of every command it runs there") in done.stderr
    assert "hunter2" not in done.stderr + done.stdout


def test_a_host_without_sudo_is_refused_by_name(tmp_path):
    done = refusal(tmp_path, "echo 'sh: 1: sudo: not found' >&2; exit 127")
    assert done.returncode != 0
    assert ("@local: nobody cannot run commands through sudo there (sh: 1: sudo: not found), which the inventory asks "
            "for (sudo=True). Nothing was changed on this host") in done.stderr


def test_a_working_sudo_passes_the_check(tmp_path):
    assert refusal(tmp_path, f'exec {shutil.which("sudo")} "$@"').returncode == 0  # root's, which asks nothing


def test_sudo_in_the_inventory_is_pyinfras_own_host_data():
    groups = host_groups(small_cluster(), ssh_user="admin", sudo=True)
    data = groups.controller[0][1]
    assert data["ssh_user"] == "admin" and data["_sudo"] is True
    assert "_sudo" not in host_groups(small_cluster(), ssh_user="root").controller[0][1]
    with pytest.raises(ClusterforgeError, match=r"sudo='yes'\): give True"):
        host_groups(small_cluster(), sudo="yes")

