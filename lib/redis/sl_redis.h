/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_REDIS_H
#define SL_REDIS_H

/*
 * Redis Cluster arithmetic, apart from any connection: which slot a key
 * lives in (CRC16/XMODEM of the key or of its hash tag, modulo 16384) and
 * what a redirection error says. Pure C, no hiredis.
 */

#include <stddef.h>
#include <stdint.h>

#define SL_REDIS_SLOTS 16384

uint16_t sl_redis_crc16(const char *b, size_t n);

/* The slot of a key: the hash tag's ({...}, first '{' to the next '}',
 * not empty) if it has one, else the whole key's. */
uint16_t sl_redis_slot(const char *key, size_t n);

/* A Redis Cluster redirection: "MOVED slot host:port" or "ASK ...". */
struct sl_redirect {
	int moved; /* MOVED (the slot lives there now), else ASK (once) */
	unsigned int slot;
	uint16_t port;
	char host[256];
};

/* Whether err is a redirection; *r filled in when it is. */
int sl_redis_redirect(const char *err, struct sl_redirect *r);

#endif /* SL_REDIS_H */
