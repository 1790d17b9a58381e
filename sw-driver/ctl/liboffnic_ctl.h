/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * liboffnic_ctl: user space's handle on an offnic function through /dev/offnicN
 * (include/offnic_uapi.h, docs/uapi.md). The kernel gives register access and counter
 * totals; this library walks BAR0's block chain itself and reads the firmware's state
 * and log, the payload cache's counters and the TCP engine's connections from their
 * blocks (include/offnic_regs.h). Functions return 0 or a negative errno.
 */
#ifndef LIBOFFNIC_CTL_H
#define LIBOFFNIC_CTL_H

#include <stdint.h>

#include "../include/offnic_uapi.h"

#define OCTL_MAX_BLOCKS 64
#define OCTL_FW_LOG_RECORDS 64	/* the firmware's log ring (docs/registers.md, block fw) */

struct octl {
	int fd;
	struct offnic_uapi_info info;
};

struct octl_block {
	uint32_t type, version, offset;
};

struct octl_fw {
	uint32_t fw_version, state, status, heartbeat, log_head, imem_bytes, dmem_bytes;
};

struct octl_fw_log_rec {
	uint32_t seq, time_us, code, nargs, arg[4];
};

struct octl_cache {
	uint32_t onchip_bytes, dram_bytes, appends, inserts, hits_onchip, hits_dram;
	uint32_t range_errors, read_errors, write_errors;
	uint64_t host_bytes, cache_bytes, insert_bytes;
};

struct octl_queue {
	uint32_t log_size, enabled, port, error, prod, cons;
};

struct octl_conns {
	uint32_t connections, peak, table_inserts, table_deletes;
};

int octl_open(struct octl *c, const char *path);
void octl_close(struct octl *c);
int octl_reg_read(struct octl *c, uint32_t offset, uint32_t *value);
int octl_reg_write(struct octl *c, uint32_t offset, uint32_t value);
int octl_counter(struct octl *c, uint32_t index, struct offnic_uapi_counter *out);
/* The chain from offset 0: up to max blocks; returns how many, or -errno (-ELOOP: broken) */
int octl_blocks(struct octl *c, struct octl_block *out, int max);
/* The first block of `type`: its offset, -ENOENT if the chain has none */
int octl_find_block(struct octl *c, uint32_t type, uint32_t *offset);
const char *octl_block_name(uint32_t type);
int octl_fw_state(struct octl *c, struct octl_fw *fw);
const char *octl_fw_state_name(uint32_t state);
/* The log records still in the ring, oldest first: returns how many (<= max) */
int octl_fw_log(struct octl *c, struct octl_fw_log_rec *out, int max);
int octl_cache_state(struct octl *c, struct octl_cache *out);
/* TX (tx = 1) or RX queues as the NIC's registers hold them: returns how many (<= max) */
int octl_queues(struct octl *c, int tx, struct octl_queue *out, int max);
/* -ENOENT when the NIC has no TCP engine (no toe block in the chain) */
int octl_conns(struct octl *c, struct octl_conns *out);

#endif /* LIBOFFNIC_CTL_H */
