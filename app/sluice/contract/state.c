/* SPDX-License-Identifier: BSD-3-Clause */
/* State files that outlive the process: sl_state.h says why. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sl_state.h"

#define MAGIC   "SLSTATE1"
#define HDR_LEN 4096u

uint64_t
sl_state_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int
valid(const struct sl_state_hdr *h, uint64_t layout)
{
	return memcmp(h->magic, MAGIC, sizeof(h->magic)) == 0 &&
	       h->layout == layout;
}

/* family 0: a file written before families were kept, read only as is */
static int
kin(const struct sl_state_hdr *h, uint64_t family)
{
	return memcmp(h->magic, MAGIC, sizeof(h->magic)) == 0 &&
	       h->family == family && family != 0;
}

static int
path_of(const char *dir, const char *name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	return n > 0 && (size_t)n < size ? 0 : -1;
}

/* dir/name opened for reading and its header read: the fd, or -1. */
static int
open_hdr(const char *dir, const char *name, struct sl_state_hdr *h)
{
	char path[512];
	int fd;

	if (path_of(dir, name, path, sizeof(path)) != 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int
sl_state_resumed(const char *dir, const char *name, uint64_t layout,
		 uint64_t family, uint64_t wall, uint64_t *now)
{
	struct sl_state_hdr h;
	uint64_t last, at;
	int fd = open_hdr(dir, name, &h);

	if (fd < 0)
		return -1;
	close(fd);
	if (!valid(&h, layout) && !kin(&h, family))
		return -1;
	last = h.last_now_ns > h.now0_ns ? h.last_now_ns : h.now0_ns;
	at = h.wall0_ns + (last - h.now0_ns); /* its last poll, on the wall */
	*now = last + (wall > at ? wall - at : 0);
	return 0;
}

void *
sl_state_other(const char *dir, const char *name, uint64_t family,
	       uint64_t layout, uint64_t *size_arg, size_t *len)
{
	struct sl_state_hdr h;
	struct stat st;
	void *p = NULL;
	int fd = open_hdr(dir, name, &h);

	if (fd < 0)
		return NULL;
	if (kin(&h, family) && h.layout != layout && fstat(fd, &st) == 0 &&
	    (size_t)st.st_size > HDR_LEN) {
		*len = (size_t)st.st_size - HDR_LEN;
		*size_arg = h.size_arg;
		p = malloc(*len);
		if (p != NULL && pread(fd, p, *len, HDR_LEN) != (ssize_t)*len) {
			free(p);
			p = NULL;
		}
	}
	close(fd);
	return p;
}

/* The file of len bytes mapped; *fresh when it was not of that length. */
static void *
map_file(const char *dir, const char *name, size_t len, int *fresh)
{
	char path[512];
	struct stat st;
	void *p;
	int fd;

	if (path_of(dir, name, path, sizeof(path)) != 0) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return NULL;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	*fresh = fstat(fd, &st) != 0 || (size_t)st.st_size != len;
	if (*fresh &&
	    (ftruncate(fd, 0) != 0 || ftruncate(fd, (off_t)len) != 0)) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

int
sl_state_map(struct sl_state_file *f, const char *dir, const char *name,
	     size_t payload, uint64_t layout, uint64_t family,
	     uint64_t size_arg, uint64_t now)
{
	size_t len = HDR_LEN + payload;
	int fresh = 1;
	void *p = map_file(dir, name, len, &fresh);

	memset(f, 0, sizeof(*f));
	if (p == NULL)
		return errno ? -errno : -EIO;
	f->hdr = p;
	f->len = len;
	if (!fresh && !valid(f->hdr, layout)) {
		memset(p, 0, len); /* another layout: nothing of it is read */
		fresh = 1;
	}
	f->arena = (struct sl_mem_arena){.base = (unsigned char *)p + HDR_LEN,
					 .size = payload,
					 .fresh = fresh};
	f->found = (uint8_t)!fresh;
	memcpy(f->hdr->magic, MAGIC, sizeof(f->hdr->magic));
	f->hdr->layout = layout;
	f->hdr->family = family;
	f->hdr->size_arg = size_arg;
	f->hdr->now0_ns = now;
	f->hdr->wall0_ns = sl_state_wall_ns();
	f->hdr->last_now_ns = now;
	return 0;
}

void
sl_state_reset(struct sl_state_file *f)
{
	memset(f->arena.base, 0, f->arena.size);
	f->arena.off = 0;
	f->arena.fresh = 1;
	f->found = 0;
}

void
sl_state_unmap(struct sl_state_file *f, uint64_t now)
{
	if (f->hdr == NULL)
		return;
	if (now > f->hdr->last_now_ns)
		f->hdr->last_now_ns = now;
	munmap(f->hdr, f->len);
	f->hdr = NULL;
}
