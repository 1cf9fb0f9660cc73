"""The roles' decisions without pyinfra: a step run on a host state made here, its operations collected as the Changes
they were decided into (engine/change.py). What a real run sends and what `clusterforge plan` says are read from these
same values, so each is checked once, here; the whole deploy runs in test_deploy_flow.py and test_plan.py."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from types import SimpleNamespace

from clusters import small_cluster

from clusterforge.model import Host, Nfs, NfsExport, ValidCluster, resolve
from clusterforge.engine import ops
from clusterforge.engine.change import Change, Upload
from clusterforge.render import nfs as render_nfs
from clusterforge.roles.common import common
from clusterforge.roles.nfs import EXPORTS, nfs_server
from clusterforge.engine.run import DeployRun, Here
from clusterforge.engine.state import Account, Stat, State, Unit
from clusterforge.secrets import Secret

VALID = resolve(small_cluster())


def here_on(state: State, machine: str = "gpu01", valid: ValidCluster = VALID) -> tuple[Here, list[Change]]:
    """A host of a run that is not pyinfra's: its decisions go to a list, each named as pyinfra would name it."""
    found: list[Change] = []
    run = DeployRun(SimpleNamespace(inventory=(), active_hosts=frozenset()), valid)
    target = next(m for m in valid.machines if m.name == machine)

    def sink(here: Here, change: Change) -> None:
        found.append(replace(change, name=here.label(change.name)))

    return Here(run, SimpleNamespace(name=machine), target, state, sink), found


def stat(content: bytes, user: str = "root", group: str = "root", mode: str = "644") -> Stat:
    return Stat("file", hashlib.sha256(content).hexdigest(), user, group, mode)


def test_a_new_file_is_an_upload_with_its_owner_and_mode_and_a_diff_for_the_plan():
    here, found = here_on(State())
    change = ops.file(here, name="conf", path="/etc/x.conf", content="a = 1\n", mode="0640")
    assert found == [replace(change, name="conf")] and change.acts and change.writes
    assert change.commands == (Upload("/etc/x.conf", "a = 1\n"), "chown root:root /etc/x.conf",
                               "chmod 0640 /etc/x.conf")
    assert change.said == ("/etc/x.conf: created",)
    assert change.diff is not None and (change.diff.installed, change.diff.wanted) == (None, "a = 1\n")


def test_a_file_as_the_inventory_says_sends_nothing_and_a_mode_alone_is_only_a_chmod():
    right = State(paths={"/etc/x.conf": stat(b"a = 1\n")})
    here, _ = here_on(right)
    assert not ops.file(here, name="conf", path="/etc/x.conf", content="a = 1\n").acts
    wrong_mode = State(paths={"/etc/x.conf": stat(b"a = 1\n", mode="600")})
    here, _ = here_on(wrong_mode)
    change = ops.file(here, name="conf", path="/etc/x.conf", content="a = 1\n")
    assert change.commands == ("chmod 0644 /etc/x.conf",) and not change.writes
    assert change.said == ("/etc/x.conf: mode 600 -> 644",)


def test_a_secret_file_is_said_changed_never_shown_nor_diffed():
    secret = Secret(b"k" * 64, "munge key")
    here, _ = here_on(State(paths={"/etc/munge/munge.key": stat(b"old")}))
    change = ops.file(here, name="key", path="/etc/munge/munge.key", content=secret, mode="0400", user="munge",
                      group="munge")
    assert change.said == ("/etc/munge/munge.key: changed; it holds a secret (munge key), which is not shown",)
    assert change.diff is None and b"k" * 16 not in repr(change).encode()


def test_a_daemon_that_owes_a_restart_restarts_waits_and_records_and_says_why():
    running = State(units={"slurmd.service": Unit(True, True, True)},
                    texts={"/var/lib/clusterforge/applied/slurmd": "old inputs\n"})
    here, _ = here_on(running)
    change = ops.daemon(here, name="slurmd", unit="slurmd", inputs="new", ready="true",
                        restart=ops.owed(running, "slurmd", "new", changing=False), why="its drop-in changed")
    assert change.commands[:2] == ("systemctl restart slurmd.service", "true")
    assert change.commands[2] == ops.record_command("slurmd", "new")
    assert change.said == ("slurmd: restarted",) and change.why == "its drop-in changed" and change.shared


RECORDS = "/var/lib/clusterforge/applied"
DROPIN = "/etc/ssh/sshd_config.d/x.conf"


def _sshd_reads(state: State, text: str | None, formerly: str = "") -> Change:
    """sshd reads a drop-in holding ``text`` (None: gone) on a host in ``state``."""
    here, _ = here_on(state)
    dropin = (ops.file(here, name="x", path=DROPIN, content=text) if text is not None
              else ops.absent(here, name="x", path=DROPIN))
    return ops.reload(here, name="sshd reads x", unit="ssh.service", reads="x", files=[dropin], command="reload",
                      formerly=formerly)


