#!/usr/bin/env bash
# Installs everything the tests need on a Debian 12 machine (as root, or with sudo) and runs them:
# Debian's Slurm 22.05 and munge on this host, a Debian 13 root with Slurm 24.11 (cached), a virtualenv with the
# project, LXC and Vagrant for the test cluster, then pytest, which also brings the Vagrant test cluster up (Debian
# 12, then 13), deploys to it and tears it down. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
# Always install: apt also upgrades what is too old (debian-archive-keyring must know Debian 13's keys).
# policy-rc.d keeps package scripts from starting system daemons the tests do not use.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod +x "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $(cat tests/realslurm/apt-packages.txt tests/fabric_import/apt-packages.txt testbed/apt-packages.txt) >/dev/null
[ "$(cat "$policy" 2>/dev/null)" != "$(printf '#!/bin/sh\nexit 101')" ] || $SUDO rm -f "$policy"
bash scripts/setup-venv.sh
$SUDO bash tests/realslurm/build-trixie-root.sh
# Tests that need real daemons fail instead of skipping when something they need is missing.
export CLUSTERFORGE_REQUIRE_REALSLURM=1 CLUSTERFORGE_E2E=1
# The e2e fixture tears its cluster down; this also covers pytest being killed.
trap '$SUDO bash testbed/down.sh >/dev/null 2>&1 || true' EXIT
$SUDO env PATH="$PATH" .venv/bin/pytest "$@"
