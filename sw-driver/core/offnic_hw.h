/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * One offnic function as the driver core sees it: the register blocks found by
 * walking BAR0's chain, the sizes the build reports, and the register sequences that
 * bring queues, completion queues, event queues, RSS, moderation, the ports'
 * settings and the counters up and down (docs/queues.md, docs/registers.md). Ring
 * memory is the caller's; the core only writes the registers and the rings' initial
 * images. Everything goes through struct offnic_os_ops.
 */
#ifndef OFFNIC_HW_H
#define OFFNIC_HW_H

#include "offnic_os.h"
#include "offnic_records.h"

#define OFFNIC_MAX_BLOCKS 64
#define OFFNIC_MAX_PORTS 2
#define OFFNIC_RSS_KEY_BYTES 40

enum offnic_err {
	OFFNIC_OK = 0,
	OFFNIC_ERR_CHAIN = -1,   /* the chain loops, is misaligned or leaves BAR0 */
	OFFNIC_ERR_MISSING = -2, /* a block the driver needs is not there */
	OFFNIC_ERR_RANGE = -3,   /* an argument outside what the build has */
	OFFNIC_ERR_NOMEM = -4,
};

enum offnic_kind {
	OFFNIC_TX = 0,
	OFFNIC_RX = 1,
};

struct offnic_block {
	u32 type;
	u32 version;
	u32 offset;
	int known;	/* type and major version this core knows */
};

struct offnic_hw {
	const struct offnic_os_ops *ops;
	void *ctx;
	u32 bar_len;

	struct offnic_block blocks[OFFNIC_MAX_BLOCKS];
	unsigned int n_blocks;

	/* BAR0 offsets of the blocks used, 0 when absent (device_id is at 0, always) */
	u32 queues[2];	/* tx_queues, rx_queues */
	u32 cqs[2];	/* tx_cqs, rx_cqs */
	u32 eqs, msix, rss, rx_engine, tx_engine, dma, reasm;
	u32 port[OFFNIC_MAX_PORTS];
	unsigned int n_ports;

	/* what the build has */
	u32 n_queues[2], n_cqs[2], n_eqs, n_msix;
	u32 max_segs, desc_cache, max_tx_frame, rss_table_size;
};

/* A ring of 16-byte records: memory (cpu, dma: 4 KiB aligned) and its indexes */
struct offnic_ring {
	u8 *cpu;
	u64 dma;
	unsigned int log_size;
	u16 prod;
	u16 cons;
};

__printf(3, 4) void offnic_log(const struct offnic_hw *hw, int level, const char *fmt, ...);

static inline u32 offnic_rd(const struct offnic_hw *hw, u32 offset)
{
	return hw->ops->read32(hw->ctx, offset);
}

static inline void offnic_wr(const struct offnic_hw *hw, u32 offset, u32 value)
{
	hw->ops->write32(hw->ctx, offset, value);
}

/* discovery (offnic_hw.c) */
int offnic_walk_chain(struct offnic_hw *hw);
int offnic_hw_probe(struct offnic_hw *hw, const struct offnic_os_ops *ops, void *ctx, u32 bar_len);
const char *offnic_block_name(u32 type);

/* rings and queues (offnic_queues.c) */
int offnic_ring_alloc(const struct offnic_hw *hw, struct offnic_ring *r, unsigned int log_size);
void offnic_ring_free(const struct offnic_hw *hw, struct offnic_ring *r);
u32 offnic_eq_reg(const struct offnic_hw *hw, u32 k, u32 reg);
u32 offnic_cq_reg(const struct offnic_hw *hw, int kind, u32 q, u32 reg);
u32 offnic_queue_reg(const struct offnic_hw *hw, int kind, u32 q, u32 reg);
int offnic_eq_open(const struct offnic_hw *hw, u32 k, struct offnic_ring *r);
void offnic_eq_close(const struct offnic_hw *hw, u32 k);
int offnic_cq_open(const struct offnic_hw *hw, int kind, u32 q, struct offnic_ring *r, u32 eq,
		   u32 mod_count, u32 mod_usecs);
