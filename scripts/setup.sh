#!/bin/bash
# Installs every Debian package that the build, the demo and the tests need.
# Idempotent: packages already present are skipped, so a second run is quick.
set -euo pipefail

PKGS=(
	build-essential pkg-config meson ninja-build
	dpdk dpdk-dev libdpdk-dev libpcap-dev libnuma-dev
	libhiredis-dev libyaml-dev libcmocka-dev
	redis-server redis-tools
	curl wrk nginx python3 python3-scapy python3-yaml python3-prometheus-client python3-redis
	iproute2 iputils-ping ethtool procps psmisc
	clang clang-format
	systemd # systemd-analyze checks the service unit
	stunnel4 openssl # TLS to Redis: hiredis 0.14 has none; tested through stunnel
	dpkg-dev lintian # scripts/package.sh builds the .deb; lintian checks it
	prometheus # promtool checks and unit-tests the alert rules (the server is not run)
	python3-matplotlib # scripts/charts.py: BENCHMARKS.md's charts
	python3-urllib3 # e2e/client: a standard retrying client obeys Retry-After
	python3-h2 # e2e/evasion: a backend that takes the upgrade to h2c
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Debian redis-server package starts a system instance; tests start
# their own on other ports, so the system one is left as the package set it.
# Only promtool is wanted from the prometheus package: where systemd runs,
# the server the package starts scraping itself is stopped and disabled.
if [ -d /run/systemd/system ] && systemctl is-enabled -q prometheus 2>/dev/null; then
	systemctl disable --now -q prometheus || true
fi
echo "setup: ok"
