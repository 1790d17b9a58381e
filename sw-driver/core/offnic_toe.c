// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The TCP engine's commands, answers and notifications (offnic_toe.h); the reference
 * they are tested against is sim/offnic_sim/toe/toe_cmdq.py and toe_model.handoff_tcb
 * (tests/driver/test_core_toe.py), the RTL in tests/driver/test_core_toe_on_nic.py.
 */
#include "offnic_toe.h"
#include "../include/offnic_regs.h"

#define M32 0xffffffffu
#define CWND_MAX 0x40000000u
#define TS_OPT_LEN 12		/* NOP NOP TS(10) on every segment once negotiated */
#define NO_MSS_RCV 536		/* RFC 9293's default MSS: the peer's receive estimate */
#define RING_WINDOW_MAX_PAGES 0x0fffffffu

static const struct {
	const char *name;
	u8 width;
} tcb_fields[OFFNIC_TCB_N_FIELDS] = {
	[OFFNIC_TCB_STATE] = { "state", 3 },
	[OFFNIC_TCB_FIN_QUEUED] = { "fin_queued", 1 },
	[OFFNIC_TCB_SND_UNA] = { "snd_una", 32 },
	[OFFNIC_TCB_SND_NXT] = { "snd_nxt", 32 },
	[OFFNIC_TCB_SND_MAX] = { "snd_max", 32 },
	[OFFNIC_TCB_WRITE_SEQ] = { "write_seq", 32 },
	[OFFNIC_TCB_SND_WND] = { "snd_wnd", 30 },
	[OFFNIC_TCB_MAX_WINDOW] = { "max_window", 30 },
	[OFFNIC_TCB_SND_WL1] = { "snd_wl1", 32 },
	[OFFNIC_TCB_SND_WL2] = { "snd_wl2", 32 },
	[OFFNIC_TCB_SND_WSCALE] = { "snd_wscale", 4 },
	[OFFNIC_TCB_RCV_NXT] = { "rcv_nxt", 32 },
	[OFFNIC_TCB_RCV_WUP] = { "rcv_wup", 32 },
	[OFFNIC_TCB_RCV_WF] = { "rcv_wf", 16 },
	[OFFNIC_TCB_READ_SEQ] = { "read_seq", 32 },
	[OFFNIC_TCB_RCV_WSCALE] = { "rcv_wscale", 4 },
	[OFFNIC_TCB_RCV_MSS] = { "rcv_mss", 16 },
	[OFFNIC_TCB_MSS] = { "mss", 16 },
	[OFFNIC_TCB_TS_OK] = { "ts_ok", 1 },
	[OFFNIC_TCB_TS_OFFSET] = { "ts_offset", 32 },
	[OFFNIC_TCB_TS_RECENT] = { "ts_recent", 32 },
	[OFFNIC_TCB_TS_RECENT_OK] = { "ts_recent_ok", 1 },
	[OFFNIC_TCB_TS_RECENT_AGE] = { "ts_recent_age", 16 },
	[OFFNIC_TCB_CWND] = { "cwnd", 32 },
	[OFFNIC_TCB_SSTHRESH] = { "ssthresh", 32 },
	[OFFNIC_TCB_CA_ACC] = { "ca_acc", 32 },
	[OFFNIC_TCB_DUPACKS] = { "dupacks", 2 },
	[OFFNIC_TCB_RECOVER] = { "recover", 32 },
	[OFFNIC_TCB_IN_RECOVERY] = { "in_recovery", 1 },
	[OFFNIC_TCB_PARTIAL_SEEN] = { "partial_seen", 1 },
	[OFFNIC_TCB_SRTT8] = { "srtt8", 32 },
	[OFFNIC_TCB_RTTVAR4] = { "rttvar4", 32 },
	[OFFNIC_TCB_BACKOFF] = { "backoff", 4 },
	[OFFNIC_TCB_RETRIES] = { "retries", 5 },
	[OFFNIC_TCB_RTT_VALID] = { "rtt_valid", 1 },
	[OFFNIC_TCB_RTT_SEQ] = { "rtt_seq", 32 },
	[OFFNIC_TCB_RTT_TIME] = { "rtt_time", 32 },
	[OFFNIC_TCB_DELACK_ON] = { "delack_on", 1 },
	[OFFNIC_TCB_DELACK_DUE] = { "delack_due", 32 },
	[OFFNIC_TCB_ST_KIND] = { "st_kind", 2 },
	[OFFNIC_TCB_ST_DUE] = { "st_due", 32 },
	[OFFNIC_TCB_SND_BASE] = { "snd_base", 40 },
	[OFFNIC_TCB_SND_LOG2] = { "snd_log2", 5 },
	[OFFNIC_TCB_RCV_BASE] = { "rcv_base", 40 },
	[OFFNIC_TCB_RCV_LOG2] = { "rcv_log2", 5 },
	[OFFNIC_TCB_SACK_OK] = { "sack_ok", 1 },
	[OFFNIC_TCB_OOO_RECENT] = { "ooo_recent", 4 },
	[OFFNIC_TCB_OOO_N] = { "ooo_n", 3 },
	[OFFNIC_TCB_OOO_S3] = { "ooo_s3", 32 },
	[OFFNIC_TCB_OOO_E3] = { "ooo_e3", 32 },
	[OFFNIC_TCB_OOO_S2] = { "ooo_s2", 32 },
	[OFFNIC_TCB_OOO_E2] = { "ooo_e2", 32 },
	[OFFNIC_TCB_OOO_S1] = { "ooo_s1", 32 },
	[OFFNIC_TCB_OOO_E1] = { "ooo_e1", 32 },
	[OFFNIC_TCB_OOO_S0] = { "ooo_s0", 32 },
	[OFFNIC_TCB_OOO_E0] = { "ooo_e0", 32 },
};

