// SPDX-License-Identifier: GPL-2.0 OR MIT
/* liboffnic_ctl (liboffnic_ctl.h): ioctls on /dev/offnicN and the register chain */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "liboffnic_ctl.h"
#include "../include/offnic_regs.h"
#include "../../firmware/include/fw_proto.h"

#define HDR_TYPE 0x00
#define HDR_VERSION 0x04
#define HDR_NEXT 0x08

int octl_open(struct octl *c, const char *path)
{
	c->fd = open(path, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	if (ioctl(c->fd, OFFNIC_IOC_INFO, &c->info) < 0) {
		int err = -errno;

		close(c->fd);
		c->fd = -1;
		return err;
	}
	if (c->info.version != OFFNIC_UAPI_VERSION) {
		close(c->fd);
		c->fd = -1;
		return -EPROTO;
	}
	return 0;
}

void octl_close(struct octl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int octl_reg_read(struct octl *c, uint32_t offset, uint32_t *value)
{
	struct offnic_uapi_reg r = { .offset = offset };

	if (ioctl(c->fd, OFFNIC_IOC_REG_READ, &r) < 0)
		return -errno;
	*value = r.value;
	return 0;
}

int octl_reg_write(struct octl *c, uint32_t offset, uint32_t value)
{
	struct offnic_uapi_reg r = { .offset = offset, .value = value };

	return ioctl(c->fd, OFFNIC_IOC_REG_WRITE, &r) < 0 ? -errno : 0;
}

int octl_counter(struct octl *c, uint32_t index, struct offnic_uapi_counter *out)
{
	memset(out, 0, sizeof(*out));
	out->index = index;
	return ioctl(c->fd, OFFNIC_IOC_COUNTER, out) < 0 ? -errno : 0;
}

int octl_blocks(struct octl *c, struct octl_block *out, int max)
{
	uint32_t at = 0, next = 0;
	int n = 0, err;

	for (;;) {
		if (n >= max || n >= OCTL_MAX_BLOCKS)
			return -ELOOP;
		out[n].offset = at;
		err = octl_reg_read(c, at + HDR_TYPE, &out[n].type);
		if (!err)
			err = octl_reg_read(c, at + HDR_VERSION, &out[n].version);
		if (!err)
			err = octl_reg_read(c, at + HDR_NEXT, &next);
		if (err)
			return err;
		n++;
		if (!next)
			return n;
		/* forward only and aligned: a chain that loops or leaves BAR0 is broken */
		if (next <= at || next & 3 || next >= c->info.bar_len)
			return -ELOOP;
		at = next;
	}
}

int octl_find_block(struct octl *c, uint32_t type, uint32_t *offset)
{
	struct octl_block b[OCTL_MAX_BLOCKS];
	int n = octl_blocks(c, b, OCTL_MAX_BLOCKS), i;

	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (b[i].type == type) {
			*offset = b[i].offset;
			return 0;
		}
	}
	return -ENOENT;
}

const char *octl_block_name(uint32_t type)
{
#define OCTL_BLOCK_NAME(type, version, name) { type, name },
	static const struct { uint32_t type; const char *name; } names[] = {
		OFFNIC_RB_FOR_EACH_BLOCK(OCTL_BLOCK_NAME)
	};
#undef OCTL_BLOCK_NAME
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].type == type)
			return names[i].name;
	return "unknown";
}

/* Registers of one block, read in a row: offsets[i] into values[i] */
static int read_regs(struct octl *c, uint32_t base, const uint32_t *offsets, uint32_t **values, int n)
{
	int i, err;

	for (i = 0; i < n; i++) {
		err = octl_reg_read(c, base + offsets[i], values[i]);
		if (err)
			return err;
	}
	return 0;
}

int octl_fw_state(struct octl *c, struct octl_fw *fw)
{
	const uint32_t at[] = { OFFNIC_RB_FW_REG_FW_VERSION, OFFNIC_RB_FW_REG_STATE,
				OFFNIC_RB_FW_REG_STATUS, OFFNIC_RB_FW_REG_HEARTBEAT,
				OFFNIC_RB_FW_REG_LOG_HEAD, OFFNIC_RB_FW_REG_IMEM_BYTES,
				OFFNIC_RB_FW_REG_DMEM_BYTES };
	uint32_t *to[] = { &fw->fw_version, &fw->state, &fw->status, &fw->heartbeat,
			   &fw->log_head, &fw->imem_bytes, &fw->dmem_bytes };
	uint32_t base;
	int err = octl_find_block(c, OFFNIC_RB_FW_TYPE, &base);

	if (err)
		return err;
	return read_regs(c, base, at, to, 7);
}

const char *octl_fw_state_name(uint32_t state)
{
	switch (state) {
	case FW_STATE_RESET: return "reset";
	case FW_STATE_BOOTING: return "booting";
	case FW_STATE_RUNNING: return "running";
	case FW_STATE_NO_TOE: return "running (no TCP engine: load control idle)";
	default: return "unknown";
	}
}

