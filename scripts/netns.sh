#!/bin/bash
# The test and demo topology: a client and a server namespace, each joined
# by a veth pair to this (root) namespace, where sluice bridges the two
# host-side ends with net_af_packet.
#
#   [ns PREFIX-c] eth0 198.18.0.1/24 2001:2::1/64 ── PREFIX-c1 (port 0)
#                                                        sluice
#   [ns PREFIX-s] eth0 198.18.0.2/24 2001:2::2/64 ── PREFIX-s1 (port 1)
#
# usage: netns.sh up PREFIX | down PREFIX
# PREFIX must be short (interface names are at most 15 bytes).
set -euo pipefail

cmd=${1:?usage: netns.sh up|down PREFIX}
p=${2:?usage: netns.sh up|down PREFIX}

quiet_offloads() {
	# Checksums must be real on the wire (af_packet sees them before any
	# NIC would fill them in) and frames must stay MTU-sized.
	local ns=$1 dev=$2
	local run=()
	[ -n "$ns" ] && run=(ip netns exec "$ns")
	"${run[@]}" ethtool -K "$dev" tx off rx off tso off gso off gro off \
		>/dev/null 2>&1 || true
}

up() {
	down 2>/dev/null || true
	ip netns add "$p-c"
	ip netns add "$p-s"
	ip link add "$p-c1" type veth peer name eth0 netns "$p-c"
	ip link add "$p-s1" type veth peer name eth0 netns "$p-s"
	for side in c s; do
		ip link set "$p-${side}1" up
		# The bridge ports carry no addresses and answer nothing.
		sysctl -qw "net.ipv6.conf.$p-${side}1.disable_ipv6=1" || true
		quiet_offloads "" "$p-${side}1"
		quiet_offloads "$p-$side" eth0
		ip -n "$p-$side" link set lo up
	done
	ip -n "$p-c" addr add 198.18.0.1/24 dev eth0
	ip -n "$p-s" addr add 198.18.0.2/24 dev eth0
	ip -n "$p-c" addr add 2001:2::1/64 dev eth0 nodad
	ip -n "$p-s" addr add 2001:2::2/64 dev eth0 nodad
	ip -n "$p-c" link set eth0 up
	ip -n "$p-s" link set eth0 up
}

down() {
	ip link del "$p-c1" 2>/dev/null || true
	ip link del "$p-s1" 2>/dev/null || true
	ip netns del "$p-c" 2>/dev/null || true
	ip netns del "$p-s" 2>/dev/null || true
}

case "$cmd" in
up) up ;;
down) down ;;
*) echo "usage: netns.sh up|down PREFIX" >&2; exit 2 ;;
esac