unsigned int offnic_tcb_bits(void)
{
	unsigned int f, n = 0;

	for (f = 0; f < OFFNIC_TCB_N_FIELDS; f++)
		n += tcb_fields[f].width;
	return n;
}

unsigned int offnic_tcb_width(unsigned int field)
{
	return field < OFFNIC_TCB_N_FIELDS ? tcb_fields[field].width : 0;
}

const char *offnic_tcb_name(unsigned int field)
{
	return field < OFFNIC_TCB_N_FIELDS ? tcb_fields[field].name : NULL;
}

/* The bundle bit a field's least significant bit is at (fields before it sit above) */
static unsigned int tcb_lsb(unsigned int field)
{
	unsigned int f, above = 0;

	for (f = 0; f <= field; f++)
		above += tcb_fields[f].width;
	return offnic_tcb_bits() - above;
}

u64 offnic_tcb_get(const u32 *tcb, unsigned int field)
{
	unsigned int lsb, w, i;
	u64 v = 0;

	if (field >= OFFNIC_TCB_N_FIELDS)
		return 0;
	lsb = tcb_lsb(field);
	w = tcb_fields[field].width;
	for (i = 0; i < w; i++) {
		unsigned int b = lsb + i;

		v |= (u64)((tcb[b / 32] >> (b % 32)) & 1) << i;
	}
	return v;
}

/* 0, or OFFNIC_ERR_RANGE when the value does not fit the field (nothing written) */
int offnic_tcb_set(u32 *tcb, unsigned int field, u64 value)
{
	unsigned int lsb, w, i;

	if (field >= OFFNIC_TCB_N_FIELDS)
		return OFFNIC_ERR_RANGE;
	w = tcb_fields[field].width;
	if (w < 64 && value >> w)
		return OFFNIC_ERR_RANGE;
	lsb = tcb_lsb(field);
	for (i = 0; i < w; i++) {
		unsigned int b = lsb + i;

		tcb[b / 32] &= ~(1u << (b % 32));
		tcb[b / 32] |= (u32)((value >> i) & 1) << (b % 32);
	}
	return OFFNIC_OK;
}