int octl_fw_log(struct octl *c, struct octl_fw_log_rec *out, int max)
{
	uint32_t base = 0, head = 0, first, n, k, w, word[8];
	int err = octl_find_block(c, OFFNIC_RB_FW_TYPE, &base), got = 0;

	if (!err)
		err = octl_reg_read(c, base + OFFNIC_RB_FW_REG_LOG_HEAD, &head);
	if (err)
		return err;
	n = head < OCTL_FW_LOG_RECORDS ? head : OCTL_FW_LOG_RECORDS;
	first = head - n;
	for (k = first; k < head && got < max; k++) {
		uint32_t slot = k % OCTL_FW_LOG_RECORDS;

		for (w = 0; w < 8; w++) {
			err = octl_reg_write(c, base + OFFNIC_RB_FW_REG_LOG_INDEX, slot * 8 + w);
			if (!err)
				err = octl_reg_read(c, base + OFFNIC_RB_FW_REG_LOG_DATA, &word[w]);
			if (err)
				return err;
		}
		if (word[0] != k)	/* overwritten meanwhile (or half written): skip it */
			continue;
		out[got].seq = word[0];
		out[got].time_us = word[1];
		out[got].code = word[2];
		out[got].nargs = word[3];
		memcpy(out[got].arg, &word[4], sizeof(out[got].arg));
		got++;
	}
	return got;
}

static int read_wide(struct octl *c, uint32_t at, uint64_t *v)
{
	uint32_t lo = 0, hi = 0, hi2 = 0;
	int err = octl_reg_read(c, at + 4, &hi);

	do {
		if (!err)
			err = octl_reg_read(c, at, &lo);
		if (!err)
			err = octl_reg_read(c, at + 4, &hi2);
		if (err)
			return err;
		if (hi2 == hi)
			break;
		hi = hi2;
	} while (1);
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

int octl_cache_state(struct octl *c, struct octl_cache *o)
{
	const uint32_t at[] = { OFFNIC_RB_CACHE_REG_ONCHIP_BYTES, OFFNIC_RB_CACHE_REG_DRAM_BYTES,
				OFFNIC_RB_CACHE_REG_APPENDS, OFFNIC_RB_CACHE_REG_INSERTS,
				OFFNIC_RB_CACHE_REG_HITS_ONCHIP, OFFNIC_RB_CACHE_REG_HITS_DRAM,
				OFFNIC_RB_CACHE_REG_RANGE_ERRORS, OFFNIC_RB_CACHE_REG_READ_ERRORS,
				OFFNIC_RB_CACHE_REG_WRITE_ERRORS };
	uint32_t *to[] = { &o->onchip_bytes, &o->dram_bytes, &o->appends, &o->inserts,
			   &o->hits_onchip, &o->hits_dram, &o->range_errors, &o->read_errors,
			   &o->write_errors };
	uint32_t base;
	int err = octl_find_block(c, OFFNIC_RB_CACHE_TYPE, &base);

	if (!err)
		err = read_regs(c, base, at, to, 9);
	if (!err)
		err = read_wide(c, base + OFFNIC_RB_CACHE_REG_HOST_BYTES_LO, &o->host_bytes);
	if (!err)
		err = read_wide(c, base + OFFNIC_RB_CACHE_REG_CACHE_BYTES_LO, &o->cache_bytes);
	if (!err)
		err = read_wide(c, base + OFFNIC_RB_CACHE_REG_INSERT_BYTES_LO, &o->insert_bytes);
	return err;
}

int octl_conns(struct octl *c, struct octl_conns *o)
{
	const uint32_t at[] = { OFFNIC_RB_TOE_REG_CONNECTIONS, OFFNIC_RB_TOE_REG_CONNECTIONS_PEAK,
				OFFNIC_RB_TOE_REG_TABLE_INSERTS, OFFNIC_RB_TOE_REG_TABLE_DELETES };
	uint32_t *to[] = { &o->connections, &o->peak, &o->table_inserts, &o->table_deletes };
	uint32_t base;
	int err = octl_find_block(c, OFFNIC_RB_TOE_TYPE, &base);

	if (err)
		return err;
	return read_regs(c, base, at, to, 4);
}

int octl_queues(struct octl *c, int tx, struct octl_queue *out, int max)
{
	/* TX and RX queue records share one layout; TX's control has the port */
	uint32_t base = 0, n = 0, k, ctrl = 0, st = 0, at;
	int err = octl_find_block(c, tx ? OFFNIC_RB_TX_QUEUES_TYPE : OFFNIC_RB_RX_QUEUES_TYPE, &base);

	if (!err)
		err = octl_reg_read(c, base + OFFNIC_RB_TX_QUEUES_REG_COUNT, &n);
	for (k = 0; !err && k < n && (int)k < max; k++) {
		at = base + OFFNIC_RB_TX_QUEUES_ENT(k, 0);
		err = octl_reg_read(c, at + OFFNIC_RB_TX_QUEUES_ENT_CONTROL, &ctrl);
		if (!err)
			err = octl_reg_read(c, at + OFFNIC_RB_TX_QUEUES_ENT_STATUS, &st);
		if (!err)
			err = octl_reg_read(c, at + OFFNIC_RB_TX_QUEUES_ENT_PROD, &out[k].prod);
		if (!err)
			err = octl_reg_read(c, at + OFFNIC_RB_TX_QUEUES_ENT_CONS, &out[k].cons);
		out[k].log_size = ctrl & OFFNIC_RB_TX_QUEUES_ENT_CONTROL_LOG_SIZE_MASK;
		out[k].enabled = !!(ctrl & OFFNIC_RB_TX_QUEUES_ENT_CONTROL_ENABLE_MASK);
		out[k].port = tx ? (ctrl & OFFNIC_RB_TX_QUEUES_ENT_CONTROL_PORT_MASK) >>
				   OFFNIC_RB_TX_QUEUES_ENT_CONTROL_PORT_SHIFT : 0;
		out[k].error = st & OFFNIC_RB_TX_QUEUES_ENT_STATUS_ERROR_MASK;
	}
	return err ? err : (int)k;
}
