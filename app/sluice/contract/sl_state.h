/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_STATE_H
#define SL_STATE_H

/*
 * State in a file that outlives the process (dataplane.state_dir), so
 * that a restart grants nothing: a clean stop, a crash or the watchdog's
 * kill leave the node's buckets as the last answer left them, and the
 * next process maps the same file and goes on. Chosen over a snapshot
 * written now and then: nothing to copy while the tables change, nothing
 * lost between two snapshots, and no cost but one store a poll. On tmpfs
 * (/dev/shm, /run) the file is memory, as the table was; it does not
 * outlive a reboot.
 *
 * Time: a bucket holds instants of the process's clock (TSC nanoseconds),
 * which a new process reads against another calibration, and a reboot
 * restarts. So the file says the last instant its owner saw and how that
 * instant stood to the wall clock; the new process sets its clock
 * (sl_app epoch_ns) to go on from there by the wall time that passed:
 * the buckets refill by the time sluice was down, no more (a wall clock
 * set back counts as no time at all).
 */

#include <stddef.h>
#include <stdint.h>

#include "sl_mem.h"

struct sl_state_hdr {
	char magic[8];
	uint64_t layout;   /* what follows it, sizes included */
	uint64_t wall0_ns; /* a moment of the process that last mapped it */
	uint64_t now0_ns;  /* ... on its clock */
	volatile uint64_t last_now_ns; /* its owner's clock at its last poll */
	/* the layout but for its owner's size (size_arg): a file of the
	 * same family and another size is carried over, not started afresh.
	 * Appended: a file from before them reads 0 here */
	uint64_t family;
	uint64_t size_arg;
};

struct sl_state_file {
	struct sl_state_hdr *hdr;
	size_t len;
	struct sl_mem_arena arena; /* the payload: tables carved from it */
	uint8_t found; /* the file held this layout: the tables are as left */
};

/*
 * Where the clock of dir/name's owner would be at wall time wall (ns),
 * had it run on: 0, or -1 when the file holds nothing of this layout or
 * family.
 */
int sl_state_resumed(const char *dir, const char *name, uint64_t layout,
		     uint64_t family, uint64_t wall, uint64_t *now);
/*
 * A copy (malloc'd, the caller frees it) of the payload of dir/name when
 * it is of this family but not of this layout: another size, to be
 * carried into the new one. NULL otherwise; *size_arg and *len say what
 * it was.
 */
void *sl_state_other(const char *dir, const char *name, uint64_t family,
		     uint64_t layout, uint64_t *size_arg, size_t *len);
/* Maps dir/name with payload bytes after its header (zeroed when it held
 * another layout or none), stamped with the clock's now. 0 or -errno. */
int sl_state_map(struct sl_state_file *f, const char *dir, const char *name,
		 size_t payload, uint64_t layout, uint64_t family,
		 uint64_t size_arg, uint64_t now);
/* The payload found unusable after all: zeroed, a fresh arena. */
void sl_state_reset(struct sl_state_file *f);
void sl_state_unmap(struct sl_state_file *f, uint64_t now);
uint64_t sl_state_wall_ns(void);

/* Every poll: how far its owner's clock got. */
static inline void
sl_state_tick(struct sl_state_file *f, uint64_t now)
{
	if (f->hdr != NULL)
		f->hdr->last_now_ns = now;
}

#endif /* SL_STATE_H */
