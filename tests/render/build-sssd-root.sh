#!/bin/bash
# Build (once) a minimal Debian root holding that release's SSSD (sssd-ldap, sssd-tools), so tests/render/test_sssd.py
# can ask SSSD's own `sssctl config-check` about the sssd.conf clusterforge renders, via chroot, without installing
# SSSD on this host or touching its NSS/PAM. Nothing in the root is started. Idempotent: a complete root is reused.
# Usage: build-sssd-root.sh bookworm|trixie   (forky has no SSSD: see src/clusterforge/distributions.py)
set -euo pipefail

DIST="${1:-}"
case "$DIST" in
    bookworm|trixie) ;;
    *) echo "usage: $0 bookworm|trixie" >&2; exit 2 ;;
esac
PACKAGES="sssd-ldap,sssd-tools,libnss-sss,libpam-sss"
CACHE="${CLUSTERFORGE_CACHE:-/var/cache/clusterforge}"
DEST="$CACHE/sssd-$DIST"
MARKER=".clusterforge-complete"

if [ -f "$DEST/$MARKER" ] && [ "$(head -n1 "$DEST/$MARKER")" = "$PACKAGES" ]; then
    echo "$DIST root already built: $DEST ($(sed -n 2p "$DEST/$MARKER"))"
    exit 0
fi
[ "$(id -u)" = 0 ] || { echo "must run as root (mmdebstrap root mode, chroot)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "mmdebstrap missing: apt-get install mmdebstrap" >&2; exit 1; }

mkdir -p "$CACHE"
TMP="$(mktemp -d "$CACHE/.sssd-$DIST.XXXXXX")"
trap 'rm -rf --one-file-system "$TMP"' EXIT
rmdir "$TMP"
mmdebstrap --variant=minbase --include="$PACKAGES" "$DIST" "$TMP" "deb http://deb.debian.org/debian $DIST main"
printf '%s\nsssd-common %s\n' "$PACKAGES" "$(chroot "$TMP" dpkg-query -W -f='${Version}' sssd-common)" \
    > "$TMP/$MARKER"
rm -rf --one-file-system "$DEST"
mv "$TMP" "$DEST"
trap - EXIT
echo "built $DEST"
