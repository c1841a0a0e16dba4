/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stream normaliser's bookkeeping (Handley, Paxson and Kreibich,
 * "Network Intrusion Detection: Evasion, Traffic Normalization, and
 * End-to-End Protocol Semantics", 2001): which client segments the
 * backend's stack would discard, and which decided bytes a resent copy
 * must repeat.
 *
 * A segment the backend discards can still be parsed here; what keeps
 * that from mattering is that decided bytes stay decided until the
 * server acknowledges them. Each segment whose bytes the parser read is
 * kept as a range (sequence, length, and the bytes: held by the caller
 * where it can, a keyed digest where not); a later copy that overlaps a
 * kept range must cover it whole and repeat it exactly, or it is
 * dropped. Whatever the reason the backend dropped the first copy
 * (wrong MAC, a bad option, an extension header sluice does not know),
 * the bytes it finally accepts are the bytes sluice decided on.
 */
#include <string.h>

#include "sl_flow_priv.h"

#define P61 ((1ULL << 61) - 1)

const char *
sl_norm_reason_name(enum sl_norm_reason r)
{
	static const char *const names[SL_NR__COUNT] = {
		[SL_NR_NONE] = "none",
		[SL_NR_NO_ACK] = "no_ack",
		[SL_NR_ACK_UNSENT] = "ack_unsent",
		[SL_NR_PAWS] = "paws",
		[SL_NR_NO_TS] = "no_timestamp",
		[SL_NR_URGENT] = "urgent",
		[SL_NR_TCP_SIG] = "tcp_signature",
		[SL_NR_IP_OPTIONS] = "ip_options",
		[SL_NR_L2_GROUP] = "l2_group_address",
		[SL_NR_REPLAY_DIFF] = "resent_differs",
		[SL_NR_REPLAY_PART] = "resent_partial",
		[SL_NR_REPLAY_FULL] = "decided_ranges_full",
		[SL_NR_MIDSTREAM] = "midstream_unplaced",
		[SL_NR_UPGRADE] = "upgrade_pending",
		[SL_NR_ORDER] = "answer_order",
		[SL_NR_UNPLACED] = "before_handshake",
		[SL_NR_SOURCE] = "source_head_share",
	};
	return (unsigned)r < SL_NR__COUNT ? names[r] : "unknown";
}

void
sl_flow_norm_drop(struct sl_flow_table *t, enum sl_norm_reason r)
{
	t->st.norm[r]++;
}

/* x mod 2^61 - 1, for x < 2^125. */
static inline uint64_t
red61(unsigned __int128 x)
{
	unsigned __int128 hi = x >> 61;
	uint64_t y = ((uint64_t)x & P61) + ((uint64_t)hi & P61) +
		     (uint64_t)(hi >> 61);

	y = (y & P61) + (y >> 61);
	return y >= P61 ? y - P61 : y;
}

static inline uint64_t
chunk7(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w & 0x00ffffffffffffffULL;
}

void
sl_flow_digest_init(struct sl_flow_table *t)
{
	unsigned __int128 r = t->dkey;
	int i;

	t->dpow[0] = t->dkey;
	for (i = 1; i < 8; i++)
		t->dpow[i] = red61(r * t->dpow[i - 1]);
}

/*
 * Polynomial evaluation modulo 2^61 - 1 at a secret point r, over 7-byte
 * chunks (each below the modulus, so no two chunks collide), the length
 * first: two different strings of n bytes agree with probability at most
 * n/7 in 2^61 for a sender who does not know r. Not a linear code such
 * as a CRC, where a chosen difference collides whatever the key. Eight
 * chunks a step (h r^8 + a r^7 + ... + h' r + i, products summed in 128
 * bits, one reduction): the chain waits on one multiply per 56 bytes,
 * the other eight run side by side.
 */
uint64_t
sl_flow_digest(const struct sl_flow_table *t, const uint8_t *p, uint32_t n)
{
	const uint64_t *rp = t->dpow;
	uint64_t h = n;
	uint8_t tail[64];

	while (n > 0) {
		/* the last block zero-padded: the length went in first, so
		 * the padding cannot make two strings of n bytes agree */
		const uint8_t *q = p;
		uint32_t take = n < 56 ? n : 56;
		unsigned __int128 x;

		if (n < 57) {
			memset(tail, 0, sizeof(tail));
			memcpy(tail, p, n);
			q = tail;
		}
		/* nine independent products; only the last waits on h */
		x = (unsigned __int128)chunk7(q) * rp[6] +
		    (unsigned __int128)chunk7(q + 7) * rp[5] +
		    (unsigned __int128)chunk7(q + 14) * rp[4] +
		    (unsigned __int128)chunk7(q + 21) * rp[3] +
		    (unsigned __int128)chunk7(q + 28) * rp[2] +
		    (unsigned __int128)chunk7(q + 35) * rp[1] +
		    (unsigned __int128)chunk7(q + 42) * rp[0] + chunk7(q + 49);
		h = red61(x + (unsigned __int128)h * rp[7]);
		p += take;
		n -= take;
	}
	return h;
}

