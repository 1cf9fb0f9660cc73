"""Simulated hosts for running the real deploy/cluster.py without containers (the role tier of the tests).

A simulated host is a small model of a Debian machine kept in a JSON file: files with their bytes, owner and mode,
directories, systemd units, installed packages, users and groups, and what its daemons were asked to do. pyinfra's
``@fake`` connector is pointed at it (see ``INVENTORY`` in fakedeploy.py): the deploy's own commands change the
model, and the facts read it, so a second run sees what the first one did. This is a stand-in for a real host, and
only the commands the deploy issues are understood; an unknown command fails the run, so a new command is noticed.
Slurm's commands on the host that runs slurmctld, and the shell text holding them, are the one Slurm stand-in's
(tests/slurm_standin, kept in the model: simslurm.py). Two things reach it from other hosts (Peer): a node's slurmd
registers there as it starts, and a wait whose check asks slurmctld (a node's after its slurmd starts) is answered
by it. The Vagrant test cluster (tests/e2e) runs the same deploy on real machines.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import io
import json
import re
import shlex
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from deploy import simslurm
from slurm_standin import Slurm

from clusterforge.distributions import DISTRIBUTIONS, of_os, pulls_munge

# The unit each daemon package brings; Debian enables it at install (policy-rc.d keeps it from starting).
PACKAGED_UNITS = {"munge": "munge.service", "slurmctld": "slurmctld.service", "slurmd": "slurmd.service",
                  "slurmdbd": "slurmdbd.service", "sackd": "sackd.service", "mariadb-server": "mariadb.service",
                  "chrony": "chrony.service", "nfs-kernel-server": "nfs-server.service",
                  "nfs-ganesha": "nfs-ganesha.service", "prometheus-node-exporter": "prometheus-node-exporter.service",
                  "prometheus": "prometheus.service", "prometheus-alertmanager": "prometheus-alertmanager.service",
                  "slurmrestd": "slurmrestd.service", "sssd-common": "sssd.service"}
# NVIDIA's packages of a GPU stack (model/stack.py): installed as name=version; their units, enabled at install.
STACK_UNITS = {"nvidia-persistenced": "nvidia-persistenced.service",
               "nvidia-fabricmanager-550": "nvidia-fabricmanager.service",
               "datacenter-gpu-manager": "nvidia-dcgm.service", "datacenter-gpu-manager-4-core": "nvidia-dcgm.service",
               "datacenter-gpu-manager-exporter": "nvidia-dcgm-exporter.service"}
# The OS a host reports where a test gave it none: the one whose archive ships the Slurm release its apt offers.
OS_SHIPPING = {str(d.slurm): " ".join(d.os) for d in DISTRIBUTIONS}
ENROOT_HOOKS = ("50-slurm-pmi.sh", "50-slurm-pytorch.sh", "50-mig-config.sh", "50-sharp.sh")
# How a slurmd the host starts fares (Sim.slurmd), where not as it should (registered with slurmctld at once):
# SLURMD_EXITS: it exits a moment after systemd started it, never registering (22.05's slurmd refused
# "ConfigLess mode is disabled"; a Type=notify one after READY=1); SLURMD_REFUSED: it runs on, and slurmctld refuses its
# registration (a key slurmctld's does not match).
SLURMD_EXITS, SLURMD_REFUSED = "exits", "refused"
# engine/waits.py's until(): the check each try runs, and what the loop says once its time is up.
_UNTIL = re.compile(r"for _ in \$\(seq \d+\); do .*? timeout -k 2 \d+ sh -c (.+?) >/dev/null 2>&1 && exit 0; "
                    r".*; done; echo (.+) >&2; exit 1", re.S)


@dataclass(frozen=True)
class Peer:
    """What a host's command reaches beyond the host: its name (its node's, where it is one), and the controller's
    slurmctld where another host runs it (the stand-in, locked and written back as the controller's own commands
    use it: standin_at); None: this host's own."""
    name: str = ""
    controller: Callable[[], AbstractContextManager[Slurm]] | None = None


def _active_state(unit: dict) -> str:
    """A unit's ActiveState as systemd says it (of those the model holds)."""
    return "active" if unit["active"] else "failed" if unit.get("failed") else "inactive"


