#!/usr/bin/env bash
# Builds the test cluster's local apt repository of STAND-IN packages with the names of NVIDIA's stack, two versions
# of each, so that a deploy can be shown to install exactly the pinned versions, hold them, and move the driver from
# one version to the other. Testbed only: nothing here is NVIDIA software, every package's Description says it is a
# stand-in, and no path the product installs holds it.   Usage: testbed/stack-repo.sh [DIR]   (default
# $TB_STACK_REPO, which testbed/up.sh has apt-cacher-ng serve at http://10.77.0.1:3142/$TB_STACK_URLPATH/)
#
# The repository is flat, as NVIDIA's own are:  deb [signed-by=KEYRING] http://10.77.0.1:3142/clusterforge-stack/ /
# signed (InRelease, Release.gpg) by testbed/stack-repo/test-signing-key.asc, a TEST-ONLY key whose private half
# is in git; its public half is testbed/stack-repo/keyring.gpg. Signing uses a GNUPGHOME of its own, removed after.
# Idempotent: the packages are reproducible (SOURCE_DATE_EPOCH), so a re-run that builds the same packages leaves
# the repository as it is, signature included; a changed package replaces what changed and signs the index again.
#
# What the stand-ins do (control files under /run/clusterforge-testbed, the testbed's tmpfs, gone at a reboot):
#   nvidia-driver-bin   /usr/lib/clusterforge-testbed/driver-version: the driver's version (550.163.01, the package
#                       version less its Debian revision, as nvidia-smi and /sys/module/nvidia/version say it).
#                       /run/clusterforge-testbed/kmod-version plays the LOADED kernel module's version: written by
#                       the postinst only where it does not exist (a first install "loads" the module; an upgrade
#                       leaves the old one loaded), and at boot by clusterforge-testbed-kmod.service (static: the
#                       package's own link in multi-user.target.wants starts it) from driver-version. So after a
#                       driver move kmod-version still says the old version until the machine reboots.
#   nvidia-fabricmanager-<branch>, nvidia-persistenced   units nvidia-fabricmanager.service and
#                       nvidia-persistenced.service, Type=forking as NVIDIA's: the daemon forks a `sleep infinity`
#                       and writes its pid file; it fails at once (`systemctl start` fails) while
#                       /run/clusterforge-testbed/fabricmanager-fails, resp. persistenced-fails, exists.
#   datacenter-gpu-manager (DCGM 3), datacenter-gpu-manager-4-core (DCGM 4: Conflicts and Replaces it, as NVIDIA's
#                       ships the same files)   unit nvidia-dcgm.service, Type=simple as NVIDIA's (nv-hostengine -n);
#                       fails at once while /run/clusterforge-testbed/dcgm-fails exists.
#                       datacenter-gpu-manager-4-proprietary ships nothing and depends on -4-core of its version.
#   datacenter-gpu-manager-exporter   unit nvidia-dcgm-exporter.service as NVIDIA's (Wants and After nvidia-dcgm,
#                       output appended to /var/log/dcgm-exporter.log, Restart=on-abort), Type=simple; depends on
#                       datacenter-gpu-manager-4-core. /usr/bin/dcgm-exporter, in python3: prints its version for
#                       --version; else serves Prometheus text at /metrics on DCGM_EXPORTER_LISTEN ([host]:port,
#                       default :9400, all addresses), a DCGM_FI_DEV_GPU_TEMP line of 40 for each /dev/nvidia<N>
#                       and clusterforge_testbed_standin{remote=<DCGM_REMOTE_HOSTENGINE_INFO>} 1, until SIGTERM
#                       (exit 0). It fails at once while /run/clusterforge-testbed/dcgm-exporter-fails exists, and
#                       where DCGM_REMOTE_HOSTENGINE_INFO is not set: the real one would then embed a host engine of
#                       its own beside nv-hostengine, so the deploy's drop-in must point it at nv-hostengine.
#   libnvidia-container-tools   /usr/bin/nvidia-container-cli: prints its version for --version, else does nothing
#                       and exits 0 (Enroot's NVIDIA hook then adds no GPU to a container); nvidia-container-toolkit
#                       ships /usr/bin/nvidia-ctk alike. libnvidia-container1 ships nothing.
# Units are shipped disabled, bar the kmod one, and no maintainer script starts or enables anything: the deploy
# enables and starts the daemons itself. The stand-in daemons (the exporter too) and the driver's postinst take
# CLUSTERFORGE_TESTBED_ROOT, a prefix to their paths, for the tests alone (nothing on the machines sets it).
source "$(dirname "$0")/lib.sh"

