/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * offnic's user-space API: one character device per NIC function, /dev/offnicN
 * (docs/uapi.md). The kernel side is a thin pipe: BAR0 register reads and writes and
 * the driver's 64-bit totals of the NIC's counters; the library (sw-driver/ctl) builds
 * everything else (firmware log, cache state, offloaded connections) from the register
 * chain. Every call needs CAP_NET_ADMIN. Shared by offnic.ko and liboffnic_ctl.
 */
#ifndef OFFNIC_UAPI_H
#define OFFNIC_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define OFFNIC_UAPI_VERSION 1
#define OFFNIC_NAME_BYTES 48

/* OFFNIC_IOC_INFO: what the device is */
struct offnic_uapi_info {
	__u32 version;		/* OFFNIC_UAPI_VERSION */
	__u32 bar_len;		/* BAR0 bytes: offsets below it may be accessed */
	__u32 n_ports;
	__u32 n_counters;	/* indexes OFFNIC_IOC_COUNTER takes */
	char bus[32];		/* the PCI function, e.g. 0000:00:03.0 */
	char ifname[2][16];	/* each port's netdev */
};

/* OFFNIC_IOC_REG_READ / OFFNIC_IOC_REG_WRITE: one 32-bit register, offset 4-aligned */
struct offnic_uapi_reg {
	__u32 offset;
	__u32 value;
};

/* OFFNIC_IOC_COUNTER: counter `index` (in), its name, port (~0: device-wide) and total */
struct offnic_uapi_counter {
	__u32 index;
	__u32 port;
	__u64 value;
	char name[OFFNIC_NAME_BYTES];
};

#define OFFNIC_IOC_MAGIC 0xf1
#define OFFNIC_IOC_INFO _IOR(OFFNIC_IOC_MAGIC, 1, struct offnic_uapi_info)
#define OFFNIC_IOC_REG_READ _IOWR(OFFNIC_IOC_MAGIC, 2, struct offnic_uapi_reg)
#define OFFNIC_IOC_REG_WRITE _IOW(OFFNIC_IOC_MAGIC, 3, struct offnic_uapi_reg)
#define OFFNIC_IOC_COUNTER _IOWR(OFFNIC_IOC_MAGIC, 4, struct offnic_uapi_counter)

#endif /* OFFNIC_UAPI_H */
