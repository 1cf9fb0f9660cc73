#!/usr/bin/env bash
# Installs everything the tests need on a Debian 12 machine (as root, or with sudo) and runs them:
# Debian's Slurm 22.05 and munge on this host, a Debian 13 root with Slurm 24.11 (cached), a virtualenv with the
# project, then pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
missing=""
for package in $(cat tests/realslurm/apt-packages.txt); do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing="$missing $package"
done
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
bash scripts/setup-venv.sh
$SUDO bash tests/realslurm/build-trixie-root.sh
# Tests that need real daemons fail instead of skipping when something they need is missing.
export CLUSTERFORGE_REQUIRE_REALSLURM=1
exec .venv/bin/pytest "$@"