/* Whether range i repeats at p: by the bytes held, or by digest. */
static int
rec_same(const struct sl_flow_table *t, const struct sl_flow *f, uint8_t i,
	 const uint8_t *p)
{
	if (f->rec_held & (1u << i))
		return memcmp(p, t->p.hold.bytes(t->p.hold.arg, f->rec_sum[i]),
			      f->rec_len[i]) == 0;
	return sl_flow_digest(t, p, f->rec_len[i]) == f->rec_sum[i];
}

/* A resent copy: every kept range it touches it must cover and repeat. */
enum sl_norm_reason
sl_flow_rec_check(const struct sl_flow_table *t, const struct sl_flow *f,
		  uint32_t seq, const uint8_t *p, uint32_t n)
{
	uint8_t i;

	for (i = 0; i < f->rec_n; i++) {
		int32_t lo = (int32_t)(f->rec_seq[i] - seq);
		int64_t hi = (int64_t)lo + f->rec_len[i];

		if (hi <= 0 || lo >= (int32_t)n)
			continue; /* disjoint */
		if (lo < 0 || hi > n)
			return SL_NR_REPLAY_PART;
		if (!rec_same(t, f, i, p + lo))
			return SL_NR_REPLAY_DIFF;
	}
	return SL_NR_NONE;
}

/*
 * Keeps the n bytes at seq as decided; the caller checked there is room.
 * hold: the segment goes on whole, so its bytes may be kept by reference
 * where the caller can (no digest to compute: the clean path's cost).
 */
void
sl_flow_rec_add(const struct sl_flow_table *t, struct sl_flow *f, uint32_t seq,
		const uint8_t *p, uint32_t n, int hold)
{
	while (n > 0 && f->rec_n < SL_REC_MAX) {
		uint32_t take = n > UINT16_MAX ? UINT16_MAX : n;
		uint8_t i = f->rec_n++;
		uint64_t h = hold && t->p.hold.keep != NULL
				     ? t->p.hold.keep(t->p.hold.arg, p, take)
				     : 0;

		f->rec_seq[i] = seq;
		f->rec_len[i] = (uint16_t)take;
		f->rec_held = (uint8_t)(f->rec_held & ~(1u << i));
		if (h != 0) {
			f->rec_sum[i] = h;
			f->rec_held |= (uint8_t)(1u << i);
		} else {
			f->rec_sum[i] = sl_flow_digest(t, p, take);
		}
		seq += take;
		p += take;
		n -= take;
	}
}

/* Range i's hold, if it has one, given back to the caller. */
static void
rec_let_go(const struct sl_flow_table *t, const struct sl_flow *f, uint8_t i)
{
	if (f->rec_held & (1u << i))
		t->p.hold.release(t->p.hold.arg, f->rec_sum[i]);
}

void
sl_flow_rec_drop(const struct sl_flow_table *t, struct sl_flow *f, uint8_t from)
{
	uint8_t i;

	for (i = from; i < f->rec_n; i++)
		rec_let_go(t, f, i);
	f->rec_held = (uint8_t)(f->rec_held & ((1u << from) - 1));
	f->rec_n = from;
}

/* The server acknowledged up to ack: ranges it covers are committed. */
void
sl_flow_rec_release(const struct sl_flow_table *t, struct sl_flow *f,
		    uint32_t ack)
{
	uint8_t i = 0, j;

	while (i < f->rec_n &&
	       (int32_t)(f->rec_seq[i] + f->rec_len[i] - ack) <= 0)
		rec_let_go(t, f, i++);
	if (i == 0)
		return;
	for (j = 0; i + j < f->rec_n; j++) {
		f->rec_seq[j] = f->rec_seq[i + j];
		f->rec_len[j] = f->rec_len[i + j];
		f->rec_sum[j] = f->rec_sum[i + j];
	}
	f->rec_held = (uint8_t)(f->rec_held >> i);
	f->rec_n = j;
}

/*
 * What Linux's tcp_validate_incoming and tcp_ack would discard, for a
 * segment carrying data or FIN on a connection past its SYN.
 */
enum sl_norm_reason
sl_flow_seg_check(const struct sl_flow *f, const struct sl_seg *s)
{
	if (!(s->flags & SL_FL_ACK))
		return SL_NR_NO_ACK;
	if (f->nflags & SL_NF_TS) {
		if (!s->has_ts)
			return SL_NR_NO_TS;
		if ((int32_t)(s->tsval - f->ts_recent) < 0)
			return SL_NR_PAWS;
	}
	if (f->s_seen && (int32_t)(s->ack - f->s_next) > 0)
		return SL_NR_ACK_UNSENT;
	if ((f->nflags & SL_NF_SYNACK) && (int32_t)(s->ack - f->s_isn) < 0)
		return SL_NR_ACK_UNSENT;
	return SL_NR_NONE;
}
