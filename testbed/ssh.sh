#!/usr/bin/env bash
# A command (or a root shell) on a machine of the test cluster, as root through sudo: root may not log in over SSH,
# so this logs in as vagrant, who has sudo without a password.   bash testbed/ssh.sh ctl sinfo
source "$(dirname "$0")/lib.sh"
name=${1:?usage: testbed/ssh.sh HOST [COMMAND...]}; shift
address=$("$REPO/.venv/bin/clusterforge" hosts --json "${CLUSTERFORGE_INVENTORY:-$REPO/inventories/vagrant.py}" |
  python3 -c 'import json, sys
listing = json.load(sys.stdin)
if listing["schema"] != 1:
    sys.exit("clusterforge hosts --json gave schema %s; this script reads 1" % listing["schema"])
print(next(m["address"] for m in listing["hosts"] if m["name"] == sys.argv[1]))' "$name")
options=(-i "$TB_STATE/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR)
[ $# -gt 0 ] || exec ssh -t "${options[@]}" "vagrant@$address" sudo -i
# The words given are one command for sh, as ssh would have handed them to root's shell.
command=$(python3 -c 'import shlex, sys; print(shlex.quote(sys.argv[1]))' "$*")
exec ssh "${options[@]}" "vagrant@$address" "sudo -n sh -c $command"
