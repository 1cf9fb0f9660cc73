#!/usr/bin/env bash
# Brings the local test cluster up: host-side services first, then the machines of the inventory.
#   - bridge cfbr0 (10.77.0.1/24), private: nothing is routed or NATed out, ip_forward is left as it is; its MAC
#     is set (lib.sh's TB_BRIDGE_MAC), so no machine coming or going changes it;
#   - apt-cacher-ng on 10.77.0.1:3142, the machines' only way to Debian's mirror (the inventory's apt proxy), and
#     the server of the stand-ins of NVIDIA's packages (testbed/stack-repo.sh) at /clusterforge-stack/;
#   - an SSH key for root on the machines, one for each person of the inventory, and an OpenBao dev server on
#     127.0.0.1:8210 holding the cluster's munge key, database password and, for auth/slurm, slurm.key (made with
#     `clusterforge secrets init`);
#   - $TB_STATE/home, root's and 0755, which every lxc machine mounts at /home (one home for all, as NFS gives);
#   - the box (testbed/build-box.sh) and `vagrant up`.
# Idempotent: re-running starts only what is missing. testbed/down.sh removes all of it.
source "$(dirname "$0")/lib.sh"
cd "$REPO"
mkdir -p "$TB_STATE" "$TB_CACHE"
install -d -m 0755 -o root -g root "$TB_HOME"   # before `vagrant up`: the machines bind-mount it at /home
[ -x .venv/bin/clusterforge ] || bash scripts/setup-venv.sh