void offnic_cq_close(const struct offnic_hw *hw, int kind, u32 q);
int offnic_queue_open(const struct offnic_hw *hw, int kind, u32 q, struct offnic_ring *r, u32 port);
void offnic_queue_close(const struct offnic_hw *hw, int kind, u32 q);
int offnic_queue_wait_idle(const struct offnic_hw *hw, int kind, u32 q, unsigned int max_us);
int offnic_queue_failed(const struct offnic_hw *hw, int kind, u32 q);
int offnic_queue_restart(const struct offnic_hw *hw, int kind, u32 q);
u32 offnic_desc_fetch_errors(const struct offnic_hw *hw, int kind);
void offnic_queue_doorbell(const struct offnic_hw *hw, int kind, u32 q, u16 prod);
void offnic_cq_done(const struct offnic_hw *hw, int kind, u32 q, u16 cons, int arm);
void offnic_eq_done(const struct offnic_hw *hw, u32 k, u16 cons, int arm);
int offnic_msix_set(const struct offnic_hw *hw, u32 k, u64 addr, u32 data, int masked);
int offnic_cq_next(const struct offnic_ring *r, struct offnic_cpl *c);
int offnic_eq_next(const struct offnic_ring *r, struct offnic_event *e);
void offnic_ring_put_desc(struct offnic_ring *r, const struct offnic_desc *d);

/* settings (offnic_config.c) */
int offnic_set_moderation(const struct offnic_hw *hw, int kind, u32 q, u32 count, u32 usecs);
int offnic_get_moderation(const struct offnic_hw *hw, int kind, u32 q, u32 *count, u32 *usecs);
int offnic_rss_set_key(const struct offnic_hw *hw, const u8 *key);
void offnic_rss_get_key(const struct offnic_hw *hw, u8 *key);
int offnic_rss_set_table(const struct offnic_hw *hw, const u32 *table, u32 n);
int offnic_rss_set_control(const struct offnic_hw *hw, u32 control);
u32 offnic_rss_get_control(const struct offnic_hw *hw);
int offnic_set_default_queue(const struct offnic_hw *hw, u32 port, u32 q);
int offnic_port_set_mac(const struct offnic_hw *hw, u32 port, const u8 *mac);
int offnic_port_set_rx_filter(const struct offnic_hw *hw, u32 port, int promisc, int allmulti,
			      int broadcast, u64 mc_hash);
int offnic_port_set_max_frame(const struct offnic_hw *hw, u32 port, u32 bytes);
int offnic_set_wire_mtu(const struct offnic_hw *hw, u32 port, u32 mtu);
u32 offnic_port_speed_mbps(const struct offnic_hw *hw, u32 port);
int offnic_reasm_enable(const struct offnic_hw *hw, int on);
int offnic_reasm_post(const struct offnic_hw *hw, u32 id, u64 dma);

/* counters (offnic_counters.c) */
struct offnic_counter_def {
	const char *name;
	u32 type;	/* block type */
	u32 reg;	/* offset in the block (the low word of a 64-bit pair) */
	int wide;	/* a lo/hi pair */
	int per_port;	/* one per eth_port block */
};

extern const struct offnic_counter_def offnic_counter_defs[];
extern const unsigned int offnic_n_counter_defs;

/*
 * Running 64-bit totals of the NIC's wrapping counters: offnic_counters_update adds
 * what each moved since its last read. n_values() slots: the per-port counters of
 * port p at p * n_port_defs + i, then the device-wide ones.
 */
/* The control processor's firmware (offnic_fw.c) */
struct offnic_fw_info {
	u32 version;	/* major 31:16, minor 15:8, patch 7:0 */
	u32 state;	/* fw_proto.h FW_STATE_* */
	u32 status;	/* the fw block's status bits (running, trap, ...) */
	u32 heartbeat;
};

int offnic_fw_get(const struct offnic_hw *hw, struct offnic_fw_info *fw);
const char *offnic_fw_state_name(u32 state);

unsigned int offnic_counters_n_port_defs(void);
unsigned int offnic_counters_n_values(const struct offnic_hw *hw);
const char *offnic_counter_value_name(const struct offnic_hw *hw, unsigned int i, u32 *port);
void offnic_counters_update(const struct offnic_hw *hw, u32 *last, u64 *total);

#endif /* OFFNIC_HW_H */
