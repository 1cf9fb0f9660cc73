"""identity: the cluster's people (model/identity.py) on every host, before any Slurm daemon hears of them, and their
homes.

Groups first, then the people, with the inventory's ids: a host where a name or an id already means someone else is
refused, naming both, because moving an id under existing files breaks more than it fixes. A person dropped from the
inventory, or marked ``locked``, keeps the account and home, expired (``usermod --expiredate 1``: pam_unix's account
check then refuses every login, an SSH key's too, which a locked password alone would not). Which people the deploy
made is recorded on each host, so that one dropped from the inventory is still known there.

Homes are made once, where a person's files live: on the NFS server, in the export the hosts mount as the homes'
directory (root on a client is squashed and could not make them), or on each login and compute host where no NFS
mount serves them. An existing home is left as it is.

What is inside a home is the person's: they can make ``~/.ssh`` or ``authorized_keys`` a link to any file of root's
(``/etc``: seen on the test cluster, where a root ``chown`` of ``~/.ssh`` gave a person ``/etc``), or swap one for a
link between the deploy's read and its write. So root only reads a home's paths without following links (the host
state's ``owned``), and everything written inside a home is written by the person's own process (``setpriv`` with
their uid and gid, no PAM, no login): whatever they planted, it can reach only what they could reach themselves. The
keys come from a root-only copy, which root's shell opens and hands to that process. A ``.ssh`` that is not a
directory of the person's own is left untouched and named: in `plan`, in the deploy's warnings and in `check`.
"""

from __future__ import annotations

from ..errors import DeployError, for_pyinfra
from ..model import Person, ValidCluster
from ..render import identity as render
from ..render.identity import home_directory, home_paths
from ..engine import ops
from ..engine.change import Change
from ..engine.footprint import Footprint
from ..engine.run import Here, step
from ..engine.state import State

RECORD = "people"  # the record of the people the deploy made on a host (engine/ops.py's records)
# Root's copy of each person's authorized_keys, which their own process copies into their home: root-only.
KEYS_DIR = "/var/lib/clusterforge/people"
LOCKED_DAY = "1"   # shadow's expiry day usermod --expiredate 1 writes: the account expired on 2 January 1970


def keys_copy(person: Person) -> str:
    """Root's copy of the person's authorized_keys, from which their own process writes the file in their home."""
    return f"{KEYS_DIR}/{person.name}.keys"


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The people's and groups' names and ids, on every host; the homes where this host makes them (never read
    through an NFS client: root is squashed there, and a home's .ssh is the person's alone), read without following
    a link."""
    spec = valid.identity
    if spec is None:
        return Footprint()
    accounts = [*(p.name for p in spec.people), *(g.name for g in spec.groups),
                *(str(i) for p in spec.people for i in (p.uid, p.group_id)), *(str(g.gid) for g in spec.groups)]
    base = home_directory(valid, groups)
    if base is None:
        return Footprint(accounts=tuple(sorted(set(accounts))))
    copies = [keys_copy(p) for p in spec.people if p.ssh_keys]
    owned = [path for p in spec.people for path in home_paths(base, p)]
    return Footprint(paths=(base, *([KEYS_DIR] if copies else []), *copies), owned=tuple(owned),
                     accounts=tuple(sorted(set(accounts))))


def _refusals(here: Here) -> list[str]:
    spec = here.valid.identity
    assert spec is not None
    found = here.state
    problems = []
    wanted = [(g.name, g.gid) for g in spec.groups] + [(p.name, p.group_id) for p in spec.people]
    for name, gid in wanted:
        have = found.group_id(name)
        if have is not None and have != gid:
            problems.append(f"group {name} has gid {have}, the inventory says {gid}")
        other = found.group_named(gid)
        if other not in (None, name):
            problems.append(f"gid {gid} of {name} belongs to group {other}")
    for person in spec.people:
        entry = found.passwd.get(person.name)
        if entry is not None and entry.uid != person.uid:
            problems.append(f"user {person.name} has uid {entry.uid}, the inventory says {person.uid}")
        elif entry is not None and entry.gid != person.group_id:
            problems.append(f"user {person.name}'s group is gid {entry.gid}, the inventory says {person.group_id}")
        other = found.user_named(person.uid)
        if other not in (None, person.name):
            problems.append(f"uid {person.uid} of {person.name} belongs to user {other}")
    return problems


def _recorded(found: State) -> dict[str, tuple[int, bool]]:
    """The people the deploy made on this host before: name -> (uid, whether it was dropped and locked since)."""
    text = ops.applied(found, RECORD) or ""
    recorded = {}
    for item in text.split():
        name, uid, *dropped = item.split(":")
        if uid.isdigit():
            recorded[name] = (int(uid), bool(dropped))
    return recorded


def _record(people: tuple[Person, ...], dropped: dict[str, int]) -> str:
    """Every person the deploy made here: the inventory's, and those dropped from it, marked (locked once)."""
    items = {p.name: f"{p.name}:{p.uid}" for p in people} | {n: f"{n}:{uid}:dropped" for n, uid in dropped.items()}
    return " ".join(items[name] for name in sorted(items))


