// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The user-space API (include/offnic_uapi.h, docs/uapi.md): /dev/offnicN, one misc
 * character device per function, with ioctls for BAR0 register reads and writes and
 * the counters' 64-bit totals. The device may go (remove) while a file is open: the
 * state the file holds is reference counted and says when the adapter is gone.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "offnic.h"
#include "offnic_uapi.h"

struct offnic_cdev {
	struct kref ref;
	struct mutex lock;		/* ad against remove */
	struct offnic_adapter *ad;	/* NULL once the function is removed */
	struct miscdevice misc;
	int id;
	char name[16];
};

static DEFINE_IDA(offnic_cdev_ids);

static void offnic_cdev_free(struct kref *ref)
{
	struct offnic_cdev *cd = container_of(ref, struct offnic_cdev, ref);

	ida_free(&offnic_cdev_ids, cd->id);
	kfree(cd);
}

static int offnic_cdev_open(struct inode *inode, struct file *f)
{
	struct offnic_cdev *cd = container_of(f->private_data, struct offnic_cdev, misc);

	if (!capable(CAP_NET_ADMIN))
		return -EPERM;
	kref_get(&cd->ref);	/* misc_open holds misc_mtx: remove has not deregistered yet */
	f->private_data = cd;
	return 0;
}

static int offnic_cdev_release(struct inode *inode, struct file *f)
{
	struct offnic_cdev *cd = f->private_data;

	kref_put(&cd->ref, offnic_cdev_free);
	return 0;
}

static void offnic_cdev_info(struct offnic_adapter *ad, struct offnic_uapi_info *info)
{
	u32 p;

	memset(info, 0, sizeof(*info));
	info->version = OFFNIC_UAPI_VERSION;
	info->bar_len = ad->hw.bar_len;
	info->n_ports = ad->hw.n_ports;
	info->n_counters = offnic_counters_n_values(&ad->hw);
	strscpy(info->bus, pci_name(ad->pdev), sizeof(info->bus));
	for (p = 0; p < ad->hw.n_ports && p < ARRAY_SIZE(info->ifname); p++)
		if (ad->ndev[p])
			strscpy(info->ifname[p], netdev_name(ad->ndev[p]), sizeof(info->ifname[p]));
}

static int offnic_cdev_counter(struct offnic_adapter *ad, struct offnic_uapi_counter *c)
{
	unsigned int per_port = offnic_counters_n_port_defs();
	const char *name;
	u32 port;

	name = offnic_counter_value_name(&ad->hw, c->index, &port);
	if (!name)
		return -ENOENT;
	offnic_update_counters(ad);
	mutex_lock(&ad->stats_lock);
	c->value = ad->ctr_total[c->index];
	mutex_unlock(&ad->stats_lock);
	c->port = c->index < ad->hw.n_ports * per_port ? port : ~0u;
	strscpy(c->name, name, sizeof(c->name));
	return 0;
}

static long offnic_cdev_do(struct offnic_adapter *ad, unsigned int cmd, void __user *arg)
{
	struct offnic_uapi_counter ctr;
	struct offnic_uapi_info info;
	struct offnic_uapi_reg reg;
	int err;

	switch (cmd) {
	case OFFNIC_IOC_INFO:
		offnic_cdev_info(ad, &info);
		return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
	case OFFNIC_IOC_REG_READ:
	case OFFNIC_IOC_REG_WRITE:
		if (copy_from_user(&reg, arg, sizeof(reg)))
			return -EFAULT;
		if (reg.offset & 3 || reg.offset >= ad->hw.bar_len)
			return -EINVAL;
		if (cmd == OFFNIC_IOC_REG_WRITE) {
			offnic_wr(&ad->hw, reg.offset, reg.value);
			return 0;
		}
		reg.value = offnic_rd(&ad->hw, reg.offset);
		return copy_to_user(arg, &reg, sizeof(reg)) ? -EFAULT : 0;
	case OFFNIC_IOC_COUNTER:
		if (copy_from_user(&ctr, arg, sizeof(ctr)))
			return -EFAULT;
		err = offnic_cdev_counter(ad, &ctr);
		if (err)
			return err;
		return copy_to_user(arg, &ctr, sizeof(ctr)) ? -EFAULT : 0;
	default:
		return -ENOTTY;
	}
}

static long offnic_cdev_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct offnic_cdev *cd = f->private_data;
	long ret = -ENODEV;

	mutex_lock(&cd->lock);
	if (cd->ad)
		ret = offnic_cdev_do(cd->ad, cmd, (void __user *)arg);
	mutex_unlock(&cd->lock);
	return ret;
}

static const struct file_operations offnic_cdev_fops = {
	.owner = THIS_MODULE,
	.open = offnic_cdev_open,
	.release = offnic_cdev_release,
	.unlocked_ioctl = offnic_cdev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

int offnic_cdev_create(struct offnic_adapter *ad)
{
	struct offnic_cdev *cd;
	int err;

	cd = kzalloc(sizeof(*cd), GFP_KERNEL);
	if (!cd)
		return -ENOMEM;
	cd->id = ida_alloc(&offnic_cdev_ids, GFP_KERNEL);
	if (cd->id < 0) {
		err = cd->id;
		kfree(cd);
		return err;
	}
	kref_init(&cd->ref);
	mutex_init(&cd->lock);
	cd->ad = ad;
	snprintf(cd->name, sizeof(cd->name), "offnic%d", cd->id);
	cd->misc.minor = MISC_DYNAMIC_MINOR;
	cd->misc.name = cd->name;
	cd->misc.fops = &offnic_cdev_fops;
	cd->misc.mode = 0600;
	cd->misc.parent = &ad->pdev->dev;
	err = misc_register(&cd->misc);
	if (err) {
		kref_put(&cd->ref, offnic_cdev_free);
		return err;
	}
	ad->cdev = cd;
	return 0;
}

void offnic_cdev_destroy(struct offnic_adapter *ad)
{
	struct offnic_cdev *cd = ad->cdev;

	if (!cd)
		return;
	misc_deregister(&cd->misc);
	mutex_lock(&cd->lock);
	cd->ad = NULL;
	mutex_unlock(&cd->lock);
	ad->cdev = NULL;
	kref_put(&cd->ref, offnic_cdev_free);
}
