"""directory: every host reads the cluster's people from the site directory (model/identity.py's Directory) through
SSSD, before any Slurm daemon starts or the accounting database hears of a user.

SSSD's packages come in the host's one apt transaction (roles/packages.py, from this step's footprint), kept from
starting; here the pinned CA certificate and sssd.conf (root's alone, the bind password from Vault added on the way,
never shown) are written, nscd is stopped where it runs (its cache of passwd and group would answer in SSSD's place and
hide a change), SSSD is (re)started, and nsswitch.conf sends passwd and group lookups to it.

SSSD restarts only when its inputs (the two files) changed since it last started with them (a record, engine/ops.py):
a run killed between the upload and the restart still restarts on the next run. sssd.conf holds the bind password: a
plain digest of it, readable by anyone or shown in a verbose deploy's output (pyinfra -vv prints the commands, the
record's too), would let anyone test guesses of the password offline. So the record is keyed (HMAC-SHA256) with a
random key of the host's own, uploaded once like a secret and never shown, and the records' directory is root's alone
(0700, on a host where an earlier run left it readable too). A record an earlier release wrote (the plain digest) still
counts as sssd running those inputs: it is rewritten keyed, without a restart. A restart also drops SSSD's cached
entries (``sss_cache -E``), which the old settings found. Nothing of Slurm restarts: its daemons ask NSS, which asks
SSSD, each time.

sshd on every host asks SSSD for a person's keys (render/sssd.py's sshd_dropin), reloaded (which keeps the sessions
it serves) once the drop-in changed, owed like a restart. On login hosts, where people log in first, pam_mkhomedir
makes a person's home at their first login (clusterforge's pam-auth-update profile): the directory's people cannot
be listed, so their homes cannot be made ahead as declared people's are (roles/identity.py). Where an NFS mount
serves the homes with root squashed on the login hosts, it cannot make them: the site makes them on the server.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from ..distributions import lacks_sssd, of_os
from ..errors import DeployError, for_pyinfra
from ..model import ValidCluster
from ..render import sssd as render
from ..secrets import Secret
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import DeployRun, Here, step
from ..engine.state import APPLIED_DIR
from ..engine.upload import refuse_diff
from . import artifacts
from .access import sshd_reads

# sssd-common holds the daemon and its units; sssd-ldap the LDAP back end; sssd-tools sss_cache and sssctl. Not the
# sssd metapackage, which brings every back end (AD, IPA, Kerberos).
PACKAGES = ("sssd-common", "sssd-ldap", "sssd-tools", "libnss-sss", "libpam-sss")
UNIT = "sssd.service"
NAME_CACHES = ("nscd.service", "unscd.service")
FLUSH = "sss_cache -E"
FORMER_RECORD = "sshd-directory-keys"  # the name of sshd's record (ops.reload) before it was named from the unit
KEY_RECORD = "sssd.key"  # the host's own key for sssd's record (a record itself: read with the others)


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """With a directory: SSSD's packages, its two files and nsswitch.conf (whose text the step edits) on every host,
    sssd and the name caches that must not run beside it. sssd.conf's text is never read: it holds the password."""
    if render.directory_of(valid) is None:
        return Footprint(known=PACKAGES)
    login = "login" in groups
    return Footprint(paths=(render.SSSD_CONF, render.CA_CERT, render.NSSWITCH, render.SSHD_DROPIN, APPLIED_DIR,
                            ops.record_path(KEY_RECORD),
                            *((render.MKHOMEDIR_PROFILE,) if login else ())),
                     texts=(render.NSSWITCH, *((render.COMMON_SESSION,) if login else ())),
                     shown=(render.NSSWITCH, render.SSHD_DROPIN, *((render.MKHOMEDIR_PROFILE,) if login else ())),
                     units=(UNIT, *NAME_CACHES), packages=PACKAGES, known=PACKAGES)


def refuse_without_sssd(run: DeployRun) -> None:
    """Once per run, before any operation: a host whose OS ships no SSSD (Debian forky) cannot read the directory;
    nothing changes anywhere. Validation refuses a release only such an OS ships; a pinned site Slurm reaches here."""
    if render.directory_of(run.valid) is None:
        return

    def guard() -> DeployError | None:
        found = {name: dist for name, state in sorted(run.states.items()) if (dist := lacks_sssd(state.os))}
        if not found:
            return None
        hosts = "; ".join(f"{name} runs {dist.name}" for name, dist in found.items())
        return DeployError(f"the inventory reads its people from a site directory through SSSD, and these hosts' "
                           f"OS has no SSSD packages: {hosts}. Nothing was changed on any host")
    error = run.once("SSSD shipped", guard)
    if error is not None:
        raise for_pyinfra(error)


