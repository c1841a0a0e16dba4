/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer: frame classification and checksum verification. */
#include <stdint.h>
#include <stdlib.h>

#include "sl_net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_pkt p;

	if (size > 65535)
		return 0;
	if (sl_pkt_parse(data, (uint32_t)size, &p) == SL_PKT_TCP) {
		if ((size_t)p.payload_off + p.payload_len > size)
			abort();
		(void)sl_tcp_cksum_ok(data, &p);
	}
	return 0;
}
