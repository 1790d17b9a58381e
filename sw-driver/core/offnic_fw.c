// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The control processor's fw block (docs/registers.md, block fw): the firmware's version
 * and state as the firmware wrote them, for devlink and ethtool -i.
 */
#include "offnic_hw.h"
#include "../include/offnic_regs.h"

static u32 fw_block(const struct offnic_hw *hw)
{
	unsigned int i;

	for (i = 0; i < hw->n_blocks; i++)
		if (hw->blocks[i].known && hw->blocks[i].type == OFFNIC_RB_FW_TYPE)
			return hw->blocks[i].offset;
	return 0;
}

/* OFFNIC_ERR_MISSING when the build has no control processor */
int offnic_fw_get(const struct offnic_hw *hw, struct offnic_fw_info *fw)
{
	u32 at = fw_block(hw);

	if (!at)
		return OFFNIC_ERR_MISSING;
	fw->version = offnic_rd(hw, at + OFFNIC_RB_FW_REG_FW_VERSION);
	fw->state = offnic_rd(hw, at + OFFNIC_RB_FW_REG_STATE);
	fw->status = offnic_rd(hw, at + OFFNIC_RB_FW_REG_STATUS);
	fw->heartbeat = offnic_rd(hw, at + OFFNIC_RB_FW_REG_HEARTBEAT);
	return OFFNIC_OK;
}

/* fw_proto.h FW_STATE_* by name */
const char *offnic_fw_state_name(u32 state)
{
	static const char *const names[] = { "reset", "booting", "running", "running-no-toe" };

	return state < ARRAY_SIZE(names) ? names[state] : "unknown";
}
