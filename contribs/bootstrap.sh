#!/bin/bash
# Install what STORM for Slurm needs on Debian 12, then configure and build.
# Idempotent: packages already present are not reinstalled, a configured
# build tree is reused.  Run as root from anywhere; builds in the source tree.
#
#   contribs/bootstrap.sh [--werror]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
werror=
[ "${1:-}" = --werror ] && werror=--enable-werror
log() { echo "bootstrap: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "must run as root (it installs packages and starts daemons)"; exit 1; }

packages=(
	# Slurm 22.05 daemons, clients and headers; munge for authentication
	slurmctld slurmd slurm-client slurm-wlm-basic-plugins libslurm-dev munge libmunge-dev
	# the fabric and the MPI stack the tests use
	libfabric-dev libfabric-bin libpmix-dev openmpi-bin libopenmpi-dev
	# build: autotools, compiler, Check; dpkg-dev for apt-get source
	build-essential autoconf automake libtool pkg-config check dpkg-dev
	# the Debian packages (contribs/run-package-test) and the RPM spec's check
	debhelper lintian rpm
	# the broadcast checksum (XXH3, header-only use)
	libxxhash-dev
	# fuzzing the parsers (libFuzzer, ASan, UBSan)
	clang libclang-rt-14-dev
	# tests, benchmarks and plots
	python3 python3-pytest python3-matplotlib python3-xxhash hyperfine
	# cluster harness: unshare/mount (util-linux), ip (iproute2), runuser
	util-linux iproute2 procps
	# storm-web, and its tests' browser
	python3-aiohttp python3-prometheus-client chromium chromium-driver python3-selenium
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing: ${missing[*]}"
	apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

cd "$top"
slurm_src=$("$top/contribs/slurm-source.sh")
if [ ! -f Makefile ] || [ configure.ac -nt configure ] || \
   ! grep -q -- "with-slurm-source=$slurm_src" config.log 2>/dev/null || \
   { [ -n "$werror" ] && ! grep -q -- "--enable-werror" config.log; }; then
	log "configuring"
	autoreconf -fi >&2
	./configure --with-slurm-source="$slurm_src" $werror >&2
fi
log "building"
make -j"$(nproc)" >&2