DRIVER_BRANCH=550
DRIVER_VERSIONS=(550.163.01-1 550.172.05-1)
DCGM_VERSIONS=(1:3.3.8 1:3.3.9)
DCGM4_VERSIONS=(1:4.5.2-1 1:4.5.3-1)
DCGM_EXPORTER_VERSIONS=(4.8.1-1 4.8.2-1)
CONTAINER_VERSIONS=(1.17.3-1 1.17.4-1)

OUT=${1:-$TB_STACK_REPO}
for tool in dpkg-deb apt-ftparchive gpg gpgv; do
  command -v "$tool" >/dev/null || { log "stack-repo.sh needs $tool (testbed/apt-packages.txt: apt-utils, gnupg)"; exit 1; }
done
KEYDIR=$REPO/testbed/stack-repo
ARCH=$(dpkg --print-architecture)
# 2024-01-01: the packages' file times and the Release date (the test key was made then too).
export SOURCE_DATE_EPOCH=1704067200
RELEASE_DATE="Mon, 01 Jan 2024 00:00:00 UTC"
CONTROL=/run/clusterforge-testbed
UNITS=usr/lib/systemd/system

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STAGE=$(mktemp -d "$OUT/../.stack-repo.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
umask 022

# put ROOT PATH MODE < content: a file of a package being built.
put() { mkdir -p "$(dirname "$1/$2")"; cat > "$1/$2"; chmod "$3" "$1/$2"; }

# deb NAME VERSION SUMMARY ROOT [FIELD: VALUE]...: ROOT (with DEBIAN/ scripts, if any) as NAME_VERSION.deb.
deb() {
  local name=$1 version=$2 summary=$3 root=$4; shift 4
  mkdir -p "$root/DEBIAN"
  {
    printf 'Package: %s\nVersion: %s\nArchitecture: %s\n' "$name" "$version" "$ARCH"
    printf 'Maintainer: clusterforge testbed <testbed@clusterforge.invalid>\nSection: misc\nPriority: optional\n'
    local field; for field in "$@"; do printf '%s\n' "$field"; done
    printf 'Description: %s (clusterforge testbed stand-in)\n' "$summary"
    printf ' A clusterforge testbed stand-in that only bears the name and version of the\n'
    printf ' NVIDIA package, for the local test cluster. It contains no NVIDIA software.\n'
  } > "$root/DEBIAN/control"
  find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  dpkg-deb --root-owner-group -Zgzip -b "$root" "$STAGE/${name}_${version#*:}_$ARCH.deb" >/dev/null
  rm -rf "$root"
}

# daemon NAME VERSION FAILFILE [PIDFILE]: a stand-in daemon. With a pid file it forks (Type=forking): `systemctl
# start` fails when it does. Without, it runs in the foreground (Type=simple).
daemon() {
  cat <<EOF
#!/bin/sh
# clusterforge testbed stand-in for NVIDIA's $1 $2: no NVIDIA software. Fails at once while
# $CONTROL/$3 exists, else runs until stopped.
root=\${CLUSTERFORGE_TESTBED_ROOT:-}
case " \$* " in *" --version "*|*" -v "*) echo "$1 $2 (clusterforge testbed stand-in)"; exit 0;; esac
if [ -e "\$root$CONTROL/$3" ]; then
  echo "$1: failing, as \$root$CONTROL/$3 asks (clusterforge testbed stand-in)" >&2
  exit 1
fi
EOF
  if [ -n "${4:-}" ]; then
    cat <<EOF
mkdir -p "\$root${4%/*}"
sleep infinity < /dev/null > /dev/null 2>&1 &
echo \$! > "\$root$4"
EOF
  else
    echo 'exec sleep infinity'
  fi
}

