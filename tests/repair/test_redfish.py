"""The repair loop's Redfish, spoken through sushy to a real Redfish emulator: OpenStack's sushy-tools (PyPI), its
fake driver's systems behind HTTPS with a certificate made here and HTTP basic authentication, on loopback. What the
fake driver cannot be is a node: its power changes are records (the test cluster's BMCs, which power LXC machines,
speak IPMI: tests/e2e/test_gate.py); what is real is the protocol, the TLS and the login, as a BMC answers them."""

from __future__ import annotations

import dataclasses
import datetime
import io
import ipaddress
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from base64 import b64encode
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from needs import skip_or_fail
from ports import free_port

from clusterforge.render import programs
from clusterforge.render.health import imports_from
from clusterforge.render.repair import PACKAGE
from clusterforge.repair import bmc
from clusterforge.repair.plan import Bmc

USER, PASSWORD = "repair", "pw-Rf9-secret"
ON_SYSTEM, OFF_SYSTEM = "gpu01-bmc", "gpu02-bmc"
START_S = 30.0
PYTHON = "/usr/bin/python3"


@dataclass(frozen=True)
class Emulator:
    port: int
    ca_file: str        # the emulator's own self-signed certificate: what a site gives as a Bmc's ca_file
    credentials: str
    log: Path

    def bmc(self, system: str = ON_SYSTEM, **fields: object) -> Bmc:
        return Bmc(**{"address": "127.0.0.1", "protocol": "redfish", "credentials": self.credentials,
                      "port": self.port, "system": system, "ca_file": self.ca_file, **fields})

    def power(self, system: str) -> str:
        """The system's power state, as the emulator answers it to anyone with the password (not through sushy)."""
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}/redfish/v1/Systems/{system}", headers={
            "Authorization": "Basic " + b64encode(f"{USER}:{PASSWORD}".encode()).decode()})
        context = ssl.create_default_context(cafile=self.ca_file)
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            return json.load(answer)["PowerState"]


def write_credentials(path: Path, password: str = PASSWORD) -> str:
    path.write_text(json.dumps({"username": USER, "password": password}))
    path.chmod(0o600)
    return str(path)




