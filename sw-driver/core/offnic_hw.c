// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Register-block discovery: walk BAR0's chain from offset 0 (every block starts with
 * type, version and the absolute offset of the next, 0 at the end), keep the blocks
 * whose type and major version this core knows, and read the build's sizes.
 */
#include "offnic_hw.h"
#include "../include/offnic_regs.h"

#define RB_TYPE 0x00
#define RB_VERSION 0x04
#define RB_NEXT 0x08

void offnic_log(const struct offnic_hw *hw, int level, const char *fmt, ...)
{
	va_list args;

	if (!hw->ops->vlog)
		return;
	va_start(args, fmt);
	hw->ops->vlog(hw->ctx, level, fmt, args);
	va_end(args);
}

struct known_block {
	u32 type;
	u32 version;
	const char *name;
};

/* The register map's blocks, from the generated header */
#define OFFNIC_KNOWN_BLOCK(type, version, name) { type, version, name },
static const struct known_block known_blocks[] = {
	OFFNIC_RB_FOR_EACH_BLOCK(OFFNIC_KNOWN_BLOCK)
};

#undef OFFNIC_KNOWN_BLOCK

static const struct known_block *find_known(u32 type)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(known_blocks); i++)
		if (known_blocks[i].type == type)
			return &known_blocks[i];
	return NULL;
}

/* The register map's name of a block type, or NULL for a type this core does not know */
const char *offnic_block_name(u32 type)
{
	const struct known_block *k = find_known(type);

	return k ? k->name : NULL;
}

/*
 * Every block of the chain into hw->blocks, in order. Fails on a loop, a pointer that
 * is not 32-bit aligned or outside BAR0, or more than OFFNIC_MAX_BLOCKS blocks.
 */
int offnic_walk_chain(struct offnic_hw *hw)
{
	u32 at = 0;
	unsigned int i;

	hw->n_blocks = 0;
	for (;;) {
		struct offnic_block *b;
		const struct known_block *k;

		for (i = 0; i < hw->n_blocks; i++)
			if (hw->blocks[i].offset == at)
				goto bad;
		if (hw->n_blocks >= OFFNIC_MAX_BLOCKS || (at & 3) || at + RB_NEXT + 4 > hw->bar_len)
			goto bad;
		b = &hw->blocks[hw->n_blocks++];
		b->offset = at;
		b->type = offnic_rd(hw, at + RB_TYPE);
		b->version = offnic_rd(hw, at + RB_VERSION);
		k = find_known(b->type);
		b->known = k && (k->version >> 16) == (b->version >> 16);
		at = offnic_rd(hw, at + RB_NEXT);
		if (at == 0)
			return OFFNIC_OK;
	}
bad:
	offnic_log(hw, OFFNIC_LOG_ERR, "register block chain broken at 0x%x after %u blocks\n",
		   at, hw->n_blocks);
	return OFFNIC_ERR_CHAIN;
}

/* The offset of the first known block of a type after index *from, or 0 */
static u32 next_of_type(const struct offnic_hw *hw, u32 type, unsigned int *from)
{
	for (; *from < hw->n_blocks; (*from)++) {
		const struct offnic_block *b = &hw->blocks[*from];

		if (b->known && b->type == type) {
			(*from)++;
			return b->offset;
		}
	}
	return 0;
}

static u32 first_of_type(const struct offnic_hw *hw, u32 type)
{
	unsigned int i = 0;

	return next_of_type(hw, type, &i);
}

static u32 clamp_count(u32 v, u32 max)
{
	return v < max ? v : max;
}

/*
 * Discover the function: walk the chain, find the blocks the driver needs and read
 * the sizes this build has. bar_len bounds the walk.
 */
