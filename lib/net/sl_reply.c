/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <string.h>

#include "sl_net.h"
#include "sl_net_priv.h"

static const char pairs[201] = "00010203040506070809"
			       "10111213141516171819"
			       "20212223242526272829"
			       "30313233343536373839"
			       "40414243444546474849"
			       "50515253545556575859"
			       "60616263646566676869"
			       "70717273747576777879"
			       "80818283848586878889"
			       "90919293949596979899";

static const uint64_t pow10s[20] = {1ULL,
				    10ULL,
				    100ULL,
				    1000ULL,
				    10000ULL,
				    100000ULL,
				    1000000ULL,
				    10000000ULL,
				    100000000ULL,
				    1000000000ULL,
				    10000000000ULL,
				    100000000000ULL,
				    1000000000000ULL,
				    10000000000000ULL,
				    100000000000000ULL,
				    1000000000000000ULL,
				    10000000000000000ULL,
				    100000000000000000ULL,
				    1000000000000000000ULL,
				    10000000000000000000ULL};

/*
 * How many digits v has, without a loop: its bit length times log10(2)
 * (1233 / 4096) names a power of ten, 10^t; v has t digits below it and
 * t + 1 from it on. v | 1 has v's digits (a power of ten above 1 is
 * even) and a bit length. The loop over the powers it replaces ran a
 * round per digit, three numbers a refusal.
 */
static inline uint32_t
n_digits(uint64_t v)
{
	uint64_t x = v | 1;
	uint32_t t = (uint32_t)(64 - __builtin_clzll(x)) * 1233 >> 12;

	return t + (x >= pow10s[t]);
}

/*
 * v's digits into buf; *words: its pairs of digits, each loaded as a
 * little-endian word, and an odd length's first digit shifted up a byte,
 * summed (num_set turns that into the checksum).
 */
static inline uint32_t
digits(uint64_t v, char *buf, uint32_t *words)
{
	uint32_t n = n_digits(v), i, u = 0;
	uint16_t w;

	/* two digits per division, written backwards */
	for (i = n; v >= 100; i -= 2, v /= 100) {
		memcpy(&w, pairs + 2 * (v % 100), 2);
		memcpy(buf + i - 2, &w, 2);
		u += w;
	}
	if (v >= 10) {
		memcpy(&w, pairs + 2 * v, 2);
		memcpy(buf, &w, 2);
		u += w;
	} else {
		buf[0] = (char)('0' + v);
		u += (uint32_t)('0' + v) << 8;
	}
	*words = u;
	return n;
}

uint32_t
sl_utoa(uint64_t v, char *buf)
{
	uint32_t words;

	return digits(v, buf, &words);
}

/*
 * One writer serves two modes. Direct: numbers are written as digits.
 * Template: each number closes a constant segment and leaves a slot, so
 * that a reply is later one copy per segment plus a few digits, with the
 * segments' checksums summed in advance.
 */
struct w {
	char *b;
	uint32_t n, size;
	int overflow;
	struct sl_reply_tpl *tpl; /* template mode when not NULL */
	uint32_t seg_start;
	uint8_t bake; /* template: limit and window are constant */
};

static void
put(struct w *w, const char *s, uint32_t len)
{
	if (w->n + len > w->size) {
		w->overflow = 1;
		return;
	}
	memcpy(w->b + w->n, s, len);
	w->n += len;
}

#define PUTS(w, lit) put(w, lit, sizeof(lit) - 1)

static void
close_seg(struct w *w, uint8_t slot)
{
	struct sl_reply_tpl *t = w->tpl;

	if (t->n >= SL_TPL_SEGS) {
		w->overflow = 1;
		return;
	}
	t->seg[t->n].off = (uint16_t)w->seg_start;
	t->seg[t->n].len = (uint16_t)(w->n - w->seg_start);
	t->seg[t->n].sum = (uint16_t)sl_cksum_partial(w->b + w->seg_start,
						      w->n - w->seg_start, 0);
	t->seg[t->n].slot = slot;
	t->n++;
	w->seg_start = w->n;
}