def state_archive(files: dict[str, bytes]) -> str:
    """The host-state fact's texts as a host sends them: a tar of the files, without the leading /, in base64."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path, data in files.items():
            member = tarfile.TarInfo(path.lstrip("/"))
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return base64.b64encode(out.getvalue()).decode()


@dataclass
class Sim:
    files: dict[str, dict] = field(default_factory=dict)   # path -> {content (base64), user, group, mode}
    dirs: dict[str, dict] = field(default_factory=dict)    # path -> {user, group, mode}
    units: dict[str, dict] = field(default_factory=dict)   # name.service -> {active, enabled}
    packages: list[str] = field(default_factory=list)
    users: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)        # what the deploy did, in order (not the fact reads)
    mysql: dict[str, str] = field(default_factory=dict)    # "hash", "database"
    accounting: dict[str, list[str]] = field(default_factory=dict)  # "cluster", "qos", "busy" (has jobs) -> names
    commands: int = 0                                       # every remote command, facts included
    versions: dict[str, str] = field(default_factory=dict)  # package -> version, where not "1.0"
    release: str = ""                                       # the Slurm release its Slurm packages have
    os: str = ""                                            # os-release's ID VERSION_ID; "": the release's own
    arch: str = "amd64"                                     # dpkg's architecture
    slurm: str = ""                                         # slurmctld's state here, packed (simslurm.py); "" none yet
    held: list[str] = field(default_factory=list)           # packages on hold (apt-mark)
    slurmctld: str = ""                                     # the release slurmctld says it runs, where asked
    exposed: list[str] = field(default_factory=list)        # files whose content arrived readable by others
    # People's accounts (useradd without --system): name -> {gid, home, shell, expire}; group -> its members
    people: dict[str, dict] = field(default_factory=dict)
    members: dict[str, list[str]] = field(default_factory=dict)
    # Symbolic links a person made: path -> {target, user}. Root's stat -L, sha256sum, chown, chmod, install and an
    # upload follow them, as the real commands do where fs.protected_symlinks is 0 (the test machines).
    links: dict[str, dict] = field(default_factory=dict)
    slurmd: str = ""                                        # how its slurmd fares from its next start: SLURMD_*
    started: dict[str, float] = field(default_factory=dict)  # unit -> its last start (InactiveExitTimestamp)
    _peer = Peer()                                          # set by answer(): not kept in the model

    @classmethod
    def load(cls, path: Path) -> Sim:
        return cls(**json.loads(path.read_text())) if path.exists() else cls()

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    # --- the controller's Slurm (simslurm.py) --------------------------------------------------------------------

    @contextmanager
    def slurm_standin(self) -> Iterator[Slurm]:
        """The stand-in for this host's slurmctld, following its slurm.conf; what is done to it is kept."""
        slurm = simslurm.unpacked(self.slurm) if self.slurm else simslurm.new(self.release)
        simslurm.follow(slurm, (self.content("/etc/slurm/slurm.conf") or b"").decode())
        yield slurm
        self.slurm = simslurm.packed(slurm)

    @contextmanager
    def controllers_slurm(self) -> Iterator[Slurm]:
        """slurmctld's stand-in as this host's commands reach it: the controller's, or its own where it runs
        slurmctld."""
        reach = self._peer.controller
        with reach() if reach is not None else self.slurm_standin() as slurm:
            yield slurm

    @property
    def drained(self) -> dict[str, str]:
        """The nodes slurmctld holds in a drain state, and their reasons."""
        return simslurm.drained(simslurm.unpacked(self.slurm)) if self.slurm else {}

    @property
    def jobs(self) -> list[str]:
        """The jobs running, as squeue lists them for the deploy: "<id> <user> <nodes>"."""
        return simslurm.running(simslurm.unpacked(self.slurm)) if self.slurm else []

    def _slurm(self, command: str) -> tuple[bool, list[str]]:
        """A Slurm command, or shell text holding some, run against slurmctld's stand-in; all but a read of its
        state is an event."""
        argv = simslurm.one_command(command)
        with self.slurm_standin() as slurm:
            answer = slurm.run(argv) if argv is not None else slurm.shell(command)
        if argv is None or not simslurm.reads(argv):
            self.events.append(command)
        return answer.rc == 0, [*answer.out.splitlines(), *(f"@stderr {line}" for line in answer.err.splitlines())]

    # --- what the facts read -------------------------------------------------------------------------------------

    def followed(self, path: str) -> str:
        """The path a command that follows links reaches (one link: no person's link points at another here)."""
        return self.links[path]["target"] if path in self.links else path

    def content(self, path: str) -> bytes | None:
        found = self.files.get(self.followed(path))
        return base64.b64decode(found["content"]) if found else None

    def expanded(self, word: str) -> list[str]:
        """A word of a command as the shell expands it: ``DIR/*``, the directory's entries (not those whose name
        starts with a dot), or the word itself where it has none."""
        if not word.endswith("/*"):
            return [word]
        directory = word.removesuffix("/*")
        return sorted(path for path in {*self.files, *self.dirs, *self.links}
                      if path.rsplit("/", 1)[0] == directory and not path.rsplit("/", 1)[1].startswith(".")) or [word]

    def state_lines(self, command: str) -> list[str]:
        """What the host-state fact prints, for the paths, texts and records its command asks about."""
        stat = re.search(r"stat -L -c '[^']*' -- (.*?) 2>/dev/null", command)
        paths = [path for word in (shlex.split(stat.group(1)) if stat else []) for path in self.expanded(word)]
        sha = re.search(r"(?:^|; )sha256sum -- (.*?) 2>/dev/null", command)
        digested = shlex.split(sha.group(1)) if sha else []
        lstat = re.search(r"stat -c '@lstat [^']*' -- (.*?) 2>/dev/null", command)
        owned = shlex.split(lstat.group(1)) if lstat else []
        tar = re.search(r"tar -c -h -b 1 --no-recursion -f - -- (.*?) 2>/dev/null", command)
        words = shlex.split(tar.group(1)) if tar else []
        texts = [w for w in words if not w.endswith("/*")]
        records = [w.removesuffix("/*") for w in words if w.endswith("/*")]
        show = re.search(r"systemctl show --property=\S+ (.*?) 2>/dev/null", command)
        asked = shlex.split(show.group(1)) if show else []
        lines = []
        for path in paths:  # stat -L: through a link
            if self.followed(path) in self.files:
                meta = self.files[self.followed(path)]
                kind = "regular file" if meta["content"] else "regular empty file"
                lines.append(f"@stat {kind}|{meta['user']}|{meta['group']}|{meta['mode']}|{path}")
            elif self.followed(path) in self.dirs:
                meta = self.dirs[self.followed(path)]
                lines.append(f"@stat directory|{meta['user']}|{meta['group']}|{meta['mode']}|{path}")
        # stat's %u and %g: the ids (an owner given as a number is one this host has no name for)
        def uid(owner: str) -> int | str | None:
            return owner if owner.isdigit() else {"root": 0, **self.users}.get(owner)

        def gid(owner: str) -> int | str | None:
            return owner if owner.isdigit() else {"root": 0, **self.groups}.get(owner)
        for path in owned:  # stat without -L: a link is a link
            if path in self.links:
                owner = self.links[path]["user"]
                lines.append(f"@lstat symbolic link|{uid(owner)}|{gid(owner)}|777|{path}")
            elif path in self.files:
                meta = self.files[path]
                lines.append(f"@lstat regular file|{uid(meta['user'])}|{gid(meta['group'])}|{meta['mode']}|{path}")
            elif path in self.dirs:
                meta = self.dirs[path]
                lines.append(f"@lstat directory|{uid(meta['user'])}|{gid(meta['group'])}|{meta['mode']}|{path}")
        for path in digested:
            if self.followed(path) in self.files:
                digest = hashlib.sha256(base64.b64decode(self.files[self.followed(path)]["content"])).hexdigest()
                lines.append(f"@sha {digest}  {path}")
        for path in owned:  # find -type f: only what is a regular file itself
            if path in self.files and path not in self.links:
                digest = hashlib.sha256(base64.b64decode(self.files[path]["content"])).hexdigest()
                lines.append(f"@sha {digest}  {path}")
        lines.append("@tar " + state_archive({path: base64.b64decode(meta["content"])
                                              for path, meta in sorted(self.files.items())
                                              if path in texts or path.rsplit("/", 1)[0] in records}))
        for unit, meta in sorted(self.units.items()):
            if unit not in asked:  # systemd tells only of the units asked about
                continue
            lines += [f"@unit Id={unit}", "@unit LoadState=loaded", f"@unit ActiveState={_active_state(meta)}",
                      f"@unit UnitFileState={'enabled' if meta['enabled'] else 'disabled'}",
                      *(["@unit Replaced=yes"] if meta.get("replaced") else []), "@unit "]
        lines += [f"@pkg {name} {'hi' if name in self.held else 'ii'}  {self.versions.get(name, '1.0')}"
                  for name in self.packages]
        asked_accounts = set(shlex.split(re.search(r"getent passwd (.*?) \|", command).group(1))) \
            if "getent passwd" in command else set()
        for name, uid in self.users.items():  # getent answers for a name or an id asked, as the real one does
            if name not in asked_accounts and str(uid) not in asked_accounts:
                continue
            account = self.people.get(name, {"gid": uid, "home": "/nonexistent", "shell": "/usr/sbin/nologin"})
            lines.append(f"@passwd {name}:x:{uid}:{account['gid']}::{account['home']}:{account['shell']}")
        lines += [f"@group {name}:x:{gid}:{','.join(self.members.get(name, []))}" for name, gid in self.groups.items()
                  if name in asked_accounts or str(gid) in asked_accounts]
        if "getent shadow" in command:  # cut -d: -f1,8: the name and the expiry day, never the hash
            lines += [f"@expire {name}:{self.people.get(name, {}).get('expire', '')}" for name in self.users
                      if name in asked_accounts]
        pinned = re.search(r"slurm-client 2>/dev/null\)\" = (\S+) \] \|\| echo \"@slurmctld", command)
        if pinned and self.versions.get("slurm-client") != shlex.split(pinned.group(1))[0] and self.slurmctld:
            lines.append(f"@slurmctld {self.slurmctld}")
        return [*lines, "@container none", f"@os {self.os or OS_SHIPPING.get(self.release, 'debian 12')}",
                f"@arch {self.arch}"]

    def answer(self, command: str, peer: Peer | None = None) -> tuple[bool, list[str]]:
        """Run one command as the host would; facts answer from the model and are not events. ``peer``: what the
        command reaches beyond the host."""
        self._peer = peer or Peer()
        self.commands += 1
        bounded = re.match(r"timeout -k \d+ \d+ (.*?); rc=\$\?; ", command)  # engine/waits.py's bounded()
        if bounded and "apt-get" not in command:
            command = bounded.group(1)
        if "@container" in command:
            return True, self.state_lines(command)
        until = _UNTIL.fullmatch(command)
        if until and simslurm.mentions_slurm(until.group(1)):
            return self._wait_on_slurm(command, shlex.split(until.group(1))[0], shlex.split(until.group(2))[0])
        if "mysql --batch" in command and "sacctmgr --noheader" in command:  # the accounting fact
            out = [f"@user {self.mysql['hash']}"] if "hash" in self.mysql else []
            out += [f"@db {self.mysql['database']}"] if "database" in self.mysql else []
            out += [f"@cluster {name}" for name in self.accounting.get("cluster", [])]
            if "--states=drain" in command and "slurmctld" in self.packages:  # the controller's drained nodes
                with self.slurm_standin() as slurm:
                    out += slurm.shell(simslurm.drained_part(command)).out.splitlines()
            return True, out + [f"@list-qos {name}" for name in self.accounting.get("qos", [])]
        # munged's credential check (roles/auth.py): a credential carries the key it was made with, and decodes only
        # where munged runs with the same key. Neither changes the host.
        key = self.files.get("/etc/munge/munge.key", {}).get("content", "")
        credential = f"MUNGE:{hashlib.sha256(key.encode()).hexdigest()[:16]}:"
        if command == "munge --no-input":
            return True, [credential]
        decode = re.fullmatch(r"echo (\S+) \| unmunge --no-output", command)
        if decode:
            return bool(self.units.get("munge.service", {}).get("active")) and decode.group(1) == credential, []
        if "slurmctld" in self.packages and simslurm.mentions_slurm(command):
            return self._slurm(command)
        self.events.append(command)
        deletion = re.fullmatch(r"timeout -k \d+ \d+ sacctmgr --immediate delete qos where name=(\S+)", command)
        if deletion:  # slurmdbd refuses to delete what the model says has jobs, with its reason on stderr
            name = deletion.group(1)
            if name in self.accounting.get("busy", []):
                return False, ["@stderr  Error with request: Job(s) active, cancel job(s) before remove"]
            self.accounting["qos"] = [q for q in self.accounting.get("qos", []) if q != name]
            return True, []
        if command.startswith("[ -f "):  # a check that a build made its product, saying why not
            said = [shlex.split(s)[0] for s in re.findall(r"echo ('[^']*') >&2", command)]
            made = shlex.split(command)[2] in self.files
            return made, [] if made else [f"@stderr {s}" for s in said]
        return self._change(command), []

    def _wait_on_slurm(self, command: str, check: str, said: str) -> tuple[bool, list[str]]:
        """engine/waits.py's until() whose check asks slurmctld: the check run once by a real sh, Slurm's commands
        answered by the controller's stand-in and systemctl by this host's units. Nothing changes on a simulated
        host while it waits, so every try answers alike: a check that fails is the loop's end at its deadline, with
        its words."""
        self.events.append(command)
        with tempfile.TemporaryDirectory(prefix="simhost-bin-") as directory:
            self._systemctl(Path(directory))
            with self.controllers_slurm() as slurm:
                answer = slurm.shell(f"PATH={shlex.quote(directory)}:$PATH; export PATH; {check}")
        return (True, []) if answer.rc == 0 else (False, [f"@stderr {said}"])

    def _systemctl(self, directory: Path) -> None:
        """systemctl, as this host's systemd answers the waits: is-active (3 where not active), and a unit's
        InactiveExitTimestamp as format_timestamp prints it, in the caller's time zone and locale; empty for a unit
        never started."""
        cases = []
        for unit, meta in self.units.items():
            state = _active_state(meta)
            cases.append(f"'is-active {unit}') echo {state}; exit {0 if state == 'active' else 3};;")
            since = self.started.get(unit)
            shown = f"date -d @{int(since)} '+%a %Y-%m-%d %H:%M:%S %Z'" if since is not None else "echo"
            cases.append(f"'show --property=InactiveExitTimestamp --value {unit}') {shown};;")
        (directory / "systemctl").write_text('#!/bin/sh\ncase "$*" in\n' + "\n".join(cases)
                                             + '\n*) echo "simhost: systemctl not understood: $*" >&2; exit 1;;\n'
                                             "esac\n")
        (directory / "systemctl").chmod(0o755)

    # --- what the deploy's commands do ---------------------------------------------------------------------------

    def put(self, path: str, data: bytes) -> None:
        path = self.followed(path)  # root's upload opens the path as it is: through a link
        meta = self.files.get(path, {"user": "root", "group": "root", "mode": "644"})  # sftp: a new file, 0644
        self.files[path] = {**meta, "content": base64.b64encode(data).decode()}
        if data and int(meta["mode"], 8) & 0o044 and path not in self.exposed:
            self.exposed.append(path)
        self.events.append(f"upload {path}")

    def _mkdir(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            self.dirs.setdefault("/" + "/".join(parts[:i]), {"user": "root", "group": "root", "mode": "755"})

    def _install(self, command: str) -> None:
        # name=version: that version (a held package only with --allow-change-held-packages, as apt does)
        exact = dict(re.findall(r"(?<![\w.-])([a-z0-9][a-z0-9.+-]+)=([0-9][\w.:+~-]*)", command.split(" && ")[-1]))
        for name, version in exact.items():
            if name in self.held and self.versions.get(name) != version:
                assert "--allow-change-held-packages" in command, f"apt refuses to move held {name}"
                self.held.remove(name)  # apt drops the hold of what it changes (Debian 12 and 13)
            unit = self.units.get(PACKAGED_UNITS.get(name, ""))
            if unit is not None and unit["active"] and self.versions.get(name) not in (None, version):
                unit["replaced"] = True  # dpkg unpacked a new executable under the running daemon
            self.versions[name] = version
            if name not in self.packages:
                self.packages.append(name)
                if name in STACK_UNITS:
                    self.units.setdefault(STACK_UNITS[name], {"active": False, "enabled": True})
        # The names the deploy asks for (engine/apt.py): what its steps' footprints want, as the command lists them.
        install = re.search(r"--force-confold (.+?); rc=", command)
        asked = [w for w in shlex.split(install.group(1)) if "=" not in w and not w.endswith(".deb")] if install else []
        # Debian's slurmctld, slurmd, slurmdbd and slurm-client depend on munge (forky's only recommend it).
        name, _, version = (self.os or OS_SHIPPING.get(self.release, "debian 12")).partition(" ")
        if any(n in asked for n in ("slurmctld", "slurmd", "slurmdbd", "slurm-client")) and pulls_munge(
                (name, version.strip())):
            asked.append("munge")
        enroot = re.search(r"/enroot_([0-9.]+)_\w+\.deb", command)
        if enroot:  # the Enroot package the deploy uploaded or copied: it brings its hooks and directories
            asked.append("enroot")
            self.versions["enroot"] = f"{enroot.group(1)}-1"
            for hook in ENROOT_HOOKS:
                self.files[f"/usr/share/enroot/hooks.d/{hook}"] = {"content": "", "user": "root", "group": "root",
                                                                   "mode": "755"}
            self._mkdir("/etc/enroot/enroot.conf.d")
            self._mkdir("/etc/enroot/hooks.d")
        for name in asked:
            if (name.startswith("slurm") or name == "libslurm-dev") and name not in exact:
                self.versions[name] = self._archive_slurm()
            if name not in self.packages:
                self.packages.append(name)
                if name in PACKAGED_UNITS:
                    self.units.setdefault(PACKAGED_UNITS[name], {"active": False, "enabled": True})
                if name.startswith("slurm") or name == "sackd":
                    self._mkdir("/etc/slurm")

    def _archive_slurm(self) -> str:
        """The Slurm version apt installs unpinned: forky's archive carries 26.05.5-1, whose cgroup.conf takes what
        the deploy renders for 26.05 (26.05.1 does not); other releases are given their first patch release."""
        name, _, version = (self.os or OS_SHIPPING.get(self.release, "debian 12")).partition(" ")
        found = of_os((name, version.strip()))
        return found.slurm_package if found is not None and self.release == "26.05" else f"{self.release}.1-1"

    @staticmethod
    def _full(name: str) -> str:
        return name if "." in name else f"{name}.service"

    def _unit(self, name: str) -> dict:
        return self.units.setdefault(self._full(name), {"active": False, "enabled": False})

    def _change(self, command: str) -> bool:
        if "apt-get install" in command:
            self._install(command)
            return True
        if "apt-get update" in command:
            return True
        if command.startswith("ln -sfn "):  # a link to a library a package brought: the library, as stat -L sees it
            target, path = shlex.split(command)[2:]
            assert "libpmix2" in self.packages, f"{path}: its target {target} is not installed"
            self.files[path] = {"content": "", "user": "root", "group": "root", "mode": "644"}
            return True
        # A build on the controller: its result appears (Enroot's, started in the background, at once).
        if " make " in command or "make deb" in command:
            for target in re.findall(r"mv -f (\S+)\.new \1", command):
                self.files[target] = {"content": base64.b64encode(f"built {target}".encode()).decode(),
                                      "user": "root", "group": "root", "mode": "755"}
            return True
        if command.startswith("systemd-tmpfiles --create "):
            for line in (self.content(command.split()[-1]) or b"").decode().splitlines():
                if line.startswith("d "):
                    _, path, mode, *_ = line.split()
                    self._mkdir(path)
                    self.dirs[path]["mode"] = mode
            return True
        if command.startswith("dpkg-query -W -f='${Version}' enroot"):
            return "enroot" in self.packages
        if command.startswith(("for _ in", "( for _ in", "exportfs")) or "scontrol" in command:
            return True  # a wait or an action on a daemon: recorded as an event
        if command.startswith(("sacctmgr --immediate add cluster", "sacctmgr --immediate add qos")):
            words = shlex.split(command)
            self.accounting.setdefault(words[3], []).append(words[4])
            return True
        if command.startswith(("sacctmgr --immediate modify", "mysql <")):
            if command.startswith("mysql <"):
                sql = self.content(shlex.split(command)[2].rstrip(";")) or b""
                found = re.search(rb"IDENTIFIED BY PASSWORD '([^']+)'", sql)
                database = re.search(rb"CREATE DATABASE IF NOT EXISTS `([^`]+)`", sql)
                self.mysql = {"hash": found.group(1).decode(), "database": database.group(1).decode()}
                self.files.pop(shlex.split(command)[2].rstrip(";"), None)
            return True
        if command.startswith("setpriv "):
            return self._as_person(command)
        guarded = re.fullmatch(r"if id -u (\S+) >/dev/null 2>&1; then (.*); fi", command)
        if guarded:  # what the command guards runs only where the user exists
            return guarded.group(1) not in self.users or self._simple(guarded.group(2))
        for part in command.split(" && "):
            if not self._simple(part.strip()):
                return False
        return True

    def _simple(self, command: str) -> bool:
        words = shlex.split(command.replace(">", " > "))
        match words:
            case ["mkdir", "-p", path]:
                self._mkdir(path)
            case ["chown", owner, path]:
                user, group = owner.split(":")
                path = self.followed(path)
                (self.files.get(path) or self.dirs[path]).update(user=user, group=group)
            case ["chmod", mode, path]:
                path = self.followed(path)
                (self.files.get(path) or self.dirs[path]).update(mode=mode.lstrip("0") or "0")
            case ["install", "-m", mode, "/dev/null", path]:
                path = self.followed(path)
                self.files[path] = {"content": "", "user": "root", "group": "root", "mode": mode.lstrip("0") or "0"}
            case ["rm", "-f", path]:
                self.files.pop(path, None)
            case ["rm", "-rf", path]:
                for found in [p for p in (*self.files, *self.dirs) if p == path or p.startswith(path + "/")]:
                    self.files.pop(found, None)
                    self.dirs.pop(found, None)
            case ["find", directory, "-maxdepth", "1", "-name", pattern, "!", "-type", "d", *rest, "-delete"]:
                # find -P: a link is removed itself, never followed; "! -name NAME" keeps NAME
                kept = set(rest[2::3])
                assert rest[0::3] == ["!"] * len(kept) and rest[1::3] == ["-name"] * len(kept), rest
                for path in [p for p in (*self.files, *self.links) if p.rsplit("/", 1)[0] == directory]:
                    name = path.rsplit("/", 1)[1]
                    if fnmatch.fnmatchcase(name, pattern) and name not in kept:
                        self.files.pop(path, None)
                        self.links.pop(path, None)
            case ["cp", source, target]:
                self.files[target] = dict(self.files[source])
            case ["mv", "-f", source, target]:  # a rename replaces a link, never what it points at
                self.links.pop(target, None)
                self.files[target] = self.files.pop(source)
            case ["printf", _, value, ">", path]:
                self.files[path] = {"content": base64.b64encode(f"{value}\n".encode()).decode(), "user": "root",
                                    "group": "root", "mode": "644"}
            case ["echo", value, ">", path]:
                self.files[path] = {"content": base64.b64encode(f"{value}\n".encode()).decode(), "user": "root",
                                    "group": "root", "mode": "644"}
            case ["systemctl", "daemon-reload"] | ["sss_cache", "-E"] | ["sshd", "-t"]:
                pass
            case ["systemctl", "try-reload-or-restart", _]:
                pass
            case ["pam-auth-update", "--enable", name]:
                # the profile's Session lines into common-session, as pam-auth-update writes them
                profile = (self.content(f"/usr/share/pam-configs/{name}") or b"").decode()
                lines = [f"session {line.strip()}" for line in profile.split("Session:\n", 1)[-1].splitlines()
                         if line.startswith("\t")]
                if not lines:
                    return False
                session = (self.content("/etc/pam.d/common-session") or b"").decode()
                self.files["/etc/pam.d/common-session"] = {
                    "content": base64.b64encode((session + "\n".join(lines) + "\n").encode()).decode(),
                    "user": "root", "group": "root", "mode": "644"}
            case ["apt-mark", "hold", *names]:
                self.held = sorted({*self.held, *names})
            case ["apt-mark", "unhold", *names]:
                self.held = [n for n in self.held if n not in names]
            case ["systemctl", "enable", unit]:
                self._unit(unit)["enabled"] = True
            case ["systemctl", "start" | "restart" as how, unit]:
                self._start(unit, restart=how == "restart")
            case ["systemctl", "reload", unit]:
                assert self._unit(unit)["active"], f"reload of {unit}, which is not running"
            case ["systemctl", "stop", unit]:
                self._unit(unit)["active"] = False
                self._unit(unit).pop("failed", None)
            case ["systemctl", "disable", "--now", unit]:
                if (unit if "." in unit else f"{unit}.service") not in self.units:
                    return False  # systemctl: "Failed to disable unit: Unit munge.service does not exist"
                self._unit(unit).update(active=False, enabled=False)
            case ["groupadd", "--system", "--gid", gid, name]:
                self.groups[name] = int(gid)
            case ["useradd", "--system", "--uid", uid, *_, name]:
                self.users[name] = int(uid)
            case ["groupadd", "--gid", gid, name]:
                # groupadd refuses a name or a gid in use (exit 9, 4)
                if name in self.groups or int(gid) in self.groups.values():
                    return False
                self.groups[name] = int(gid)
            case ["useradd", "--uid", uid, "--gid", group, *options, "--no-create-home", name]:
                given = dict(zip(options[::2], options[1::2], strict=True))
                wanted = given.get("--groups", "").split(",") if "--groups" in given else []
                # useradd refuses a name or uid in use, and a group that does not exist (exit 9, 4, 6)
                if name in self.users or int(uid) in self.users.values() or group not in self.groups \
                        or any(g not in self.groups for g in wanted):
                    return False
                self.users[name] = int(uid)
                self.people[name] = {"gid": self.groups[group], "home": given["--home-dir"], "shell": given["--shell"],
                                     "expire": ""}
                for g in wanted:
                    self.members.setdefault(g, []).append(name)
            case ["usermod", option, value, name]:
                if name not in self.people:  # usermod: user does not exist (exit 6)
                    return False
                key = {"--shell": "shell", "--home": "home", "--expiredate": "expire"}[option]
                # usermod --expiredate -1 blanks the field; 1 is the day shadow then holds
                self.people[name][key] = "" if (key, value) == ("expire", "-1") else value
            case ["gpasswd", "--add", name, group]:
                if name not in self.users or group not in self.groups:
                    return False
                if name not in self.members.setdefault(group, []):
                    self.members[group].append(name)
            case ["gpasswd", "--delete", name, group]:
                if name not in self.members.get(group, []):  # gpasswd: user is not a member (exit 3)
                    return False
                self.members[group].remove(name)
            case _:
                return False
        return True

    def _start(self, unit: str, restart: bool) -> None:
        """systemd's start of a unit that is not running, or its restart: the unit leaves the inactive state now
        (InactiveExitTimestamp, on this host's clock) and its daemon starts; a start of a running one starts
        nothing."""
        meta = self._unit(unit)
        began = restart or not meta["active"]
        meta["active"] = True
        meta.pop("replaced", None)
        if began:
            self.started[self._full(unit)] = time.time()
            meta.pop("failed", None)
            if meta is self.units.get("slurmd.service"):
                self._slurmd_started(meta)

    def _slurmd_started(self, unit: dict) -> None:
        """The slurmd just started, as it fares (Sim.slurmd): it registers with its start, time(NULL) on this
        host's clock at its first registration (slurmd.c _fill_registration_msg), which slurmctld keeps, and
        slurmctld hears the node (validate_node_specs clears NOT_RESPONDING). slurmctld stopped meanwhile ends the
        same: slurmd retries until it answers (_registration_engine), and a started slurmctld asks every node to
        register."""
        if self.slurmd == SLURMD_EXITS:
            unit.update(active=False, failed=True)
            return
        if self.slurmd == SLURMD_REFUSED:
            return
        with self.controllers_slurm() as slurm:
            node = slurm.nodes.get(self._peer.name)
            if node is not None:
                node.slurmd_start = int(time.time())
                node.flags.discard("NOT_RESPONDING")

    def _as_person(self, command: str) -> bool:
        """A command of roles/identity.py's ``as_person``: run with the person's uid and gid, so it changes only what
        they may change (their own directories and files), and refuses the rest as the kernel would."""
        found = re.fullmatch(r"setpriv --reuid=(\d+) --regid=(\d+) --clear-groups -- (.*)", command, re.S)
        if not found:
            return False
        uid, gid = int(found.group(1)), int(found.group(2))
        user = next(n for n, i in self.users.items() if i == uid)
        group = next(n for n, i in self.groups.items() if i == gid)

        def writable(path: str) -> bool:  # may make or replace an entry of path's directory
            parent = path.rsplit("/", 1)[0]
            return parent not in self.links and self.dirs.get(parent, {}).get("user") in (user, str(uid))

        def own(path: str) -> dict | None:  # what the person's chmod reaches (through a link), if theirs
            meta = self.files.get(self.followed(path)) or self.dirs.get(self.followed(path))
            return meta if meta is not None and meta["user"] in (user, str(uid)) else None

        match shlex.split(found.group(3)):
            case ["mkdir", "-p", "-m", mode, path]:
                if path in self.dirs or path in self.links:  # -p: there already (through a link: the person's)
                    return True
                if path in self.files or not writable(path):
                    return False
                self.dirs[path] = {"user": user, "group": group, "mode": mode.lstrip("0")}
            case ["chmod", mode, path]:
                meta = own(path)
                if meta is None:
                    return False
                meta["mode"] = mode.lstrip("0")
            case ["sh", "-c", 'umask 077 && cat > "$1" && mv -f "$1" "$2"', "sh", staged, path, "<", source]:
                data = self.files.get(source)  # root's shell opens the source before handing over
                if data is None or not writable(staged) or not writable(path):
                    return False
                self.links.pop(path, None)
                self.files[path] = {"content": data["content"], "user": user, "group": group, "mode": "600"}
            case _:
                return False
        return True


@contextmanager
def standin_at(path: Path, lock: AbstractContextManager) -> Iterator[Slurm]:
    """The slurmctld stand-in of the simulated host whose model is ``path``, under that host's ``lock`` (the one its
    own commands hold), written back after: how another host's command reaches the controller (Peer)."""
    with lock:
        sim = Sim.load(path)
        with sim.slurm_standin() as slurm:
            yield slurm
        sim.save(path)
