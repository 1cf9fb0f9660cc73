"""The controller session (reach/controller.py): a refusal, an answer that is not Slurm's, no answer in time and a
controller not reached are each one ControllerRefused naming the host and the cause, whichever operation asked;
the controller's commands run in a real shell here (this machine's sinfo, where it has one, refusing for want of a
configuration), over SSH to a real sshd (tests/reach/sshd.py) and to a port nobody listens on; and `admit`, `accept`
and `roll` say whom they connect to first, then an unreachable controller in the same words."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from click.testing import CliRunner
from clusters import small_cluster
from golden_cases import prod_edited
from reach.sshd import free_port, running

from clusterforge.cli import cli
from clusterforge.model import resolve
from clusterforge.reach.controller import Controller, ControllerRefused, ControllerUnreachable
from clusterforge.reach.hosts import Target
from clusterforge.reach.ssh import Connections, Unreachable
from clusterforge.slurm import reservations
from clusterforge.slurm.commands import Answer

VALID = resolve(small_cluster())
CTL = next(m for m in VALID.machines if m.name == VALID.controller.name)
needs_ssh = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")


def shell(command: str) -> Answer:
    """The controller's shell, here: a command bounded as reach/ssh.py bounds it."""
    done = subprocess.run(["timeout", "2", "sh", "-c", command], capture_output=True, text=True, check=False,
                          timeout=30, stdin=subprocess.DEVNULL)
    return Answer(done.returncode, done.stdout, done.stderr)


def test_a_refused_command_names_the_host_what_was_asked_its_exit_and_its_words():
    controller = Controller("ctl", shell)
    with pytest.raises(ControllerRefused) as refused:
        controller.states()  # sinfo here: no configuration to reach a slurmctld by (exit 1), or not there (127)
    assert refused.value.host == "ctl"
    assert refused.value.said.startswith("reading the nodes' states (sinfo) failed (exit ")
    assert str(refused.value).startswith("ctl: reading the nodes' states (sinfo) failed (exit ")
    assert "sinfo" in refused.value.said.split("): ", 1)[1]
    with pytest.raises(ControllerRefused, match=r"^ctl: `echo no >&2; exit 3` failed \(exit 3\): no$"):
        controller.ask("echo no >&2; exit 3")
    with pytest.raises(ControllerRefused, match=r"^ctl: reading the clock gave no answer in time$"):
        controller.ask("sleep 10", "reading the clock")
    assert controller.ask("echo yes") == "yes\n"


def test_an_answer_that_is_not_slurms_is_a_refusal():
    controller = Controller("ctl", shell)
    with pytest.raises(ControllerRefused, match=r"^ctl: reading the reservations: not the output of scontrol show "
                                                r"reservation: 'slurm_load_reservations: Zero Bytes were transmitted"):
        controller.read("echo 'slurm_load_reservations: Zero Bytes were transmitted or received'",
                        "reading the reservations", reservations.parse_reservations)
    with pytest.raises(ControllerRefused, match=r"^ctl: sbatch of cf-accept:dcgm on gpu01: not sbatch --parsable's job "
                                                r"id: 'Submitted batch job 12'"):
        controller.submit("echo 'Submitted batch job 12'", "sbatch of cf-accept:dcgm on gpu01")
    assert controller.submit("echo 'sbatch: warning: x' >&2; echo '12;prod'", "sbatch") == "12"


def test_jobs_slurm_does_not_know_are_a_refusal():
    forgetful = Controller("ctl", lambda command: Answer(0, "", ""))  # scontrol show job answers nothing: no such job
    with pytest.raises(ControllerRefused, match=r"^ctl: Slurm does not know the jobs 7, 8 it was given$"):
        forgetful.wait(["7", "8"], {}, sleep=lambda s: None)


@needs_ssh
def test_a_controller_not_reached_is_refused_and_unreachable_in_one_line_naming_it():
    port = free_port()
    connections = Connections([Target(CTL, {"ssh_hostname": "127.0.0.1", "ssh_port": port, "ssh_user": "root"})])
    try:
        controller = Controller.over(connections, CTL.name)
        for ask in (controller.states, controller.reservations, lambda: controller.hostnames("gpu[01-02]"),
                    lambda: controller.answer("true")):
            with pytest.raises(ControllerUnreachable) as error:
                ask()
            assert isinstance(error.value, ControllerRefused) and isinstance(error.value, Unreachable)
            cause = f"connection refused by 127.0.0.1 port {port}: check that sshd runs there, and ssh_port in the " \
                    "inventory"
            assert (error.value.host, error.value.cause, error.value.kind) == (CTL.name, cause, "connection refused")
            # The Unreachable's line (failures.py's), naming the connection that failed: the controller's.
            assert str(error.value) == f"the controller {CTL.name}: {cause}"
    finally:
        connections.close()


@needs_ssh
def test_a_controller_reached_over_a_real_sshd_that_refuses_says_what_its_shell_said(tmp_path):
    with running(tmp_path) as sshd:
        connections = Connections([Target(CTL, {"ssh_hostname": "127.0.0.1", "ssh_port": sshd.port,
                                                "ssh_user": "root", "ssh_key": str(sshd.key),
                                                "ssh_known_hosts_file": str(tmp_path / "known_hosts")})])
        try:
            controller = Controller.over(connections, CTL.name)
            with pytest.raises(ControllerRefused, match=rf"^{CTL.name}: reading the nodes' states \(sinfo\) failed "
                                                        r"\(exit 127\): .*sinfo: not found$") as refused:
                controller.states()  # the root has OpenSSH, not Slurm
            assert not isinstance(refused.value, Unreachable)
            assert controller.hostnames("") == [] and controller.ask("echo ok") == "ok\n"
        finally:
            connections.close()


@needs_ssh
def test_admit_accept_and_roll_say_an_unreachable_controller_alike(tmp_path):
    port = free_port()
    inventory = prod_edited(tmp_path, ('host_groups(cluster, ssh_user="root")',
                                       f'host_groups(cluster, ssh_user="root", ssh_hostname="127.0.0.1", '
                                       f'ssh_port={port})'))
    said = (f"Error: the controller slurm-ctl01: connection refused by 127.0.0.1 port {port}: check that sshd runs there, and "
            "ssh_port in the inventory")
    offline = "accept: the controller could not be reached; --dry-run --offline plans from the inventory alone"
    for args in (["admit", str(inventory), "gpu-node-001"], ["accept", "--dry-run", str(inventory)],
                 ["roll", "--reboot", "--dry-run", str(inventory)]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        # Whom it waits for, said before it connects; then the controller named as such, with what failed.
        connecting = f"{args[0]}: connecting to the controller slurm-ctl01 (127.0.0.1 port {port})"
        assert result.stderr.splitlines() == [connecting, *([offline] if args[0] == "accept" else []), said], args
        assert result.stdout == "", (args, result.stdout)