/* Sequence arithmetic: how far a is ahead of b, in [-2^31, 2^31) */
static int seq_diff(u32 a, u32 b)
{
	return (int)(a - b);
}

static u32 min_u32(u32 a, u32 b)
{
	return a < b ? a : b;
}

static u64 min_u64(u64 a, u64 b)
{
	return a < b ? a : b;
}

static int log2_of(u32 size)
{
	int log = 0;

	if (!size || (size & (size - 1)))
		return -1;
	while ((1u << log) != size)
		log++;
	return log;
}

/*
 * The Tcb the NIC installs for a handed-off connection (toe_model.handoff_tcb): the
 * engine sets ts_offset and ts_recent_age itself from its clock and the command's
 * TSval. OFFNIC_ERR_RANGE for rings that are not a power of two or a field that does
 * not fit (a wscale past 14, ring addresses past 2^40, an MSS below the options).
 */
int offnic_toe_tcb_of(u32 *tcb, const struct offnic_toe_handoff *hs,
		      const struct offnic_toe_params *p)
{
	unsigned int ws = hs->flags & OFFNIC_TOE_WSCALE_OK ? 1 : 0;
	unsigned int ts = hs->flags & OFFNIC_TOE_TIMESTAMPS ? 1 : 0;
	unsigned int snd_ws = ws ? hs->snd_wscale : 0, rcv_ws = ws ? hs->rcv_wscale : 0;
	int snd_log = log2_of(hs->snd_size), rcv_log = log2_of(hs->rcv_size);
	u32 snd_wnd, max_window, rcv_wup, edge, ring_end, eff, srtt8 = 0, rttvar4 = 0;
	u64 wf;
	int d, err = 0;

	if (snd_log < 0 || rcv_log < 0 || snd_ws > 14 || rcv_ws > 14 ||
	    hs->mss < (ts ? TS_OPT_LEN : 0))
		return OFFNIC_ERR_RANGE;
	memset(tcb, 0, OFFNIC_TOE_TCB_WORDS * sizeof(u32));
	snd_wnd = (u32)min_u64(hs->snd_wnd, (u64)0xffff << snd_ws);
	max_window = (u32)min_u64(hs->max_window, (u64)0xffff << snd_ws);
	if (max_window < snd_wnd)
		max_window = snd_wnd;
	rcv_wup = seq_diff(hs->rcv_wup, hs->rcv_nxt) <= 0 ? hs->rcv_wup : hs->rcv_nxt;
	/* the advertised edge, never beyond what the receive ring can take */
	edge = rcv_wup + hs->rcv_wnd;
	ring_end = hs->read_seq + hs->rcv_size;
	if (seq_diff(edge, ring_end) > 0)
		edge = ring_end;
	d = seq_diff(edge, rcv_wup);
	wf = d > 0 ? min_u32((u32)d >> rcv_ws, 0xffff) : 0;
	eff = hs->mss - (ts ? TS_OPT_LEN : 0);
	if (hs->srtt_us) {
		u32 var = hs->flags & OFFNIC_TOE_HAS_RTTVAR ? hs->rttvar_us : hs->srtt_us / 2;

		srtt8 = (u32)min_u64((u64)hs->srtt_us << 3, M32);
		rttvar4 = (u32)min_u64((u64)var << 2, M32);
	}

	err |= offnic_tcb_set(tcb, OFFNIC_TCB_STATE, OFFNIC_TOE_ESTABLISHED);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SND_UNA, hs->snd_una);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SND_NXT, hs->snd_nxt);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SND_MAX, hs->snd_nxt);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_WRITE_SEQ, hs->write_seq);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SND_WSCALE, snd_ws);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_RCV_WSCALE, rcv_ws);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SND_WND, snd_wnd);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_MAX_WINDOW, max_window);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SND_WL1, hs->flags & OFFNIC_TOE_HAS_SND_WL1 ?
			      hs->snd_wl1 : hs->rcv_nxt);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SND_WL2, hs->snd_una);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_RCV_NXT, hs->rcv_nxt);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_READ_SEQ, hs->read_seq);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_RCV_WUP, rcv_wup);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_RCV_WF, wf);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_MSS, hs->mss);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_TS_OK, ts);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SACK_OK,
			      (hs->flags & OFFNIC_TOE_SACK_OK) && p->sack ? 1 : 0);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_RCV_MSS, min_u32(eff, NO_MSS_RCV));
	if (ts && (hs->flags & OFFNIC_TOE_HAS_TS_RECENT)) {
		err |= offnic_tcb_set(tcb, OFFNIC_TCB_TS_RECENT, hs->ts_recent);
		err |= offnic_tcb_set(tcb, OFFNIC_TCB_TS_RECENT_OK, 1);
	}
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_CWND, min_u64(hs->cwnd ? hs->cwnd :
			      (u64)p->init_cwnd * eff, CWND_MAX));
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SSTHRESH, hs->ssthresh ? hs->ssthresh : M32);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_RECOVER, hs->snd_una - 1);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SRTT8, srtt8);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_RTTVAR4, rttvar4);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SND_BASE, hs->snd_ring);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_SND_LOG2, (u32)snd_log);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_RCV_BASE, hs->rcv_ring);
	err |= offnic_tcb_set(tcb, OFFNIC_TCB_RCV_LOG2, (u32)rcv_log);
	return err ? OFFNIC_ERR_RANGE : OFFNIC_OK;
}

