// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Bring-up and tear-down of the rings, in the order of the driver model
 * (sim/offnic_sim/host/driver.py): event queue k (raising MSI-X vector k), then each
 * completion queue naming its event queue, then its TX or RX queue. The NIC's indexes
 * never reset, so every ring is opened at the index the NIC holds, with a memory image
 * whose phase bits make no old record look new.
 *
 * TX and RX queue records share one layout, as do TX and RX completion queue records
 * (tests/driver/test_core_hw.py checks the register map still says so).
 */
#include "offnic_hw.h"
#include "../include/offnic_regs.h"

#define Q(reg) OFFNIC_RB_TX_QUEUES_ENT_##reg
#define CQ(reg) OFFNIC_RB_TX_CQS_ENT_##reg
#define EQ(reg) OFFNIC_RB_EQS_ENT_##reg
#define CTRL_LOG_SIZE(v) ((u32)(v) << OFFNIC_RB_TX_QUEUES_ENT_CONTROL_LOG_SIZE_SHIFT)
#define CTRL_ENABLE OFFNIC_RB_TX_QUEUES_ENT_CONTROL_ENABLE_MASK

int offnic_ring_alloc(const struct offnic_hw *hw, struct offnic_ring *r, unsigned int log_size)
{
	if (log_size < OFFNIC_MIN_LOG_SIZE || log_size > OFFNIC_MAX_LOG_SIZE)
		return OFFNIC_ERR_RANGE;
	memset(r, 0, sizeof(*r));
	r->cpu = hw->ops->dma_alloc(hw->ctx, (size_t)OFFNIC_RECORD_BYTES << log_size, &r->dma);
	if (!r->cpu)
		return OFFNIC_ERR_NOMEM;
	r->log_size = log_size;
	return OFFNIC_OK;
}

void offnic_ring_free(const struct offnic_hw *hw, struct offnic_ring *r)
{
	if (r->cpu)
		hw->ops->dma_free(hw->ctx, (size_t)OFFNIC_RECORD_BYTES << r->log_size, r->cpu,
				  r->dma);
	r->cpu = NULL;
}

u32 offnic_eq_reg(const struct offnic_hw *hw, u32 k, u32 reg)
{
	return hw->eqs + OFFNIC_RB_EQS_ENT(k, reg);
}

u32 offnic_cq_reg(const struct offnic_hw *hw, int kind, u32 q, u32 reg)
{
	if (kind == OFFNIC_TX)
		return hw->cqs[OFFNIC_TX] + OFFNIC_RB_TX_CQS_ENT(q, reg);
	return hw->cqs[OFFNIC_RX] + OFFNIC_RB_RX_CQS_ENT(q, reg);
}

u32 offnic_queue_reg(const struct offnic_hw *hw, int kind, u32 q, u32 reg)
{
	if (kind == OFFNIC_TX)
		return hw->queues[OFFNIC_TX] + OFFNIC_RB_TX_QUEUES_ENT(q, reg);
	return hw->queues[OFFNIC_RX] + OFFNIC_RB_RX_QUEUES_ENT(q, reg);
}

static void write_base(const struct offnic_hw *hw, u32 base_lo, const struct offnic_ring *r)
{
	offnic_wr(hw, base_lo, (u32)r->dma);
	offnic_wr(hw, base_lo + 4, (u32)(r->dma >> 32));
}

/*
 * Open event queue k on ring r: disabled with its size, start at the NIC's producer
 * index, initial image, base, consumer index, enabled. Not armed (offnic_eq_done arms).
 */
int offnic_eq_open(const struct offnic_hw *hw, u32 k, struct offnic_ring *r)
{
	u32 ctrl = CTRL_LOG_SIZE(r->log_size);
	u16 start;

	if (k >= hw->n_eqs)
		return OFFNIC_ERR_RANGE;
	offnic_wr(hw, offnic_eq_reg(hw, k, EQ(CONTROL)), ctrl);
	start = (u16)offnic_rd(hw, offnic_eq_reg(hw, k, EQ(PROD)));
	offnic_ring_init(r->cpu, r->log_size, start);
	write_base(hw, offnic_eq_reg(hw, k, EQ(BASE_LO)), r);
	offnic_wr(hw, offnic_eq_reg(hw, k, EQ(CONS)), start);
	r->prod = start;
	r->cons = start;
	offnic_wr(hw, offnic_eq_reg(hw, k, EQ(CONTROL)), ctrl | CTRL_ENABLE);
	return OFFNIC_OK;
}

void offnic_eq_close(const struct offnic_hw *hw, u32 k)
{
	if (k < hw->n_eqs)
		offnic_wr(hw, offnic_eq_reg(hw, k, EQ(CONTROL)), 0);
}

