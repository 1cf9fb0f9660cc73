#!/usr/bin/env bash
# The power of one machine behind an ipmi_sim BMC: its lan.conf's `chassis_control` program (OpenIPMI's hook for
# external power control; bmc_chassis.c). ipmi_sim runs it as
#   power.sh KIND TARGET get power          -> prints "power:1" (on) or "power:0" (off)
#   power.sh KIND TARGET set power 1|0      -> powers the machine on or off; prints nothing on success
#   power.sh KIND TARGET set reset 1        -> off, then on
# and a power cycle as "set power 0", then "set power 1" a second later. The machine is
#   lxc TARGET      the LXC container TARGET: on is lxc-start, off is lxc-stop -k (the power pulled, no shutdown).
#                   A container shares the host's kernel, so its start is no boot to Slurm (slurmd reports the
#                   kernel's uptime) nor to the health check (the kernel's boot id): power on makes it one, as
#                   testbed/reboot does for a reboot. It leaves in the container's /etc a drop-in for slurmd's first
#                   start (slurmd -b, a new boot id in /run/clusterforge-testbed/boot-id, the testbed's stand-in for
#                   the kernel's), which that start removes, reloading systemd 5 s later so no later start reads it.
#   process TARGET  a stand-in for the tests: a `sleep` whose pid is in the directory TARGET (TARGET/pid); each
#                   power change is a line, "on" or "off", appended to TARGET/power.log
# ipmi_sim waits for this program and reads its output: everything it starts keeps no descriptor of it.
set -uo pipefail
kind=$1 target=$2 op=$3
shift 3

process_pid() {   # the stand-in's pid while it runs (a zombie is off: nothing here reaps it)
  local pid state
  pid=$(cat "$target/pid" 2>/dev/null) || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] && echo "$pid"
}

is_on() {
  case $kind in
    lxc) [ "$(lxc-info -n "$target" -sH 2>/dev/null)" = RUNNING ] ;;
    process) process_pid >/dev/null ;;
    *) echo "unknown machine kind: $kind"; exit 1 ;;
  esac
}

# The container's root directory, to write to while it is off: a directory, or an overlay's upper directory (a clone
# of testbed/grow.sh).
rootfs() {
  local path
  path=$(sed -n 's/^lxc.rootfs.path *= *//p' "$(lxc-config lxc.lxcpath)/$target/config" | tail -n 1)
  case $path in
    overlay:*|overlayfs:*) echo "${path##*:}" ;;
    dir:*) echo "${path#dir:}" ;;
    *) echo "$path" ;;
  esac
}

boot_as_new() {
  local root unit start dropin=etc/systemd/system/slurmd.service.d/zz-clusterforge-testbed-power-on.conf
  root=$(rootfs)
  [ -d "$root" ] || return 0
  unit=$root/lib/systemd/system/slurmd.service
  [ -e "$unit" ] || unit=$root/usr/lib/systemd/system/slurmd.service
  start=$(sed -n 's|^ExecStart=\(/usr/sbin/slurmd\) |\1 -b |p' "$unit" 2>/dev/null | head -n 1)
  [ -n "$start" ] || return 0   # no slurmd there yet: nothing counts a boot
  mkdir -p "$root/${dropin%/*}"
  cat > "$root/$dropin" <<EOF
[Service]
ExecStartPre=/bin/sh -c 'mkdir -p /run/clusterforge-testbed && cat /proc/sys/kernel/random/uuid > /run/clusterforge-testbed/boot-id'
ExecStart=
ExecStart=$start
ExecStartPost=/bin/sh -c 'rm -f /$dropin && systemd-run --quiet --on-active=5 /usr/bin/systemctl daemon-reload'
EOF
}

power_on() {
  is_on && return 0
  case $kind in
    lxc)
      boot_as_new
      lxc-start -n "$target" </dev/null >/dev/null 2>&1 || { echo "lxc-start -n $target failed"; exit 1; } ;;
    process)
      setsid sleep infinity </dev/null >/dev/null 2>&1 &
      echo $! > "$target/pid"
      echo on >> "$target/power.log" ;;
  esac
}

power_off() {
  is_on || return 0
  case $kind in
    lxc) lxc-stop -n "$target" -k </dev/null >/dev/null 2>&1 || { echo "lxc-stop -n $target failed"; exit 1; } ;;
    process)
      local pid
      pid=$(process_pid) && kill -KILL "$pid" 2>/dev/null
      for _ in $(seq 50); do process_pid >/dev/null || break; sleep 0.1; done
      rm -f "$target/pid"
      echo off >> "$target/power.log" ;;
  esac
}

case $op in
  get)
    for parm in "$@"; do
      case $parm in
        power) if is_on; then echo "power:1"; else echo "power:0"; fi ;;
        *) echo "cannot get $parm"; exit 1 ;;
      esac
    done ;;
  set)
    while [ $# -ge 2 ]; do
      case $1 in
        power) if [ "$2" = 1 ]; then power_on; else power_off; fi ;;
        reset) power_off; power_on ;;
        boot) ;;   # the boot device: no machine here has a choice
        *) echo "cannot set $1"; exit 1 ;;
      esac
      shift 2
    done ;;
  *) echo "unknown operation: $op"; exit 1 ;;
esac