def _self_signed(cert: Path, key: Path) -> None:
    """A BMC's own certificate for 127.0.0.1, as most BMCs ship one (cryptography: paramiko's dependency)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bmc")])
    now = datetime.datetime.now(datetime.timezone.utc)
    made = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(private, hashes.SHA256()))
    cert.write_bytes(made.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))


def _emulator_config(tmp: Path, port: int) -> Path:
    import bcrypt

    _self_signed(tmp / "cert.pem", tmp / "key.pem")
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    (tmp / "htpasswd").write_text(f"{USER}:{hashed}\n")
    systems = [{"uuid": f"00000000-0000-0000-0000-00000000000{n}", "name": name, "power_state": state,
                "external_notifier": False, "nics": []}
               for n, (name, state) in enumerate(((ON_SYSTEM, "On"), (OFF_SYSTEM, "Off")), start=1)]
    config = tmp / "emulator.conf"
    config.write_text(f"SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\nSUSHY_EMULATOR_LISTEN_PORT = {port}\n"
                      f"SUSHY_EMULATOR_SSL_CERT = {str(tmp / 'cert.pem')!r}\n"
                      f"SUSHY_EMULATOR_SSL_KEY = {str(tmp / 'key.pem')!r}\n"
                      f"SUSHY_EMULATOR_AUTH_FILE = {str(tmp / 'htpasswd')!r}\n"
                      # Its fake systems' states are kept there, between runs: here, this run's own.
                      f"SUSHY_EMULATOR_STATE_DIR = {str(tmp / 'state')!r}\n"
                      f"SUSHY_EMULATOR_FAKE_DRIVER = True\nSUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n")
    return config


@pytest.fixture(scope="module")
def emulator(tmp_path_factory) -> Iterator[Emulator]:
    program = shutil.which("sushy-emulator", path=os.path.dirname(sys.executable))
    missing = [] if program else ["sushy-emulator"]
    try:
        import bcrypt  # noqa: F401 - sushy-tools' own dependency, hashing the emulator's password file
        import sushy  # noqa: F401
    except ImportError as error:
        missing.append(error.name or "sushy")
    if missing:
        skip_or_fail(f"{', '.join(missing)} not installed (pip install -e '.[test]')")
    tmp = tmp_path_factory.mktemp("redfish")
    port = free_port()
    log = tmp / "emulator.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([program, "--config", str(_emulator_config(tmp, port))], stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    found = Emulator(port, str(tmp / "cert.pem"), write_credentials(tmp / "bmc.json"), log)
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                found.power(ON_SYSTEM)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"sushy-emulator did not answer within {START_S:g} s:\n{log.read_text()[-2000:]}")
                time.sleep(0.2)
        yield found
    finally:
        os.killpg(server.pid, 9)
        server.wait()


def test_the_power_state_is_read_over_verified_tls_with_the_plans_credentials(emulator):
    on, off = bmc.status(emulator.bmc(ON_SYSTEM)), bmc.status(emulator.bmc(OFF_SYSTEM))
    assert (on.ok, on.power, on.said) == (True, bmc.ON, f"BMC 127.0.0.1:{emulator.port}: power is On")
    assert (off.ok, off.power) == (True, bmc.OFF)
    assert bmc.power_state(emulator.bmc(ON_SYSTEM)) == bmc.ON


def test_a_node_powered_on_is_restarted_and_one_powered_off_is_powered_on(emulator, tmp_path):
    # The emulator lists On, ForceOff, GracefulShutdown, GracefulRestart, ForceRestart, Nmi, ForceOn (no PowerCycle,
    # as iLO): the loop's power cycle is then a ForceRestart. Its fake driver shows the restart as Off at once.
    cycled = bmc.power_cycle(emulator.bmc(ON_SYSTEM))
    assert (cycled.ok, cycled.said) == (True, f"BMC 127.0.0.1:{emulator.port}: power cycled (Reset ForceRestart)")
    assert emulator.power(ON_SYSTEM) == "Off"
    powered = bmc.power_cycle(emulator.bmc(OFF_SYSTEM))
    assert (powered.ok, powered.said) == (True, f"BMC 127.0.0.1:{emulator.port}: powered on (it was off)")
    # Applied by the fake driver 1 to 11 s later, as a BMC's power changes take their time.
    deadline = time.monotonic() + 15
    while emulator.power(OFF_SYSTEM) != "On":
        assert time.monotonic() < deadline, "the emulator never applied the power on"
        time.sleep(0.5)


def test_the_only_system_is_found_without_an_id_and_two_are_named(emulator):
    said = bmc.status(emulator.bmc(system="")).said
    assert said.startswith(f"BMC 127.0.0.1:{emulator.port}: power state failed: ")
    assert "System count is not exactly one" in said
    gone = bmc.status(emulator.bmc(system="gpu09-bmc"))
    assert not gone.ok and "power state failed: " in gone.said and "gpu09-bmc" in gone.said


def test_a_wrong_password_is_named_and_never_said(emulator, tmp_path):
    wrong = "wrong-Zz4-secret"
    for done in (bmc.status(emulator.bmc(credentials=write_credentials(tmp_path / "bmc.json", wrong))),
                 bmc.power_cycle(emulator.bmc(credentials=str(tmp_path / "bmc.json")))):
        assert done.said == (f"BMC 127.0.0.1:{emulator.port}: power state: the BMC refused the login (HTTP 401): "
                             "check the credentials' username and password")
        assert wrong not in repr(done) and PASSWORD not in repr(done)
    assert emulator.power(ON_SYSTEM) in ("On", "Off")


def test_an_untrusted_certificate_is_refused_unless_the_inventory_turned_checking_off(emulator):
    untrusted = bmc.status(emulator.bmc(ca_file=""))
    assert untrusted.said == (f"BMC 127.0.0.1:{emulator.port}: power state: its TLS certificate is not trusted "
                              "(give the CA that signed it, or the certificate itself, as the Bmc's ca_file)")
    unchecked = bmc.status(emulator.bmc(ca_file="", verify_tls=False))
    assert unchecked.ok and unchecked.power in (bmc.ON, bmc.OFF)


def test_a_ca_file_anyone_else_could_write_is_refused_before_any_request(emulator, tmp_path):
    planted = tmp_path / "ca.pem"
    shutil.copy(emulator.ca_file, planted)
    planted.chmod(0o666)
    done = bmc.power_cycle(emulator.bmc(ca_file=str(planted)))
    assert done.said == (f"BMC 127.0.0.1:{emulator.port}: CA file refused: {planted} can be written by others than "
                         "its owner (mode 0666)")
    link = tmp_path / "link.pem"
    link.symlink_to(emulator.ca_file)
    assert "CA file refused: " in bmc.status(emulator.bmc(ca_file=str(link))).said


def test_a_bmc_that_never_answers_costs_the_bound_and_no_more(tmp_path):
    with socket.socket() as silent:
        # Connections complete in the backlog and are never answered: a BMC hung past its TCP stack.
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        node = Bmc("127.0.0.1", "redfish", write_credentials(tmp_path / "bmc.json"), port=silent.getsockname()[1],
                   verify_tls=False)
        start = time.monotonic()
        done = bmc.power_cycle(node, timeout_s=2)
        took = time.monotonic() - start
    assert done.said == f"BMC 127.0.0.1:{node.port}: no answer within 2 s" and not done.ok
    assert took < 10, took
    assert not bmc.commands._running


def test_no_connection_is_named_with_its_address(tmp_path):
    node = Bmc("127.0.0.1", "redfish", write_credentials(tmp_path / "bmc.json"), port=free_port(),
               verify_tls=False)
    done = bmc.status(node)
    assert done.said.startswith(f"BMC 127.0.0.1:{node.port}: power state: no connection to "
                                f"https://127.0.0.1:{node.port}: ")
    assert "Connection refused" in done.said


def test_the_credentials_are_checked_before_any_request(tmp_path):
    node = Bmc("127.0.0.1", "redfish", str(tmp_path / "none.json"), port=1)
    assert bmc.status(node).said == f"BMC 127.0.0.1:1: credentials refused: {tmp_path}/none.json: No such file or " \
                                    "directory"
    assert bmc.status(replace(node, address="-oProxy")).said == "BMC -oProxy:1: not an address: '-oProxy'"


def test_the_environment_neither_proxies_the_bmc_nor_replaces_its_ca_file(emulator, monkeypatch):
    # requests reads both from the environment, and with sushy 4 the bundle wins over the session's ca_file.
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
    done = bmc.status(emulator.bmc(ON_SYSTEM))
    assert done.ok, done.said


def test_the_shipped_program_speaks_redfish_through_debians_sushy(emulator, tmp_path):
    """As the controller runs it: its one file, imported by Debian's python3 in isolated mode, with Debian's
    python3-sushy (4.3 on Debian 12), the CA file and credentials as the deploy writes them."""
    debian = subprocess.run([PYTHON, "-I", "-c", "import sushy"], capture_output=True, check=False)
    if debian.returncode != 0:
        skip_or_fail("Debian's python3-sushy is not installed (tests/repair/apt-packages.txt)")
    program = tmp_path / "clusterforge-repair.pyz"
    program.write_bytes(programs.repair_program())
    node = emulator.bmc(ON_SYSTEM)
    script = (f"{imports_from(str(program))}import json, dataclasses\n"
              f"from {PACKAGE}.repair import bmc\nfrom {PACKAGE}.repair.plan import Bmc\n"
              f"node = Bmc(**json.loads({json.dumps(dataclasses.asdict(node))!r}))\n"
              "print(json.dumps([dataclasses.asdict(bmc.status(node)), dataclasses.asdict(bmc.power_cycle(node))]))\n")
    run = subprocess.run([PYTHON, "-I", "-c", script], capture_output=True, text=True, timeout=120, check=False,
                         env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 0 and run.stderr == "", run.stderr
    status, cycled = json.loads(run.stdout)
    assert status["ok"] and status["power"] in (bmc.ON, bmc.OFF), status
    assert cycled["ok"] and cycled["said"].startswith(f"BMC 127.0.0.1:{emulator.port}: "), cycled


def test_the_loops_bmc_check_names_each_bmc_that_does_not_answer_and_powers_nothing(emulator, tmp_path):
    from clusterforge.repair.main import check_bmcs
    from clusterforge.repair.plan import NodePlan, Plan, Policy

    posts = emulator.log.read_text().count('"POST ')   # the emulator's request log: a reset is a POST
    wrong = emulator.bmc(OFF_SYSTEM, credentials=write_credentials(tmp_path / "wrong.json", "wrong-Zz4-secret"))
    plan = Plan(nodes={"gpu01": NodePlan("dgx", emulator.bmc(ON_SYSTEM)), "gpu02": NodePlan("dgx", wrong),
                       "gpu03": NodePlan("dgx")}, profiles={"dgx": Policy("on", power_cycle=True)})
    out = io.StringIO()
    assert check_bmcs(plan, out) == 1
    said = out.getvalue().splitlines()
    assert said[0].startswith(f"gpu01: ok: BMC 127.0.0.1:{emulator.port}: power is ")
    assert said[1:] == [f"gpu02: FAILED: BMC 127.0.0.1:{emulator.port}: power state: the BMC refused the login (HTTP "
                        "401): check the credentials' username and password", "1 of 2 BMCs answered"]
    assert emulator.log.read_text().count('"POST ') == posts
    good = Plan(nodes={"gpu01": NodePlan("dgx", emulator.bmc(ON_SYSTEM))}, profiles=plan.profiles)
    assert check_bmcs(good, io.StringIO()) == 0
