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
TB_HOST_IP=10.77.0.1
TB_PREFIX=24
TB_PROXY_PORT=3142
TB_VAULT_ADDR=http://127.0.0.1:8210
export VAGRANT_HOME=$TB_CACHE/vagrant-home
export VAGRANT_DEFAULT_PROVIDER=${VAGRANT_DEFAULT_PROVIDER:-lxc}
export VAGRANT_CHECKPOINT_DISABLE=1
export CLUSTERFORGE_TESTBED_STATE=$TB_STATE CLUSTERFORGE_TESTBED_DIST=$TB_DIST

log() { printf '[testbed] %s\n' "$*" >&2; }
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
