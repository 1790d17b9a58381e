/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A user-space host for the driver core (the ctypes tests and the simulation): the
 * log op formats with vsnprintf and hands the line to a callback; the other ops are
 * the caller's. Not part of the kernel module.
 */
#ifndef OFFNIC_USER_H
#define OFFNIC_USER_H

#include "../offnic_hw.h"
#include "../offnic_toe.h"

/* ctx of every op when the ops come from here: the log callback */
struct offnic_user {
	void (*log)(int level, const char *line);
};

void offnic_user_vlog(void *ctx, int level, const char *fmt, va_list args);
unsigned int offnic_user_sizeof(int what);
u16 offnic_user_idx_add(u16 i, u32 n);
u32 offnic_user_used(u16 prod, u16 cons);
u32 offnic_user_free(u16 prod, u16 cons, unsigned int log_size);
int offnic_user_is_empty(u16 prod, u16 cons);
int offnic_user_is_full(u16 prod, u16 cons, unsigned int log_size);
u32 offnic_user_slot(u16 i, unsigned int log_size);
u32 offnic_user_record_offset(u16 i, unsigned int log_size);
unsigned int offnic_user_phase_of(u16 i, unsigned int log_size);
int offnic_user_is_new(const u8 *rec, u16 cons, unsigned int log_size);

#endif /* OFFNIC_USER_H */
