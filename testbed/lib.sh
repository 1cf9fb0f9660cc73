# Shared settings of the local test cluster; sourced by the testbed scripts.
# Everything lives under paths and names of its own, so bringing it down removes exactly what it made.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TB_STATE=${CLUSTERFORGE_TESTBED_STATE:-/var/lib/clusterforge-testbed}
TB_CACHE=${CLUSTERFORGE_TESTBED_CACHE:-/var/cache/clusterforge}
# The machines' shared /home (the Vagrantfile bind-mounts it into every lxc machine): as an NFS home would be.
TB_HOME=$TB_STATE/home
TB_DIST=${CLUSTERFORGE_TESTBED_DIST:-bookworm}
TB_BRIDGE=cfbr0
# The bridge's own MAC, set (locally administered). Unset, Linux gives a bridge the lowest MAC of its ports and
# changes it as ports come and go: a machine powered off or on (testbed/bmc/power.sh, testbed/reboot), a clone of
# testbed/grow.sh. A machine that kept the old MAC for this host in its ARP table answered into nothing: in CI
# (Debian 13, twice, while gpu02 was powered off and on) the controller's entry for 10.77.0.1 held, as REACHABLE, a
# MAC the bridge no longer had, and the controller took no ssh.
TB_BRIDGE_MAC=02:77:00:00:00:01
TB_HOST_IP=10.77.0.1
TB_PREFIX=24
TB_PROXY_PORT=3142
TB_VAULT_ADDR=http://127.0.0.1:8210
# Enroot and Pyxis from the artifact mirror beside the clone, where there is one (as scripts/example.sh): without a
# mirror, inventories/vagrant.py pins NVIDIA's Enroot package by a placeholder digest, which every command refuses.
if [ -z "${CLUSTERFORGE_ARTIFACTS:-}" ] && [ -d "$REPO/../shared/artifacts" ]; then
  export CLUSTERFORGE_ARTIFACTS=$(cd "$REPO/../shared/artifacts" && pwd)
fi
# The stand-ins of NVIDIA's packages (testbed/stack-repo.sh): no NVIDIA repository can be reached here.
# apt-cacher-ng serves them to the machines at http://$TB_HOST_IP:$TB_PROXY_PORT/$TB_STACK_URLPATH/ from
# $TB_ACNG_WWW/$TB_STACK_URLPATH (its LocalDirs: stack_repo_acng_conf below).
TB_ACNG_WWW=$TB_STATE/acng-www
TB_STACK_URLPATH=clusterforge-stack
TB_STACK_REPO=$TB_ACNG_WWW/$TB_STACK_URLPATH
# The machines' BMCs (testbed/bmc/sims.sh, started by up.sh where the inventory gives Nodes a Bmc): their state, and
# their one account, whose password is made once and kept here (0600) and in OpenBao.
TB_BMC_DIR=$TB_STATE/bmc
TB_BMC_USER=repair
TB_BMC_PASSWORD=$TB_STATE/bmc-password
export VAGRANT_HOME=$TB_CACHE/vagrant-home
export VAGRANT_DEFAULT_PROVIDER=${VAGRANT_DEFAULT_PROVIDER:-lxc}
export VAGRANT_CHECKPOINT_DISABLE=1
# Where Vagrant keeps what it knows of the machines (its ids of their containers): Vagrant's own setting, if given.
TB_VAGRANT_DOT=${VAGRANT_DOTFILE_PATH:-$REPO/.vagrant}
export CLUSTERFORGE_TESTBED_STATE=$TB_STATE CLUSTERFORGE_TESTBED_DIST=$TB_DIST