static void put32(u8 *p, u32 v)
{
	p[0] = (u8)v;
	p[1] = (u8)(v >> 8);
	p[2] = (u8)(v >> 16);
	p[3] = (u8)(v >> 24);
}

static u32 get32(const u8 *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (u32)p[3] << 24;
}

/* A MAC as the block's two words: byte 5 in bits 7:0 of the first, bytes 0-1 in the second */
static void put_mac(u8 *p, const u8 *mac)
{
	put32(p, (u32)mac[2] << 24 | mac[3] << 16 | mac[4] << 8 | mac[5]);
	put32(p + 4, (u32)(mac[0] << 8 | mac[1]));
}

static void get_mac(const u8 *p, u8 *mac)
{
	u32 lo = get32(p), hi = get32(p + 4);

	mac[0] = (u8)(hi >> 8);
	mac[1] = (u8)hi;
	mac[2] = (u8)(lo >> 24);
	mac[3] = (u8)(lo >> 16);
	mac[4] = (u8)(lo >> 8);
	mac[5] = (u8)lo;
}

/* The command block: addresses in words 0-6, word 7 0, the Tcb in words 8-47 */
void offnic_toe_block_pack(u8 *block, const struct offnic_toe_addr *a, const u32 *tcb)
{
	unsigned int k;

	put_mac(block, a->peer_mac);
	put_mac(block + 8, a->local_mac);
	put32(block + 16, a->local_ip);
	put32(block + 20, a->peer_ip);
	put32(block + 24, (u32)a->local_port << 16 | a->peer_port);
	put32(block + 28, 0);
	for (k = 0; k < OFFNIC_TOE_TCB_WORDS; k++)
		put32(block + 32 + 4 * k, tcb[k]);
}

/* An answer block: the command block's layout, word 7 the engine's clock (us, 31:0) */
void offnic_toe_block_unpack(const u8 *block, struct offnic_toe_addr *a, u32 *now_us, u32 *tcb)
{
	unsigned int k;
	u32 ports = get32(block + 24);

	get_mac(block, a->peer_mac);
	get_mac(block + 8, a->local_mac);
	a->local_ip = get32(block + 16);
	a->peer_ip = get32(block + 20);
	a->local_port = (u16)(ports >> 16);
	a->peer_port = (u16)ports;
	*now_us = get32(block + 28);
	for (k = 0; k < OFFNIC_TOE_TCB_WORDS; k++)
		tcb[k] = get32(block + 32 + 4 * k);
}

