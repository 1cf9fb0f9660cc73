#!/usr/bin/env bash
# A command (or a shell) on a machine of the test cluster, as root:  bash testbed/ssh.sh ctl sinfo
source "$(dirname "$0")/lib.sh"
name=${1:?usage: testbed/ssh.sh HOST [COMMAND...]}; shift
address=$("$REPO/.venv/bin/clusterforge" hosts --json "${CLUSTERFORGE_INVENTORY:-$REPO/inventories/vagrant.py}" |
  python3 -c 'import json, sys; print(next(m["address"] for m in json.load(sys.stdin) if m["name"] == sys.argv[1]))' "$name")
exec ssh -i "$TB_STATE/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
  "root@$address" "$@"