# unit DESCRIPTION EXEC [PIDFILE]
unit() {
  printf '[Unit]\nDescription=%s (clusterforge testbed stand-in)\nAfter=clusterforge-testbed-kmod.service\n\n' "$1"
  if [ -n "${3:-}" ]; then printf '[Service]\nType=forking\nPIDFile=%s\n' "$3"; else printf '[Service]\nType=simple\n'; fi
  printf 'ExecStart=%s\nTimeoutStartSec=30\n\n[Install]\nWantedBy=multi-user.target\n' "$2"
}

# hostengine ROOT UPSTREAM: DCGM's nv-hostengine and its unit, the same in DCGM 3's package and DCGM 4's core.
hostengine() {
  daemon nv-hostengine "$2" dcgm-fails | put "$1" usr/bin/nv-hostengine 0755
  unit "NVIDIA DCGM service" "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm" \
    | put "$1" "$UNITS/nvidia-dcgm.service" 0644
}

# exporter UPSTREAM: the stand-in dcgm-exporter, python3 of the standard library alone (python3 is on every test
# machine).
exporter() {
  cat <<EOF
#!/usr/bin/python3
# clusterforge testbed stand-in for NVIDIA's dcgm-exporter $1: no NVIDIA software. Fails at once while
# $CONTROL/dcgm-exporter-fails exists or DCGM_REMOTE_HOSTENGINE_INFO is not set, else serves
# /metrics on DCGM_EXPORTER_LISTEN until SIGTERM.

import os
import re
import signal
import socket
import socketserver
import sys
from http.server import BaseHTTPRequestHandler

VERSION = "$1"
CONTROL = "$CONTROL"
EOF
  cat <<'EOF'
ROOT = os.environ.get("CLUSTERFORGE_TESTBED_ROOT", "")
DEVICE = re.compile(r"nvidia([0-9]+)")


def say(message):
    print(f"dcgm-exporter: {message} (clusterforge testbed stand-in)", file=sys.stderr, flush=True)


def label(value):
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def metrics(remote):
    try:
        names = os.listdir(ROOT + "/dev")
    except OSError:
        names = []
    gpus = sorted((m.group(1) for m in map(DEVICE.fullmatch, names) if m), key=int)
    host = label(socket.gethostname())
    lines = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    lines += [f'DCGM_FI_DEV_GPU_TEMP{{gpu="{n}",UUID="GPU-standin-{n}",device="nvidia{n}",Hostname="{host}"}} 40'
              for n in gpus]
    lines += ["# HELP clusterforge_testbed_standin A clusterforge testbed stand-in for dcgm-exporter serves this.",
              "# TYPE clusterforge_testbed_standin gauge",
              f'clusterforge_testbed_standin{{remote="{label(remote)}",version="{VERSION}"}} 1']
    return ("\n".join(lines) + "\n").encode()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404)
            return
        body = metrics(self.server.remote)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def server_bind(self):
        if self.address_family == socket.AF_INET6:   # all addresses, IPv4's too
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def serve(listen, remote):
    host, colon, port = listen.rpartition(":")
    if not colon or not port.isdigit():
        say(f"DCGM_EXPORTER_LISTEN={listen!r} is not [host]:port")
        return 1
    host = host[1:-1] if host[:1] == "[" and host[-1:] == "]" else host
    families = [socket.AF_INET6, socket.AF_INET] if not host else [socket.AF_INET6 if ":" in host else socket.AF_INET]
    for family in families:
        Server.address_family = family
        try:
            server = Server((host or ("::" if family == socket.AF_INET6 else ""), int(port)), Handler)
            break
        except OSError as error:
            failed = error
    else:
        say(f"cannot listen on {listen}: {failed}")
        return 1
    server.remote = remote
    print(f"dcgm-exporter {VERSION}: serving /metrics on {listen}, DCGM's host engine at {remote} "
          "(clusterforge testbed stand-in)", flush=True)
    with server:
        server.serve_forever()
    return 0


