/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_EXPLAIN_H
#define SLUICE_EXPLAIN_H

/*
 * Prints, as one JSON line, how sluice reads the request head in file
 * ("-": stdin) from peer under config: the normal path and host, the
 * identity, whether it is blocked or refused (and why), and each rule
 * that matches with the bucket it counts in. No EAL. Returns the exit
 * status.
 */
int sl_explain(const char *config, const char *file, const char *peer);

#endif
