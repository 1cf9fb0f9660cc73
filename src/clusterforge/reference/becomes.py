"""What each inventory field becomes, for the fields the model does not mark with a Slurm key (``slurm_key``).

The accounting database's attributes come from the code that sets them (accounts/plan.py); the rest is written here,
one short phrase a field, and tests/docs checks that every field of every entry has one and that none names a field
that no longer exists. Each entry's ``name`` gets its own text (the model's is shared by every entry), and an entry
without a docstring of its own gets its intro line here.
"""

from __future__ import annotations

from ..accounts.plan import ASSOCIATION, QOS
from ..admission.tests import FLOORS

SLURM_DOCS = "https://slurm.schedmd.com"
# Slurm's pages whose options are anchored #OPT_<Key> (checked against links to slurm.schedmd.com in public docs).
ANCHORED = {"slurm.conf", "cgroup.conf", "gres.conf", "slurmdbd.conf", "sacctmgr"}


# slurm.conf's NodeName and PartitionName keys share names with other keys, whose anchors Slurm numbers in page
# order (a partition's Nodes= is #OPT_Nodes_1, after NodeSet's): those link to their line's section instead.
LINE_SECTIONS = {"NodeName": "SECTION_NODE-CONFIGURATION", "PartitionName": "SECTION_PARTITION-CONFIGURATION"}


def slurm_link(page: str, key: str, line: str | None = None) -> str:
    """A Markdown link to Slurm's documentation of ``key`` on ``page`` (slurm.conf, sacctmgr, ...), or of the
    section of slurm.conf that documents the keys of a NodeName or PartitionName ``line``."""
    if page == "slurm.conf" and line in LINE_SECTIONS:
        anchor = f"#{LINE_SECTIONS[line]}"
    else:
        anchor = f"#OPT_{key}" if page in ANCHORED else ""
    return f"[`{key}`]({SLURM_DOCS}/{page}.html{anchor})"


def sacctmgr(key: str) -> str:
    return f"{slurm_link('sacctmgr', key)} (`sacctmgr`, in the accounting database)"


def _association_fields(entry: str) -> dict[str, str]:
    return {f"{entry}.{field}": sacctmgr(setting.key) for field, setting in ASSOCIATION.items()}


ACCOUNTING = {
    **{f"Qos.{field}": sacctmgr(setting.key) for field, setting in QOS.items()},
    **_association_fields("Account"),
    **_association_fields("User"),
}

NAMES = {
    "Cluster": ("the cluster's name: Slurm's ClusterName, slurmdbd's cluster, and {cluster} in Vault paths",
                f"{slurm_link('slurm.conf', 'ClusterName')} (slurm.conf)"),
    "Host": ("the host's name, as pyinfra and Slurm know it",
             f"{slurm_link('slurm.conf', 'SlurmctldHost')} or {slurm_link('slurmdbd.conf', 'DbdHost')} on that host; "
             "its /etc/hosts line with `Setup(etc_hosts=True)`"),
    "Profile": ("the profile's name, which Nodes(profile=) and Partition(profiles=) give",
                "the `profile` label of the health check's and the exporters' metrics"),
    "Leaf": ("the leaf switch's name, as the fabric names it", "`SwitchName` (topology.conf)"),
    "Spine": ("the spine switch's name", "`SwitchName` (topology.conf), with `Switches=` its leaves"),
    "Rail": ("the rail's name", "no file: a fact `clusterforge fabric import` checks"),
    "BlockTopology": ("the topology's name, which Partition(topology=) gives",
                      "`topology:` of its entry in topology.yaml"),
    "Block": ("the block's name", "`block:` of its entry in topology.yaml"),
    "Partition": ("the partition's name, which jobs give with `--partition`",
                  f"{slurm_link('slurm.conf', 'PartitionName')} (slurm.conf)"),
    "Qos": ("the QOS's name, which jobs give with `--qos`", sacctmgr("Name")),
    "Account": ("the account's name, which jobs give with `--account`", sacctmgr("Account")),
    "User": ("the user's login name", sacctmgr("User")),
    "Person": ("the person's login name, the same on every host",
               "a Unix user and its own group of that name on every host (useradd, groupadd)"),
    "Group": ("the site group's name, which Person(groups=) and Identity(admin_group=) give",
              "a Unix group on every host (groupadd)"),
}