def main(args):
    if "--version" in args or "-v" in args:
        print(f"DCGM Exporter version {VERSION} (clusterforge testbed stand-in)")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if os.path.exists(ROOT + CONTROL + "/dcgm-exporter-fails"):
        say(f"failing, as {ROOT}{CONTROL}/dcgm-exporter-fails asks")
        return 1
    remote = os.environ.get("DCGM_REMOTE_HOSTENGINE_INFO", "")
    if not remote:
        say("DCGM_REMOTE_HOSTENGINE_INFO is not set: the real exporter would embed a DCGM host engine of its own "
            "beside nv-hostengine (nvidia-dcgm.service); set it to nv-hostengine's address, e.g. localhost:5555")
        return 1
    return serve(os.environ.get("DCGM_EXPORTER_LISTEN", ":9400"), remote)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
EOF
}

build=$STAGE/.build
for version in "${DRIVER_VERSIONS[@]}"; do
  upstream=${version%-*}
  root=$build/cuda-drivers
  deb "cuda-drivers-$DRIVER_BRANCH" "$version" "NVIDIA driver metapackage, branch $DRIVER_BRANCH" "$root" \
    "Depends: nvidia-driver-bin (= $version)"

  root=$build/driver
  echo "$upstream" | put "$root" usr/lib/clusterforge-testbed/driver-version 0644
  put "$root" "$UNITS/clusterforge-testbed-kmod.service" 0644 <<EOF
[Unit]
Description=Loads the NVIDIA kernel module $upstream (clusterforge testbed stand-in: writes $CONTROL/kmod-version)
DefaultDependencies=no
After=local-fs.target
Before=nvidia-persistenced.service nvidia-fabricmanager.service nvidia-dcgm.service slurmd.service
ConditionPathExists=!$CONTROL/kmod-version

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'mkdir -p $CONTROL && cp /usr/lib/clusterforge-testbed/driver-version $CONTROL/kmod-version'
EOF
  mkdir -p "$root/$UNITS/multi-user.target.wants"
  ln -s ../clusterforge-testbed-kmod.service "$root/$UNITS/multi-user.target.wants/clusterforge-testbed-kmod.service"
  put "$root" DEBIAN/postinst 0755 <<EOF
#!/bin/sh
# clusterforge testbed stand-in: the first driver installed on a running machine is "loaded"; a later one only
# once the machine reboots ($CONTROL is a tmpfs; clusterforge-testbed-kmod.service writes it at boot).
set -e
root=\${CLUSTERFORGE_TESTBED_ROOT:-}
if [ "\$1" = configure ] && [ ! -e "\$root$CONTROL/kmod-version" ]; then
  mkdir -p "\$root$CONTROL"
  cp "\$root/usr/lib/clusterforge-testbed/driver-version" "\$root$CONTROL/kmod-version"