def test_a_reload_is_owed_until_its_record_says_the_unit_read_the_files():
    read = ops.digest(Change("x", holds=ops.sha256("a\n")))
    # A run killed between the upload and the reload left the file, and no record: owed.
    killed = _sshd_reads(State(paths={DROPIN: stat(b"a\n")}), "a\n")
    assert killed.commands == ("reload", ops.record_command("ssh-x", read))
    assert not _sshd_reads(State(paths={DROPIN: stat(b"a\n")}, texts={f"{RECORDS}/ssh-x": read + "\n"}), "a\n").acts
    # Gone: owed where this run removes it or the record says the unit read it; never read and not there, nothing.
    assert not _sshd_reads(State(), None).acts
    removed = _sshd_reads(State(paths={DROPIN: stat(b"a\n")}), None)
    assert removed.commands == ("reload", ops.record_command("ssh-x", ops.NOTHING))
    assert _sshd_reads(State(texts={f"{RECORDS}/ssh-x": read + "\n"}), None).acts
    assert not _sshd_reads(State(texts={f"{RECORDS}/ssh-x": "absent\n"}), None).acts


def test_a_reloads_record_under_its_former_name_still_counts_and_goes_once_the_new_one_is_written():
    # A deploy of an earlier release, killed after it removed the drop-in and before sshd read that: its record, under
    # the old name, still says the drop-in. The reload is owed, recorded under the name from the unit, the old removed.
    read = ops.digest(Change("x", holds=ops.sha256("a\n")))
    old = {f"{RECORDS}/sshd-x": read + "\n"}
    owed = _sshd_reads(State(texts=old), None, formerly="sshd-x")
    assert owed.commands == ("reload", ops.record_command("ssh-x", "absent"), f"rm -f {RECORDS}/sshd-x")
    # The old record says what sshd reads now: nothing to do, and nothing renamed.
    assert not _sshd_reads(State(paths={DROPIN: stat(b"a\n")}, texts=old), "a\n", formerly="sshd-x").acts
    # The new record, where both are there, is the one read.
    both = {**old, f"{RECORDS}/ssh-x": "absent\n"}
    assert not _sshd_reads(State(texts=both), None, formerly="sshd-x").acts


def test_the_exports_are_published_until_recorded_and_an_earlier_releases_record_still_counts():
    valid = resolve(small_cluster(nfs=Nfs(server=Host("ctl", address="10.9.0.1"),
                                          exports=(NfsExport(path="/export/home"),))))
    exports = render_nfs.exports(valid).encode()
    written = State(paths={EXPORTS: stat(exports)}, units={"nfs-server.service": Unit(True, True, True)})

    def published(state: State) -> list[str]:
        here, found = here_on(state, "ctl", valid)
        nfs_server(here)
        return [c for change in found if change.name.endswith("publish the new exports") for c in change.commands]

    read = ops.digest(Change("exports", holds=ops.sha256(exports)))
    # A run killed between the upload and exportfs: the file is there, no record says it was published.
    assert published(written) == ["exportfs -ra", ops.record_command("nfs-server-exports", read)]
    assert published(replace(written, texts={f"{RECORDS}/nfs-server-exports": read + "\n"})) == []
    # An earlier release's record, under its name then: published already, or owed (killed before it published).
    assert published(replace(written, texts={f"{RECORDS}/exportfs": read + "\n"})) == []
    assert published(replace(written, texts={f"{RECORDS}/exportfs": "other\n"})) == [
        "exportfs -ra", ops.record_command("nfs-server-exports", read), f"rm -f {RECORDS}/exportfs"]


def test_a_daemon_restarted_in_the_run_read_its_files_as_it_started_so_the_reload_is_only_recorded():
    here, _ = here_on(State(units={"prometheus.service": Unit(True, True, True)}))
    ran = ops.daemon(here, name="prometheus", unit="prometheus", inputs="flags", restart=True)
    rules = ops.file(here, name="rules", path="/etc/prometheus/rules.yml", content="groups: []\n")
    change = ops.reload(here, name="prometheus reads", unit="prometheus", reads="configuration", files=[rules],
                        started=ran)
    assert change.commands == (ops.record_command("prometheus-configuration", ops.digest(rules)),)
    calm = ops.daemon(here, name="prometheus", unit="prometheus", inputs="flags", restart=False)
    assert ops.reload(here, name="prometheus reads", unit="prometheus", reads="configuration", files=[rules],
                      started=calm).commands[0] == "systemctl reload prometheus.service"


