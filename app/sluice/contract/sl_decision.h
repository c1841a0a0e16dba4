/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_DECISION_H
#define SL_DECISION_H

/*
 * The sampled decision stream's record (the writer is observe/, the
 * workers' side worker/account.c). A worker that samples a decision copies one
 * fixed 128-byte record into its own SP/SC ring (no allocation, no lock,
 * no formatting; a full ring drops the record and counts it). A control
 * thread drains the rings and writes JSON lines to a file, or XADDs to a
 * capped Redis Stream over its own connection, so a slow disk or a slow
 * Redis can only make records drop, never slow a worker or the
 * coordinator.
 */

#include <stdint.h>

#include "sl_ident.h"

enum sl_dec_verdict { SL_V_ALLOWED = 0, SL_V_REJECTED, SL_V_BLOCKED };

#define SL_DF_DEGRADED 1 /* decided by on_store_failure */
#define SL_DF_PARKED   2 /* waited for the coordinator */
#define SL_DF_SHADOW   4 /* a shadow rule would have rejected it */

#define SL_DEC_NO_RULE 0xfffe /* allowed with no enforcing rule */
#define SL_DEC_RING    4096   /* records per worker ring */

struct sl_dec_rec {
	uint64_t t_ns;      /* worker clock (sl_tsc_ns) */
	uint64_t remaining; /* of the deciding rule */
	uint32_t retry_ms;  /* rejected: the wait it was told, before jitter */
	uint16_t slot;      /* rule counter slot, SL_SLOT_BLOCKLIST, NO_RULE */
	int16_t tier;       /* -1: no API key */
	uint8_t verdict;
	uint8_t flags;
	uint8_t kind; /* enum sl_ident_kind */
	uint8_t ip_af;
	uint8_t len;
	uint8_t worker;
	uint8_t pad[2];
	uint8_t id[SL_IDENT_MAX];
};

#endif /* SL_DECISION_H */
