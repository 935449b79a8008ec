#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install what STORM for Slurm needs on Debian 12, then configure and build.
# Idempotent: packages already present are not reinstalled, a configured
# build tree is reused.  Run as root from anywhere.
#
#   scripts/bootstrap.sh [--werror] [--slurm=24.11]
#
# By default it builds in the source tree against Debian 12's Slurm 22.05.
# --slurm=24.11 builds Slurm 24.11 into its own prefix (scripts/slurm-24.11.sh,
# cached) and the plugins against it in build-24.11/, a copy of this tree
# (automake refuses a second build directory beside a tree configured in
# place); the harness runs it with STORM_SLURM=24.11.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
werror=
slurm=22.05
for a in "$@"; do
	case $a in
	--werror) werror=--enable-werror ;;
	--slurm=22.05|--slurm=24.11) slurm=${a#--slurm=} ;;
	*) echo "usage: scripts/bootstrap.sh [--werror] [--slurm=22.05|24.11]" >&2; exit 2 ;;
	esac
done
log() { echo "bootstrap: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "must run as root (it installs packages and starts daemons)"; exit 1; }

packages=(
	# Slurm 22.05 daemons, clients and headers; munge for authentication
	slurmctld slurmd slurm-client slurm-wlm-basic-plugins libslurm-dev munge libmunge-dev
	# the fabric and the MPI stack the tests use
	libfabric-dev libfabric-bin libpmix-dev openmpi-bin libopenmpi-dev
	# build: autotools, compiler, Check; dpkg-dev for apt-get source
	build-essential autoconf automake libtool pkg-config check dpkg-dev
	# the Debian packages (scripts/run-package-test) and the RPM spec's check
	debhelper lintian rpm
	# the broadcast checksum (XXH3, header-only use); SHA-256 (libcrypto)
	# names what the node-local cache holds
	libxxhash-dev libssl-dev
	# fuzzing the parsers (libFuzzer, ASan, UBSan)
	clang libclang-rt-14-dev
	# tests, benchmarks and plots
	python3 python3-pytest python3-matplotlib python3-xxhash hyperfine
	# cluster harness: unshare/mount (util-linux), ip (iproute2), runuser
	util-linux iproute2 procps
	# container images: ch-run (linked with libsquashfuse, mounts SquashFS
	# through FUSE), mksquashfs, a static busybox as the test image's
	# userland; not the charliecloud metapackage, whose builders pull in
	# docker.io and buildah
	charliecloud-runtime squashfuse fuse3 squashfs-tools busybox-static
	# the whole-job benchmark's file server: sshd in a namespace of its
	# own, each node mounting it with sshfs
	sshfs openssh-server
	# ... and its workloads: a program linked with Open MPI (above),
	# OpenBLAS and ICU, and Python with numpy and scipy
	libopenblas0-pthread libicu-dev python3-numpy python3-scipy
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

# ch-run mounts a SquashFS image as the user itself, through /dev/fuse:
# udev's default rule makes the device 0666, but a host without udev keeps
# the kernel's 0600 and only root could run an image
if [ -c /dev/fuse ] && [ "$(stat -c %a /dev/fuse)" != 666 ]; then
	log "making /dev/fuse usable by every user (mode 0666, as udev does)"
	chmod 0666 /dev/fuse
fi

if [ "$slurm" = 24.11 ]; then
	read -r slurm_src slurm_prefix < <("$top/scripts/slurm-24.11.sh") ||
		{ log "building Slurm 24.11 failed"; exit 1; }
	[ -n "$slurm_prefix" ] || { log "building Slurm 24.11 failed"; exit 1; }
	build=$top/build-24.11
	mkdir -p "$build"
	# the tree's files (tracked and new), newer ones only, times kept
	(cd "$top" && git ls-files -co --exclude-standard -z |
		grep -zv '^build-' | xargs -0 cp -p -u --parents -t "$build") ||
		{ log "cannot copy the tree to $build (is it a git checkout?)"; exit 1; }
	cd "$build"
	if [ ! -f Makefile ] || [ configure.ac -nt configure ] || \
	   ! grep -q -- "with-slurm=$slurm_prefix" config.log 2>/dev/null || \
	   { [ -n "$werror" ] && ! grep -q -- "--enable-werror" config.log; }; then
		log "configuring build-24.11 for Slurm 24.11"
		autoreconf -fi >&2
		./configure --with-slurm="$slurm_prefix" \
			--with-slurm-source="$slurm_src" $werror >&2
	fi
	log "building build-24.11"
	make -j"$(nproc)" >&2
	exit 0
fi

cd "$top"
slurm_src=$("$top/scripts/slurm-source.sh")
if [ ! -f Makefile ] || [ configure.ac -nt configure ] || \
   ! grep -q -- "with-slurm-source=$slurm_src" config.log 2>/dev/null || \
   { [ -n "$werror" ] && ! grep -q -- "--enable-werror" config.log; }; then
	log "configuring"
	autoreconf -fi >&2
	./configure --with-slurm-source="$slurm_src" $werror >&2
fi
log "building"
make -j"$(nproc)" >&2
