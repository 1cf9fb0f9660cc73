"""repair/bmc.py against a real BMC: OpenIPMI's ipmi_sim (Debian's openipmi) on loopback, started by
testbed/bmc/sims.sh, spoken to by Debian's ipmitool over RMCP+, as the loop speaks to a node's BMC. The machine
behind it is a stand-in process (testbed/bmc/power.sh's "process"): on while a `sleep` runs, each power change a
line in its power.log; and once an LXC container, as the test cluster's machines are. Every request is recorded on
its way to ipmitool (the real runner's), so that the password is seen in its environment and nowhere else: no
argument, no output, no message."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from needs import skip_or_fail

from clusterforge.repair import bmc
from clusterforge.repair.plan import Bmc

ROOT = Path(__file__).resolve().parents[2]
SIMS = ROOT / "testbed" / "bmc" / "sims.sh"
POWER = ROOT / "testbed" / "bmc" / "power.sh"
USER, PASSWORD = "repair", "pw-Xq7-secret"
# ipmi_sim does not answer ipmitool's question for its cipher suites, which costs about 10 s of retries before
# ipmitool falls back to suite 3: every test but one asks for suite 3 at once.
SUITE = 3


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Recorder:
    """The real runner, each request and answer kept."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], dict[str, str], bmc.Answer]] = []

    def __call__(self, argv, timeout, env):
        answer = bmc.run_with_env(argv, timeout, env)
        self.calls.append((list(argv), dict(env), answer))
        return answer

    def assert_password_only_in_the_environment(self, *texts: str) -> None:
        for argv, env, answer in self.calls:
            assert not any(PASSWORD in word for word in argv), argv
            assert env == {**bmc.BASE_ENV, "IPMI_PASSWORD": PASSWORD}
            assert PASSWORD not in answer.out + answer.err
        for text in texts:
            assert PASSWORD not in text


