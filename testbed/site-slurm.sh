#!/usr/bin/env bash
# A site's repository of Slurm packages for the test cluster, as a site that builds its own patch release would
# publish it: Debian's own Slurm packages of VERSION, the ones apt-cacher-ng already holds, under the new version
# VERSION+site1. Their files are Debian's, byte for byte; only the version (and the exact-version dependencies
# between them) changes. It stands in for a patch release, which this machine cannot download: the deploy moves
# every host to it and restarts the daemons, as for a real one.
#   Usage: testbed/site-slurm.sh VERSION [DIR]   (default $TB_ACNG_WWW/clusterforge-site, which apt-cacher-ng
#   serves to the machines at http://10.77.0.1:3142/clusterforge-site/ (testbed/up.sh's LocalDirs); prints the new
#   version. The repository is flat and unsigned: the machines name it [trusted=yes], on the private test network.
source "$(dirname "$0")/lib.sh"

VERSION=${1:?usage: testbed/site-slurm.sh VERSION [DIR]}
NEW=$VERSION+site1
OUT=${2:-$TB_ACNG_WWW/clusterforge-site}
POOL=$TB_CACHE/apt-cacher-ng/debrep/pool/main/s/slurm-wlm
for tool in dpkg-deb apt-ftparchive; do
  command -v "$tool" >/dev/null || { log "site-slurm.sh needs $tool"; exit 1; }
done
mapfile -t debs < <(find "$POOL" -maxdepth 1 -name "*_${VERSION}_*.deb" | sort)
[ ${#debs[@]} -gt 0 ] || { log "no Slurm package of $VERSION in $POOL: deploy the test cluster first"; exit 1; }

mkdir -p "$OUT"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
escaped=$(printf '%s' "$VERSION" | sed 's/\./\\./g')  # a basic regular expression: '+' is itself
for deb in "${debs[@]}"; do
  name=$(basename "$deb" | cut -d_ -f1)
  arch=$(basename "$deb" .deb | cut -d_ -f3)
  target=$OUT/${name}_${NEW}_${arch}.deb
  [ -f "$target" ] && continue
  root=$STAGE/$name
  dpkg-deb -R "$deb" "$root"
  # The version, and every "(= VERSION)" between the packages of this build.
  sed -i -e "s/^Version: ${escaped}\$/Version: ${NEW}/" -e "s/(= ${escaped})/(= ${NEW})/g" "$root/DEBIAN/control"
  dpkg-deb --root-owner-group -Zgzip -z1 -b "$root" "$target.new" >/dev/null
  mv -f "$target.new" "$target"
  rm -rf "$root"
done
(cd "$OUT" && rm -f Release && apt-ftparchive packages . > Packages && gzip -9fk Packages \
  && apt-ftparchive release . > "$STAGE/Release" && mv "$STAGE/Release" Release)
echo "$NEW"
