// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The NIC's counters as 64-bit totals: which registers (per port: the MAC's and the
 * receive filter's; device-wide: the engines', DMA's, event queues' and reassembly's),
 * their names (ethtool -S), and a wrap-aware update. 32-bit counters wrap, so each
 * update adds what moved since the last read; lo/hi pairs are read as one 64-bit value.
 */
#include "offnic_hw.h"
#include "../include/offnic_regs.h"

#define PORT(name, reg, wide) { "mac_" name, OFFNIC_RB_ETH_PORT_TYPE, \
				OFFNIC_RB_ETH_PORT_REG_##reg, wide, 1 }
#define DEV(name, blk, reg, wide) { name, OFFNIC_RB_##blk##_TYPE, OFFNIC_RB_##blk##_REG_##reg, \
				    wide, 0 }

/* Per-port counters first, then device-wide ones (offnic_counters_n_values relies on it) */
const struct offnic_counter_def offnic_counter_defs[] = {
	PORT("tx_frames", TX_FRAMES, 0),
	PORT("tx_bytes", TX_BYTES_LO, 1),
	PORT("tx_errors", TX_ERRORS, 0),
	PORT("rx_frames", RX_FRAMES, 0),
	PORT("rx_bytes", RX_BYTES_LO, 1),
	PORT("rx_fcs_errors", RX_FCS_ERRORS, 0),
	PORT("rx_runts", RX_RUNTS, 0),
	PORT("rx_oversize", RX_OVERSIZE, 0),
	PORT("rx_xgmii_errors", RX_XGMII_ERRORS, 0),
	PORT("rx_fifo_drops", RX_FIFO_DROPS, 0),
	PORT("rx_filter_drops", RX_FILTER_DROPS, 0),
	PORT("rx_foreign", RX_FOREIGN, 0),
	DEV("nic_tx_packets", TX_ENGINE, PACKETS, 0),
	DEV("nic_tx_bytes", TX_ENGINE, BYTES_LO, 1),
	DEV("nic_tx_dma_errors", TX_ENGINE, DMA_ERRORS, 0),
	DEV("nic_tx_bad_desc", TX_ENGINE, BAD_DESC, 0),
	DEV("nic_tx_csum_bad_cmd", TX_ENGINE, CSUM_BAD_CMD, 0),
	DEV("nic_tx_csum_drop_oversize", TX_ENGINE, CSUM_DROP_OVERSIZE, 0),
	DEV("nic_tx_desc_fetch_errors", TX_ENGINE, DESC_FETCH_ERRORS, 0),
	DEV("nic_tx_frag_datagrams", TX_ENGINE, FRAG_DATAGRAMS, 0),
	DEV("nic_tx_frag_fragments", TX_ENGINE, FRAG_FRAGMENTS, 0),
	DEV("nic_tx_frag_refused", TX_ENGINE, FRAG_REFUSED, 0),
	DEV("nic_rx_packets", RX_ENGINE, PACKETS, 0),
	DEV("nic_rx_bytes", RX_ENGINE, BYTES_LO, 1),
	DEV("nic_rx_drop_disabled", RX_ENGINE, DROP_DISABLED, 0),
	DEV("nic_rx_drop_no_desc", RX_ENGINE, DROP_NO_DESC, 0),
	DEV("nic_rx_drop_cq_full", RX_ENGINE, DROP_CQ_FULL, 0),
	DEV("nic_rx_too_long", RX_ENGINE, TOO_LONG, 0),
	DEV("nic_rx_dma_errors", RX_ENGINE, DMA_ERRORS, 0),
	DEV("nic_rx_desc_fetch_errors", RX_ENGINE, DESC_FETCH_ERRORS, 0),
	DEV("nic_eq_overflows", EQS, OVERFLOWS, 0),
	DEV("nic_dma_rd_err_status", DMA, RD_ERR_STATUS, 0),
	DEV("nic_dma_rd_err_poisoned", DMA, RD_ERR_POISONED, 0),
	DEV("nic_dma_rd_err_timeout", DMA, RD_ERR_TIMEOUT, 0),
	DEV("nic_dma_rd_err_malformed", DMA, RD_ERR_MALFORMED, 0),
	DEV("nic_reasm_fragments", REASM, FRAGMENTS, 0),
	DEV("nic_reasm_reassembled", REASM, REASSEMBLED, 0),
	DEV("nic_reasm_timeout", REASM, TIMEOUT, 0),
	DEV("nic_reasm_bypassed", REASM, BYPASSED, 0),
	DEV("nic_reasm_bad_checksum", REASM, BAD_CHECKSUM, 0),
	DEV("nic_reasm_cpl_dropped", REASM, CPL_DROPPED, 0),
	DEV("nic_reasm_post_dropped", REASM, POST_DROPPED, 0),
};

