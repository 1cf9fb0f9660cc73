#!/usr/bin/env bash
# Grows the running test cluster to every compute machine of the inventory (CLUSTERFORGE_INVENTORY) by cloning a
# deployed compute machine, outside Vagrant: seconds a machine where `vagrant up` of dozens takes hours.
#   bash testbed/grow.sh [SOURCE]        SOURCE: a compute machine that has been deployed (default gpu01)
# The source is stopped for a moment and copied once to a seed container that never runs (cf-seed); each missing
# machine is an overlay snapshot of the seed (only what it changes takes space), with its own name, address and
# MAC. A clone comes up with the source's packages and files, and the next deploy makes it a node of the cluster.
# testbed/down.sh removes the clones first, then the seed, then the rest.
source "$(dirname "$0")/lib.sh"
cd "$REPO"
source_machine=${1:-gpu01}
inventory=${CLUSTERFORGE_INVENTORY:-inventories/vagrant.py}
src=cf-$source_machine seed=cf-seed lxcpath=$(lxc-config lxc.lxcpath)
lxc-info -n "$src" >/dev/null 2>&1 || { log "no machine $source_machine to clone: bash testbed/up.sh first"; exit 1; }
source_address=$(sed -n 's|^lxc.net.0.ipv4.address *= *\([0-9.]*\)/.*|\1|p' "$lxcpath/$src/config" | tail -1)

# The compute machines the inventory lists and no container holds yet: "name address" lines.
missing=$(.venv/bin/clusterforge hosts --json "$inventory" | python3 -c '
import json, subprocess, sys
listing = json.load(sys.stdin)
if listing["schema"] != 1:
    sys.exit("clusterforge hosts --json gave schema %s; this script reads 1" % listing["schema"])
for machine in listing["hosts"]:
    if "compute" in machine["groups"] and subprocess.run(
            ["lxc-info", "-n", "cf-" + machine["name"]], capture_output=True).returncode != 0:
        print(machine["name"], machine["address"])')
[ -n "$missing" ] || { log "every compute machine of $inventory is up"; exit 0; }

if ! lxc-info -n "$seed" >/dev/null 2>&1; then
  log "seed: a copy of $source_machine, taken while it is stopped"
  lxc-stop -n "$src"
  lxc-copy -n "$src" -N "$seed" -K -M
  lxc-start -n "$src"
fi

# Each machine's systemd holds a few inotify instances, all counted against root: at the kernel's default of 128
# per user, machines beyond about twenty find none left and their init exits at once. down.sh puts it back.
instances=$(sysctl -n fs.inotify.max_user_instances)
if [ "$instances" -lt 1024 ]; then
  [ -f "$TB_STATE/inotify-instances" ] || echo "$instances" > "$TB_STATE/inotify-instances"
  log "fs.inotify.max_user_instances $instances -> 1024, for dozens of machines"
  sysctl -q -w fs.inotify.max_user_instances=1024
fi

while read -r name address; do
  log "clone $name ($address)"
  lxc-copy -s -n "$seed" -N "cf-$name" -K < /dev/null   # the loop's own input is the list of machines
  config=$lxcpath/cf-$name/config
  # Vagrant's lines come last in the config and win: the host name and the address are theirs.
  sed -i -e "s|^lxc.uts.name *= *.*|lxc.uts.name=$name|" \
    -e "s|^lxc.net.0.ipv4.address *= *$source_address/|lxc.net.0.ipv4.address=$address/|" "$config"
  upper=$(sed -n 's|^lxc.rootfs.path *= *overlay:[^:]*:||p' "$config")
  mkdir -p "$upper/etc"
  echo "$name" > "$upper/etc/hostname"
  # Its own machine id, as a new machine would have (journald and DHCP clients key on it).
  python3 -c 'import uuid; print(uuid.uuid4().hex)' > "$upper/etc/machine-id"
  lxc-start -n "cf-$name" < /dev/null
done <<< "$missing"

key=$TB_STATE/id_ed25519
while read -r name address; do
  for _ in $(seq 300); do
    ssh -n -q -i "$key" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
      -o ConnectTimeout=2 "vagrant@$address" sudo -n true 2>/dev/null && continue 2
    sleep 1
  done
  log "clone $name did not answer on $address within 300 s"; exit 1
done <<< "$missing"
log "grown: $(wc -l <<< "$missing") machines cloned from $source_machine"