static void
put_num(struct w *w, uint8_t slot, uint64_t v)
{
	char d[20];

	if (w->tpl != NULL &&
	    !(w->bake && (slot == SL_SLOT_LIMIT || slot == SL_SLOT_WINDOW)))
		close_seg(w, slot);
	else
		put(w, d, sl_utoa(v, d));
}

static const char *
status_line(uint16_t st, uint32_t *len)
{
	static const char s429[] = "HTTP/1.1 429 Too Many Requests\r\n";
	static const char s403[] = "HTTP/1.1 403 Forbidden\r\n";
	static const char s431[] =
		"HTTP/1.1 431 Request Header Fields Too Large\r\n";
	static const char s400[] = "HTTP/1.1 400 Bad Request\r\n";
	static const char s408[] = "HTTP/1.1 408 Request Timeout\r\n";

	switch (st) {
	case 429:
		*len = sizeof(s429) - 1;
		return s429;
	case 403:
		*len = sizeof(s403) - 1;
		return s403;
	case 431:
		*len = sizeof(s431) - 1;
		return s431;
	case 408:
		*len = sizeof(s408) - 1;
		return s408;
	default:
		*len = sizeof(s400) - 1;
		return s400;
	}
}

/*
 * The fields of draft-ietf-httpapi-ratelimit-headers as its revision -10
 * (and the working group's text of September 2025) defines them: a quota
 * policy item per policy, RateLimit-Policy: "NAME";q=QUOTA;w=WINDOW, and
 * a service limit item, RateLimit: "NAME";r=REMAINING;t=SECONDS, both
 * Structured Fields (RFC 9651) with the policy's name a String; legacy
 * draft-06 RateLimit-Limit/-Remaining/-Reset where asked for.
 */
static void
ratelimit_headers(struct w *w, const struct sl_reply_info *ri)
{
	if (ri->headers & SL_RH_DRAFT) {
		PUTS(w, "RateLimit-Policy: \"");
		put(w, ri->rule, ri->rule_len);
		PUTS(w, "\";q=");
		put_num(w, SL_SLOT_LIMIT, ri->limit);
		PUTS(w, ";w=");
		put_num(w, SL_SLOT_WINDOW, ri->window_s);
		PUTS(w, "\r\nRateLimit: \"");
		put(w, ri->rule, ri->rule_len);
		PUTS(w, "\";r=");
		put_num(w, SL_SLOT_REMAINING, ri->remaining);
		PUTS(w, ";t=");
		put_num(w, SL_SLOT_RESET, ri->reset_s);
		PUTS(w, "\r\n");
	}
	if (ri->headers & SL_RH_LEGACY) {
		PUTS(w, "RateLimit-Limit: ");
		put_num(w, SL_SLOT_LIMIT, ri->limit);
		PUTS(w, "\r\nRateLimit-Remaining: ");
		put_num(w, SL_SLOT_REMAINING, ri->remaining);
		PUTS(w, "\r\nRateLimit-Reset: ");
		put_num(w, SL_SLOT_RESET, ri->reset_s);
		PUTS(w, "\r\n");
	}
}

