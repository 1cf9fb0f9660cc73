#!/bin/bash
# The Debian 13 root (Slurm 24.11); kept under this name for the pages that name it.
exec bash "$(dirname "$0")/build-debian-root.sh" trixie
