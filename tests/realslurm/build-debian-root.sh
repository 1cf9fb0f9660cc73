#!/bin/bash
# Build (once) a Debian root holding that release's Slurm, so the real-Slurm tests can run a Slurm other than the
# host's on this Debian 12 host via chroot: trixie (Debian 13, Slurm 24.11) or forky (testing, Slurm 26.05). Or, as
# sssd-bookworm|sssd-trixie, a root holding that release's SSSD, so tests/render/test_sssd.py can ask SSSD's own
# `sssctl config-check` about the sssd.conf clusterforge renders without installing SSSD here (forky has none: see
# src/clusterforge/distributions.py). Or, as sshd-bookworm|sshd-trixie, a root holding that release's sshd and PAM
# (and pamtester), where tests/render/test_access_service.py runs a real sshd against the service hosts' rule.
# Nothing in a root is started.
# Idempotent: a complete root (marker file present, same package list) is reused.
# Usage: build-debian-root.sh trixie|forky|sssd-bookworm|sssd-trixie|sshd-bookworm|sshd-trixie
set -euo pipefail

APTOPT=()
DIST="${1:-}"
NAME="$DIST-slurm"   # the root's directory under the cache
PROBE=slurmctld      # the package whose version the marker and the last line name
case "$DIST" in
    # Keep in sync with harness.py (ROOTS, MARKER) and apt-packages.txt.
    trixie) PACKAGES="slurmctld,slurm-client,munge,slurmdbd,mariadb-server,slurmrestd,slurm-wlm-jwt-plugin" ;;
    # forky's daemons only Recommend munge, and its root runs slurmd too; python3 for the jobs that run the test
    # cluster's acceptance stand-ins (testbed/accept), standard library only.
    forky) PACKAGES="slurmctld,slurmd,slurm-client,munge,slurmdbd,mariadb-server,slurmrestd,slurm-wlm-jwt-plugin"
           PACKAGES="$PACKAGES,python3"
           # A testing suite's Release expires within a week; the mirror this runs against may hold an older one,
           # still signed, and the root is built once and cached.
           APTOPT=(--aptopt='Acquire::Check-Valid-Until "false"') ;;
    sssd-bookworm|sssd-trixie)
           NAME="$DIST"; DIST="${DIST#sssd-}"; PROBE=sssd-common
           PACKAGES="sssd-ldap,sssd-tools,libnss-sss,libpam-sss" ;;
    sshd-bookworm|sshd-trixie)
           NAME="$DIST"; DIST="${DIST#sshd-}"; PROBE=openssh-server
           PACKAGES="openssh-server,pamtester,libpam-sss,libnss-sss" ;;
    *) echo "usage: $0 trixie|forky|sssd-bookworm|sssd-trixie|sshd-bookworm|sshd-trixie" >&2; exit 2 ;;
esac
CACHE="${CLUSTERFORGE_CACHE:-/var/cache/clusterforge}"
DEST="$CACHE/$NAME"
MIRROR="deb http://deb.debian.org/debian $DIST main"
MARKER=".clusterforge-complete"

if [ -f "$DEST/$MARKER" ] && [ "$(head -n1 "$DEST/$MARKER")" = "$PACKAGES" ]; then
    echo "$DIST root already built: $DEST ($(sed -n 2p "$DEST/$MARKER"))"
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
TMP="$(mktemp -d "$CACHE/.$NAME.XXXXXX")"
trap 'rm -rf --one-file-system "$TMP"' EXIT
rmdir "$TMP"   # mmdebstrap wants to create the target itself

start=$(date +%s)
# minbase + the daemons; mmdebstrap's policy-rc.d keeps postinsts from starting
# anything. The host's hostname is copied in, which is what slurmctld compares
# SlurmctldHost against, so leave it.
mmdebstrap --variant=minbase "${APTOPT[@]}" --include="$PACKAGES" "$DIST" "$TMP" "$MIRROR"
version="$(chroot "$TMP" dpkg-query -W -f='${Version}' "$PROBE")"
printf '%s\n%s %s\n' "$PACKAGES" "$PROBE" "$version" > "$TMP/$MARKER"

rm -rf --one-file-system "$DEST"
mv "$TMP" "$DEST"
trap - EXIT
echo "built $DEST ($PROBE $version) in $(( $(date +%s) - start )) s"
