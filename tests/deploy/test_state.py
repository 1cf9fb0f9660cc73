"""The host-state command as a host runs it (a real sh), for what a unit test can show without a host: a daemon
still running an executable that a package has since replaced."""

from __future__ import annotations

import shutil
import subprocess
import textwrap

from clusterforge.roles.state import HostState


def test_a_daemon_running_a_replaced_executable_is_read_as_replaced(tmp_path):
    program = tmp_path / "slurmd"
    shutil.copy("/bin/sleep", program)
    old = subprocess.Popen([str(program), "60"])
    kept = subprocess.Popen(["/bin/sleep", "60"])
    try:
        program.unlink()  # as dpkg does when it unpacks a new version: the running inode is gone
        (tmp_path / "bin").mkdir()
        # systemd's answer for two running units and one stopped, as `systemctl show` prints it.
        (tmp_path / "bin" / "systemctl").write_text(textwrap.dedent(f"""\
            #!/bin/sh
            printf 'Id=slurmd.service\\nActiveState=active\\nUnitFileState=enabled\\nLoadState=loaded\\nMainPID={old.pid}\\n\\n'
            printf 'Id=munge.service\\nActiveState=active\\nUnitFileState=enabled\\nLoadState=loaded\\nMainPID={kept.pid}\\n\\n'
            printf 'Id=sackd.service\\nActiveState=inactive\\nUnitFileState=disabled\\nLoadState=loaded\\nMainPID=0\\n'
            """))
        (tmp_path / "bin" / "systemctl").chmod(0o755)
        command = HostState().command(units=("slurmd.service", "munge.service", "sackd.service"))
        out = subprocess.run(["sh", "-c", command], env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"},
                             capture_output=True, text=True, check=True).stdout
        state = HostState().process(out.splitlines())
    finally:
        old.kill()
        kept.kill()
    assert state.unit("slurmd").replaced and state.unit("slurmd").active
    assert not state.unit("munge").replaced and state.unit("munge").active
    assert not state.unit("sackd").replaced and not state.unit("sackd").active and state.unit("sackd").known