def test_a_daemon_elsewhere_is_shared_but_does_nothing():
    here, _ = here_on(State())
    change = ops.daemon(here, name="slurmctld", unit="slurmctld", inputs="x", restart=True, there=False)
    assert change.shared and not change.acts and change.otherwise == "no slurmctld here"


def test_a_step_names_its_operations_and_a_converged_host_gets_no_command():
    here, found = here_on(State())
    common(here)
    assert [c.name for c in found if c.acts] == ["common | users munge (990) and slurm (64030)"]
    setup = VALID.setup
    users = State(users=[Account("munge", setup.munge_user.uid), Account("slurm", setup.slurm_user.uid)],
                  groups=[Account("munge", setup.munge_user.gid), Account("slurm", setup.slurm_user.gid)])
    here, found = here_on(users)
    common(here)
    assert not any(c.acts for c in found)


class _Host:
    """A pyinfra host as the run reads it: a name and its data; hashed by identity, as pyinfra's are."""

    def __init__(self, name: str, data: SimpleNamespace) -> None:
        self.name, self.data = name, data


def test_the_runs_hosts_are_in_the_inventorys_order_whatever_pyinfras_set_says():
    # pyinfra keeps the active hosts in a set, whose order follows object addresses: what is decided from every host
    # (the reasons a restart names, in the operation's name and the plan) would change from run to run.
    hosts = [_Host(f"@ssh/{m.name}", SimpleNamespace(clusterforge_machine=m)) for m in VALID.machines]
    failed = hosts[2]
    state = SimpleNamespace(inventory=hosts, active_hosts=set(reversed(hosts)) - {failed})
    run = DeployRun(state, VALID)
    assert run.hosts == [h for h in hosts if h is not failed]
    assert run.host_of(hosts[0].data.clusterforge_machine.name) is hosts[0]
    assert run.host_of(failed.data.clusterforge_machine.name) is None  # failed, or left out by --limit
    assert run.host_of("no-such-machine") is None


def _accounts_on_the_controller(held: str, passwd: str) -> Change:
    """The accounts step on a controller whose slurmctld holds ``held`` (tagged lines) and whose user database
    resolves ``passwd``; the database's listings empty (what the plan adds is beside the point here)."""
    from clusterforge.accounts import controller
    from clusterforge.model import Account, Accounting, User
    from clusterforge.roles.accounting import accounts
    from clusterforge.engine.facts import Accounting as Found

    valid = resolve(small_cluster(accounting=Accounting(accounts=(Account("vision"),),
                                                        users=(User("alice", accounts=("vision",)),
                                                               User("dave", accounts=("vision",))))))
    found = Found()
    found.held, found.unix = controller.parse([*held.splitlines(), *passwd.splitlines()])
    run = DeployRun(SimpleNamespace(inventory=(), active_hosts=frozenset()), valid)
    run.once(("accounting", "ctl"), lambda: found)
    changes: list[Change] = []
    target = next(m for m in valid.machines if m.name == "ctl")
    accounts(Here(run, SimpleNamespace(name="ctl"), target, State(), lambda here, c: changes.append(c)))
    return changes[0]


def test_a_user_slurmctld_holds_without_uid_or_default_is_relearned_without_a_restart():
    held = ("@held UserName=alice(4294967294) DefAccount=(null) DefWckey= AdminLevel=None\n"
            "@held UserName=dave(2004) DefAccount=(null) DefWckey= AdminLevel=None")
    passwd = "@passwd alice:x:2001:2001::/home/alice:/bin/sh\n@passwd dave:x:2004:2004::/home/dave:/bin/sh"
    change = _accounts_on_the_controller(held, passwd)
    commands = [str(c) for c in change.commands]
    assert any("scontrol reconfigure" in c for c in commands), commands
    relearn = [c for c in commands if "modify user" in c]
    assert [c.split("where ")[1].split(" set")[0] for c in relearn] == ["name=alice cluster=t", "name=dave cluster=t"]
    assert all("DefaultAccount=vision" in c for c in relearn) and "restart" not in " ".join(commands)
    assert "slurmctld learns users again" in change.name
    assert any("alice (no uid" in line for line in change.said)


def test_users_slurmctld_holds_rightly_cost_nothing_and_one_without_a_unix_account_is_only_named():
    held = ("@held UserName=alice(2001) DefAccount=vision DefWckey= AdminLevel=None\n"
            "@held UserName=dave(4294967294) DefAccount=(null) DefWckey= AdminLevel=None")
    change = _accounts_on_the_controller(held, "@passwd alice:x:2001:2001::/home/alice:/bin/sh")
    assert not [c for c in change.commands if "reconfigure" in str(c) or "modify user" in str(c)], change.commands
    assert "slurmctld learns" not in change.name
