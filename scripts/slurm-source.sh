#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Obtain and configure the Slurm source tree that matches the installed Slurm.
#
# Slurm accepts a plugin only if its major, minor AND micro version equal the
# daemon's (plugin.c), and select/sched plugins include Slurm's internal
# headers, so we need the exact source the Debian package was built from,
# with Debian's patches applied, configured with Debian's flags.
#
# usage: scripts/slurm-source.sh [DEST]      (prints the tree's path on stdout)
# DEST defaults to $STORM_SLURM_CACHE or /var/cache/storm/slurm-src.
# Re-running is cheap: a tree configured for the installed version is reused.
set -euo pipefail

dest=${1:-${STORM_SLURM_CACHE:-/var/cache/storm/slurm-src}}
log() { echo "slurm-source: $*" >&2; }
die() { log "error: $*"; exit 1; }

# The installed version, from the package that ships the daemons' headers.
pkgver=$(dpkg-query -W -f='${Version}' libslurm-dev 2>/dev/null) ||
	die "libslurm-dev is not installed (apt-get install libslurm-dev)"
srcpkg=$(dpkg-query -W -f='${source:Package}' libslurm-dev)
upver=${pkgver%%-*}
installed_hex=$(awk '/define SLURM_VERSION_NUMBER/ {print $3}' \
	/usr/include/slurm/slurm_version.h)
stamp="$dest/.storm-configured-$pkgver"

# Two clones bootstrapping at once share this cache: the second waits for
# the first's tree instead of unpacking over it.
mkdir -p "$(dirname "$dest")"
exec 9>"$dest.lock"
flock 9

if [ -f "$stamp" ]; then
	echo "$dest/slurm"
	exit 0
fi

mkdir -p "$dest"
cd "$dest"

if ! compgen -G "/etc/apt/sources.list.d/*" >/dev/null ||
   ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	log "adding a deb-src entry for the Debian archive"
	cat > /etc/apt/sources.list.d/storm-deb-src.sources <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	apt-get update -q >&2
fi

rm -rf slurm "$srcpkg-$upver"
log "fetching source package $srcpkg=$pkgver"
apt-get source -q "$srcpkg=$pkgver" >&2 ||
	die "apt-get source $srcpkg=$pkgver failed; the Debian archive must still carry version $pkgver (upgrade slurm-wlm to the archive's version, then re-run)"
[ -d "$srcpkg-$upver" ] || die "apt-get source did not unpack $srcpkg-$upver"
mv "$srcpkg-$upver" slurm

cd slurm
# Debian's configure flags (debian/rules), so config.h matches the daemons.
log "configuring (about 20 s)"
./configure --build=x86_64-linux-gnu --prefix=/usr --sysconfdir=/etc/slurm \
	--libdir=/usr/lib/x86_64-linux-gnu --with-munge --without-rpath \
	--disable-debug --enable-multiple-slurmd \
	--with-pmix=/usr/lib/x86_64-linux-gnu/pmix2 \
	SUCMD=/bin/su SLEEP_CMD=/bin/sleep >../configure.log 2>&1 ||
	die "configure failed; see $dest/configure.log"

tree_hex=$(awk '/define SLURM_VERSION_NUMBER/ {print $3}' slurm/slurm_version.h)
if [ "$tree_hex" != "$installed_hex" ]; then
	die "source tree is Slurm $tree_hex but the installed Slurm is $installed_hex; install matching packages or pass --with-slurm-source to a tree of the installed version"
fi
touch "$stamp"
echo "$dest/slurm"
