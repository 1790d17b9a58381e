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
	default:
		return 0;
	}
}