class Machine:
    """The stand-in behind the BMC."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir()

    def power(self, *words: str) -> str:
        return subprocess.run(["bash", str(POWER), "process", str(self.path), *words], check=True,
                              capture_output=True, text=True, timeout=10).stdout

    @property
    def on(self) -> bool:
        return self.power("get", "power").strip() == "power:1"

    @property
    def pid(self) -> str:
        return (self.path / "pid").read_text().strip()

    @property
    def log(self) -> list[str]:
        log = self.path / "power.log"
        return log.read_text().split() if log.exists() else []

    def wait_log(self, length: int, bound_s: float = 10) -> list[str]:
        deadline = time.monotonic() + bound_s
        while len(self.log) < length and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.log


def write_credentials(path: Path, password: str = PASSWORD, mode: int = 0o600) -> str:
    path.write_text(json.dumps({"username": USER, "password": password}))
    path.chmod(mode)
    return str(path)


@pytest.fixture
def sim(tmp_path):
    missing = [tool for tool in ("ipmi_sim", "ipmitool", "ss", "setsid") if shutil.which(tool) is None]
    if missing:
        skip_or_fail(f"{', '.join(missing)} not installed (openipmi, ipmitool, iproute2: testbed/apt-packages.txt)")
    port = free_udp_port()
    machine = Machine(tmp_path / "machine")
    env = {**os.environ, "BMC_PASSWORD": PASSWORD}
    up = subprocess.run(["bash", str(SIMS), "up", str(tmp_path / "sims"), USER, f"n1:{port}:process:{machine.path}"],
                        check=False, env=env, capture_output=True, text=True, timeout=30)
    if up.returncode != 0:
        skip_or_fail(f"ipmi_sim cannot run here: {up.stderr.strip()}")
    yield Bmc("127.0.0.1", "ipmi", write_credentials(tmp_path / "bmc.json"), port=port), machine
    subprocess.run(["bash", str(SIMS), "down", str(tmp_path / "sims")], check=True, timeout=30)
    assert not machine.on


def test_the_power_state_is_read_as_ipmitool_negotiates_it_unasked(sim):
    node, machine = sim
    recorder = Recorder()
    off = bmc.status(node, run=recorder)
    assert off.ok and off.power == bmc.OFF, off.said
    machine.power("set", "power", "1")
    assert bmc.power_state(node, run=recorder, cipher_suite=SUITE) == bmc.ON
    assert "-C" not in recorder.calls[0][0] and recorder.calls[1][0][-5:] == ["-C", "3", "chassis", "power", "status"]
    recorder.assert_password_only_in_the_environment(off.said)


def test_a_power_cycle_turns_the_machine_off_and_on_again(sim):
    node, machine = sim
    machine.power("set", "power", "1")
    before = machine.pid
    recorder = Recorder()
    done = bmc.power_cycle(node, run=recorder, cipher_suite=SUITE)
    assert done.ok, done.said
    assert done.said == f"BMC 127.0.0.1:{node.port}: chassis power cycled"
    assert machine.wait_log(3) == ["on", "off", "on"]     # ipmi_sim powers it on again a second after
    assert machine.on and machine.pid != before
    assert [argv[-3:] for argv, _, _ in recorder.calls] == [["chassis", "power", "status"],
                                                             ["chassis", "power", "cycle"]]
    recorder.assert_password_only_in_the_environment(done.said)


def test_a_machine_powered_off_is_powered_on_not_cycled(sim):
    node, machine = sim
    recorder = Recorder()
    done = bmc.power_cycle(node, run=recorder, cipher_suite=SUITE)
    assert done.ok and done.said.endswith("chassis powered on (it was off)"), done.said
    assert machine.wait_log(1) == ["on"] and machine.on
    assert [argv[-1] for argv, _, _ in recorder.calls] == ["status", "on"]
    recorder.assert_password_only_in_the_environment(done.said)


@pytest.fixture
def container(tmp_path):
    """A busybox LXC container with no network, powered by its own ipmi_sim: the test cluster's machines are LXC
    containers, each behind one (testbed/bmc/sims.sh's "lxc")."""
    if os.geteuid() != 0:
        skip_or_fail("an LXC container needs root (CI is root)")
    missing = [tool for tool in ("ipmi_sim", "ipmitool", "lxc-create", "busybox", "ss") if shutil.which(tool) is None]
    if missing:
        skip_or_fail(f"{', '.join(missing)} not installed (openipmi, ipmitool, lxc, busybox-static: "
                     f"testbed/apt-packages.txt)")
    name = f"cf-bmc-test-{os.getpid()}"
    config = tmp_path / "lxc.conf"
    config.write_text("lxc.net.0.type = empty\n")
    created = subprocess.run(["lxc-create", "-n", name, "-t", "busybox", "-f", str(config)], check=False,
                             capture_output=True, text=True, timeout=60)
    if created.returncode != 0:
        skip_or_fail(f"LXC cannot make a container here: {created.stderr.strip()[-300:]}")
    port = free_udp_port()
    up = subprocess.run(["bash", str(SIMS), "up", str(tmp_path / "sims"), USER, f"c1:{port}:lxc:{name}"],
                        env={**os.environ, "BMC_PASSWORD": PASSWORD}, check=False, capture_output=True, text=True,
                        timeout=30)
    try:
        assert up.returncode == 0, up.stderr
        yield Bmc("127.0.0.1", "ipmi", write_credentials(tmp_path / "bmc.json"), port=port), name
    finally:
        subprocess.run(["bash", str(SIMS), "down", str(tmp_path / "sims")], check=False, timeout=30)
        subprocess.run(["lxc-stop", "-n", name, "-k"], check=False, capture_output=True, timeout=30)
        subprocess.run(["lxc-destroy", "-n", name], check=True, capture_output=True, timeout=60)


def lxc(*argv: str) -> str:
    return subprocess.run(["lxc-info", *argv], check=True, capture_output=True, text=True, timeout=10).stdout.strip()


def test_an_lxc_machine_is_started_and_its_power_cycle_stops_and_starts_it_again(container):
    node, name = container
    assert lxc("-n", name, "-sH") == "STOPPED"
    started = bmc.power_cycle(node, cipher_suite=SUITE)
    assert started.ok and started.said.endswith("chassis powered on (it was off)"), started.said
    assert lxc("-n", name, "-sH") == "RUNNING" and bmc.power_state(node, cipher_suite=SUITE) == bmc.ON
    init = lxc("-n", name, "-pH")
    cycled = bmc.power_cycle(node, cipher_suite=SUITE)
    assert cycled.ok and cycled.said.endswith("chassis power cycled"), cycled.said
    deadline = time.monotonic() + 10
    while lxc("-n", name, "-sH") != "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert lxc("-n", name, "-sH") == "RUNNING" and lxc("-n", name, "-pH") != init   # stopped, and started again


def test_a_wrong_password_is_a_named_failure_that_never_says_a_password(sim, tmp_path):
    node, machine = sim
    wrong = "wrong-Zk9-secret"
    node = Bmc(node.address, "ipmi", write_credentials(tmp_path / "wrong.json", wrong), port=node.port)
    outputs: list[str] = []

    def run(argv, timeout, env):
        assert env["IPMI_PASSWORD"] == wrong and not any(wrong in word for word in argv)
        answer = bmc.run_with_env(argv, timeout, env)
        outputs.append(answer.out + answer.err)
        return answer

    done = bmc.power_cycle(node, run=run, cipher_suite=SUITE)
    assert not done.ok
    assert done.said == (f"BMC 127.0.0.1:{node.port}: chassis power status: the BMC refused the login (RAKP 2 HMAC "
                         "is invalid): check the credentials' username and password")
    assert done.why == done.said
    for text in (done.said, repr(done), *outputs):
        assert wrong not in text and PASSWORD not in text
    assert machine.log == []                     # nothing was done to the machine
    assert len(outputs) == 1, outputs            # a refused login is not asked again: BMCs lock accounts out


def test_a_session_the_bmc_did_not_establish_is_asked_again_and_the_cycle_goes_on(sim):
    """ipmi_sim, as many BMCs, now and then establishes no session (about one in five on the test cluster): the
    request was never sent, and is asked again within the action's bound. Here the first session of each request
    is dropped before it reaches the BMC, with ipmitool's own words."""
    node, machine = sim
    machine.power("set", "power", "1")
    asked: list[list[str]] = []

    def run(argv, timeout, env):
        asked.append(list(argv))
        if len(asked) % 2:
            return bmc.Answer(1, "", "Error: Unable to establish IPMI v2 / RMCP+ session\n", 0.1)
        return bmc.run_with_env(argv, timeout, env)

    done = bmc.power_cycle(node, run=run, cipher_suite=SUITE)
    assert done.ok, done.said
    assert [a[-1] for a in asked] == ["status", "status", "cycle", "cycle"]
    assert machine.wait_log(3) == ["on", "off", "on"]


def test_a_session_never_established_fails_after_so_many_tries_named(sim):
    node, machine = sim
    asked: list[list[str]] = []

    def run(argv, timeout, env):
        asked.append(list(argv))
        return bmc.Answer(1, "", "Error: Unable to establish IPMI v2 / RMCP+ session\n", 0.1)

    done = bmc.power_cycle(node, run=run, cipher_suite=SUITE)
    assert not done.ok and "Unable to establish IPMI v2 / RMCP+ session" in done.said
    assert len(asked) == bmc.SESSION_TRIES and machine.log == []
    assert "-v" in asked[0]   # which alone tells a refused login apart


def test_an_unreachable_bmc_is_named_within_its_bound(tmp_path):
    if shutil.which("ipmitool") is None:
        skip_or_fail("ipmitool not installed (testbed/apt-packages.txt)")
    node = Bmc("127.0.0.1", "ipmi", write_credentials(tmp_path / "bmc.json"), port=free_udp_port())
    start = time.monotonic()
    done = bmc.power_cycle(node, timeout_s=2, cipher_suite=SUITE)
    assert time.monotonic() - start < 2 + 2 * bmc.commands.KILL_WAIT_S + 0.5
    assert not done.ok
    assert done.said == f"BMC 127.0.0.1:{node.port}: chassis power status: no answer within 2 s"
    assert PASSWORD not in done.said


def test_an_ipmitool_in_flight_is_killed_with_the_loops_other_commands(tmp_path):
    if shutil.which("ipmitool") is None:
        skip_or_fail("ipmitool not installed (testbed/apt-packages.txt)")
    node = Bmc("127.0.0.1", "ipmi", write_credentials(tmp_path / "bmc.json"), port=free_udp_port())
    done: list[bmc.Outcome] = []
    asking = threading.Thread(target=lambda: done.append(bmc.power_cycle(node, timeout_s=30, cipher_suite=SUITE)))
    asking.start()
    deadline = time.monotonic() + 5
    while not bmc.commands._running and time.monotonic() < deadline:
        time.sleep(0.01)
    bmc.commands.kill_all()      # as the loop's SIGTERM handler does
    asking.join(timeout=5)
    assert not asking.is_alive() and done[0].seconds < 5
    assert done[0].said == f"BMC 127.0.0.1:{node.port}: chassis power status failed: exit -9: no output"


@pytest.mark.parametrize(("mode", "why"), [
    (0o644, "can be read or written by others than its owner (mode 0644, not 0600)"),
    (0o620, "can be read or written by others than its owner (mode 0620, not 0600)"),
    (0o602, "can be read or written by others than its owner (mode 0602, not 0600)"),
])
def test_a_credentials_file_others_can_read_or_write_is_refused_before_any_request(tmp_path, mode, why):
    path = write_credentials(tmp_path / "bmc.json", mode=mode)
    recorder = Recorder()
    done = bmc.power_cycle(Bmc("10.0.0.9", "ipmi", path), run=recorder)
    assert not done.ok and done.said == f"BMC 10.0.0.9: credentials refused: {path} {why}"
    assert recorder.calls == [] and PASSWORD not in done.said


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root (CI is root)")
def test_a_credentials_file_or_directory_not_roots_is_refused(tmp_path):
    path = write_credentials(tmp_path / "bmc.json")
    os.chown(path, 65534, 65534)
    done = bmc.power_cycle(Bmc("10.0.0.9", "ipmi", path), run=Recorder())
    assert done.said == f"BMC 10.0.0.9: credentials refused: {path} is owned by uid 65534, not root"
    directory = tmp_path / "theirs"
    directory.mkdir()
    path = write_credentials(directory / "bmc.json")
    os.chown(directory, 65534, 65534)
    done = bmc.power_cycle(Bmc("10.0.0.9", "ipmi", path), run=Recorder())
    assert done.said == f"BMC 10.0.0.9: credentials refused: {directory} is owned by uid 65534, not root"


def test_a_credentials_file_behind_a_link_or_a_writable_directory_is_refused(tmp_path):
    target = write_credentials(tmp_path / "bmc.json")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(bmc.Refused, match=f"^{link}: Too many levels of symbolic links$"):
        bmc.credentials(str(link))
    (tmp_path / "dir").symlink_to(tmp_path)
    with pytest.raises(bmc.Refused, match=f"^{tmp_path / 'dir'} is a symbolic link$"):
        bmc.credentials(str(tmp_path / "dir" / "bmc.json"))
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    path = write_credentials(open_dir / "bmc.json")
    open_dir.chmod(0o775)
    with pytest.raises(bmc.Refused, match=f"^{open_dir} can be written by others than its owner \\(mode 0775\\)$"):
        bmc.credentials(path)
    with pytest.raises(bmc.Refused, match="is not an absolute path"):
        bmc.credentials("bmc.json")
    assert bmc.credentials(target) == (USER, PASSWORD)


@pytest.mark.parametrize(("text", "why"), [
    ('{"username": "repair", "password": "pw-Xq7-secret"', "is not a JSON object of username and password"),
    ('"pw-Xq7-secret"', "is not a JSON object of username and password"),
    ('{"username": "repair"}', "has no password"),
    ('{"password": "pw-Xq7-secret"}', "has no username"),
    ('{"username": "-P", "password": "pw-Xq7-secret"}', "has a username ipmitool would take for an option"),
])
def test_credentials_that_cannot_be_read_are_refused_without_quoting_them(tmp_path, text, why):
    path = tmp_path / "bmc.json"
    path.write_text(text)
    path.chmod(0o600)
    with pytest.raises(bmc.Refused) as refused:
        bmc.credentials(str(path))
    assert str(refused.value) == f"{path} {why}"
    # No decoder's error behind it (its document is the file), as a traceback would show it.
    assert refused.value.__cause__ is None
    assert refused.value.__context__ is None or refused.value.__suppress_context__
    assert PASSWORD not in str(refused.value) + repr(refused.value)


def test_a_protocol_not_spoken_is_refused_naming_those_that_are(tmp_path):
    recorder = Recorder()
    node = Bmc("10.0.0.9", "snmp", write_credentials(tmp_path / "bmc.json"), port=8443)
    for done in (bmc.power_cycle(node, run=recorder), bmc.status(node, run=recorder)):
        assert done.said == ("BMC 10.0.0.9:8443: protocol 'snmp' is not spoken by the repair loop (only ipmi, "
                             "redfish)")
    assert bmc.power_state(node, run=recorder) is None and recorder.calls == []