need=()
for tool in lxc-start vagrant apt-cacher-ng mmdebstrap ip nfs-ls apt-ftparchive gpg; do command -v "$tool" >/dev/null || need+=("$tool"); done
if [ ${#need[@]} -gt 0 ] || ! vagrant plugin list 2>/dev/null | grep vagrant-lxc >/dev/null; then
  log "installing the testbed's Debian packages (missing: ${need[*]:-vagrant-lxc})"
  apt_install $(cat "$REPO/testbed/apt-packages.txt")
fi

if ! ip link show "$TB_BRIDGE" >/dev/null 2>&1; then
  log "bridge $TB_BRIDGE $TB_HOST_IP/$TB_PREFIX"
  ip link add "$TB_BRIDGE" address "$TB_BRIDGE_MAC" type bridge
  ip addr add "$TB_HOST_IP/$TB_PREFIX" dev "$TB_BRIDGE"
fi
# A bridge made before its MAC was set (lib.sh's TB_BRIDGE_MAC) gets it, once.
[ "$(cat "/sys/class/net/$TB_BRIDGE/address")" = "$TB_BRIDGE_MAC" ] || ip link set "$TB_BRIDGE" address "$TB_BRIDGE_MAC"
ip link set "$TB_BRIDGE" up

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

bash testbed/stack-repo.sh "$TB_STACK_REPO" >/dev/null   # quick, and a no-op where nothing changed

if ! running "$TB_STATE/acng.pid"; then
  log "apt-cacher-ng on $TB_HOST_IP:$TB_PROXY_PORT"
  conf=$TB_STATE/acng-conf
  rm -rf "$conf"; cp -a /etc/apt-cacher-ng "$conf"
  echo 'http://deb.debian.org/debian/' > "$conf/backends_debian"   # its default mirror is unreachable here
  # apt-cacher-ng 3.7 fetches a "volatile" index file (InRelease) from the mirror again for every request, and
  # each new fetch first moves the cached file aside to <file>.<unix seconds>: two machines asking within the same
  # second collide on that name ("Failure to move file .../InRelease ... File exists"), and the request fails or
  # hangs. Served as a "solid" file, InRelease is fetched once and shared by every machine asking for it; it is
  # dropped from the cache here, so each test cluster reads the mirror's current one once.
  printf 'SPfilePatternEx: (^|.*/)dists/[^/]+/(InRelease|Release|Release\\.gpg)$\n' >> "$conf/acng.conf"
  stack_repo_acng_conf "$TB_HOST_IP" "$TB_PROXY_PORT" >> "$conf/acng.conf"
  find "$TB_CACHE/apt-cacher-ng" -path '*/dists/*' \( -name 'InRelease*' -o -name 'Release*' \) -delete 2>/dev/null || true
  mkdir -p "$TB_CACHE/apt-cacher-ng" "$TB_STATE/acng-log" "$TB_STATE/acng-run"
  (close_inherited_fds; exec nohup setsid apt-cacher-ng -c "$conf" ForeGround=1 BindAddress="$TB_HOST_IP 127.0.0.1" Port=$TB_PROXY_PORT \
    CacheDir="$TB_CACHE/apt-cacher-ng" LogDir="$TB_STATE/acng-log" SocketPath="$TB_STATE/acng-run/socket" \
    PidFile="$TB_STATE/acng-run/pid") > "$TB_STATE/acng.log" 2>&1 < /dev/null & echo $! > "$TB_STATE/acng.pid"
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$TB_PROXY_PORT") 2>/dev/null && break; sleep 0.2; done
  running "$TB_STATE/acng.pid" || { log "apt-cacher-ng did not start:"; tail -5 "$TB_STATE/acng.log" >&2; exit 1; }
fi

[ -f "$TB_STATE/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C clusterforge-testbed -f "$TB_STATE/id_ed25519"
# Each person of the inventory logs in with a key of their own, made here once and never committed: the inventory
# reads the public half ($TB_STATE/people/<name>.pub), the tests log in with the private one.
install -d -m 0700 "$TB_STATE/people"
people=$(.venv/bin/python -c 'import sys; from clusterforge.loader import load_cluster
c = load_cluster(sys.argv[1]); print(" ".join(p.name for p in (c.identity.people if c.identity else ())))' \
  "${CLUSTERFORGE_INVENTORY:-inventories/vagrant.py}")
for person in $people; do
  [ -f "$TB_STATE/people/$person" ] ||
    ssh-keygen -q -t ed25519 -N '' -C "$person@clusterforge-testbed" -f "$TB_STATE/people/$person"
done

if ! running "$TB_STATE/bao.pid"; then
  log "OpenBao dev server on $TB_VAULT_ADDR"
  [ -f "$TB_STATE/vault-token" ] || (umask 077; python3 -c 'import secrets; print(secrets.token_hex(16))' > "$TB_STATE/vault-token")
  # The dev server keeps everything in memory; its root token is the testbed's own, in $TB_STATE/vault-token.
  (close_inherited_fds; HOME=$TB_STATE exec nohup setsid "$REPO/.venv/bin/bao" server -dev \
    -dev-root-token-id="$(cat "$TB_STATE/vault-token")" -dev-listen-address="${TB_VAULT_ADDR#http://}") \
    > "$TB_STATE/bao.log" 2>&1 < /dev/null & echo $! > "$TB_STATE/bao.pid"
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/${TB_VAULT_ADDR##*:}") 2>/dev/null && break; sleep 0.2; done
  running "$TB_STATE/bao.pid" || { log "OpenBao did not start:"; tail -5 "$TB_STATE/bao.log" >&2; exit 1; }
fi
export VAULT_ADDR=$TB_VAULT_ADDR VAULT_TOKEN; VAULT_TOKEN=$(cat "$TB_STATE/vault-token")
.venv/bin/clusterforge secrets init "${CLUSTERFORGE_INVENTORY:-inventories/vagrant.py}" >/dev/null

# The BMCs of the inventory's machines (Nodes(bmc=...)): one ipmi_sim each (testbed/bmc/sims.sh) on its address,
# added to the bridge, whose chassis power drives that machine's container; their one account's password made here
# once and kept in OpenBao where the inventory's Bmc(credentials=...) names it, for the deploy to give the repair loop.
bmcs=$(.venv/bin/python -c 'import sys; from clusterforge.loader import load_cluster; from clusterforge.model import resolve
c = resolve(load_cluster(sys.argv[1]))
for n in c.nodes:
    if n.bmc is not None:
        print(n.name, n.bmc.address, n.bmc.spec.port or 623, c.vault.kv_mount, n.bmc.spec.credentials.format(cluster=c.name))' \
  "${CLUSTERFORGE_INVENTORY:-inventories/vagrant.py}")
if [ -n "$bmcs" ]; then
  [ -f "$TB_BMC_PASSWORD" ] || (umask 077; python3 -c 'import secrets; print(secrets.token_hex(8), end="")' > "$TB_BMC_PASSWORD")
  while read -r _ address _; do
    ip -o addr show dev "$TB_BRIDGE" | grep -F " $address/" >/dev/null || ip addr add "$address/$TB_PREFIX" dev "$TB_BRIDGE"
  done <<< "$bmcs"
  while read -r mount path; do
    .venv/bin/bao kv put -mount="$mount" "$path" username="$TB_BMC_USER" password=@"$TB_BMC_PASSWORD" >/dev/null
  done < <(awk '{print $4, $5}' <<< "$bmcs" | sort -u)
  mapfile -t sims < <(awk '{print $1 ":" $3 ":lxc:cf-" $1 ":" $2}' <<< "$bmcs")
  log "BMCs: ${sims[*]}"
  BMC_PASSWORD=$(cat "$TB_BMC_PASSWORD") bash testbed/bmc/sims.sh up "$TB_BMC_DIR" "$TB_BMC_USER" "${sims[@]}"
fi

CLUSTERFORGE_BOX=$(CLUSTERFORGE_APT_PROXY="http://127.0.0.1:$TB_PROXY_PORT" bash testbed/build-box.sh "$TB_DIST")
export CLUSTERFORGE_BOX
log "vagrant up ($TB_DIST, box $CLUSTERFORGE_BOX)"
vagrant_up "$@"
