// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Settings the driver changes at run time: interrupt moderation per completion queue,
 * RSS (Toeplitz key, indirection table, hashed headers), default RX queue per port,
 * each port's station address, receive filter, longest frame and the fragmentation
 * offload's wire MTU, and the reassembly offload's buffers.
 */
#include "offnic_hw.h"
#include "../include/offnic_regs.h"

#define FIELD_MAX_16 0xffffu

int offnic_set_moderation(const struct offnic_hw *hw, int kind, u32 q, u32 count, u32 usecs)
{
	if (q >= hw->n_cqs[kind] || count > FIELD_MAX_16 || usecs > FIELD_MAX_16)
		return OFFNIC_ERR_RANGE;
	offnic_wr(hw, offnic_cq_reg(hw, kind, q, OFFNIC_RB_TX_CQS_ENT_MOD_COUNT), count);
	offnic_wr(hw, offnic_cq_reg(hw, kind, q, OFFNIC_RB_TX_CQS_ENT_MOD_TIME_US), usecs);
	return OFFNIC_OK;
}

int offnic_get_moderation(const struct offnic_hw *hw, int kind, u32 q, u32 *count, u32 *usecs)
{
	if (q >= hw->n_cqs[kind])
		return OFFNIC_ERR_RANGE;
	*count = offnic_rd(hw, offnic_cq_reg(hw, kind, q, OFFNIC_RB_TX_CQS_ENT_MOD_COUNT)) &
		 FIELD_MAX_16;
	*usecs = offnic_rd(hw, offnic_cq_reg(hw, kind, q, OFFNIC_RB_TX_CQS_ENT_MOD_TIME_US)) &
		 FIELD_MAX_16;
	return OFFNIC_OK;
}

/* The 40-byte Toeplitz key into key_0..key_9, byte 0 in key_0 bits 31:24 */
int offnic_rss_set_key(const struct offnic_hw *hw, const u8 *key)
{
	unsigned int i;

	if (!hw->rss)
		return OFFNIC_ERR_MISSING;
	for (i = 0; i < OFFNIC_RSS_KEY_BYTES / 4; i++)
		offnic_wr(hw, hw->rss + OFFNIC_RB_RSS_REG_KEY_0 + 4 * i,
			  offnic_rss_key_word(key, i));
	return OFFNIC_OK;
}

void offnic_rss_get_key(const struct offnic_hw *hw, u8 *key)
{
	unsigned int i;

	for (i = 0; i < OFFNIC_RSS_KEY_BYTES / 4; i++) {
		u32 w = hw->rss ? offnic_rd(hw, hw->rss + OFFNIC_RB_RSS_REG_KEY_0 + 4 * i) : 0;

		key[4 * i] = (u8)(w >> 24);
		key[4 * i + 1] = (u8)(w >> 16);
		key[4 * i + 2] = (u8)(w >> 8);
		key[4 * i + 3] = (u8)w;
	}
}

/*
 * The indirection table: entry i -> RX queue table[i mod n], for every one of the
 * build's rss_table_size entries (the table is write-only: callers keep a copy).
 */
int offnic_rss_set_table(const struct offnic_hw *hw, const u32 *table, u32 n)
{
	u32 i;

	if (!hw->rss)
		return OFFNIC_ERR_MISSING;
	if (!n || n > hw->rss_table_size)
		return OFFNIC_ERR_RANGE;
	for (i = 0; i < n; i++)
		if (table[i] >= hw->n_queues[OFFNIC_RX])
			return OFFNIC_ERR_RANGE;
	for (i = 0; i < hw->rss_table_size; i++)
		offnic_wr(hw, hw->rss + OFFNIC_RB_RSS_REG_INDIR_WRITE,
			  i << OFFNIC_RB_RSS_REG_INDIR_WRITE_INDEX_SHIFT |
			  table[i % n] << OFFNIC_RB_RSS_REG_INDIR_WRITE_QUEUE_SHIFT);
	return OFFNIC_OK;
}

/* rss.control: OFFNIC_RB_RSS_REG_CONTROL_*_MASK bits (enable, ipv4, ipv6, tcp, udp) */
int offnic_rss_set_control(const struct offnic_hw *hw, u32 control)
{
	if (!hw->rss)
		return OFFNIC_ERR_MISSING;
	offnic_wr(hw, hw->rss + OFFNIC_RB_RSS_REG_CONTROL, control);
	return OFFNIC_OK;
}

u32 offnic_rss_get_control(const struct offnic_hw *hw)
{
	return hw->rss ? offnic_rd(hw, hw->rss + OFFNIC_RB_RSS_REG_CONTROL) : 0;
}

/* The RX queue of port's frames that RSS does not steer */
int offnic_set_default_queue(const struct offnic_hw *hw, u32 port, u32 q)
{
	u32 at = hw->rx_engine + OFFNIC_RB_RX_ENGINE_REG_DEFAULT_QUEUE;
	u32 shift = port ? OFFNIC_RB_RX_ENGINE_REG_DEFAULT_QUEUE_PORT1_SHIFT :
			   OFFNIC_RB_RX_ENGINE_REG_DEFAULT_QUEUE_PORT0_SHIFT;
	u32 v;

	if (port >= hw->n_ports || q >= hw->n_queues[OFFNIC_RX])
		return OFFNIC_ERR_RANGE;
	v = offnic_rd(hw, at) & ~(0xffu << shift);
	offnic_wr(hw, at, v | q << shift);
	return OFFNIC_OK;
}