/* Open completion queue q of a kind on ring r, reporting to event queue eq; not armed */
int offnic_cq_open(const struct offnic_hw *hw, int kind, u32 q, struct offnic_ring *r, u32 eq,
		   u32 mod_count, u32 mod_usecs)
{
	u32 ctrl = CTRL_LOG_SIZE(r->log_size) | eq << OFFNIC_RB_TX_CQS_ENT_CONTROL_EQ_SHIFT;
	u16 start;

	if (q >= hw->n_cqs[kind] || eq >= hw->n_eqs || mod_count > 0xffff || mod_usecs > 0xffff)
		return OFFNIC_ERR_RANGE;
	offnic_wr(hw, offnic_cq_reg(hw, kind, q, CQ(CONTROL)), ctrl);
	start = (u16)offnic_rd(hw, offnic_cq_reg(hw, kind, q, CQ(PROD)));
	offnic_ring_init(r->cpu, r->log_size, start);
	write_base(hw, offnic_cq_reg(hw, kind, q, CQ(BASE_LO)), r);
	offnic_wr(hw, offnic_cq_reg(hw, kind, q, CQ(CONS)), start);
	offnic_wr(hw, offnic_cq_reg(hw, kind, q, CQ(MOD_COUNT)), mod_count);
	offnic_wr(hw, offnic_cq_reg(hw, kind, q, CQ(MOD_TIME_US)), mod_usecs);
	r->prod = start;
	r->cons = start;
	offnic_wr(hw, offnic_cq_reg(hw, kind, q, CQ(CONTROL)), ctrl | CTRL_ENABLE);
	return OFFNIC_OK;
}

void offnic_cq_close(const struct offnic_hw *hw, int kind, u32 q)
{
	u32 at;

	if (q >= hw->n_cqs[kind])
		return;
	at = offnic_cq_reg(hw, kind, q, CQ(CONTROL));
	offnic_wr(hw, at, offnic_rd(hw, at) & ~CTRL_ENABLE);
}

/*
 * Open TX or RX queue q on descriptor ring r (TX: sending on port): disabled with its
 * size (and port), base, then continue from the NIC's consumer index, enabled. Its
 * completion queue must be open already.
 */
int offnic_queue_open(const struct offnic_hw *hw, int kind, u32 q, struct offnic_ring *r, u32 port)
{
	u32 ctrl = CTRL_LOG_SIZE(r->log_size);
	u16 start;

	if (q >= hw->n_queues[kind] || port >= hw->n_ports)
		return OFFNIC_ERR_RANGE;
	if (kind == OFFNIC_TX)
		ctrl |= port << OFFNIC_RB_TX_QUEUES_ENT_CONTROL_PORT_SHIFT;
	offnic_wr(hw, offnic_queue_reg(hw, kind, q, Q(CONTROL)), ctrl);
	memset(r->cpu, 0, (size_t)OFFNIC_RECORD_BYTES << r->log_size);
	write_base(hw, offnic_queue_reg(hw, kind, q, Q(BASE_LO)), r);
	start = (u16)offnic_rd(hw, offnic_queue_reg(hw, kind, q, Q(CONS)));
	offnic_wr(hw, offnic_queue_reg(hw, kind, q, Q(PROD)), start);
	r->prod = start;
	r->cons = start;
	offnic_wr(hw, offnic_queue_reg(hw, kind, q, Q(CONTROL)), ctrl | CTRL_ENABLE);
	return OFFNIC_OK;
}

/* Disable queue q: the NIC pauses it (a fetch in flight still completes) */
void offnic_queue_close(const struct offnic_hw *hw, int kind, u32 q)
{
	u32 at;

	if (q >= hw->n_queues[kind])
		return;
	at = offnic_queue_reg(hw, kind, q, Q(CONTROL));
	offnic_wr(hw, at, offnic_rd(hw, at) & ~CTRL_ENABLE);
}

/*
 * After offnic_queue_close: wait (up to max_us) until no descriptor fetch of the queue
 * is in flight, so its ring may be freed. 0 when idle, OFFNIC_ERR_RANGE on timeout.
 */
int offnic_queue_wait_idle(const struct offnic_hw *hw, int kind, u32 q, unsigned int max_us)
{
	unsigned int t;

	for (t = 0; t <= max_us; t += 10) {
		if (!(offnic_rd(hw, offnic_queue_reg(hw, kind, q, Q(STATUS))) &
		      OFFNIC_RB_TX_QUEUES_ENT_STATUS_FETCHING_MASK))
			return OFFNIC_OK;
		if (hw->ops->delay_us)
			hw->ops->delay_us(hw->ctx, 10);
	}
	return OFFNIC_ERR_RANGE;
}

/* The NIC stopped queue q: one of its descriptor fetches failed (status.error) */
int offnic_queue_failed(const struct offnic_hw *hw, int kind, u32 q)
{
	if (q >= hw->n_queues[kind])
		return 0;
	return !!(offnic_rd(hw, offnic_queue_reg(hw, kind, q, Q(STATUS))) & Q(STATUS_ERROR_MASK));
}