/* Whether the NIC takes a block at this bus address (else the command is BAD_DESC) */
int offnic_toe_block_addr_ok(u64 dma)
{
	return !(dma & (OFFNIC_TOE_BLOCK_ALIGN - 1)) && !(dma >> 40) &&
	       (dma & (OFFNIC_RING_ALIGN - 1)) + OFFNIC_TOE_BLOCK_BYTES <= OFFNIC_RING_ALIGN;
}

/*
 * A command as a TX descriptor: block is the command block's bus address (install,
 * reserve, complete), the answer block's or 0 (restore, status), ignored otherwise.
 * OFFNIC_ERR_RANGE for an unknown operation or a block the NIC would refuse.
 */
int offnic_toe_desc(struct offnic_desc *d, unsigned int op, u16 id, u32 arg, u64 block)
{
	int needs = op == OFFNIC_TOE_INSTALL || op == OFFNIC_TOE_RESERVE ||
		    op == OFFNIC_TOE_COMPLETE;
	int may = op == OFFNIC_TOE_RESTORE || op == OFFNIC_TOE_STATUS;

	if (op > OFFNIC_TOE_COMPLETE)
		return OFFNIC_ERR_RANGE;
	if ((needs || (may && block)) && !offnic_toe_block_addr_ok(block))
		return OFFNIC_ERR_RANGE;
	d->addr = needs || may ? block : 0;
	d->len = id;
	d->opcode = (u8)(OFFNIC_TOE_OP_BASE + op);
	d->flags = 0;
	d->csum_start = (u16)arg;
	d->csum_insert = (u16)(arg >> 16);
	return OFFNIC_OK;
}

u32 offnic_toe_desc_arg(const struct offnic_desc *d)
{
	return d->csum_start | (u32)d->csum_insert << 16;
}

/* A command's TX completion as its answer */
void offnic_toe_answer_of(const struct offnic_cpl *c, struct offnic_toe_answer *a)
{
	a->id = (u16)c->len;
	if (c->status == OFFNIC_ST_OK)
		a->status = OFFNIC_TOE_OK;
	else if (c->status >= OFFNIC_TOE_STATUS_BASE)
		a->status = c->status - OFFNIC_TOE_STATUS_BASE;
	else
		a->status = 0x100 | c->status;
	a->ts_val = c->rss_hash;
	a->tcp_state = c->rss_type;
}

/* An event record as a notification: 0, or -1 when it is another type of event */
int offnic_toe_note_unpack(const u8 *rec, struct offnic_toe_note *n)
{
	if (rec[2] != OFFNIC_EV_TOE_NOTE)
		return -1;
	n->id = (u16)(rec[0] | rec[1] << 8);
	n->kind = rec[3];
	n->seq = get32(rec + 8);
	n->merged = (u16)(rec[12] | rec[13] << 8);
	return 0;
}

/* The toe_host block's BAR0 offset, 0 on a build without the TCP engine */
u32 offnic_toe_host(const struct offnic_hw *hw)
{
	unsigned int i;

	for (i = 0; i < hw->n_blocks; i++)
		if (hw->blocks[i].type == OFFNIC_RB_TOE_HOST_TYPE && hw->blocks[i].known)
			return hw->blocks[i].offset;
	return 0;
}

/* The engine is there and its Tcb is this core's layout */
int offnic_toe_check(const struct offnic_hw *hw)
{
	u32 at = offnic_toe_host(hw), bits;

	if (!at)
		return OFFNIC_ERR_MISSING;
	bits = offnic_rd(hw, at + OFFNIC_RB_TOE_HOST_REG_TCB_BITS);
	if (bits != offnic_tcb_bits()) {
		offnic_log(hw, OFFNIC_LOG_ERR, "the NIC's Tcb has %u bits, the driver's %u\n",
			   bits, offnic_tcb_bits());
		return OFFNIC_ERR_RANGE;
	}
	return OFFNIC_OK;
}

