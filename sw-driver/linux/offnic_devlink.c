// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * devlink: `devlink dev info` shows the control processor's firmware, its version and
 * state as the firmware wrote them into the fw block (running versions "fw" and
 * "fw.state"), and the board id (fixed "board.id"). A build without the control
 * processor reports the driver name and board only.
 */
#include <net/devlink.h>

#include "offnic.h"
#include "../include/offnic_regs.h"

static int offnic_devlink_info_get(struct devlink *dl, struct devlink_info_req *req,
				   struct netlink_ext_ack *extack)
{
	struct offnic_adapter *ad = *(struct offnic_adapter **)devlink_priv(dl);
	struct offnic_fw_info fw;
	char buf[32];
	int err;

	err = devlink_info_driver_name_put(req, OFFNIC_DRV_NAME);
	if (err)
		return err;
	snprintf(buf, sizeof(buf), "%u",
		 offnic_rd(&ad->hw, OFFNIC_RB_DEVICE_ID_REG_BOARD_ID));
	err = devlink_info_version_fixed_put(req, DEVLINK_INFO_VERSION_GENERIC_BOARD_ID, buf);
	if (err || offnic_fw_get(&ad->hw, &fw))
		return err;
	snprintf(buf, sizeof(buf), "%u.%u.%u", fw.version >> 16, (fw.version >> 8) & 0xff,
		 fw.version & 0xff);
	err = devlink_info_version_running_put(req, DEVLINK_INFO_VERSION_GENERIC_FW, buf);
	if (err)
		return err;
	snprintf(buf, sizeof(buf), "%s%s", offnic_fw_state_name(fw.state),
		 fw.status & OFFNIC_RB_FW_REG_STATUS_TRAP_MASK ? "-trapped" : "");
	return devlink_info_version_running_put(req, "fw.state", buf);
}

static const struct devlink_ops offnic_devlink_ops = {
	.info_get = offnic_devlink_info_get,
};

int offnic_devlink_create(struct offnic_adapter *ad)
{
	struct devlink *dl;

	dl = devlink_alloc(&offnic_devlink_ops, sizeof(ad), &ad->pdev->dev);
	if (!dl)
		return -ENOMEM;
	*(struct offnic_adapter **)devlink_priv(dl) = ad;
	devlink_register(dl);
	ad->devlink = dl;
	return 0;
}

void offnic_devlink_destroy(struct offnic_adapter *ad)
{
	if (!ad->devlink)
		return;
	devlink_unregister(ad->devlink);
	devlink_free(ad->devlink);
	ad->devlink = NULL;
}
