#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build Slurm 24.11 from Debian 13's upstream tarball into a prefix of its own,
# beside Debian 12's Slurm 22.05 packages, so the plugins can be built and
# tested against both versions from one tree.
#
# Debian 13's binaries need Debian 13's libc, so only the source is taken:
# a deb-src entry (never a deb entry, so no Debian 13 binary can be installed)
# makes trixie's Sources index known to apt; apt fetches the upstream tarball
# (the .dsc and the Debian patch tarball are not on the mirror); its sha256 is
# checked here against the index.  The tree is configured with Debian 12's
# munge and PMIx and built with only the parts the daemons and tests use.
#
# usage: scripts/slurm-24.11.sh [DEST]
#   prints "SRC PREFIX" (the configured source tree and the install prefix)
# DEST defaults to $STORM_SLURM24_CACHE or /var/cache/storm/slurm-24.11.
# Re-running is cheap: a complete build is reused.
set -euo pipefail

version=24.11.5
suite=trixie
srcpkg=slurm-wlm
tarball=${srcpkg}_${version}.orig.tar.gz
dest=${1:-${STORM_SLURM24_CACHE:-/var/cache/storm/slurm-24.11}}
src=$dest/src
prefix=$dest/prefix
stamp=$dest/.storm-complete-$version
jobs=${STORM_BUILD_JOBS:-2}

log() { echo "slurm-24.11: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Two clones bootstrapping at once share this cache: the second waits for
# the first's build instead of building over it.
mkdir -p "$(dirname "$dest")"
exec 9>"$dest.lock"
flock 9

if [ -f "$stamp" ] && [ -x "$prefix/sbin/slurmctld" ] &&
   [ -f "$src/config.h" ]; then
	echo "$src $prefix"
	exit 0
fi
mkdir -p "$dest"
cd "$dest"

# The sources index of trixie: deb-src only.
list=/etc/apt/sources.list.d/storm-$suite-src.sources
if ! apt-cache showsrc "$srcpkg" 2>/dev/null | grep -q "^Version: $version-"; then
	if grep -rqs "^Types:.*deb .*\|^Types: deb$" "$list" 2>/dev/null; then
		die "$list has a deb entry; it must hold deb-src only"
	fi
	log "adding a deb-src entry for Debian $suite (sources only)"
	cat > "$list" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	apt-get update -q >&2 ||
		die "apt-get update failed; is http://deb.debian.org/debian reachable?"
fi

# The index's sha256 for the upstream tarball, of this version.  awk reads
# the whole listing: leaving early could end apt-cache with SIGPIPE, which
# pipefail and set -e turn into a silent exit of this script.
want=$(apt-cache showsrc "$srcpkg" | awk -v v="$version" -v f="$tarball" '
	/^Version: / { inv = (index($2, v "-") == 1) }
	/^Checksums-Sha256:/ { ins = 1; next }
	/^[^ ]/ { ins = 0 }
	inv && ins && $3 == f && !sum { sum = $1 }
	END { print sum }')
[ -n "$want" ] ||
	die "the $suite sources index lists no $tarball (does $suite still carry $srcpkg $version?)"

if [ ! -f "$tarball" ] || [ "$(sha256sum < "$tarball" | cut -d' ' -f1)" != "$want" ]; then
	rm -f "$tarball"
	log "fetching $tarball from $suite"
	# The .dsc and the Debian tarball answer 404, so apt reports failure even
	# when the upstream tarball arrived; the checksum below decides.
	apt-get source --download-only -q "$srcpkg/$suite" >&2 || true
	[ -f "$tarball" ] ||
		die "apt-get source --download-only $srcpkg/$suite did not fetch $tarball"
fi
got=$(sha256sum < "$tarball" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
	rm -f "$tarball"
	die "$tarball has sha256 $got but the $suite index says $want; removed it, re-run to fetch again"
fi
log "$tarball sha256 $got matches the $suite index"

rm -rf "$src" "$prefix" "$stamp"
mkdir -p "$src.tmp"
tar -xzf "$tarball" -C "$src.tmp" --strip-components=1 ||
	die "cannot unpack $tarball"
mv "$src.tmp" "$src"
cd "$src"

# Debian 12's munge and PMIx; what neither the daemons nor the tests use is
# left out so the build stays short on a small machine.
log "configuring into $prefix"
./configure --prefix="$prefix" --sysconfdir="$prefix/etc" \
	--with-munge --with-pmix=/usr/lib/x86_64-linux-gnu/pmix2 \
	--enable-multiple-slurmd --disable-slurmrestd --disable-sview \
	--disable-x11 --disable-debug --disable-static \
	--disable-dependency-tracking \
	--without-hdf5 --without-lua --without-nvml --without-rsmi \
	--without-oneapi --without-ucx --without-rdkafka --without-freeipmi \
	--without-libcurl --without-jwt --without-http-parser \
	--without-s2n --without-hpe-slingshot \
	SUCMD=/bin/su SLEEP_CMD=/bin/sleep >../configure.log 2>&1 ||
	die "configure failed; see $dest/configure.log"
grep -q '^#define HAVE_PMIX_VER' config.h 2>/dev/null ||
	grep -q 'HAVE_PMIX' config.h ||
	log "warning: configure found no PMIx; mpi/pmix is not built"

# src/ holds the daemons, commands and plugins; the top the public headers.
log "building with make -j$jobs (takes a while)"
start=$SECONDS
{ make -j"$jobs" -C src && make -C src install &&
	  make install-pkgincludeHEADERS; } \
	>../build.log 2>&1 ||
	die "build failed; see $dest/build.log"
log "built and installed in $((SECONDS - start)) s"

"$prefix/sbin/slurmctld" -V | grep -q "slurm $version" ||
	die "$prefix/sbin/slurmctld is not Slurm $version"
touch "$stamp"
echo "$src $prefix"
