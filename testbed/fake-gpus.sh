#!/bin/sh
# LXC autodev hook: device nodes /dev/nvidia<N> (char 195:N) for the minors given as arguments. Nothing drives
# them, so opening one the devices cgroup allows fails with ENXIO, one it denies with EPERM: enough for slurmd to
# accept gres.conf and for a test to see which GPUs a job may use. LXC appends its own arguments after ours.
set -e
for minor in "$@"; do
  case $minor in *[!0-9]*|'') break;; esac
  node="$LXC_ROOTFS_MOUNT/dev/nvidia$minor"
  [ -c "$node" ] || mknod -m 666 "$node" c 195 "$minor"
done