def lock_dropped(name: str) -> str:
    """Expire a person no longer in the inventory, if the host still has them (not read before the run: the
    inventory no longer names them, and the record says the deploy made them)."""
    return f"if id -u {name} >/dev/null 2>&1; then usermod --expiredate {LOCKED_DAY} {name}; fi"


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def person_commands(found: State, person: Person, home: str, site_groups: frozenset[str]) -> list[str]:
    """What makes ``person`` on a host as the inventory says (ids already checked)."""
    name, commands = person.name, []
    entry = found.passwd.get(name)
    if entry is None:
        groups = f"--groups {','.join(person.groups)} " if person.groups else ""
        commands.append(f"useradd --uid {person.uid} --gid {name} {groups}--shell {person.shell} --home-dir {home} "
                        f"--no-create-home {name}")
    else:
        if entry.shell != person.shell:
            commands.append(f"usermod --shell {person.shell} {name}")
        if entry.home != home:
            commands.append(f"usermod --home {home} {name}")
        member_of = {g for g in site_groups if name in found.members.get(g, ())}
        commands += [f"gpasswd --add {name} {g}" for g in person.groups if g not in member_of]
        # Only the inventory's groups are taken from a person: a host's own (sudo, docker) are the host's matter.
        commands += [f"gpasswd --delete {name} {g}" for g in sorted(member_of - set(person.groups))]
    expired = found.expires.get(name, "") == LOCKED_DAY
    if person.locked and not expired:
        commands.append(f"usermod --expiredate {LOCKED_DAY} {name}")
    elif not person.locked and expired:
        commands.append(f"usermod --expiredate -1 {name}")
    return commands


@step("people", footprint=footprint)
def people(here: Here) -> None:
    spec = here.valid.identity
    if spec is None:
        return
    problems = _refusals(here)
    if problems:
        raise for_pyinfra(DeployError(f"{here.name}: {'; '.join(problems)}. Give the inventory's people and groups "
                                      "ids that are free (or already theirs) on every host"))
    found = here.state
    commands = [f"groupadd --gid {gid} {name}"
                for name, gid in [*((g.name, g.gid) for g in spec.groups),
                                  *((p.name, p.group_id) for p in spec.people)]
                if found.group_id(name) is None]
    site_groups = frozenset(g.name for g in spec.groups)
    home_base = spec.home_base.rstrip("/")
    for person in spec.people:
        commands += person_commands(found, person, f"{home_base}/{person.name}", site_groups)
    declared = {p.name for p in spec.people}
    recorded = _recorded(found)
    gone = {name: uid for name, (uid, _) in recorded.items() if name not in declared}
    dropped = sorted(name for name in gone if not recorded[name][1])
    commands += [lock_dropped(name) for name in dropped]
    record = _record(spec.people, gone)
    if commands or ops.applied(found, RECORD) != record:
        commands.append(ops.record_command(RECORD, record))
    what = f"{_count(len(spec.people), 'person', 'people')} and {_count(len(spec.groups), 'group', 'groups')}"
    here.apply(Change(f"people: {what}" + (f"; {', '.join(dropped)} locked (no longer in the inventory)"
                                           if dropped else ""),
                      tuple(commands), tuple(f"run: {c}" for c in commands),
                      otherwise=f"the {what} are as the inventory says"))