int offnic_hw_probe(struct offnic_hw *hw, const struct offnic_os_ops *ops, void *ctx, u32 bar_len)
{
	static const u32 needed_types[] = {
		OFFNIC_RB_TX_QUEUES_TYPE, OFFNIC_RB_RX_QUEUES_TYPE, OFFNIC_RB_TX_CQS_TYPE,
		OFFNIC_RB_RX_CQS_TYPE, OFFNIC_RB_EQS_TYPE, OFFNIC_RB_MSIX_TYPE,
		OFFNIC_RB_RX_ENGINE_TYPE, OFFNIC_RB_TX_ENGINE_TYPE,
	};
	unsigned int i;
	int err;

	memset(hw, 0, sizeof(*hw));
	hw->ops = ops;
	hw->ctx = ctx;
	hw->bar_len = bar_len;
	err = offnic_walk_chain(hw);
	if (err)
		return err;
	if (hw->blocks[0].type != OFFNIC_RB_DEVICE_ID_TYPE) {
		offnic_log(hw, OFFNIC_LOG_ERR,
			   "BAR0 offset 0 holds block type 0x%08x, not device_id\n",
			   hw->blocks[0].type);
		return OFFNIC_ERR_MISSING;
	}
	for (i = 0; i < ARRAY_SIZE(needed_types); i++) {
		if (!first_of_type(hw, needed_types[i])) {
			offnic_log(hw, OFFNIC_LOG_ERR, "no register block of type 0x%08x (%s)\n",
				   needed_types[i], offnic_block_name(needed_types[i]));
			return OFFNIC_ERR_MISSING;
		}
	}
	hw->queues[OFFNIC_TX] = first_of_type(hw, OFFNIC_RB_TX_QUEUES_TYPE);
	hw->queues[OFFNIC_RX] = first_of_type(hw, OFFNIC_RB_RX_QUEUES_TYPE);
	hw->cqs[OFFNIC_TX] = first_of_type(hw, OFFNIC_RB_TX_CQS_TYPE);
	hw->cqs[OFFNIC_RX] = first_of_type(hw, OFFNIC_RB_RX_CQS_TYPE);
	hw->eqs = first_of_type(hw, OFFNIC_RB_EQS_TYPE);
	hw->msix = first_of_type(hw, OFFNIC_RB_MSIX_TYPE);
	hw->rss = first_of_type(hw, OFFNIC_RB_RSS_TYPE);
	hw->rx_engine = first_of_type(hw, OFFNIC_RB_RX_ENGINE_TYPE);
	hw->tx_engine = first_of_type(hw, OFFNIC_RB_TX_ENGINE_TYPE);
	hw->dma = first_of_type(hw, OFFNIC_RB_DMA_TYPE);
	hw->reasm = first_of_type(hw, OFFNIC_RB_REASM_TYPE);

	/* eth_port blocks are in port order; each says its number */
	for (i = 0; hw->n_ports < OFFNIC_MAX_PORTS;) {
		u32 at = next_of_type(hw, OFFNIC_RB_ETH_PORT_TYPE, &i);

		if (!at)
			break;
		if (offnic_rd(hw, at + OFFNIC_RB_ETH_PORT_REG_PORT) != hw->n_ports) {
			offnic_log(hw, OFFNIC_LOG_ERR, "eth_port blocks out of port order\n");
			return OFFNIC_ERR_MISSING;
		}
		hw->port[hw->n_ports++] = at;
	}
	if (!hw->n_ports) {
		offnic_log(hw, OFFNIC_LOG_ERR, "no eth_port block\n");
		return OFFNIC_ERR_MISSING;
	}

	hw->n_queues[OFFNIC_TX] = clamp_count(offnic_rd(hw, hw->queues[OFFNIC_TX] +
		OFFNIC_RB_TX_QUEUES_REG_COUNT), OFFNIC_RB_TX_QUEUES_ARRAY_MAX_COUNT);
	hw->n_queues[OFFNIC_RX] = clamp_count(offnic_rd(hw, hw->queues[OFFNIC_RX] +
		OFFNIC_RB_RX_QUEUES_REG_COUNT), OFFNIC_RB_RX_QUEUES_ARRAY_MAX_COUNT);
	hw->n_cqs[OFFNIC_TX] = clamp_count(offnic_rd(hw, hw->cqs[OFFNIC_TX] +
		OFFNIC_RB_TX_CQS_REG_COUNT), OFFNIC_RB_TX_CQS_ARRAY_MAX_COUNT);
	hw->n_cqs[OFFNIC_RX] = clamp_count(offnic_rd(hw, hw->cqs[OFFNIC_RX] +
		OFFNIC_RB_RX_CQS_REG_COUNT), OFFNIC_RB_RX_CQS_ARRAY_MAX_COUNT);
	hw->n_eqs = clamp_count(offnic_rd(hw, hw->eqs + OFFNIC_RB_EQS_REG_COUNT),
				OFFNIC_RB_EQS_ARRAY_MAX_COUNT);
	hw->n_msix = clamp_count(offnic_rd(hw, hw->msix + OFFNIC_RB_MSIX_REG_COUNT),
				 OFFNIC_RB_MSIX_ARRAY_MAX_COUNT);
	hw->max_segs = offnic_rd(hw, hw->queues[OFFNIC_TX] + OFFNIC_RB_TX_QUEUES_REG_MAX_SEGS);
	hw->desc_cache = offnic_rd(hw, hw->queues[OFFNIC_TX] + OFFNIC_RB_TX_QUEUES_REG_DESC_CACHE);
	hw->max_tx_frame = offnic_rd(hw, hw->tx_engine + OFFNIC_RB_TX_ENGINE_REG_MAX_FRAME);
	hw->rss_table_size = hw->rss ? offnic_rd(hw, hw->rss + OFFNIC_RB_RSS_REG_TABLE_SIZE) : 0;
	/* a queue completes into the completion queue of its number */
	hw->n_queues[OFFNIC_TX] = clamp_count(hw->n_queues[OFFNIC_TX], hw->n_cqs[OFFNIC_TX]);
	hw->n_queues[OFFNIC_RX] = clamp_count(hw->n_queues[OFFNIC_RX], hw->n_cqs[OFFNIC_RX]);
	if (!hw->n_queues[OFFNIC_TX] || !hw->n_queues[OFFNIC_RX] || !hw->n_eqs || !hw->max_segs) {
		offnic_log(hw, OFFNIC_LOG_ERR, "a build with no queues or event queues\n");
		return OFFNIC_ERR_MISSING;
	}
	offnic_log(hw, OFFNIC_LOG_INFO,
		   "%u blocks, %u ports, %u/%u TX/RX queues, %u event queues, %u MSI-X vectors\n",
		   hw->n_blocks, hw->n_ports, hw->n_queues[OFFNIC_TX], hw->n_queues[OFFNIC_RX],
		   hw->n_eqs, hw->n_msix);
	return OFFNIC_OK;
}
