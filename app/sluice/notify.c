/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "notify.h"

int
sl_notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	socklen_t len;
	ssize_t n;
	int fd;

	if (path == NULL || path[0] == '\0' ||
	    strlen(path) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, path);
	/* an abstract socket is written with a leading '@' */
	if (a.sun_path[0] == '@')
		a.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			  strlen(path));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	n = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&a,
		   len);
	close(fd);
	return n == (ssize_t)strlen(msg) ? 0 : -1;
}

uint64_t
sl_notify_watchdog_us(void)
{
	const char *us = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");

	if (us == NULL || (pid != NULL && atol(pid) != (long)getpid()))
		return 0;
	return strtoull(us, NULL, 10);
}

int64_t
sl_since_exec_ms(void)
{
	char buf[1024], *p;
	unsigned long long start = 0;
	struct timespec now;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;
	int i;

	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* field 22, counted after the command's closing ')': it may hold
	 * spaces and parentheses of its own */
	p = strrchr(buf, ')');
	for (i = 2; p != NULL && i < 22; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", &start) != 1 || hz <= 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &now) != 0)
		return -1;
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 -
	       (int64_t)(start * 1000 / (unsigned long long)hz);
}