fi
EOF
  deb nvidia-driver-bin "$version" "NVIDIA driver support binaries, $upstream" "$root"

  root=$build/fabricmanager
  daemon nv-fabricmanager "$upstream" fabricmanager-fails /run/nvidia-fabricmanager/nv-fabricmanager.pid \
    | put "$root" usr/bin/nv-fabricmanager 0755
  unit "NVIDIA fabric manager service" "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg" \
    /run/nvidia-fabricmanager/nv-fabricmanager.pid | put "$root" "$UNITS/nvidia-fabricmanager.service" 0644
  deb "nvidia-fabricmanager-$DRIVER_BRANCH" "$version" "Fabric Manager for NVSwitch based systems, $upstream" "$root"

  root=$build/persistenced
  daemon nvidia-persistenced "$upstream" persistenced-fails /run/nvidia-persistenced/nvidia-persistenced.pid \
    | put "$root" usr/bin/nvidia-persistenced 0755
  unit "NVIDIA Persistence Daemon" "/usr/bin/nvidia-persistenced --user root" \
    /run/nvidia-persistenced/nvidia-persistenced.pid | put "$root" "$UNITS/nvidia-persistenced.service" 0644
  deb nvidia-persistenced "$version" "NVIDIA Persistence Daemon, $upstream" "$root"
done

for version in "${DCGM_VERSIONS[@]}"; do
  root=$build/dcgm
  hostengine "$root" "${version#*:}"
  deb datacenter-gpu-manager "$version" "NVIDIA Datacenter GPU Management tools ${version#*:}" "$root"
done

for version in "${DCGM4_VERSIONS[@]}"; do
  upstream=${version#*:} && upstream=${upstream%-*}
  root=$build/dcgm4
  hostengine "$root" "$upstream"
  deb datacenter-gpu-manager-4-core "$version" "NVIDIA Datacenter GPU Management tools $upstream (core)" "$root" \
    "Conflicts: datacenter-gpu-manager" "Replaces: datacenter-gpu-manager"
  deb datacenter-gpu-manager-4-proprietary "$version" \
    "NVIDIA Datacenter GPU Management tools $upstream (proprietary components)" "$build/dcgm4-proprietary" \
    "Depends: datacenter-gpu-manager-4-core (= $version)"
done

for version in "${DCGM_EXPORTER_VERSIONS[@]}"; do
  upstream=${version%-*}
  root=$build/exporter
  exporter "$upstream" | put "$root" usr/bin/dcgm-exporter 0755
  put "$root" etc/dcgm-exporter/default-counters.csv 0644 <<EOF
# clusterforge testbed stand-in for NVIDIA's dcgm-exporter $upstream counters: the stand-in serves only this one.
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
EOF
  put "$root" "$UNITS/nvidia-dcgm-exporter.service" 0644 <<EOF
[Unit]
Description=NVIDIA DCGM-exporter service (clusterforge testbed stand-in)
Wants=nvidia-dcgm.service
After=nvidia-dcgm.service

[Service]
User=root
PrivateTmp=false
StandardOutput=append:/var/log/dcgm-exporter.log
StandardError=append:/var/log/dcgm-exporter.log
ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv
Restart=on-abort

[Install]
WantedBy=multi-user.target
EOF
  deb datacenter-gpu-manager-exporter "$version" "NVIDIA DCGM exporter for Prometheus $upstream" "$root" \
    "Depends: datacenter-gpu-manager-4-core"
done

for version in "${CONTAINER_VERSIONS[@]}"; do
  upstream=${version%-*}
  deb libnvidia-container1 "$version" "NVIDIA container runtime library $upstream" "$build/lib"

  root=$build/tools
  put "$root" usr/bin/nvidia-container-cli 0755 <<EOF
#!/bin/sh
# clusterforge testbed stand-in for NVIDIA's nvidia-container-cli $upstream: does nothing and succeeds.
case " \$* " in *" --version "*) printf 'cli-version: $upstream\nlib-version: $upstream\n(clusterforge testbed stand-in)\n';; esac
exit 0
EOF
  deb libnvidia-container-tools "$version" "NVIDIA container runtime library (command-line tools) $upstream" "$root" \
    "Depends: libnvidia-container1 (>= $version)"

  root=$build/toolkit
  put "$root" usr/bin/nvidia-ctk 0755 <<EOF
