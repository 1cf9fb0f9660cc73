#!/bin/bash
# Build (once) a Debian 13 "trixie" root holding Slurm 24.11, so the real-Slurm
# tests can run a second Slurm version on a Debian 12 host via chroot.
# Idempotent: a complete root (marker file present, same package list) is reused.
set -euo pipefail

CACHE="${CLUSTERFORGE_CACHE:-/var/cache/clusterforge}"
DEST="$CACHE/trixie-slurm"
MIRROR="deb http://deb.debian.org/debian trixie main"
# Keep in sync with harness.py (TRIXIE_MARKER) and apt-packages.txt.
PACKAGES="slurmctld,slurm-client,munge,slurmdbd,mariadb-server,slurmrestd,slurm-wlm-jwt-plugin"
MARKER=".clusterforge-complete"

if [ -f "$DEST/$MARKER" ] && [ "$(head -n1 "$DEST/$MARKER")" = "$PACKAGES" ]; then
    echo "trixie root already built: $DEST ($(sed -n 2p "$DEST/$MARKER"))"
    exit 0
fi

[ "$(id -u)" = 0 ] || { echo "must run as root (mmdebstrap root mode, chroot)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "mmdebstrap missing: apt-get install mmdebstrap" >&2; exit 1; }

# A test that was SIGKILLed can leave /proc, /dev, ... bind-mounted inside the
# root; deleting it then would delete the host's /dev. Refuse instead.
if grep -q " $CACHE/" /proc/self/mounts; then
    echo "something is still mounted under $CACHE; unmount it first:" >&2
    grep " $CACHE/" /proc/self/mounts >&2
    exit 1
fi

mkdir -p "$CACHE"
TMP="$(mktemp -d "$CACHE/.trixie-slurm.XXXXXX")"
trap 'rm -rf --one-file-system "$TMP"' EXIT
rmdir "$TMP"   # mmdebstrap wants to create the target itself

start=$(date +%s)
# minbase + the daemons; mmdebstrap's policy-rc.d keeps postinsts from starting
# anything. The host's hostname is copied in, which is what slurmctld compares
# SlurmctldHost against, so leave it.
mmdebstrap --variant=minbase --include="$PACKAGES" trixie "$TMP" "$MIRROR"
version="$(chroot "$TMP" dpkg-query -W -f='${Version}' slurmctld)"
printf '%s\nslurmctld %s\n' "$PACKAGES" "$version" > "$TMP/$MARKER"

rm -rf --one-file-system "$DEST"
mv "$TMP" "$DEST"
trap - EXIT
echo "built $DEST (slurmctld $version) in $(( $(date +%s) - start )) s"
