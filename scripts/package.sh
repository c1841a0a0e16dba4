#!/bin/bash
# Builds the Debian package sluice_<version>_amd64.deb into OUTDIR (default
# the current directory) and prints its path: the appliance (stripped,
# release build), sluicectl, sluice-exporter and sluice-aggregator, the
# systemd unit, the default config as a conffile in /etc/sluice/, man
# pages, the dashboard and alert rules, hugepages.sh. Depends are read from the binary's own
# libraries (dpkg-shlibdeps: Debian's DPDK, hiredis, libyaml). Installs
# nothing on this machine; build with scripts/setup.sh done. The release
# tree is build-pkg, or SLUICE_PKG_BUILD (scripts/test.sh's own build/).
# usage: scripts/package.sh [OUTDIR]
set -euo pipefail
case "${1:-}" in
-h | --help)
	sed -n '2,11s/^# \{0,1\}//p' "$0"
	exit 0
	;;
-*)
	echo "package.sh: unknown option $1 (usage: scripts/package.sh [OUTDIR])" >&2
	exit 2
	;;
esac
cd "$(dirname "$0")/.."
src=$PWD
mkdir -p "${1:-.}"
out=$(realpath "${1:-.}")
bdir=${SLUICE_PKG_BUILD:-build-pkg}

# one build of the tree at a time (scripts/test.sh builds part of it beforehand)
exec 9>"$bdir.lock"
flock 9
if [ ! -f "$bdir/build.ninja" ]; then
	meson setup "$bdir" --prefix=/usr --buildtype=release >/dev/null
fi
# the package installs under /usr, whatever the tree was set up with
# (nothing compiled depends on it: no rebuild)
meson configure "$bdir" -Dprefix=/usr -Dbuildtype=release >/dev/null
# what it installs, not the test programs (each linked with LTO)
mapfile -t installed < <(meson introspect "$bdir" --targets | /usr/bin/python3 -c '
import json, os, sys
b = os.path.abspath(sys.argv[1])
for t in json.load(sys.stdin):
    if t.get("installed"):
        print("\n".join(os.path.relpath(f, b) for f in t["filename"]))' "$bdir")
ninja -C "$bdir" "${installed[@]}" >/dev/null

ver=$(meson introspect --projectinfo "$bdir" |
	/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	# sorts after the release it builds on, in commit order
	ver="$ver+git$(git -C "$src" rev-list --count HEAD).$(git -C "$src" rev-parse --short=8 HEAD)"
fi
arch=$(dpkg --print-architecture)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pkg=$work/sluice
umask 022

DESTDIR=$pkg meson install -C "$bdir" --no-rebuild --strip >/dev/null
rm -f "$pkg/usr/bin/sluice-bench" # a development tool, not the appliance's

lib=$pkg/usr/lib/sluice
install -D -m 0755 tools/sluicectl "$lib/sluicectl"
install -D -m 0755 tools/sluice-exporter "$lib/sluice-exporter"
install -D -m 0755 tools/sluice-aggregator "$lib/sluice-aggregator"
install -D -m 0755 tools/sluice-bypass "$lib/sluice-bypass"
install -D -m 0644 tools/sltelemetry.py "$lib/sltelemetry.py"
install -D -m 0755 scripts/hugepages.sh "$lib/hugepages.sh"
ln -s ../lib/sluice/sluicectl "$pkg/usr/bin/sluicectl"
ln -s ../lib/sluice/sluice-exporter "$pkg/usr/bin/sluice-exporter"
ln -s ../lib/sluice/sluice-aggregator "$pkg/usr/bin/sluice-aggregator"
ln -s ../lib/sluice/sluice-bypass "$pkg/usr/bin/sluice-bypass"
for u in conf/systemd/*.service; do
	install -D -m 0644 "$u" "$pkg/lib/systemd/system/$(basename "$u")"
done
install -D -m 0644 conf/sluice.yaml "$pkg/etc/sluice/sluice.yaml"
install -D -m 0644 conf/grafana/sluice.json "$pkg/usr/share/sluice/grafana/sluice.json"
install -D -m 0644 conf/prometheus/sluice-alerts.yml \
	"$pkg/usr/share/sluice/prometheus/sluice-alerts.yml"
for m in conf/man/*.[15]; do
	sec=man${m##*.}
	install -D -m 0644 "$m" "$pkg/usr/share/man/$sec/$(basename "$m")"
	gzip -9n "$pkg/usr/share/man/$sec/$(basename "$m")"
done

doc=$pkg/usr/share/doc/sluice
install -D -m 0644 README.md "$doc/README.md"
install -D -m 0644 BENCHMARKS.md "$doc/BENCHMARKS.md"
cat >"$doc/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: sluice
Source: https://github.com/sluice/sluice

Files: *
Copyright: 2026 the sluice developers
License: BSD-3-Clause
 Redistribution and use in source and binary forms, with or without
 modification, are permitted provided that the following conditions are met:
 .
 1. Redistributions of source code must retain the above copyright notice,
    this list of conditions and the following disclaimer.
 2. Redistributions in binary form must reproduce the above copyright notice,
    this list of conditions and the following disclaimer in the documentation
    and/or other materials provided with the distribution.
 3. Neither the name of the copyright holder nor the names of its
    contributors may be used to endorse or promote products derived from this
    software without specific prior written permission.
 .
 THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
 AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
 IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
 ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE
 LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
 CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
 SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
 INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
 CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE)
 ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
 POSSIBILITY OF SUCH DAMAGE.
EOF
when=$(date -R -d "@$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)")
printf 'sluice (%s) unstable; urgency=medium\n\n  * Built from %s.\n\n -- sluice developers <sluice@example.org>  %s\n' \
	"$ver" "$(git -C "$src" describe --always --dirty 2>/dev/null || echo "a source tree")" \
	"$when" | gzip -9n >"$doc/changelog.gz"

# the libraries the binary links, as Debian packages name them
mkdir -p "$work/shlibs/debian" "$pkg/DEBIAN"
printf 'Source: sluice\n\nPackage: sluice\nArchitecture: any\n' >"$work/shlibs/debian/control"
shlibs=$(cd "$work/shlibs" && dpkg-shlibdeps -O -e"$pkg/usr/bin/sluice" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')

cat >"$pkg/DEBIAN/control" <<EOF
Package: sluice
Version: $ver
Architecture: $arch
Maintainer: sluice developers <sluice@example.org>
Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
Depends: $shlibs, python3, python3-yaml, iproute2
Recommends: python3-redis
Suggests: redis-server, dpdk
Section: net
Priority: optional
Homepage: https://github.com/sluice/sluice
Description: inline HTTP rate limiter on DPDK
 sluice reads HTTP request heads straight out of TCP packets on DPDK
 poll-mode workers, matches them against rules (per API key, user, client
 address, endpoint and tier), keeps token buckets per worker leased from
 a Redis coordinator shared by every appliance, and answers requests over
 their limit with a 429 built on the data path; the backend never sees
 them. Includes sluicectl, the Prometheus exporter, the aggregator that
 moves global limits between regions, a systemd unit, a Grafana
 dashboard and alert rules.
EOF
echo /etc/sluice/sluice.yaml >"$pkg/DEBIAN/conffiles"
(cd "$pkg" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z |
	xargs -0 md5sum) >"$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/conffiles" "$pkg/DEBIAN/md5sums"

deb=$out/sluice_${ver}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
