#!/usr/bin/env bash
# BMCs for the test machines: one OpenIPMI ipmi_sim (Debian's openipmi) per node, each on its own UDP port, speaking
# IPMI over LAN (RMCP+, as `ipmitool -I lanplus` does) with one admin user, its chassis power driving the node's
# machine through power.sh (an LXC container, or a stand-in process for the tests).
#
#   BMC_PASSWORD=... sims.sh up DIR USER NODE:PORT:KIND:TARGET[:ADDR]...
#                      start one ipmi_sim per NODE not running one yet (KIND, TARGET: power.sh)
#   sims.sh down DIR   stop them, and the stand-in processes they started
#
# The password comes from the environment, never the command line. Each sim listens on its ADDR, else on $BMC_ADDR,
# else on 127.0.0.1 (the test cluster gives each machine's BMC an address of its own on the bridge, as each BMC of a
# real cluster has, for its controller to reach). Everything lives under DIR/NODE: lan.conf (the user and password,
# 0600), node.emu, state/, sim.pid and sim.log. `up` waits until each sim listens, and stops those it started if one
# does not. Needs ipmi_sim and ss (testbed/apt-packages.txt).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() { echo "usage: BMC_PASSWORD=... $0 up DIR USER NODE:PORT:KIND:TARGET[:ADDR]... | $0 down DIR" >&2; exit 2; }

# The sim whose pid is in DIR/NODE/sim.pid, still running (or still setsid, about to exec it): its pid.
sim_pid() {
  local pid
  pid=$(cat "$1/sim.pid" 2>/dev/null) || return 1
  tr '\0' '\n' 2>/dev/null < "/proc/$pid/cmdline" | grep -xF "$1/lan.conf" >/dev/null && echo "$pid"
}

down() {   # DIR [NODE...]: those nodes' sims, else every one
  local dir=$1 node pid kind target
  local -a nodes=("$dir"/*)
  shift
  [ $# -eq 0 ] || nodes=("${@/#/$dir/}")
  for node in "${nodes[@]}"; do
    [ -f "$node/sim.pid" ] || continue
    if pid=$(sim_pid "$node"); then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do sim_pid "$node" >/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$node/sim.pid"
    # A stand-in process outlives its sim: power it off. A container is left as it is (testbed/down.sh's).
    read -r kind target < "$node/machine" || continue
    [ "$kind" != process ] || bash "$here/power.sh" process "$target" set power 0 >/dev/null
  done
}

up() {
  local dir=$1 user=$2 spec node port kind target addr d pid
  local -a started=()
  shift 2
  [ $# -gt 0 ] || usage
  : "${BMC_PASSWORD:?BMC_PASSWORD: the BMC user password, in the environment}"
  # lan.conf quotes it; IPMI 2.0 allows 20 bytes.
  case $BMC_PASSWORD in *[[:space:]\"\\]*) echo "BMC_PASSWORD: no spaces, quotes or backslashes" >&2; exit 2;; esac
  [ ${#BMC_PASSWORD} -le 20 ] || { echo "BMC_PASSWORD: 20 characters at most (IPMI 2.0)" >&2; exit 2; }
  command -v ipmi_sim >/dev/null || { echo "ipmi_sim not installed (Debian's openipmi)" >&2; exit 1; }
  mkdir -p "$dir"
  trap 'down "$dir" "${started[@]}"' ERR
  for spec in "$@"; do
    IFS=: read -r node port kind target addr <<< "$spec"
    [ -n "$node" ] && [ -n "$port" ] && [ -n "$kind" ] && [ -n "$target" ] || usage
    case $kind in lxc|process) ;; *) echo "unknown machine kind: $kind (lxc or process)" >&2; exit 2;; esac
    d=$dir/$node
    ! sim_pid "$d" >/dev/null || continue
    started+=("$node")
    mkdir -p "$d/state"
    echo "$kind $target" > "$d/machine"
    (umask 077; cat > "$d/lan.conf" <<EOF
name "$node"
set_working_mc 0x20
  startlan 1
    addr ${addr:-${BMC_ADDR:-127.0.0.1}} $port
    priv_limit admin
    allowed_auths_callback md5
    allowed_auths_user md5
    allowed_auths_operator md5
    allowed_auths_admin md5
    guid a123456789abcdefa123456789abcdef
  endlan
  chassis_control "$here/power.sh $kind $target"
  user 2 true "$user" "$BMC_PASSWORD" admin 10 md5
EOF
    )
    cat > "$d/node.emu" <<'EOF'
mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02
mc_enable 0x20
EOF
    # -n: no console on stdin; all its descriptors to the log, so that no caller's pipe stays open.
    setsid ipmi_sim -n -c "$d/lan.conf" -f "$d/node.emu" -s "$d/state" </dev/null >"$d/sim.log" 2>&1 &
    echo $! > "$d/sim.pid"
  done
  for spec in "$@"; do
    IFS=: read -r node port kind target addr <<< "$spec"
    d=$dir/$node
    # up to 30 s: a loaded machine (CI runs the end-to-end tier beside the others) starts it slowly
    for _ in $(seq 600); do
      pid=$(sim_pid "$d") || break
      ss -Hulnp "sport = :$port" | grep -F "pid=$pid," >/dev/null && continue 2
      sleep 0.05
    done
    echo "the BMC of $node did not listen on UDP port $port: $(tail -3 "$d/sim.log" 2>/dev/null)" >&2
    false
  done
}

case ${1:-} in
  up) [ $# -ge 4 ] || usage; shift; up "$@" ;;
  down) [ $# -ge 2 ] || usage; shift; down "$@" ;;
  *) usage ;;
esac