INTROS = {
    "Host": "A machine of the cluster that is not a compute node: controller, database, login or NFS server.",
    "Nfs": "An NFS server, what it exports, and where the cluster's hosts mount it.",
    "NfsExport": "One directory the NFS server shares.",
    "NfsMount": "One export mounted on the cluster's hosts.",
    "Leaf": "A leaf switch and the nodes cabled to it.",
    "Spine": "A spine switch and the leaves below it.",
    "Partition": "A Slurm partition: which nodes, the limits and the defaults of its jobs.",
    "Accounting": "slurmdbd's database and what the deploy keeps in it: weights, QOS, accounts and users.",
    "PriorityWeights": "The multifactor priority plugin's weights: how much each factor counts in a job's priority.",
    "Qos": "A quality of service in the accounting database: a priority and limits jobs run under.",
    "Account": "An account in the accounting database, with the limits of its association.",
    "SecretRef": "Where one secret is kept in Vault.",
    "Setup": "How every host is prepared before Slurm: package proxy, name resolution, daemon users, time.",
    "Containers": "Container jobs: Enroot on the compute nodes and Pyxis in Slurm.",
    "Acceptance": "What `clusterforge check` accepts as matching the inventory.",
    "Admission": "The tests a node must pass before it takes users' jobs, and that `clusterforge accept` runs.",
    "Floors": "The lowest number each acceptance test accepts, over the GPU type's defaults.",
    "Programs": "Where the acceptance tests' programs come from: an image through Pyxis, or a directory on the nodes.",
    "Identity": "The cluster's people, made on every host or read from a site directory, and who reaches a compute "
                "node without a job there.",
    "Person": "Someone who logs in: the same name, uid and gid on every host, and the SSH keys they log in with.",
    "Group": "A site group, made on every host with its gid.",
}

_ENTRIES = "its entries' own lines, below"
_SSSD = "{} in /etc/sssd/sssd.conf on every host"
_DEPLOY_HOST = "the deploy host's Vault login; nothing on the cluster's hosts"
_HEALTH = "/etc/clusterforge/health.json, read by the node health check"
_ENROOT_CONF = "/etc/enroot/enroot.conf.d/90-clusterforge.conf"
_PROMETHEUS = "Prometheus's configuration on the monitoring host"
_ALERTMANAGER = "Alertmanager's configuration on the monitoring host"
_ADMISSION = "/etc/clusterforge/admission.json on the controller, read by the admission gate and `clusterforge accept`"
_REPAIR = "/etc/clusterforge/repair.json on the controller, read by the repair loop"

