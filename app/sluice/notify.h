/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_NOTIFY_H
#define SLUICE_NOTIFY_H

/*
 * systemd's notify protocol (sd_notify(3)), spoken by hand so that the
 * appliance needs no libsystemd: READY=1 once the ports forward, and
 * WATCHDOG=1 while every worker completes its loops (a unit with
 * Type=notify and WatchdogSec= restarts one whose workers stopped).
 */

#include <stdint.h>

/* Sends msg to $NOTIFY_SOCKET; 0, or -1 where there is none or it fails. */
int sl_notify(const char *msg);

/* The watchdog's interval asked for this process ($WATCHDOG_USEC, and
 * $WATCHDOG_PID naming it when set), in microseconds; 0: none. */
uint64_t sl_notify_watchdog_us(void);

/* Milliseconds since this process was exec'd (the kernel's start time,
 * in clock ticks: 10 ms here), for the time from exec to forwarding;
 * -1 where /proc cannot say. */
int64_t sl_since_exec_ms(void);

#endif /* SLUICE_NOTIFY_H */