const unsigned int offnic_n_counter_defs = ARRAY_SIZE(offnic_counter_defs);

/* How many of offnic_counter_defs are per port (they come first) */
unsigned int offnic_counters_n_port_defs(void)
{
	unsigned int i = 0;

	while (i < offnic_n_counter_defs && offnic_counter_defs[i].per_port)
		i++;
	return i;
}

unsigned int offnic_counters_n_values(const struct offnic_hw *hw)
{
	unsigned int per_port = offnic_counters_n_port_defs();

	return hw->n_ports * per_port + offnic_n_counter_defs - per_port;
}

static const struct offnic_counter_def *value_def(const struct offnic_hw *hw, unsigned int i,
						  u32 *port)
{
	unsigned int per_port = offnic_counters_n_port_defs();

	if (i < hw->n_ports * per_port) {
		*port = i / per_port;
		return &offnic_counter_defs[i % per_port];
	}
	i -= hw->n_ports * per_port - per_port;
	*port = 0;
	return i < offnic_n_counter_defs ? &offnic_counter_defs[i] : NULL;
}

/* The name of value i (and its port, for per-port ones), NULL beyond the end */
const char *offnic_counter_value_name(const struct offnic_hw *hw, unsigned int i, u32 *port)
{
	const struct offnic_counter_def *d = value_def(hw, i, port);

	return d ? d->name : NULL;
}

static u32 block_of(const struct offnic_hw *hw, const struct offnic_counter_def *d, u32 port)
{
	unsigned int i;

	if (d->per_port)
		return port < hw->n_ports ? hw->port[port] : 0;
	for (i = 0; i < hw->n_blocks; i++)
		if (hw->blocks[i].known && hw->blocks[i].type == d->type)
			return hw->blocks[i].offset;
	return 0;
}

/* A lo/hi pair as one value: hi, lo, hi again, until hi did not move in between */
static u64 read_wide(const struct offnic_hw *hw, u32 at)
{
	u32 hi, lo, hi2;
	int tries = 3;

	hi = offnic_rd(hw, at + 4);
	do {
		lo = offnic_rd(hw, at);
		hi2 = hi;
		hi = offnic_rd(hw, at + 4);
	} while (hi != hi2 && --tries);
	return (u64)hi << 32 | lo;
}

/*
 * Read every counter: total[i] += what value i moved since last[i] (32-bit counters,
 * wrap-aware), or total[i] = the value (64-bit pairs). Absent blocks leave 0.
 */
void offnic_counters_update(const struct offnic_hw *hw, u32 *last, u64 *total)
{
	unsigned int i, n = offnic_counters_n_values(hw);

	for (i = 0; i < n; i++) {
		u32 port;
		const struct offnic_counter_def *d = value_def(hw, i, &port);
		u32 at = block_of(hw, d, port);
		u32 v;

		if (!at)
			continue;
		if (d->wide) {
			total[i] = read_wide(hw, at + d->reg);
			continue;
		}
		v = offnic_rd(hw, at + d->reg);
		total[i] += (u32)(v - last[i]);
		last[i] = v;
	}
}
