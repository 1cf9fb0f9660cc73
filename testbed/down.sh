#!/usr/bin/env bash
# Removes everything testbed/up.sh made: the machines, OpenBao, apt-cacher-ng, the bridge and the state directory
# (with the machines' shared /home, $TB_HOME).
# The caches (box files, apt-cacher-ng's packages) stay in $TB_CACHE for the next run.
source "$(dirname "$0")/lib.sh"
cd "$REPO"
set +e
# The BMCs first: nothing powers a machine on while it is removed.
[ ! -d "$TB_BMC_DIR" ] || bash testbed/bmc/sims.sh down "$TB_BMC_DIR"
remove_machines
for pidfile in "$TB_STATE/bao.pid" "$TB_STATE/acng.pid"; do
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile"); kill "$pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
done
ip link del "$TB_BRIDGE" 2>/dev/null
# What testbed/grow.sh raised for dozens of machines.
[ ! -f "$TB_STATE/inotify-instances" ] || sysctl -q -w fs.inotify.max_user_instances="$(cat "$TB_STATE/inotify-instances")"
# The shared home only once no machine is left to have it mounted (they are all destroyed above).
rm -rf "$TB_HOME" "$TB_STATE"
log "down"
