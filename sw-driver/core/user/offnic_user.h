/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A user-space host for the driver core (the ctypes tests and the simulation): the
 * log op formats with vsnprintf and hands the line to a callback; the other ops are
 * the caller's. Not part of the kernel module.
 */
#ifndef OFFNIC_USER_H
#define OFFNIC_USER_H

#include "../offnic_hw.h"

/* ctx of every op when the ops come from here: the log callback */
struct offnic_user {
	void (*log)(int level, const char *line);
};

void offnic_user_vlog(void *ctx, int level, const char *fmt, va_list args);
unsigned int offnic_user_sizeof(int what);

#endif /* OFFNIC_USER_H */
