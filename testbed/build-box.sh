#!/usr/bin/env bash
# Builds the vagrant-lxc box of a bare Debian host (systemd, sshd refusing root, python3, a user vagrant with sudo;
# nothing of Slurm) and adds it to
# Vagrant as local/<dist>. No box can be downloaded here, so it is made from Debian's mirror with mmdebstrap and
# cached: rebuilt only when this script changes (the box's name carries a hash of this file, so a box built by an
# older version is never used).   Usage: testbed/build-box.sh bookworm|trixie|forky
source "$(dirname "$0")/lib.sh"
DIST=${1:-$TB_DIST}
case $DIST in bookworm|trixie|forky) ;; *) echo "usage: $0 bookworm|trixie|forky" >&2; exit 2;; esac
STAMP=$(sha256sum "$0" | cut -c1-12)
BOX=$TB_CACHE/boxes/$DIST-lxc-$STAMP.box
PROXY=${CLUSTERFORGE_APT_PROXY:-}

if [ ! -f "$BOX" ]; then
  log "building $BOX"
  WORK=$(mktemp -d /var/tmp/cf-box.XXXXXX); trap 'rm -rf "$WORK"' EXIT
  ROOT=$WORK/root
  SOURCES=("deb http://deb.debian.org/debian $DIST main" "deb http://deb.debian.org/debian $DIST-updates main"
           "deb http://deb.debian.org/debian-security $DIST-security main")
  APTOPT=()
  if [ "$DIST" = forky ]; then
    # Testing (Slurm 26.05) has no updates or security suite of its own, and its Release expires within a week: a
    # mirror or cache holding an older, still signed one would stop apt on every machine (a test cluster's choice,
    # written into the box; a site's own forky hosts keep apt's check).
    SOURCES=("deb http://deb.debian.org/debian $DIST main")
    APTOPT=(--aptopt='Acquire::Check-Valid-Until "false"')
  fi
  # sudo: Vagrant, the deploy and the tests log in as vagrant and run their commands through it.
  # libnss-myhostname: the machine resolves its own name (LXC sets it), so Vagrant's `hostname -f` check passes
  # and it leaves /etc/hosts and networkd alone. openssh-client: Vagrant's provisioners upload with scp, which
  # forky's openssh-server no longer pulls in.
  mmdebstrap --quiet --variant=minbase \
    --include=systemd,systemd-sysv,dbus,libpam-systemd,openssh-server,openssh-client,python3,iproute2,iputils-ping,ca-certificates,procps,netbase,less,sudo,libnss-myhostname \
    ${PROXY:+--aptopt="Acquire::http::Proxy \"$PROXY\""} "${APTOPT[@]}" \
    "$DIST" "$ROOT" "${SOURCES[@]}"
  rm -f "$ROOT/etc/apt/apt.conf.d/99mmdebstrap"          # mmdebstrap leaves its own --aptopt in the root
  [ "$DIST" != forky ] || echo 'Acquire::Check-Valid-Until "false";' > "$ROOT/etc/apt/apt.conf.d/10testbed-valid-until"
  rm -f "$ROOT"/etc/ssh/ssh_host_*                           # each host makes its own at first boot
  mkdir -p "$ROOT/etc/systemd/system/ssh.service.d" "$ROOT/etc/systemd/network"
  printf '[Service]\nExecStartPre=\nExecStartPre=/usr/bin/ssh-keygen -A\nExecStartPre=/usr/sbin/sshd -t\n' \
    > "$ROOT/etc/systemd/system/ssh.service.d/keygen.conf"
  # LXC sets the address; networkd only has to leave it alone and report the link online, or units that want
  # network-online.target (munge, slurmd) wait two minutes at boot.
  printf '[Match]\nName=eth0\n[Network]\nKeepConfiguration=yes\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
    > "$ROOT/etc/systemd/network/10-eth0.network"
  : > "$ROOT/etc/machine-id"; rm -f "$ROOT/var/lib/dbus/machine-id" "$ROOT/etc/hostname"
  # LXC gives each machine its name; a Debian host also has it in /etc/hostname, which Enroot bind-mounts into
  # every container (a job fails without it): written at first boot.
  printf '[Unit]\nConditionPathExists=!/etc/hostname\n[Service]\nType=oneshot\nExecStart=/bin/sh -c "hostname > /etc/hostname"\n[Install]\nWantedBy=multi-user.target\n' \
    > "$ROOT/etc/systemd/system/etc-hostname.service"
  printf '127.0.0.1 localhost\n' > "$ROOT/etc/hosts"
  touch "$ROOT/etc/fstab"                                     # Vagrant edits it at every start
  echo "nameserver $TB_HOST_IP" > "$ROOT/etc/resolv.conf"
  chroot "$ROOT" systemctl enable systemd-networkd ssh etc-hostname >/dev/null 2>&1
  # Root may not log in over SSH, as at many sites: Vagrant, the deploy, check, roll and the tests log in as vagrant,
  # who has sudo without a password. Its home is not under /home, which the Vagrantfile mounts over from the host;
  # its authorized_keys is the testbed's public key, bind-mounted there at start.
  chroot "$ROOT" useradd --create-home --home-dir /var/lib/vagrant --shell /bin/bash --user-group vagrant
  chroot "$ROOT" install -d -m 0700 -o vagrant -g vagrant /var/lib/vagrant/.ssh
  printf 'vagrant ALL=(ALL:ALL) NOPASSWD: ALL\n' > "$ROOT/etc/sudoers.d/vagrant"
  chmod 0440 "$ROOT/etc/sudoers.d/vagrant"
  printf 'PermitRootLogin no\n' > "$ROOT/etc/ssh/sshd_config.d/10-no-root-login.conf"
  mkdir -p "$WORK/box"
  (cd "$ROOT" && tar --numeric-owner --xattrs --xattrs-include='*' -czf "$WORK/box/rootfs.tar.gz" .)
  printf '{"provider":"lxc","version":"1.0.0","built-on":"%s","template-opts":{"--strip-components":"1"}}\n' \
    "$DIST-$STAMP" > "$WORK/box/metadata.json"
  printf 'lxc.include = /usr/share/lxc/config/common.conf\nlxc.apparmor.profile = unconfined\n' > "$WORK/box/lxc-config"
  mkdir -p "$(dirname "$BOX")"
  (cd "$WORK/box" && tar -cf "$BOX.tmp" metadata.json rootfs.tar.gz lxc-config) && mv "$BOX.tmp" "$BOX"
fi

if ! vagrant box list 2>/dev/null | grep "^local/$DIST-$STAMP " >/dev/null; then
  log "adding box local/$DIST-$STAMP"
  vagrant box add --force --name "local/$DIST-$STAMP" "$BOX" >/dev/null
fi
echo "local/$DIST-$STAMP"
