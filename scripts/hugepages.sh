#!/bin/bash
# Reserves 2 MiB hugepages for sluice and mounts hugetlbfs (idempotent).
# usage: scripts/hugepages.sh [PAGES] (default 1024 = 2 GiB), as root.
set -euo pipefail
pages=${1:-1024}
node_dirs=(/sys/devices/system/node/node*/hugepages/hugepages-2048kB)
if [ -d "${node_dirs[0]}" ]; then
	# spread over the NUMA nodes, as DPDK allocates per socket
	per=$(((pages + ${#node_dirs[@]} - 1) / ${#node_dirs[@]}))
	for d in "${node_dirs[@]}"; do
		echo "$per" >"$d/nr_hugepages"
	done
else
	echo "$pages" >/proc/sys/vm/nr_hugepages
fi
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
grep -E 'HugePages_(Total|Free)' /proc/meminfo
