#!/bin/sh
# Installs the Debian 12 packages kevolve needs to build, test and run,
# skipping those already present. Runs apt-get as root, or through sudo.
set -eu
packages="build-essential cmake ninja-build pkg-config git python3 \
libyaml-dev libjansson-dev libsqlite3-dev libcmocka-dev libcurl4-openssl-dev libmicrohttpd-dev \
ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo clang-format chromium \
slurmctld slurmd slurm-client munge libseccomp-dev"
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "kevolve: installing missing Debian packages:$missing" >&2
if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