/* The JSON body. Returns the length of its constant part. */
static uint32_t
body(struct w *w, const struct sl_reply_info *ri)
{
	uint32_t start = w->n, fixed;

	switch (ri->status) {
	case 429:
		if (ri->problem) {
			/* the policy named as in RateLimit-Policy (its
			 * opaque id where the rule is not exposed) */
			const char *type =
				ri->problem_type != NULL
					? ri->problem_type
					: "https://iana.org/assignments/"
					  "http-problem-types#quota-exceeded";

			PUTS(w, "{\"type\":\"");
			put(w, type, (uint32_t)strlen(type));
			PUTS(w, "\",\"title\":\"Too Many Requests\","
				"\"status\":429,\"detail\":\"the quota of "
				"policy ");
			put(w, ri->rule, ri->rule_len);
			PUTS(w, " is spent\",\"violated-policies\":[\"");
			put(w, ri->rule, ri->rule_len);
			PUTS(w, "\"],\"retry_after\":");
			fixed = w->n - start;
			put_num(w, SL_SLOT_RETRY, ri->retry_after_s);
			PUTS(w, "}\n");
			return fixed + 2;
		}
		PUTS(w, "{\"error\":\"rate_limited\"");
		if (ri->expose_rule) {
			PUTS(w, ",\"rule\":\"");
			put(w, ri->rule, ri->rule_len);
			PUTS(w, "\"");
		}
		PUTS(w, ",\"retry_after\":");
		fixed = w->n - start;
		put_num(w, SL_SLOT_RETRY, ri->retry_after_s);
		PUTS(w, "}\n");
		return fixed + 2;
	case 403:
		PUTS(w, "{\"error\":\"forbidden\",\"rule\":\"blocklist\"}\n");
		break;
	case 431:
		PUTS(w, "{\"error\":\"request_header_fields_too_large\"}\n");
		break;
	case 408:
		PUTS(w, "{\"error\":\"request_timeout\"}\n");
		break;
	default:
		PUTS(w, "{\"error\":\"bad_request\",\"reason\":\"");
		if (ri->reason != NULL)
			put(w, ri->reason, (uint32_t)strlen(ri->reason));
		PUTS(w, "\"}\n");
	}
	return w->n - start;
}

static void
emit(struct w *w, const struct sl_reply_info *ri, uint32_t body_len)
{
	uint32_t sl;
	const char *s = status_line(ri->status, &sl);

	put(w, s, sl);
	if (ri->status == 429 && ri->problem)
		PUTS(w, "Content-Type: application/problem+json\r\n");
	else
		PUTS(w, "Content-Type: application/json\r\n");
	PUTS(w, "Cache-Control: no-store\r\n");
	if (ri->status == 429) {
		PUTS(w, "Retry-After: ");
		put_num(w, SL_SLOT_RETRY, ri->retry_after_s);
		PUTS(w, "\r\n");
		ratelimit_headers(w, ri);
		if (ri->expose_rule) {
			PUTS(w, "X-RateLimit-Rule: ");
			put(w, ri->rule, ri->rule_len);
			PUTS(w, "\r\n");
		}
	}
	if (!(ri->status == 429 && ri->keep_alive))
		PUTS(w, "Connection: close\r\n");
	PUTS(w, "Content-Length: ");
	put_num(w, SL_SLOT_CLEN, body_len);
	PUTS(w, "\r\n\r\n");
}

uint32_t
sl_reply_http(char *buf, uint32_t size, const struct sl_reply_info *ri)
{
	struct w w = {.b = buf, .size = size};
	char bbuf[256];
	struct w bw = {.b = bbuf, .size = sizeof(bbuf)};

	body(&bw, ri);
	emit(&w, ri, bw.n);
	put(&w, bbuf, bw.n);
	return w.overflow || bw.overflow ? 0 : w.n;
}

uint32_t
sl_reply_budget(char *buf, uint32_t size, const struct sl_reply_info *ri)
{
	struct w w = {.b = buf, .size = size};

	ratelimit_headers(&w, ri);
	return w.overflow ? 0 : w.n;
}

int
sl_reply_tpl_build(struct sl_reply_tpl *t, const struct sl_reply_info *ri)
{
	struct w w = {.b = t->text,
		      .size = sizeof(t->text) - 32, /* copy_over's slack */
		      .tpl = t,
		      .bake = ri->bake};

	memset(t, 0, offsetof(struct sl_reply_tpl, text));
	t->baked = ri->bake;
	t->limit = ri->limit;
	t->window_s = ri->window_s;
	emit(&w, ri, 0);
	t->body_fixed = (uint16_t)body(&w, ri);
	t->body_has_retry = ri->status == 429;
	close_seg(&w, SL_SLOT_NONE);
	return w.overflow ? -1 : 0;
}

