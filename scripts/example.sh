#!/usr/bin/env bash
# The main job on the built-in default target: bring up the local Vagrant test cluster (a controller, a login host
# and two GPU nodes, Debian 12 unless CLUSTERFORGE_TESTBED_DIST=trixie) and deploy inventories/vagrant.py to it, then show what
# an admin sees. Run as root (LXC containers, a bridge). `bash testbed/down.sh` removes it all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh
# The test cluster's machines reach no release site, and this machine may not either: Enroot's and Pyxis' files come
# from the artifact mirror beside the clone where there is one (a site's own mirror: CLUSTERFORGE_ARTIFACTS).
if [ -z "${CLUSTERFORGE_ARTIFACTS:-}" ] && [ -d ../shared/artifacts ]; then
  export CLUSTERFORGE_ARTIFACTS=$PWD/../shared/artifacts
fi
bash testbed/up.sh
eval "$(bash testbed/env.sh)"
.venv/bin/clusterforge validate inventories/vagrant.py
.venv/bin/pyinfra -y inventories/vagrant.py deploy/cluster.py
echo "--- on ctl: sinfo"
bash testbed/ssh.sh ctl sinfo --Node --long
echo "--- on ctl: srun --nodes=2 hostname; srun --gres=gpu:2 env | grep CUDA"
bash testbed/ssh.sh ctl 'srun --nodes=2 hostname && srun --gres=gpu:2 env | grep ^CUDA_VISIBLE_DEVICES'
