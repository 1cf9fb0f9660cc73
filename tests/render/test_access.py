"""The compute nodes' sshd PAM stack (render/access.py) read as PAM reads it: pam_slurm_adopt is the last account
module, denying on failure, after the access list that lets root and the admin group in; nothing that ends the
account stack early for local users; no pam_systemd in any session line; Debian's other lines kept."""

from __future__ import annotations

from golden_cases import GOLDEN, cases

from clusterforge.render import access, render_all

CASE = next(c for c in cases() if c.name == "people")


def stack(text: str, kind: str) -> list[list[str]]:
    """The (control, module, args...) of each line of one PAM stack, as pam reads them; includes as ('@include', f)."""
    lines = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("@include"):
            lines.append(line.split())
        elif line.lstrip("-").startswith(kind):
            words = line.split()
            control = line[line.index(words[0]) + len(words[0]):].strip()
            if control.startswith("["):
                control, rest = control[:control.index("]") + 1], control[control.index("]") + 1:].split()
            else:
                control, *rest = control.split()
            lines.append([control, *rest])
    return lines


def test_the_adopt_module_ends_the_account_stack_and_denies_on_any_failure():
    text = access.sshd_pam(CASE.valid())
    account = [line for line in stack(text, "account") if line[0] != "@include"]
    assert account[-1] == ["required", "pam_slurm_adopt.so", "action_adopt_failure=deny",
                           "action_generic_failure=deny"]
    assert account[-2] == ["sufficient", "pam_access.so", f"accessfile={access.ACCESS_CONF}"]
    modules = [line[1] for line in account]
    assert "pam_localuser.so" not in modules and "pam_unix.so" in modules and modules[0] == "pam_nologin.so"
    assert ["@include", "common-account"] not in stack(text, "account")


def test_no_pam_systemd_in_the_session_stack_and_no_include_that_brings_it():
    text = access.sshd_pam(CASE.valid())
    assert "pam_systemd" not in text.replace("no pam_systemd", "").replace("less pam_systemd", "")
    assert ["@include", "common-session"] not in stack(text, "session")
    session = [line[1] for line in stack(text, "session") if line[0] != "@include"]
    assert {"pam_unix.so", "pam_loginuid.so", "pam_limits.so", "pam_env.so"} <= set(session)
    assert ["@include", "common-auth"] in stack(text, "auth")
    assert ["@include", "common-password"] in stack(text, "password")


def test_root_and_the_admin_group_pass_the_access_list_everyone_else_falls_to_the_adopt_module():
    assert access.access_conf(CASE.valid()).splitlines()[1:] == ["+:root:ALL", "+:(hpc-admins):ALL", "-:ALL:ALL"]
    no_admins = CASE.cluster().model_copy(update={"identity": CASE.cluster().identity.model_copy(
        update={"admin_group": None})})
    from clusterforge.model import resolve
    assert access.access_conf(resolve(no_admins)).splitlines()[1:] == ["+:root:ALL", "-:ALL:ALL"]


def test_the_deploys_own_login_passes_the_access_list_before_the_admin_group():
    # roles/access.py names the deploy's SSH user where it is not root: refused, it could not reach the node again.
    assert access.access_conf(CASE.valid(), ("admin",)).splitlines()[1:] == [
        "+:root:ALL", "+:admin:ALL", "+:(hpc-admins):ALL", "-:ALL:ALL"]


def test_logind_keeps_ipc_and_nothing_without_adopt():
    assert "[Login]\nRemoveIPC=no\n" in access.logind_dropin(CASE.valid())
    prod = next(c for c in cases() if c.name == "prod-24.11")
    assert access.files(prod.valid()) == {}
    assert not any(name.startswith("compute-") for name in render_all(prod.valid()))
    assert (GOLDEN / "people" / "expected" / "compute-etc-pam.d-sshd").exists()