FIELDS = {
    "Cluster.slurm_version": "the key tables, plugins and restarts rendered for that release",
    "Cluster.login": "hosts with slurm.conf and Slurm's commands (sackd with auth/slurm)",
    "Cluster.configless": "SlurmctldParameters=enable_configless in slurm.conf, and slurmd's drop-in "
                          "clusterforge-configless.conf (--conf-server) on the compute nodes, which keep no Slurm "
                          "files of their own",
    "Cluster.nfs": "the NFS server's exports and the mount units on the hosts",
    "Cluster.profiles": _ENTRIES,
    "Cluster.nodes": "the NodeName lines of slurm.conf",
    "Cluster.fabric": "topology.conf before Slurm 25.05, the default topology of topology.yaml from 25.05",
    "Cluster.topologies": "the topologies after the fabric's in topology.yaml (Slurm 25.05+)",
    "Cluster.partitions": "the PartitionName lines of slurm.conf",
    "Cluster.accounting": "slurmdbd.conf, the priority keys of slurm.conf and the accounting database",
    "Cluster.vault": _DEPLOY_HOST,
    "Cluster.setup": _ENTRIES,
    "Cluster.containers": "Enroot's configuration and plugstack.conf.d/pyxis.conf",
    "Cluster.slurm_conf_extra": "its keys in slurm.conf, checked against the release's key table",
    "Cluster.cgroup_conf_extra": "its keys in cgroup.conf, checked against the release's key table",
    "Cluster.stack": "apt pins and holds on every host (/etc/apt/preferences.d/clusterforge)",
    "Cluster.health": f"{slurm_link('slurm.conf', 'HealthCheckProgram')}, Prolog and Epilog, and {_HEALTH}",
    "Cluster.monitoring": "Prometheus, Alertmanager and the exporters",
    "Cluster.acceptance": "what `clusterforge check` accepts; nothing on the hosts",
    "Cluster.disruption_budget": "a limit the deploy and `clusterforge plan` enforce; nothing on the hosts",
    "Host.address": "the address pyinfra connects to; its /etc/hosts line with `Setup(etc_hosts=True)`",
    "Host.memory": "innodb_buffer_pool_size in MariaDB's configuration, on the database host",
    "Nfs.server": "the host nfs-kernel-server (or NFS-Ganesha) runs on; the mount units' What=",
    "Nfs.software": "nfs-kernel-server and /etc/exports.d, or NFS-Ganesha and /etc/ganesha/ganesha.conf",
    "Nfs.ganesha_core": "the NFS_CORE_PARAM block of /etc/ganesha/ganesha.conf",
    "Nfs.mount_now": "whether the deploy starts the mount units or only enables them",
    "Nfs.exports": "one export line each (/etc/exports.d, or an EXPORT block of ganesha.conf)",
    "Nfs.mounts": "one systemd mount unit each",
    "NfsExport.path": "the exported path, first on its /etc/exports.d line",
    "NfsExport.clients": "the client pattern on its /etc/exports.d line",
    "NfsExport.options": "the options in parentheses on its /etc/exports.d line",
    "NfsMount.export": "What= of the mount unit: server:path",
    "NfsMount.mount_point": "Where= of the mount unit, and the unit's name",
    "NfsMount.on": "which hosts get the mount unit",
    "NfsMount.options": "Options= of the mount unit",
    "Profile.nvlink_domain": "a block topology named after the profile in topology.yaml (Slurm 25.05+), one block a "
                             "domain: `block:` `<profile>-nvlink<N>`",
    "Profile.local_disk": f"Enroot's paths ({_ENROOT_CONF}) and a slurmd drop-in that waits for the mount",
    "Profile.nvswitch": "nvidia-fabricmanager on these nodes, and a health check of each GPU's fabric",
    "Profile.ib_rate": f"the InfiniBand rate in {_HEALTH}",
    "Profile.hcas": f"the RDMA devices in {_HEALTH}",
    "Profile.gpu_stack": "the pinned GPU packages of these nodes",
    "Profile.nccl": "/etc/nccl.conf and /etc/enroot/environ.d/50-clusterforge-nccl.env",
    "Profile.admission": f"{_ADMISSION}; without it, no gate for these nodes",
    **{f"Admission.{name}": _ADMISSION for name in ("programs", "tests", "dcgm_level", "floors", "hcas",
                                                   "budget", "ib_write_bw_cuda")},
    "Admission.falling_percent": "the share in the alert rule NodeTestFalling (prometheus' rules) and in `clusterforge "
                                 "check`'s records check; nothing on the nodes",
    **{f"Floors.{floor.key}": _ADMISSION for floor in FLOORS},  # the tests' floors (admission/tests/)
    **{f"Programs.{name}": _ADMISSION for name in ("image", "bin_dir")},
    "Gpus.count": f"the count in {slurm_link('slurm.conf', 'Gres', 'NodeName')}=gpu:TYPE:COUNT; the health check's",
    "GpuStack.driver": "the driver packages' pinned and held version",
    "GpuStack.driver_packages": "which driver packages are installed, pinned and held",
    "GpuStack.fabric_manager": "nvidia-fabricmanager's pinned and held version",
    "GpuStack.persistenced": "nvidia-persistenced's pinned and held version",
    "GpuStack.dcgm": "DCGM's pinned and held version",
    "GpuStack.dcgm_exporter": "the DCGM exporter's pinned and held version",
    "GpuStack.container_toolkit": "nvidia-container-toolkit's pinned and held version",
    "Nccl.ib_hca": "`NCCL_IB_HCA` in /etc/nccl.conf and every container's environment",
    "Nccl.socket_ifname": "`NCCL_SOCKET_IFNAME` in /etc/nccl.conf and every container's environment",
    "Nccl.ib_gid_index": "`NCCL_IB_GID_INDEX` in /etc/nccl.conf and every container's environment",
    "Nccl.extra": "its variables in /etc/nccl.conf and every container's environment",
    "Nodes.profile": "the NodeName line's CPUs, memory, Gres and Features, from the profile",
    "Nodes.leaf": "the node's place on its leaf's SwitchName line (topology.conf)",
    "Fabric.leaves": "SwitchName lines with Nodes= (topology/tree), or BlockName lines (topology/block)",
    "Fabric.spines": "SwitchName lines with Switches= (topology.conf)",
    "Fabric.topology": "`topology:` of the fabric's entry in topology.yaml (Slurm 25.05+); nothing before",
    "BlockTopology.blocks": "`blocks:` of its entry in topology.yaml, in order",
    "BlockTopology.block_sizes": "`block_sizes:` of its entry in topology.yaml",
    "Block.nodes": "`nodes:` of the block in topology.yaml",
    "Fabric.rails": "no file: facts `clusterforge fabric import` checks",
    "Fabric.port_label": "no file: how `clusterforge fabric import` reads each HCA's rail",
    "Fabric.rail_optimized": "topology.conf's tree for nodes under several leaves",
    "Fabric.disconnected": "topology.conf with no switch above every node",
    "Rail.hca": "no file: a fact `clusterforge fabric import` checks",
    "Rail.leaves": "no file: a fact `clusterforge fabric import` checks",
    "Partition.profiles": f"the partition's {slurm_link('slurm.conf', 'Nodes', 'PartitionName')}= (slurm.conf)",
    "Accounting.weights": "the PriorityWeight* keys of slurm.conf",
    "Accounting.qos": "QOS in the accounting database (`sacctmgr add qos`)",
    "Accounting.accounts": "accounts in the accounting database (`sacctmgr add account`)",
    "Accounting.users": "users in the accounting database (`sacctmgr add user`)",
    "Accounting.prune": "`sacctmgr delete` of the accounts, users and QOS the inventory does not name",
    "Qos.preempt": sacctmgr("Preempt"),
    "Account.parent": sacctmgr("Parent"),
    "Account.description": sacctmgr("Description"),
    "Account.organization": sacctmgr("Organization"),
    "User.accounts": "one association per account (`sacctmgr add user NAME account=...`)",
    "User.default_account": sacctmgr("DefaultAccount"),
    "User.admin": sacctmgr("AdminLevel"),
    "Vault.address": _DEPLOY_HOST,
    "Vault.allow_plain_http": "whether validation takes an http:// address; nothing on the cluster's hosts",
    "Vault.namespace": _DEPLOY_HOST,
    "Vault.ca_cert": _DEPLOY_HOST,
    "Vault.auth": _DEPLOY_HOST,
    "Vault.approle_mount": _DEPLOY_HOST,
    "Vault.role_id_env": _DEPLOY_HOST,
    "Vault.secret_id_env": _DEPLOY_HOST,
    "Vault.role_id_file": _DEPLOY_HOST,
    "Vault.secret_id_file": _DEPLOY_HOST,
    "Vault.kv_mount": "where the deploy and `clusterforge secrets` read and write the secrets",
    "Vault.kv_version": "how the deploy and `clusterforge secrets` read and write the secrets",
    "Vault.munge_key": "/etc/munge/munge.key on every host",
    "Vault.db_password": f"{slurm_link('slurmdbd.conf', 'StoragePass')} (slurmdbd.conf), the MariaDB user's password",
    "Vault.slurm_key": "/etc/slurm/slurm.key on every host",
    "Vault.jwt_key": "/etc/slurm/jwt_hs256.key on the controller and the database host",
    "Vault.ldap_bind_password": "`ldap_default_authtok` in /etc/sssd/sssd.conf on every host, with a directory",
    "SecretRef.path": "the secret's path under the KV mount",
    "SecretRef.field": "the field of that secret",
    "Setup.apt_proxy": "an apt proxy setting in /etc/apt/apt.conf.d on every host",
    "Setup.etc_hosts": "every cluster host's line in /etc/hosts",
    "Setup.munge_user": "the munge user's and group's ids on every host",
    "Setup.slurm_user": "the slurm user's and group's ids on every host",
    "Setup.slurmrestd_user": "the slurmrestd user's and group's ids on its host",
    "Setup.time_sync": "chrony, installed and running",
    "SystemUser.uid": "the user's uid",
    "SystemUser.gid": "the group's gid",
    "Containers.enroot": _ENTRIES,
    "Containers.pyxis": _ENTRIES,
    "Containers.artifact_dir": "where the deploy host reads Enroot's and Pyxis' files",
    "Containers.nvidia_repository": "/etc/apt/sources.list.d/clusterforge-nvidia-container.list",
    "Enroot.version": "the enroot package's version",
    "Enroot.package": "the enroot package installed on the compute nodes",
    "Enroot.source": "an enroot package built on the controller, then installed on the compute nodes",
    "Enroot.runtime_path": f"`ENROOT_RUNTIME_PATH` ({_ENROOT_CONF})",
    "Enroot.data_path": f"`ENROOT_DATA_PATH` ({_ENROOT_CONF})",
    "Enroot.cache_path": f"`ENROOT_CACHE_PATH` ({_ENROOT_CONF})",
    "Enroot.temp_path": f"`ENROOT_TEMP_PATH` ({_ENROOT_CONF})",
    "Enroot.squash_options": f"`ENROOT_SQUASH_OPTIONS` ({_ENROOT_CONF})",
    "Enroot.mount_home": f"`ENROOT_MOUNT_HOME` ({_ENROOT_CONF})",
    "Enroot.restrict_dev": f"`ENROOT_RESTRICT_DEV` ({_ENROOT_CONF})",
    "Enroot.rootfs_writable": f"`ENROOT_ROOTFS_WRITABLE` ({_ENROOT_CONF})",
    "Enroot.hooks": "copies in /etc/enroot/hooks.d of the hooks Enroot ships",
    "Artifact.source": "where the deploy host fetches the file",
    "Artifact.sha256": "the digest the fetched file must have",
    "Artifact.name": "the file's name in a mirror directory and on the hosts",
    "Pyxis.version": "the Pyxis build's version",
    "Pyxis.source": "spank_pyxis.so, built on the controller, and plugstack.conf.d/pyxis.conf",
    "AptRepository.url": "the deb line's URL in /etc/apt/sources.list.d",
    "AptRepository.suite": "the deb line's suite",
    "AptRepository.components": "the deb line's components",
    "AptRepository.key": "the keyring in /usr/share/keyrings the deb line's signed-by= names",
    "Stack.slurm": "Slurm's packages pinned and held at that version on every host",
    "Stack.gpu": "the GPU packages pinned and held on the GPU nodes",
    "Stack.repository": "/etc/apt/sources.list.d/clusterforge-nvidia.list and its key",
    "Health.enabled": f"{slurm_link('slurm.conf', 'HealthCheckProgram')} (slurm.conf) and the check's files",
    "Health.job_checks": f"{slurm_link('slurm.conf', 'Prolog')} and {slurm_link('slurm.conf', 'Epilog')} (slurm.conf)",
    "Health.probes": _HEALTH,
    "Health.probe_timeout": _HEALTH,
    "Health.xid": _HEALTH,
    "Health.mounts": _HEALTH,
    "Health.kernel_log_extra": _HEALTH,
    "Health.boot_id_file": _HEALTH,
    "Health.link_errors": _HEALTH,
    "Health.infiniband_sysfs": _HEALTH,
    "Monitoring.host": "the host Prometheus and Alertmanager run on",
    "Monitoring.scrape_interval": f"scrape_interval in {_PROMETHEUS}",
    "Monitoring.retention_days": "--storage.tsdb.retention.time in Prometheus's /etc/default/prometheus",
    "Monitoring.webhook": f"the webhook receiver in {_ALERTMANAGER}",
    "Monitoring.pending_minutes": "the `for:` of the JobsWaitWhileGpusIdle alert in Prometheus's rules",
    "Monitoring.group_wait": f"group_wait in {_ALERTMANAGER}",
    "Monitoring.group_interval": f"group_interval in {_ALERTMANAGER}",
    "Monitoring.repeat_hours": f"repeat_interval in {_ALERTMANAGER}",
    "Rest.host": "the host slurmrestd runs on",
    "Rest.port": "the port in slurmrestd's ExecStart= (a systemd drop-in)",
    "Rest.listen": "the address in slurmrestd's ExecStart= (a systemd drop-in)",
    "Acceptance.memory_tolerance": "what `clusterforge check` accepts; nothing on the hosts",
    "Cluster.identity": _ENTRIES,
    "Identity.people": _ENTRIES,
    "Identity.directory": _ENTRIES,
    "Directory.uris": _SSSD.format("`ldap_uri` (and `ldap_id_use_start_tls` for ldap://)"),
    "Directory.base_dn": _SSSD.format("`ldap_search_base`"),
    "Directory.user_base": _SSSD.format("`ldap_user_search_base`"),
    "Directory.group_base": _SSSD.format("`ldap_group_search_base`"),
    "Directory.ca_certificate": "/etc/sssd/clusterforge-ldap-ca.pem on every host, `ldap_tls_cacert`",
    "Directory.bind_dn": _SSSD.format("`ldap_default_bind_dn`"),
    "Directory.ldap_schema": _SSSD.format("`ldap_schema`"),
    "Directory.entry_cache_timeout": _SSSD.format("`entry_cache_timeout` and `refresh_expired_interval` (3/4 of it)"),
    "Directory.enumerate": _SSSD.format("`enumerate`"),
    "Directory.login_group": "`simple_allow_groups` (with the admin group) in /etc/sssd/sssd.conf on the login hosts",
    "Identity.groups": _ENTRIES,
    "Identity.admin_group": "its line in /etc/security/access-clusterforge.conf on the compute nodes, and in "
                            "/etc/security/access-clusterforge-service.conf on the service hosts",
    "Identity.home_base": "each person's home directory (passwd), made on the NFS server or the login and compute "
                          "hosts",
    "Identity.adopt": "/etc/pam.d/sshd with pam_slurm_adopt, and logind's RemoveIPC=no, on the compute nodes",
    "Identity.service_host_groups": "their lines in /etc/security/access-clusterforge-service.conf, sshd's drop-in "
                                    "and (with a directory) `simple_allow_groups` in sssd.conf on the service hosts",
    "Person.uid": "the user's uid (passwd) on every host",
    "Person.gid": "the gid of the person's own group on every host",
    "Person.groups": "the person's membership of those groups (group) on every host",
    "Person.shell": "the user's login shell (passwd) on every host",
    "Person.ssh_keys": "~/.ssh/authorized_keys in the person's home",
    "Person.locked": "the account's expiry day (shadow: 1, expired) on every host",
    "Group.gid": "the group's gid (group) on every host",
    "Cluster.repair_budget": _REPAIR,
    "Cluster.repair_breaker": _REPAIR,
    "Profile.repair": f"{_REPAIR}; without it, these nodes are absent from it and never repaired",
    "Nodes.bmc": "each node's own BMC in /etc/clusterforge/repair.json on the controller, where its profile's repair "
                 "power cycles",
    **{f"Repair.{name}": _REPAIR for name in ("mode", "classes", "power_cycle", "attempts", "window",
                                              "reset_timeout", "reboot_timeout", "power_cycle_timeout")},
    **{f"Breaker.{name}": _REPAIR for name in ("faults", "window")},
    **{f"Bmc.{name}": _REPAIR for name in ("address", "protocol", "port", "system", "cipher_suite", "verify_tls",
                                           "ca_file")},
    "Bmc.credentials": "/etc/clusterforge/bmc/NODE.json on the controller (root's only), which repair.json names; "
                       "nothing of it in repair.json",
}

# Fields only a test cluster sets: shown apart from the fields a real cluster writes.
TEST_ONLY = frozenset({"Health.kernel_log_extra", "Health.boot_id_file", "Health.infiniband_sysfs"})


def becomes(entry: str, field: str) -> str | None:
    """What ``entry.field`` becomes, where the model marks no Slurm key on it; None where nothing says."""
    where = f"{entry}.{field}"
    if field == "name" and entry in NAMES:
        return NAMES[entry][1]
    return FIELDS.get(where) or ACCOUNTING.get(where)
