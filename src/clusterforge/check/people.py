"""What `clusterforge check` judges of the cluster's people (model/identity.py), pure: how a host resolves each
declared person and group (getent's lines), whether a compute node's sshd stack runs pam_slurm_adopt, with nothing
ahead of it that lets local users through, and whether a service host's refuses everyone but root, the admin group,
the deploy's login and service_host_groups (render/access.py)."""

from __future__ import annotations

from collections.abc import Mapping

from ..model.identity import Identity
from ..render import access as rule
from .findings import Finding

ADOPT = "pam_slurm_adopt.so"
# A module that ends the account stack with success for every user in /etc/passwd (Debian's SSSD profile adds it).
SHORT_CIRCUIT = "pam_localuser.so"


def _entries(getent: str) -> dict[str, list[str]]:
    found = {}
    for line in getent.splitlines():
        fields = line.strip().split(":")
        if len(fields) >= 4 and fields[2].isdigit():
            found[fields[0]] = fields
    return found


def people(spec: Identity, passwd: str, group: str) -> tuple[str, list[Finding]]:
    """Each declared person resolves to their uid and group, each site group to its gid (``getent passwd`` and
    ``getent group`` of their names)."""
    users, groups = _entries(passwd), _entries(group)
    problems = []
    for person in spec.people:
        entry = users.get(person.name)
        if entry is None:
            problems.append(Finding(f"{person.name} does not resolve (getent passwd): the deploy makes them"))
        elif int(entry[2]) != person.uid:
            problems.append(Finding(f"{person.name} resolves to uid {entry[2]}, the inventory says {person.uid}"))
        elif int(entry[3]) != person.group_id:
            problems.append(Finding(f"{person.name}'s group is gid {entry[3]}, the inventory says "
                                    f"{person.group_id}"))
    for site in spec.groups:
        entry = groups.get(site.name)
        if entry is None:
            problems.append(Finding(f"group {site.name} does not resolve (getent group)"))
        elif int(entry[2]) != site.gid:
            problems.append(Finding(f"group {site.name} resolves to gid {entry[2]}, the inventory says {site.gid}"))
    resolved = sum(p.name in users for p in spec.people)
    return f"{resolved} of {len(spec.people)} people and {len(spec.groups)} groups resolve", problems


def account_lines(text: str) -> list[tuple[str, list[str]]]:
    """("include", [file]) or ("account", [control, module, args...]) of each line of a PAM file that counts, in
    order; comments, blank lines and other stacks left out."""
    lines: list[tuple[str, list[str]]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("@include"):
            lines.append(("include", line.split()[1:]))
            continue
        kind = line.split(None, 1)[0].lstrip("-") if line else ""
        if kind == "account":
            rest = line.split(None, 1)[1]
            if rest.startswith("["):
                control, module = rest[:rest.index("]") + 1], rest[rest.index("]") + 1:].split()
            else:
                control, *module = rest.split()
            lines.append(("account", [control, *module]))
    return lines


def adopt(sshd: str, included: Mapping[str, str]) -> tuple[str, list[Finding]]:
    """The node's /etc/pam.d/sshd (and the text of each file it includes) runs pam_slurm_adopt in its account stack,
    with both failure actions deny, and no sufficient pam_localuser before it."""
    before: list[list[str]] = []
    for kind, words in account_lines(sshd):
        if kind == "include":
            before += [w for k, w in account_lines(included.get(words[0], "")) if k == "account"]
            continue
        if len(words) > 1 and words[1].rsplit("/", 1)[-1] == ADOPT:
            problems = [Finding(f"{ADOPT} runs without {option}: its default lets a user in unconfined or "
                                "through")
                        for option in ("action_adopt_failure=deny", "action_generic_failure=deny")
                        if option not in words[2:]]
            early = [w for w in before if w[0] == "sufficient" and len(w) > 1 and w[1].endswith(SHORT_CIRCUIT)]
            if early:
                problems.append(Finding(f"'account sufficient {SHORT_CIRCUIT}' comes before {ADOPT}: every local "
                                        "user gets in without a job (Debian's SSSD profile adds it)"))
            return f"{ADOPT} in sshd's account stack", problems
        before.append(words)
    return "", [Finding(f"{ADOPT} is not in sshd's account stack: any user reaches this node without a job")]


ACCESS = "pam_access.so"


def service_access(sshd: str, listed: str | None, included: Mapping[str, str], usepam: str = ""
                   ) -> tuple[str, list[Finding]]:
    """A service host's sshd account stack starts with the rule: pam_access with clusterforge's list, then pam_deny
    for anyone the list does not let in, with nothing ahead of it that ends the stack with success (Debian's SSSD
    profile's pam_localuser); the list ends by refusing everyone else and lets no one in wholesale. ``listed``: the
    list's text, None where it is missing (pam_access then refuses everyone, root too). ``usepam``: sshd's own
    ``usepam`` setting as ``sshd -T`` prints it ("" where it could not be read): with ``no`` no PAM stack runs."""
    before: list[list[str]] = []
    problems: list[Finding] = []
    if usepam.strip().lower() == "usepam no":
        problems.append(Finding("sshd runs without PAM (UsePAM no): the service-host rule never runs, and every person "
                                "with a key reaches this service host"))
    lines = account_lines(sshd)
    for index, (kind, words) in enumerate(lines):
        if kind == "include":
            before += [w for k, w in account_lines(included.get(words[0], "")) if k == "account"]
            continue
        if len(words) > 2 and words[1].rsplit("/", 1)[-1] == ACCESS and \
                f"accessfile={rule.SERVICE_ACCESS_CONF}" in words[2:]:
            after = [w for k, w in lines[index + 1:index + 3] if k == "account"]
            if not any(len(w) > 1 and w[1].rsplit("/", 1)[-1] == "pam_deny.so" for w in after):
                problems.append(Finding(f"{ACCESS} with {rule.SERVICE_ACCESS_CONF} is not followed by pam_deny.so: "
                                        "a person it refuses goes on through the stack"))
            early = [w for w in before if len(w) > 1 and (w[0] == "sufficient" or "success=done" in w[0])]
            problems += [Finding(f"'account {' '.join(w[:2])}' comes before the service-host rule: it can let a "
                                 "person in before the rule runs") for w in early]
            problems += _service_list(listed)
            return f"{ACCESS} with {rule.SERVICE_ACCESS_CONF} first in sshd's account stack", problems
        before.append(words)
    return "", [*problems, Finding(f"sshd's account stack has no service-host rule ({ACCESS} with "
                                   f"{rule.SERVICE_ACCESS_CONF}): every person with a key or a password reaches this "
                                   "service host")]


def _service_list(listed: str | None) -> list[Finding]:
    if listed is None or not listed.strip():
        return [Finding(f"{rule.SERVICE_ACCESS_CONF} is missing or empty: pam_access refuses everyone here, root and "
                        "the admins too")]
    entries = [line.split("#", 1)[0].strip() for line in listed.splitlines()]
    entries = [e for e in entries if e]
    problems = [Finding(f"{rule.SERVICE_ACCESS_CONF} lets everyone in: '{e}'") for e in entries
                if e.startswith("+") and e.split(":")[1:2] in (["ALL"], ["ALL EXCEPT root"])]
    if not entries or entries[-1].replace(" ", "") != "-:ALL:ALL":
        problems.append(Finding(f"{rule.SERVICE_ACCESS_CONF} does not end with '-:ALL:ALL': whom it does not name "
                                "is not refused by it"))
    return problems