#!/bin/sh
# clusterforge testbed stand-in for NVIDIA's nvidia-ctk $upstream: does nothing and succeeds.
case " \$* " in *" --version "*) echo "NVIDIA Container Toolkit CLI version $upstream (clusterforge testbed stand-in)";; esac
exit 0
EOF
  deb nvidia-container-toolkit "$version" "NVIDIA Container toolkit $upstream" "$root" \
    "Depends: libnvidia-container-tools (>= $version), libnvidia-container-tools (<< 2.0.0)"
done
rmdir "$build"

(cd "$STAGE" && apt-ftparchive packages .) > "$STAGE/Packages"

keyring=$KEYDIR/keyring.gpg
# Published beside the packages, as NVIDIA publishes its repository key: the test inventory pins its sha256.
cmp -s "$keyring" "$OUT/keyring.gpg" || cp "$keyring" "$OUT/keyring.gpg"
# The same packages, already signed by the committed key: nothing to do.
wanted=" Packages Packages.gz Release Release.gpg InRelease "
same=yes
for f in "$STAGE"/*.deb; do wanted+="${f##*/} "; cmp -s "$f" "$OUT/${f##*/}" || same=; done
for f in "$OUT"/*.deb; do case $wanted in *" ${f##*/} "*) ;; *) same=;; esac; done
if [ -n "$same" ] && cmp -s "$STAGE/Packages" "$OUT/Packages" \
   && gpgv --homedir "$STAGE" --keyring "$keyring" "$OUT/InRelease" >/dev/null 2>&1 \
   && gpgv --homedir "$STAGE" --keyring "$keyring" "$OUT/Release.gpg" "$OUT/Release" >/dev/null 2>&1; then
  echo "$OUT"; exit 0
fi

gzip -9n < "$STAGE/Packages" > "$STAGE/Packages.gz"
(cd "$STAGE" && apt-ftparchive \
  -o APT::FTPArchive::Release::Origin=clusterforge-testbed \
  -o APT::FTPArchive::Release::Label="clusterforge testbed stand-ins for NVIDIA's packages" \
  -o APT::FTPArchive::Release::Suite=testbed \
  -o APT::FTPArchive::Release::Date="$RELEASE_DATE" \
  -o APT::FTPArchive::Release::Description="clusterforge testbed stand-ins (TEST ONLY, no NVIDIA software)" \
  release .) > "$STAGE/Release.new"
mv "$STAGE/Release.new" "$STAGE/Release"

# A GNUPGHOME of its own, short: gpg-agent's socket path must fit in 108 bytes. The agent is stopped and the home
# removed after; neither keeps a caller's descriptors (a lock) open.
(
  close_inherited_fds
  GNUPGHOME=$(mktemp -d /tmp/cf-stack-gpg.XXXXXX); export GNUPGHOME
  trap 'gpgconf --kill all >/dev/null 2>&1; gpgconf --remove-socketdir >/dev/null 2>&1; rm -rf "$GNUPGHOME"' EXIT
  said=$(gpg --batch --import "$KEYDIR/test-signing-key.asc" 2>&1 \
    && gpg --batch --yes --digest-algo SHA512 --clearsign -o "$STAGE/InRelease" "$STAGE/Release" 2>&1 \
    && gpg --batch --yes --digest-algo SHA512 --detach-sign -o "$STAGE/Release.gpg" "$STAGE/Release" 2>&1) \
    || { log "signing the stand-in repository failed:"; printf '%s\n' "$said" >&2; exit 1; }
)

# Into place, packages first and InRelease last; the packages of an older build that this one no longer has go.
for f in "$STAGE"/*.deb; do cmp -s "$f" "$OUT/${f##*/}" || mv -f "$f" "$OUT/"; done
for f in Packages Packages.gz Release Release.gpg InRelease; do mv -f "$STAGE/$f" "$OUT/$f"; done
for f in "$OUT"/*.deb; do case $wanted in *" ${f##*/} "*) ;; *) rm -f "$f";; esac; done
echo "$OUT"
