/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef FLOW_UTIL_H
#define FLOW_UTIL_H

/* What the flow tests share: a table, a connection, its segments. */

#include <stddef.h>
#include <stdint.h>

#include "sl_flow.h"

#define SYN 0x02
#define ACK 0x10
#define FIN 0x01
#define RST 0x04
#define URG 0x20

/* The server's ISN + 1 in open_flow: what client segments acknowledge. */
#define SACK 5001u

/* What the callback saw. */
struct seen {
	int n;
	int kinds[64];
	char targets[64][32];
	char keys[64][32];
	int stop_at; /* return STOP on this event number (1-based), 0 never */
	int first[64];
};

/* requests: a key, a body by length, a chunked body, a bare GET */
extern const char R1[];
extern const char R2[];
extern const char R3[];
extern const char R4[];

/* A whole response without a body: 38 bytes. */
extern const char OK0[];
#define OK0_LEN 38u

enum sl_req_action on_ev(void *arg, struct sl_flow *f,
			 const struct sl_flow_event *ev);

struct sl_flow_params params(uint32_t cap, uint32_t slots, uint32_t maxhead);

struct sl_flow_table *table(uint32_t cap, uint32_t slots, uint32_t maxhead);

struct sl_flow_key key(uint32_t client);

enum sl_seg_verdict seg_at(struct sl_flow_table *t, const struct sl_flow_key *k,
			   uint32_t seq, uint32_t ack, uint8_t fl,
			   const char *data, size_t len, uint64_t now,
			   struct seen *s);

enum sl_seg_verdict seg(struct sl_flow_table *t, const struct sl_flow_key *k,
			uint32_t seq, uint8_t fl, const char *data, size_t len,
			struct seen *s);

/* A server segment: seq, ack, flags and payload (NULL: len bytes that
 * are no response the tracker can frame). */
void srv(struct sl_flow_table *t, const struct sl_flow_key *k, uint32_t seq,
	 uint32_t ack, uint8_t fl, const char *data, uint32_t len);

/* The three-way handshake: client ISN 999, server ISN 5000. */
void open_flow(struct sl_flow_table *t, const struct sl_flow_key *k,
	       struct seen *s);

#endif /* FLOW_UTIL_H */
