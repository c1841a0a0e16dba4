#!/bin/bash
# What a refusal costs beside an admission, part by part, in place: the
# tree at HEAD is built as it is and four more times, each with part of
# the closing refusal's answer taken out of app/sluice/worker/reply.c or
# worker.c (throwaway builds in a temporary worktree; nothing of it
# ships), and `sluice-bench --only reject` of each is run interleaved
# with the real build's `--only allow` and `--only reject`. Prints the
# mean of the lowest three runs of each and the parts they make. Not a
# test: the variants answer nothing, they only price what they leave out.
# usage: scripts/bench-refusal.sh [RUNS] [sluice-bench args after --]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-6}
shift || true
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--packets 2048 --flows 2048 --keys 10000)
scripts/setup.sh >/dev/null
tmp=$(mktemp -d)
tree="$tmp/tree"
trap 'git worktree remove --force "$tree" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git worktree add --detach "$tree" HEAD >/dev/null 2>&1
# variant NAME: FILE OLD NEW [FILE OLD NEW ...] -- each edit must apply
variant() {
	local name=$1
	shift
	git -C "$tree" checkout -q -- .
	/usr/bin/python3 - "$tree" "$@" <<'EOF'
import sys
tree, edits = sys.argv[1], sys.argv[2:]
for i in range(0, len(edits), 3):
    path, old, new = tree + "/" + edits[i], edits[i + 1], edits[i + 2]
    s = open(path).read()
    if s.count(old) != 1:
        sys.exit("bench-refusal.sh: %s no longer holds %r" % (edits[i], old))
    open(path, "w").write(s.replace(old, new))
EOF
	[ -f "$tree/b/build.ninja" ] || meson setup "$tree/b" "$tree" >/dev/null
	ninja -C "$tree/b" app/sluice-bench/sluice-bench >/dev/null
	cp "$tree/b/app/sluice-bench/sluice-bench" "$tmp/$name"
}
# the real one from the same tree and build options as the variants
variant real
reply=app/sluice/worker/reply.c
rst='	reset_server(w, rte_pktmbuf_mtod(m, uint8_t *), p, rst_seq);'
build_429='	tlen = build(m, p, v, seq, ack, FIN | PSH | ACK);
	if (unlikely(tlen == 0))
		return;'
fill='		tlen = sl_reply_tpl_fill(v->tpl, &v->nums, frame + poff,
					 room - poff, &sum);'
# decided as a refusal, the request forwarded as it came: no frame written
variant decided app/sluice/worker/worker.c \
	'	case SL_SEG_STOPPED:
		sl_reply_send(w, m, in->flow, in->p, &in->v);' \
	'	case SL_SEG_STOPPED:
		sl_tx_send(w, UP, m);'
# the RST alone, the request forwarded in the 429's place
variant rst "$reply" "$build_429" \
	'	(void)ack;
	sl_tx_send(w, SL_UP, m);
	return;'
# the 429 alone, no RST
variant 429 "$reply" "$rst" '	(void)rst_seq;'
# the 429's segment without its text (its length claimed, nothing written)
variant segment "$reply" "$rst" '	(void)rst_seq;' "$reply" "$fill" \
	'		tlen = 375, sum = 0;'
eal=(--no-huge -m 1024 --no-pci -l 0 --log-level lib.eal:warning)
for i in $(seq "$runs"); do
	for b in real:allow real:reject decided:reject rst:reject 429:reject \
		segment:reject; do
		"$tmp/${b%%:*}" "${eal[@]}" --file-prefix "refusal$$" -- \
			--only "${b#*:}" --rounds 1500 "${args[@]}" 2>/dev/null |
			tail -1 | sed "s/^/$b /"
	done
done | /usr/bin/python3 -c '
import json, sys
runs = {}
for line in sys.stdin:
    name, js = line.split(" ", 1)
    runs.setdefault(name, []).append(json.loads(js)["cycles_per_request"])
low = {k: sum(sorted(v)[:3]) / min(3, len(v)) for k, v in runs.items()}
allow, reject = low["real:allow"], low["real:reject"]
n = len(runs["real:allow"])
print("cycles per request, mean of the lowest %d of %d runs each" % (min(3, n), n))
rows = (("real:allow", "admission (new flow)"),
        ("real:reject", "refusal, 429 + RST"),
        ("decided:reject", "the refusal decided, nothing written"),
        ("segment:reject", "and the 429 segment without its text"),
        ("429:reject", "and its text (the 429 whole, no RST)"),
        ("rst:reject", "the RST alone"))
for k, label in rows:
    print("  %-40s %7.1f  %5.2f x the admission" % (label, low[k], low[k] / allow))
d = low["decided:reject"]
print("above the decision: the 429 segment %.0f, its text %.0f, the RST "
      "%.0f (summed %.0f; the two frames together %.0f)" % (
          low["segment:reject"] - d, low["429:reject"] - low["segment:reject"],
          low["rst:reject"] - d, low["429:reject"] + low["rst:reject"] - 2 * d,
          reject - d))
'