def record_key(here: Here) -> str:
    """The host's key for sssd's record: the one it keeps, or a new random one (the same for the whole run: the
    steps are rehearsed before they run)."""
    kept = ops.applied(here.state, KEY_RECORD)
    if kept:
        return kept
    return here.run.once(("sssd record key", here.machine.name), lambda: secrets.token_hex(32))


def conf_mode(here: Here) -> str:
    """0600; 0640 where the OS's sssd.service makes it so at each start (root's group alone, Debian 13): written
    0600 there, every run would change it back."""
    found = of_os(here.state.os)
    return "0640" if found is not None and found.sssd_conf_group_read else "0600"


def sssd_conf(here: Here) -> str | Secret:
    """sssd.conf as this host gets it: with a bind DN, the password from Vault added, held in memory only."""
    valid = here.valid
    text = render.sssd_conf(valid, tuple(here.groups))
    directory = render.directory_of(valid)
    assert directory is not None
    if directory.bind_dn is None:
        return text
    refuse_diff(here.run, render.SSSD_CONF)
    password = here.run.secrets.ldap_bind_password()
    return Secret(render.with_bind_password(text, password.reveal_text()).encode(),
                  f"<{render.SSSD_CONF} with the LDAP bind password>")


@step("directory", footprint=footprint)
def directory(here: Here) -> None:
    found = render.directory_of(here.valid)
    if found is None:
        return
    ca = ops.file(here, name="the directory's CA certificate (pinned)", path=render.CA_CERT,
                  content=artifacts.content(here.run, found.ca_certificate))
    mode = conf_mode(here)
    conf = ops.file(here, name=f"{render.SSSD_CONF} ({mode} root, the bind password from Vault)", path=render.SSSD_CONF,
                    content=sssd_conf(here), mode=mode)
    for unit in NAME_CACHES:
        if here.state.unit(unit).active or here.state.unit(unit).enabled:
            ops.stopped(here, name=f"{unit.split('.')[0]} is off: SSSD caches names here", unit=unit)
    # sssd's record below is keyed, and the records are root's alone: sssd.conf holds the password.
    ops.directory(here, name="the deploy's records are root's alone (one is a digest of sssd.conf)", path=APPLIED_DIR,
                  mode="0700")
    key = record_key(here)
    ops.file(here, name="this host's key for sssd's record (root's alone)", path=ops.record_path(KEY_RECORD),
             content=Secret(f"{key}\n".encode(), f"<this host's key for {UNIT}'s record>"), mode="0600")
    running = here.state.unit(UNIT).active
    plain = ops.digest(conf, ca)
    keyed = hmac.new(key.encode(), plain.encode(), hashlib.sha256).hexdigest()
    recorded = ops.applied(here.state, UNIT)
    # Owed as ops.service owes it: the record says sssd runs other inputs, or there is none and this run changes them.
    owed = recorded not in (keyed, plain) if recorded is not None else ops.changes((conf, ca))
    ops.daemon(here, name="sssd runs with the directory's settings", unit=UNIT, inputs=keyed, restart=running and owed,
               why="sssd.conf or the CA certificate changed since it last started",
               # Entries cached under the old settings would be served until they expire.
               ready=FLUSH if running else None)
    ops.file(here, name="nsswitch.conf: passwd and group also from SSSD", path=render.NSSWITCH,
             content=render.nsswitch(here.state.texts.get(render.NSSWITCH)))
    keys_from_directory(here)
    if "login" in here.groups:
        homes_at_first_login(here)


def keys_from_directory(here: Here) -> None:
    """sshd takes the keys the directory holds for a person, once it has read the drop-in (checked first: a reload
    of a config sshd refuses would leave it running the old one, silently)."""
    dropin = ops.file(here, name="sshd asks SSSD for a person's keys (AuthorizedKeysCommand)", path=render.SSHD_DROPIN,
                      content=render.sshd_dropin(here.valid))
    sshd_reads(here, "the directory's keys", "directory-keys", dropin, formerly=FORMER_RECORD)


def homes_at_first_login(here: Here) -> None:
    profile = ops.file(here, name="pam_mkhomedir's profile: a person's home at first login (0700)",
                       path=render.MKHOMEDIR_PROFILE, content=render.mkhomedir_profile(here.valid))
    session = here.state.texts.get(render.COMMON_SESSION) or ""
    # pam-auth-update writes the profile's line into common-session; again when the profile's text changed.
    due = profile.writes or "pam_mkhomedir.so umask=0077" not in session
    ops.commands(here, name="common-session makes a person's home at first login",
                 commands=[f"pam-auth-update --enable {render.MKHOMEDIR_PROFILE_NAME}"] if due else [],
                 otherwise="common-session makes a person's home at first login")
