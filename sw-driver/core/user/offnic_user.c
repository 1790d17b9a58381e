// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The user-space host of the driver core: see offnic_user.h. */
#include <stdio.h>

#include "offnic_user.h"

void offnic_user_vlog(void *ctx, int level, const char *fmt, va_list args)
{
	struct offnic_user *u = ctx;
	char line[512];

	vsnprintf(line, sizeof(line), fmt, args);
	if (u && u->log)
		u->log(level, line);
}

/* Sizes of the core's structs, so a binding can check its mirror of them */
unsigned int offnic_user_sizeof(int what)
{
	switch (what) {
	case 0:
		return sizeof(struct offnic_hw);
	case 1:
		return sizeof(struct offnic_ring);
	case 2:
		return sizeof(struct offnic_desc);
	case 3:
		return sizeof(struct offnic_cpl);
	case 4:
		return sizeof(struct offnic_event);
	case 5:
		return sizeof(struct offnic_os_ops);
	case 6:
		return sizeof(struct offnic_block);
	case 7:
		return sizeof(struct offnic_toe_addr);
	case 8:
		return sizeof(struct offnic_toe_handoff);
	case 9:
		return sizeof(struct offnic_toe_params);
	case 10:
		return sizeof(struct offnic_toe_answer);
	case 11:
		return sizeof(struct offnic_toe_note);
	case 12:
		return sizeof(struct offnic_toe_config);
	default:
		return 0;
	}
}

/* The header's inline ring arithmetic, exported for bindings */
u16 offnic_user_idx_add(u16 i, u32 n)
{
	return offnic_idx_add(i, n);
}

u32 offnic_user_used(u16 prod, u16 cons)
{
	return offnic_used(prod, cons);
}

u32 offnic_user_free(u16 prod, u16 cons, unsigned int log_size)
{
	return offnic_free(prod, cons, log_size);
}

int offnic_user_is_empty(u16 prod, u16 cons)
{
	return offnic_is_empty(prod, cons);
}

int offnic_user_is_full(u16 prod, u16 cons, unsigned int log_size)
{
	return offnic_is_full(prod, cons, log_size);
}

u32 offnic_user_slot(u16 i, unsigned int log_size)
{
	return offnic_slot(i, log_size);
}

u32 offnic_user_record_offset(u16 i, unsigned int log_size)
{
	return offnic_record_offset(i, log_size);
}

unsigned int offnic_user_phase_of(u16 i, unsigned int log_size)
{
	return offnic_phase_of(i, log_size);
}

int offnic_user_is_new(const u8 *rec, u16 cons, unsigned int log_size)
{
	return offnic_is_new(rec, cons, log_size);
}