@step("homes", footprint=footprint)
def homes(here: Here) -> None:
    """Each person's home, made once with the person as owner (0700), and their authorized_keys where the inventory
    gives keys (a person without keys there keeps their own)."""
    valid = here.valid
    spec = valid.identity
    base = home_directory(valid, tuple(here.groups))
    if spec is None or base is None:
        return
    if base not in here.state.paths:
        ops.directory(here, name=f"the homes' directory {base}", path=base)
    if any(p.ssh_keys for p in spec.people):
        ops.directory(here, name="root's copies of the people's keys", path=KEYS_DIR, mode="0700")
    for person in spec.people:
        home, ssh, keys = home_paths(base, person)
        if home not in here.state.paths:  # made in the homes' directory, which is root's: no one else's path
            ops.directory(here, name=f"home of {person.name}", path=home, mode="0700", user=person.name,
                          group=person.name)
        if not person.ssh_keys:
            continue
        refused = render.foreign_home(here.state.paths.get(home), here.state.paths.get(ssh), person, home, ssh)
        if refused:
            here.warn_once(refused)
            continue
        authorized_keys(here, person, ssh, keys)


def as_person(person: Person, command: str) -> str:
    """``command`` run by the person's own process: their uid and gid, no other group, no PAM and no login (an
    expired account is still written for). Root's shell opens any redirection it has before handing over."""
    return f"setpriv --reuid={person.uid} --regid={person.group_id} --clear-groups -- {command}"


def authorized_keys(here: Here, person: Person, ssh: str, path: str) -> Change:
    """The person's authorized_keys, 0600 and theirs, written by their own process from root's copy. New content is
    written beside the file under this host's own name and renamed over it: where several login and compute hosts
    share the homes' directory (a site's /home that no NFS mount of the inventory serves), they all write it in the
    same run, and written in place, one host's write fails on another's ("File exists", seen on the test cluster's
    shared /home) or leaves the file as another had just emptied it. A rename is whole: each host's is the same
    content, the last one stays; and it replaces a link the person put there, never what the link points at."""
    name, content = person.name, render.authorized_keys(person)
    # Root's copy first, in its own operation: the person's process below reads it.
    ops.file(here, name=f"root's copy of {name}'s authorized keys", path=keys_copy(person), content=content,
             mode="0600")
    found = here.state.paths
    commands, said = [], []
    if ssh not in found:
        # -p: hosts sharing the homes' directory make it in the same run, and only one mkdir of theirs is first
        commands.append(as_person(person, f"mkdir -p -m 0700 {ssh}"))
        said.append(f"{ssh}: directory created by {name} (700)")
    elif found[ssh].mode != "700":
        commands.append(as_person(person, f"chmod 0700 {ssh}"))
        said.append(f"{ssh}: mode {found[ssh].mode} -> 700, by {name}")
    have = found.get(path)
    if have is None or have.kind != "file" or have.user != str(person.uid) or ops.will_change(here.state, path,
                                                                                              content):
        # By the person's own shell (root's opens the copy for it), beside the file under this host's own name; the
        # names are the script's arguments.
        script = " && ".join(["umask 077", *ops.renamed_over('"$2"', "cat >", staged_as='"$1"')])
        staged = ops.staged(path, by=here.machine.name)
        commands.append(as_person(person, f"sh -c '{script}' sh {staged} {path} < {keys_copy(person)}"))
        said.append(f"{path}: {'created' if have is None else 'written again'} by {name} (600)")
    elif have.mode != "600":
        commands.append(as_person(person, f"chmod 0600 {path}"))
        said.append(f"{path}: mode {have.mode} -> 600, by {name}")
    return here.apply(Change(f"authorized keys of {name}", tuple(commands), tuple(said),
                             otherwise=f"{path} is as the inventory says", holds=ops.sha256(content)))
