#!/usr/bin/env bash
# Prints the exports a shell needs to run the deploy against the test cluster by hand:
#   eval "$(bash testbed/env.sh)"; .venv/bin/pyinfra -y inventories/vagrant.py deploy/cluster.py
source "$(dirname "$0")/lib.sh"
[ -f "$TB_STATE/vault-token" ] || { echo "the test cluster is not up: bash testbed/up.sh" >&2; exit 1; }
echo "export VAULT_ADDR=$TB_VAULT_ADDR VAULT_TOKEN=$(cat "$TB_STATE/vault-token") CLUSTERFORGE_TESTBED_DIST=$TB_DIST"
[ -z "${CLUSTERFORGE_ARTIFACTS:-}" ] || echo "export CLUSTERFORGE_ARTIFACTS=$CLUSTERFORGE_ARTIFACTS"