/*
 * Segments are short: whole 32-byte chunks, no call, no tail loop (in
 * 16-byte ones, the loop's own count and branch were a third of the
 * copy). Up to 31 bytes past the end are written (the caller leaves 32
 * of room; later writes cover them) and read (the template text has the
 * slack: the builder refuses a template within 32 bytes of its buffer's
 * end).
 */
static inline void
copy_over(uint8_t *d, const char *s, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i += 32)
		memcpy(d + i, s + i, 32);
}

/* A number of the reply: its digits and their sum, made once per reply. */
struct num {
	char d[24];
	uint32_t n;
	uint16_t sum;
};

/*
 * A number's digits and their sum as if at an even offset, in one pass:
 * a pair of digits loaded as a little-endian word is the pair's sum at
 * an odd offset, and every pair of a number lies at the same parity (the
 * length's), so the pairs' words are summed and the total swapped once
 * where they lie at even offsets (an odd length's first digit lies alone
 * at offset 0, as digits() adds it). Summed in a second pass over the digits, a
 * byte at a time, the sums took a third of the fill.
 */
static inline void
num_set(struct num *x, uint64_t v)
{
	uint32_t u;

	x->n = digits(v, x->d, &u);
	x->sum =
		(uint16_t)(x->n & 1
				   ? sl_fold16(u)
				   : __builtin_bswap16((uint16_t)sl_fold16(u)));
}

uint32_t
sl_reply_tpl_fill(const struct sl_reply_tpl *t, const struct sl_reply_nums *v,
		  uint8_t *dst, uint32_t room, uint32_t *sum)
{
	struct num nums[SL_SLOT_CLEN + 1];
	uint32_t pos = 0, acc = 0, i;

	num_set(&nums[SL_SLOT_RETRY], v->retry_after_s);
	num_set(&nums[SL_SLOT_REMAINING], v->remaining);
	/* a refusal's reset is its Retry-After: the digits made once */
	if (v->reset_s == v->retry_after_s)
		nums[SL_SLOT_RESET] = nums[SL_SLOT_RETRY];
	else
		num_set(&nums[SL_SLOT_RESET], v->reset_s);
	num_set(&nums[SL_SLOT_CLEN],
		t->body_fixed +
			(t->body_has_retry ? nums[SL_SLOT_RETRY].n : 0));
	if (!t->baked) {
		num_set(&nums[SL_SLOT_LIMIT], v->limit);
		num_set(&nums[SL_SLOT_WINDOW], v->window_s);
	}
	for (i = 0; i < t->n; i++) {
		const struct sl_reply_tpl_seg *s = &t->seg[i];
		const struct num *x;

		if (pos + s->len + 32 > room)
			return 0;
		copy_over(dst + pos, t->text + s->off, s->len);
		acc += (pos & 1) ? __builtin_bswap16(s->sum) : s->sum;
		pos += s->len;
		if (s->slot == SL_SLOT_NONE)
			continue;
		/* 24 bytes whole: within the 32 of room checked above */
		x = &nums[s->slot];
		memcpy(dst + pos, x->d, sizeof(x->d));
		acc += (pos & 1) ? __builtin_bswap16(x->sum) : x->sum;
		pos += x->n;
	}
	*sum = acc;
	return pos;
}

static inline void
wr16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static inline void
wr32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

uint32_t
sl_reply_segment(uint8_t *out, uint32_t room, const uint8_t *req,
		 const struct sl_pkt *p, int to_client, uint32_t seq,
		 uint32_t ack, uint8_t flags, const void *payload,
		 uint32_t plen)
{
	return sl_reply_segment_sum(out, room, req, p, to_client, seq, ack,
				    flags, payload, plen, UINT32_MAX);
}