log() { printf '[testbed] %s\n' "$*" >&2; }
# The acng.conf lines by which an apt-cacher-ng on HOST:PORT serves the stand-in NVIDIA repository at
# http://HOST:PORT/$TB_STACK_URLPATH/, without a daemon of its own (LocalDirs). Asked directly, apt-cacher-ng finds
# the LocalDirs entry in the path's first part. apt asks it as its proxy (the machines' proxy is this one), with an
# absolute URL: apt-cacher-ng then looks the URL's host up in LocalDirs, and first refuses a port other than
# AllowUserPorts' (80 unless set: "403 Configuration error (confusing proxy mode) or prohibited port").
stack_repo_acng_conf() {
  printf 'LocalDirs: %s %s ; %s %s\nAllowUserPorts: 80 %s\n' "$TB_STACK_URLPATH" "$TB_STACK_REPO" "$1" "$TB_ACNG_WWW" "$2"
}
# The testbed's long-lived daemons (apt-cacher-ng, OpenBao) keep no descriptor of the shell that started them: a
# caller's lock (`flock /tmp/lock bash testbed/up.sh`) would otherwise stay held until down.sh stops them.
close_inherited_fds() {
  local fd
  for fd in /proc/$BASHPID/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
  done
  return 0
}
# Debian packages for this machine, whatever the age of its package lists: apt refuses a package its stale lists
# cannot authenticate ("There were unauthenticated packages"), so the lists are refreshed first.
apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
# Every machine of the test cluster, however far it got: what Vagrant knows of, and any cf-* container it does not
# (a changed inventory, a vagrant that could not read it or died while creating it). Errors are not fatal.
remove_machines() (
  set +e
  local lxcpath c
  # Clones (testbed/grow.sh) first: each is an overlay on the seed, which cannot go while they are there.
  lxcpath=$(lxc-config lxc.lxcpath 2>/dev/null)
  for c in $(lxc-ls 2>/dev/null); do
    case $c in cf-*) grep -q '^lxc.rootfs.path *= *overlay' "$lxcpath/$c/config" 2>/dev/null || continue
      lxc-stop -k -n "$c" >/dev/null 2>&1; lxc-destroy -n "$c" >/dev/null 2>&1;; esac
  done
  if [ -x .venv/bin/clusterforge ] && command -v vagrant >/dev/null; then
    vagrant destroy -f >/dev/null 2>&1 || log "vagrant destroy failed; removing the containers directly"
  fi
  # Also what a changed inventory no longer lists, or a vagrant that could not read it.
  for c in $(lxc-ls 2>/dev/null); do
    case $c in cf-*) lxc-stop -k -n "$c" >/dev/null 2>&1; lxc-destroy -n "$c" >/dev/null 2>&1;; esac
  done
  rm -rf "$TB_VAGRANT_DOT/machines"
)
# A cf-* container Vagrant holds no id for, bar testbed/grow.sh's clones (overlays, made outside Vagrant): one
# Vagrant died while creating, which its next `vagrant up` would refuse to create again.
remove_containers_vagrant_lost() (
  set +e
  local lxcpath known c
  lxcpath=$(lxc-config lxc.lxcpath 2>/dev/null)
  known=$(cat "$TB_VAGRANT_DOT"/machines/*/*/id 2>/dev/null)
  for c in $(lxc-ls 2>/dev/null); do
    case $c in cf-*) ;; *) continue;; esac
    grep -qx -- "$c" <<<"$known" && continue
    grep -q '^lxc.rootfs.path *= *overlay' "$lxcpath/$c/config" 2>/dev/null && continue
    log "removing $c, which vagrant created but does not know"
    lxc-stop -k -n "$c" >/dev/null 2>&1; lxc-destroy -n "$c" >/dev/null 2>&1
  done
)
# `vagrant up` of the machines named (all if none). vagrant-lxc brings them up in parallel threads, and on a CI
# machine Vagrant's Ruby once died there of SIGABRT, leaving a crash report of memory maps in place of an error. A
# crash says nothing about the cluster: a second try, one machine at a time, starts what is missing. Vagrant's
# stderr is kept so that what a crash report says first (its [BUG] line) is shown, not only its tail.
vagrant_up() {
  local err=$TB_STATE/vagrant-up.err rc=0
  vagrant up --provider="$VAGRANT_DEFAULT_PROVIDER" "$@" 2> "$err" || rc=$?
  if [ "$rc" -gt 128 ]; then
    crash_report_head "$rc" "$err"
    remove_containers_vagrant_lost
    log "vagrant up again, one machine at a time"
    rc=0; vagrant up --no-parallel --provider="$VAGRANT_DEFAULT_PROVIDER" "$@" 2> "$err" || rc=$?
  fi
  cat "$err" >&2
  [ "$rc" -le 128 ] || crash_report_head "$rc" "$err"
  return "$rc"
}
crash_report_head() {
  log "vagrant up died of signal $(($1 - 128)); its report begins:"
  grep -m 1 -A 6 -F '[BUG]' "$2" >&2 || head -n 20 "$2" >&2
}