/*
 * Restart queue q after a failed fetch: disabling clears status.error, enabling fetches
 * again from the NIC's consumer index, so the ring, its posted descriptors and the
 * producer index stay as they are. OFFNIC_ERR_RANGE if a fetch did not end.
 */
int offnic_queue_restart(const struct offnic_hw *hw, int kind, u32 q)
{
	u32 at;
	int err;

	if (q >= hw->n_queues[kind])
		return OFFNIC_ERR_RANGE;
	at = offnic_queue_reg(hw, kind, q, Q(CONTROL));
	offnic_queue_close(hw, kind, q);
	err = offnic_queue_wait_idle(hw, kind, q, 1000);
	offnic_wr(hw, at, offnic_rd(hw, at) | CTRL_ENABLE);
	return err;
}

/* Descriptor fetches of every queue of a kind that failed so far (the engine's counter, wraps) */
u32 offnic_desc_fetch_errors(const struct offnic_hw *hw, int kind)
{
	if (kind == OFFNIC_TX)
		return hw->tx_engine ?
		       offnic_rd(hw, hw->tx_engine + OFFNIC_RB_TX_ENGINE_REG_DESC_FETCH_ERRORS) : 0;
	return hw->rx_engine ?
	       offnic_rd(hw, hw->rx_engine + OFFNIC_RB_RX_ENGINE_REG_DESC_FETCH_ERRORS) : 0;
}

void offnic_queue_doorbell(const struct offnic_hw *hw, int kind, u32 q, u16 prod)
{
	offnic_wr(hw, offnic_queue_reg(hw, kind, q, Q(PROD)), prod);
}

/* The host handled completions up to cons; arm to have the next ones raise an event */
void offnic_cq_done(const struct offnic_hw *hw, int kind, u32 q, u16 cons, int arm)
{
	offnic_wr(hw, offnic_cq_reg(hw, kind, q, CQ(CONS)), cons);
	if (arm)
		offnic_wr(hw, offnic_cq_reg(hw, kind, q, CQ(ARM)),
			  OFFNIC_RB_TX_CQS_ENT_ARM_ARM_MASK);
}

void offnic_eq_done(const struct offnic_hw *hw, u32 k, u16 cons, int arm)
{
	offnic_wr(hw, offnic_eq_reg(hw, k, EQ(CONS)), cons);
	if (arm)
		offnic_wr(hw, offnic_eq_reg(hw, k, EQ(ARM)), OFFNIC_RB_EQS_ENT_ARM_ARM_MASK);
}

/*
 * MSI-X table entry k (address, data, mask) for a host that programs the table itself
 * (the simulation); under Linux the PCI core writes it through the capability.
 */
int offnic_msix_set(const struct offnic_hw *hw, u32 k, u64 addr, u32 data, int masked)
{
	u32 at;

	if (k >= hw->n_msix)
		return OFFNIC_ERR_RANGE;
	at = hw->msix + OFFNIC_RB_MSIX_ENT(k, 0);
	offnic_wr(hw, at + OFFNIC_RB_MSIX_ENT_ADDR_LO, (u32)addr);
	offnic_wr(hw, at + OFFNIC_RB_MSIX_ENT_ADDR_HI, (u32)(addr >> 32));
	offnic_wr(hw, at + OFFNIC_RB_MSIX_ENT_DATA, data);
	offnic_wr(hw, at + OFFNIC_RB_MSIX_ENT_CONTROL, masked ? 1 : 0);
	return OFFNIC_OK;
}

/*
 * The completion at the ring's consumer index if it is new: 1 and *c filled (the
 * caller advances cons once it handled it); 0 when there is none.
 */
int offnic_cq_next(const struct offnic_ring *r, struct offnic_cpl *c)
{
	const u8 *rec = r->cpu + offnic_record_offset(r->cons, r->log_size);

	if (!offnic_is_new(rec, r->cons, r->log_size))
		return 0;
	offnic_dma_rmb();
	offnic_cpl_unpack(rec, c);
	return 1;
}

int offnic_eq_next(const struct offnic_ring *r, struct offnic_event *e)
{
	const u8 *rec = r->cpu + offnic_record_offset(r->cons, r->log_size);

	if (!offnic_is_new(rec, r->cons, r->log_size))
		return 0;
	offnic_dma_rmb();
	offnic_event_unpack(rec, e);
	return 1;
}

/* Write descriptor d at the ring's producer index and advance it (no doorbell) */
void offnic_ring_put_desc(struct offnic_ring *r, const struct offnic_desc *d)
{
	offnic_desc_pack(r->cpu + offnic_record_offset(r->prod, r->log_size), d);
	r->prod = offnic_idx_add(r->prod, 1);
}