int offnic_toe_configure(const struct offnic_hw *hw, const struct offnic_toe_config *c)
{
	u32 at = offnic_toe_host(hw);

	if (!at)
		return OFFNIC_ERR_MISSING;
	if (!c->cycles_per_us ||
	    c->cycles_per_us > OFFNIC_RB_TOE_HOST_REG_CYCLES_PER_US_CYCLES_MASK ||
	    c->max_retries > OFFNIC_RB_TOE_HOST_REG_ENGINE_CONTROL_MAX_RETRIES_MASK >>
			     OFFNIC_RB_TOE_HOST_REG_ENGINE_CONTROL_MAX_RETRIES_SHIFT)
		return OFFNIC_ERR_RANGE;
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_CYCLES_PER_US, c->cycles_per_us);
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_DELACK_US, c->delack_us);
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_RTO_MIN_US, c->rto_min_us);
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_RTO_MAX_US, c->rto_max_us);
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_RTO_INITIAL_US, c->rto_initial_us);
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_TIME_WAIT_US, c->time_wait_us);
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_FIN_WAIT2_US, c->fin_wait2_us);
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_ENGINE_CONTROL,
		  (c->fin_wait2_us ? OFFNIC_RB_TOE_HOST_REG_ENGINE_CONTROL_FIN_WAIT2_ON_MASK : 0) |
		  c->max_retries << OFFNIC_RB_TOE_HOST_REG_ENGINE_CONTROL_MAX_RETRIES_SHIFT);
	return OFFNIC_OK;
}

/*
 * The host memory connections' rings must lie in (installs and completes with rings
 * elsewhere are refused, 0x27): base 4 KiB aligned, bytes a multiple of 4 KiB; 0 bytes
 * turns the window off (rings anywhere below 2^40).
 */
int offnic_toe_set_ring_window(const struct offnic_hw *hw, u64 base, u64 bytes)
{
	u32 at = offnic_toe_host(hw);
	u64 pages = bytes / OFFNIC_RING_ALIGN;

	if (!at)
		return OFFNIC_ERR_MISSING;
	if ((base | bytes) & (OFFNIC_RING_ALIGN - 1) || base >> 40 || pages > RING_WINDOW_MAX_PAGES)
		return OFFNIC_ERR_RANGE;
	/* off first: never a window of the old size at the new base */
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_RINGS_PAGES, 0);
	if (!pages)
		return OFFNIC_OK;
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_RINGS_BASE_PAGE, (u32)(base / OFFNIC_RING_ALIGN));
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_RINGS_PAGES, (u32)pages);
	return OFFNIC_OK;
}

/* Notifications as events on event queue eq (events), or in the register FIFO */
int offnic_toe_set_notes(const struct offnic_hw *hw, int events, u32 eq)
{
	u32 at = offnic_toe_host(hw);

	if (!at)
		return OFFNIC_ERR_MISSING;
	if (events && eq >= hw->n_eqs)
		return OFFNIC_ERR_RANGE;
	if (events)
		offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_NOTE_EQ, eq);
	offnic_wr(hw, at + OFFNIC_RB_TOE_HOST_REG_NOTE_MODE,
		  events ? OFFNIC_RB_TOE_HOST_REG_NOTE_MODE_EVENTS_MASK : 0);
	return OFFNIC_OK;
}

/* Connections the NIC takes now (installs and reserves past it: status 0x25) */
u32 offnic_toe_soft_limit(const struct offnic_hw *hw)
{
	u32 at = offnic_toe_host(hw);

	return at ? offnic_rd(hw, at + OFFNIC_RB_TOE_HOST_REG_SOFT_LIMIT) : 0;
}