/* The station address: mac_hi:mac_lo as one 48-bit big-endian number */
int offnic_port_set_mac(const struct offnic_hw *hw, u32 port, const u8 *mac)
{
	if (port >= hw->n_ports || (mac[0] & 1))
		return OFFNIC_ERR_RANGE;
	offnic_wr(hw, hw->port[port] + OFFNIC_RB_ETH_PORT_REG_MAC_HI, (u32)mac[0] << 8 | mac[1]);
	offnic_wr(hw, hw->port[port] + OFFNIC_RB_ETH_PORT_REG_MAC_LO,
		  (u32)mac[2] << 24 | (u32)mac[3] << 16 | (u32)mac[4] << 8 | mac[5]);
	return OFFNIC_OK;
}

/* What port receives besides its station address; mc_hash bit h: groups of hash h */
int offnic_port_set_rx_filter(const struct offnic_hw *hw, u32 port, int promisc, int allmulti,
			      int broadcast, u64 mc_hash)
{
	u32 at;

	if (port >= hw->n_ports)
		return OFFNIC_ERR_RANGE;
	at = hw->port[port];
	offnic_wr(hw, at + OFFNIC_RB_ETH_PORT_REG_MC_HASH_LO, (u32)mc_hash);
	offnic_wr(hw, at + OFFNIC_RB_ETH_PORT_REG_MC_HASH_HI, (u32)(mc_hash >> 32));
	offnic_wr(hw, at + OFFNIC_RB_ETH_PORT_REG_RX_FILTER,
		  (promisc ? OFFNIC_RB_ETH_PORT_REG_RX_FILTER_PROMISC_MASK : 0) |
		  (allmulti ? OFFNIC_RB_ETH_PORT_REG_RX_FILTER_ALLMULTI_MASK : 0) |
		  (broadcast ? OFFNIC_RB_ETH_PORT_REG_RX_FILTER_BROADCAST_MASK : 0));
	return OFFNIC_OK;
}

/* The longest frame port receives (bytes with FCS) */
int offnic_port_set_max_frame(const struct offnic_hw *hw, u32 port, u32 bytes)
{
	if (port >= hw->n_ports || bytes > FIELD_MAX_16)
		return OFFNIC_ERR_RANGE;
	offnic_wr(hw, hw->port[port] + OFFNIC_RB_ETH_PORT_REG_MAX_FRAME_LEN, bytes);
	return OFFNIC_OK;
}

/*
 * The fragmentation offload's MTU of port (IP header and payload): IPv4 datagrams
 * longer leave the port in fragments; 65535 cuts nothing (docs/frag.md).
 */
int offnic_set_wire_mtu(const struct offnic_hw *hw, u32 port, u32 mtu)
{
	u32 at = hw->tx_engine + OFFNIC_RB_TX_ENGINE_REG_MTU;
	u32 shift = port ? OFFNIC_RB_TX_ENGINE_REG_MTU_PORT1_SHIFT :
			   OFFNIC_RB_TX_ENGINE_REG_MTU_PORT0_SHIFT;
	u32 v;

	if (port >= hw->n_ports || mtu < 68 || mtu > FIELD_MAX_16)
		return OFFNIC_ERR_RANGE;
	v = offnic_rd(hw, at) & ~(FIELD_MAX_16 << shift);
	offnic_wr(hw, at, v | mtu << shift);
	return OFFNIC_OK;
}

u32 offnic_port_speed_mbps(const struct offnic_hw *hw, u32 port)
{
	if (port >= hw->n_ports)
		return 0;
	return offnic_rd(hw, hw->port[port] + OFFNIC_RB_ETH_PORT_REG_SPEED_MBPS);
}

int offnic_reasm_enable(const struct offnic_hw *hw, int on)
{
	if (!hw->reasm)
		return OFFNIC_ERR_MISSING;
	offnic_wr(hw, hw->reasm + OFFNIC_RB_REASM_REG_CONTROL, on ? 1 : 0);
	return OFFNIC_OK;
}

/* Give the NIC reassembly buffer id (OFFNIC_REASM_BUFFER_BYTES at dma) */
int offnic_reasm_post(const struct offnic_hw *hw, u32 id, u64 dma)
{
	if (!hw->reasm || id > FIELD_MAX_16)
		return OFFNIC_ERR_RANGE;
	offnic_wr(hw, hw->reasm + OFFNIC_RB_REASM_REG_BUF_ADDR_LO, (u32)dma);
	offnic_wr(hw, hw->reasm + OFFNIC_RB_REASM_REG_BUF_ADDR_HI, (u32)(dma >> 32));
	offnic_wr(hw, hw->reasm + OFFNIC_RB_REASM_REG_BUF_POST, id);
	return OFFNIC_OK;
}