/*
 * Two addresses of n bytes (4 or 16) summed as the host loads their
 * words, as the pseudo-header's check does, folded and put in network
 * order once (read a byte at a time into big-endian words, each byte
 * was a shift and an or).
 */
static inline uint32_t
addr_sum(const uint8_t *a, const uint8_t *b, uint32_t n)
{
	return sl_raw16(sl_fold_raw(sl_sum_addrs(a, b, n)));
}

/*
 * Fixed-size copies and sums only: the Ethernet part is copied as 24
 * bytes whatever its length (at most 22; what lands past it is
 * overwritten by the IP header), and the addresses as 16.
 */
uint32_t
sl_reply_segment_sum(uint8_t *out, uint32_t room, const uint8_t *req,
		     const struct sl_pkt *p, int to_client, uint32_t seq,
		     uint32_t ack, uint8_t flags, const void *payload,
		     uint32_t plen, uint32_t payload_sum)
{
	uint8_t l2[24], src[16], dst[16];
	int v6 = p->af == SL_AF_INET6;
	uint32_t l3h = v6 ? 40 : 20;
	uint32_t off = p->l3_off, total = off + l3h + 20 + plen;
	uint32_t l4len = 20 + plen, acc;
	uint16_t sport = to_client ? p->dport : p->sport;
	uint16_t dport = to_client ? p->sport : p->dport;
	uint8_t *ip = out + off, *t = ip + l3h;

	if (total > room || off > 22 || total - off > 0xffff)
		return 0;
	/* everything read from req first: out may overwrite it */
	memcpy(l2, req, sizeof(l2));
	memcpy(src, to_client ? p->dst : p->src, 16);
	memcpy(dst, to_client ? p->src : p->dst, 16);
	/* callers may write the payload in place first (sl_reply_payload_off)
	 */
	if (payload != NULL && plen && payload != t + 20)
		memmove(t + 20, payload, plen);
	if (payload_sum == UINT32_MAX)
		payload_sum = plen ? sl_cksum_partial(t + 20, plen, 0) : 0;
	memcpy(out, l2, sizeof(l2));
	if (to_client) {
		memcpy(out, l2 + 6, 6);
		memcpy(out + 6, l2, 6);
	}
	if (v6) {
		wr32(ip, 0x60000000u);
		wr16(ip + 4, (uint16_t)l4len);
		ip[6] = 6;
		ip[7] = 64;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, dst, 16);
		acc = addr_sum(src, dst, 16) + (l4len >> 16);
	} else {
		ip[0] = 0x45;
		ip[1] = 0;
		wr16(ip + 2, (uint16_t)(20 + l4len));
		wr16(ip + 4, 0);
		wr16(ip + 6, 0x4000); /* DF */
		ip[8] = 64;
		ip[9] = 6;
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, dst, 4);
		acc = addr_sum(src, dst, 4);
		wr16(ip + 10, sl_cksum_fold(0x4500 + 20 + l4len + 0x4000 +
					    0x4006 + acc));
	}
	wr16(t, sport);
	wr16(t + 2, dport);
	wr32(t + 4, seq);
	wr32(t + 8, ack);
	t[12] = 0x50;
	t[13] = flags;
	wr16(t + 14, 1024);
	wr16(t + 16, 0);
	wr16(t + 18, 0);
	/*
	 * pseudo-header, TCP header and the payload summed ahead; the header
	 * from the values, not read back from the bytes just stored (that
	 * read would wait for the narrow stores to drain)
	 */
	acc += (l4len & 0xffff) + 6 + sport + dport + (seq >> 16) +
	       (seq & 0xffff) + (ack >> 16) + (ack & 0xffff) +
	       (0x50u << 8 | flags) + 1024 + payload_sum;
	wr16(t + 16, sl_cksum_fold(acc));
	return total;
}

uint32_t
sl_reply_payload_off(const struct sl_pkt *p)
{
	return p->l3_off + (p->af == SL_AF_INET6 ? 40u : 20u) + 20u;
}
