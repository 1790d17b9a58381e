/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The driver's side of the NIC's TCP engine (docs/queues.md "TCP connection
 * operations", docs/toe.md): command descriptors, the 192-byte command block built
 * from a handed-off connection (the Tcb bundle's bits), the answers (TX completion,
 * answer block), the engine's notification events and the toe_host settings. Pure
 * functions but the few register writes at the end; no memory allocation.
 * The reference is sim/offnic_sim/toe/toe_cmdq.py (tests/driver/test_core_toe.py).
 */
#ifndef OFFNIC_TOE_H
#define OFFNIC_TOE_H

#include "offnic_os.h"
#include "offnic_records.h"
#include "offnic_hw.h"

#define OFFNIC_TOE_OP_BASE 0x20		/* descriptor opcode = base + operation */
#define OFFNIC_TOE_STATUS_BASE 0x20	/* completion status = base + engine status */
#define OFFNIC_TOE_BLOCK_BYTES 192	/* 8 address words, then the Tcb's 40 */
#define OFFNIC_TOE_BLOCK_ALIGN 32	/* and not crossing 4 KiB, below 2^40 */
#define OFFNIC_TOE_TCB_WORDS 40
#define OFFNIC_TOE_RESTORE_HOLD 0x1	/* restore's arg: keep the id, hold its segments */
#define OFFNIC_EV_TOE_NOTE 2		/* event type of an engine notification */

/* Operations (TcpEngine's EngineOp) */
enum offnic_toe_op {
	OFFNIC_TOE_INSTALL = 0,
	OFFNIC_TOE_RESTORE = 1,
	OFFNIC_TOE_SEND = 2,
	OFFNIC_TOE_READ = 3,
	OFFNIC_TOE_CLOSE = 4,
	OFFNIC_TOE_STATUS = 5,
	OFFNIC_TOE_RESERVE = 6,
	OFFNIC_TOE_COMPLETE = 7,
};

/* An answer's status: the engine's (EngineStatus), or a refused descriptor */
enum offnic_toe_status {
	OFFNIC_TOE_OK = 0,
	OFFNIC_TOE_EXISTS = 1,		/* the 4-tuple is installed: its id in the answer */
	OFFNIC_TOE_FULL = 2,
	OFFNIC_TOE_NOID = 3,
	OFFNIC_TOE_NOTLIVE = 4,
	OFFNIC_TOE_OVER_LIMIT = 5,	/* toe_host.soft_limit */
	OFFNIC_TOE_RESERVES_FULL = 6,
	OFFNIC_TOE_BAD_RINGS = 7,	/* overlapping, past 2^40 or outside the ring window */
	OFFNIC_TOE_DMA_ERROR = 0x100 | OFFNIC_ST_DMA_ERROR,
	OFFNIC_TOE_BAD_DESC = 0x100 | OFFNIC_ST_BAD_DESC,
};

/* Notification kinds (TcpDecide's NoteKind) */
enum offnic_toe_note_kind {
	OFFNIC_TOE_NOTE_RX = 0,		/* received up to seq */
	OFFNIC_TOE_NOTE_ACKED = 1,	/* acknowledged up to seq */
	OFFNIC_TOE_NOTE_FIN = 2,
	OFFNIC_TOE_NOTE_RST = 3,
	OFFNIC_TOE_NOTE_TIMEOUT = 4,
	OFFNIC_TOE_NOTE_CLOSED = 5,
};

/* TCP states (ConnState) the completions report */
#define OFFNIC_TOE_CLOSED 0
#define OFFNIC_TOE_ESTABLISHED 1

/*
 * The Tcb bundle's fields (hw/src/offnic/toe/Tcb.scala) in bundle order (widths: offnic_toe.c): the
 * first field in the most significant bits of the bundle, word 0 of the block's Tcb
 * holding bits 31:0. Checked against sim/offnic_sim/toe/toe_window.py's TCB_LAYOUT.
 */
enum offnic_tcb_field {
	OFFNIC_TCB_STATE,
	OFFNIC_TCB_FIN_QUEUED,
	OFFNIC_TCB_SND_UNA,
	OFFNIC_TCB_SND_NXT,
	OFFNIC_TCB_SND_MAX,
	OFFNIC_TCB_WRITE_SEQ,
	OFFNIC_TCB_SND_WND,
	OFFNIC_TCB_MAX_WINDOW,
	OFFNIC_TCB_SND_WL1,
	OFFNIC_TCB_SND_WL2,
	OFFNIC_TCB_SND_WSCALE,
	OFFNIC_TCB_RCV_NXT,
	OFFNIC_TCB_RCV_WUP,
	OFFNIC_TCB_RCV_WF,
	OFFNIC_TCB_READ_SEQ,
	OFFNIC_TCB_RCV_WSCALE,
	OFFNIC_TCB_RCV_MSS,
	OFFNIC_TCB_MSS,
	OFFNIC_TCB_TS_OK,
	OFFNIC_TCB_TS_OFFSET,
	OFFNIC_TCB_TS_RECENT,
	OFFNIC_TCB_TS_RECENT_OK,
	OFFNIC_TCB_TS_RECENT_AGE,
	OFFNIC_TCB_CWND,
	OFFNIC_TCB_SSTHRESH,
	OFFNIC_TCB_CA_ACC,
	OFFNIC_TCB_DUPACKS,
	OFFNIC_TCB_RECOVER,
	OFFNIC_TCB_IN_RECOVERY,
	OFFNIC_TCB_PARTIAL_SEEN,
	OFFNIC_TCB_SRTT8,
	OFFNIC_TCB_RTTVAR4,
	OFFNIC_TCB_BACKOFF,
	OFFNIC_TCB_RETRIES,
	OFFNIC_TCB_RTT_VALID,
	OFFNIC_TCB_RTT_SEQ,
	OFFNIC_TCB_RTT_TIME,
	OFFNIC_TCB_DELACK_ON,
	OFFNIC_TCB_DELACK_DUE,
	OFFNIC_TCB_ST_KIND,
	OFFNIC_TCB_ST_DUE,
	OFFNIC_TCB_SND_BASE,
	OFFNIC_TCB_SND_LOG2,
	OFFNIC_TCB_RCV_BASE,
	OFFNIC_TCB_RCV_LOG2,
	OFFNIC_TCB_SACK_OK,
	OFFNIC_TCB_OOO_RECENT,
	OFFNIC_TCB_OOO_N,
	OFFNIC_TCB_OOO_S3,
	OFFNIC_TCB_OOO_E3,
	OFFNIC_TCB_OOO_S2,
	OFFNIC_TCB_OOO_E2,
	OFFNIC_TCB_OOO_S1,
	OFFNIC_TCB_OOO_E1,
	OFFNIC_TCB_OOO_S0,
	OFFNIC_TCB_OOO_E0,
	OFFNIC_TCB_N_FIELDS
};

unsigned int offnic_tcb_bits(void);
unsigned int offnic_tcb_width(unsigned int field);
const char *offnic_tcb_name(unsigned int field);
u64 offnic_tcb_get(const u32 *tcb, unsigned int field);
int offnic_tcb_set(u32 *tcb, unsigned int field, u64 value);

/* The connection's frame addresses (the block's words 0-6) */
struct offnic_toe_addr {
	u8 local_mac[6];	/* chooses the port the engine sends on */
	u8 peer_mac[6];
	u32 local_ip;		/* IPv4, as a number (10.0.0.1 = 0x0a000001) */
	u32 peer_ip;
	u16 local_port;
	u16 peer_port;
};

/*
 * A connection as the host hands it over: what TCP_REPAIR gives (sequence numbers,
 * struct tcp_repair_window, the options), its queues already placed in the rings. The
 * send ring holds [snd_una, write_seq), of which [snd_una, snd_nxt) was sent; the
 * receive ring [read_seq, rcv_nxt). Rings: a power of two bytes each, the byte of
 * sequence number s at s mod size. 0 in cwnd, ssthresh, srtt_us: not known.
 */
struct offnic_toe_handoff {
	u32 snd_una, snd_nxt, write_seq;
	u32 rcv_nxt, read_seq;
	u32 snd_wnd;		/* bytes, scaled */
	u32 rcv_wnd;		/* bytes, scaled */
	u32 rcv_wup;
	u32 max_window;
	u32 snd_wl1;		/* with OFFNIC_TOE_HAS_SND_WL1, else rcv_nxt */
	u32 ts_recent;		/* with OFFNIC_TOE_HAS_TS_RECENT */
	u32 cwnd, ssthresh;	/* bytes */
	u32 srtt_us, rttvar_us;	/* rttvar_us with OFFNIC_TOE_HAS_RTTVAR, else srtt_us / 2 */
	u64 snd_ring, rcv_ring;	/* bus addresses */
	u32 snd_size, rcv_size;
	u16 mss;		/* the peer's MSS option */
	u8 snd_wscale, rcv_wscale;
	u32 flags;		/* OFFNIC_TOE_* below */
};

#define OFFNIC_TOE_WSCALE_OK 0x01
#define OFFNIC_TOE_TIMESTAMPS 0x02
#define OFFNIC_TOE_SACK_OK 0x04
#define OFFNIC_TOE_HAS_SND_WL1 0x08
#define OFFNIC_TOE_HAS_TS_RECENT 0x10
#define OFFNIC_TOE_HAS_RTTVAR 0x20

/* The engine's settings a Tcb depends on (toe_model.EngineParams) */
struct offnic_toe_params {
	u32 init_cwnd;	/* segments, when the handoff carries no cwnd */
	int sack;	/* SACK blocks when the handoff negotiated SACK */
};

int offnic_toe_tcb_of(u32 *tcb, const struct offnic_toe_handoff *hs,
		      const struct offnic_toe_params *p);
void offnic_toe_block_pack(u8 *block, const struct offnic_toe_addr *a, const u32 *tcb);
void offnic_toe_block_unpack(const u8 *block, struct offnic_toe_addr *a, u32 *now_us, u32 *tcb);

/* Descriptors and answers */
int offnic_toe_block_addr_ok(u64 dma);
int offnic_toe_desc(struct offnic_desc *d, unsigned int op, u16 id, u32 arg, u64 block);
u32 offnic_toe_desc_arg(const struct offnic_desc *d);

struct offnic_toe_answer {
	u16 id;
	u16 status;	/* enum offnic_toe_status */
	u32 ts_val;	/* our TSval at the answer (0: the engine did not answer) */
	u8 tcp_state;	/* after the command */
};

void offnic_toe_answer_of(const struct offnic_cpl *c, struct offnic_toe_answer *a);

struct offnic_toe_note {
	u16 id;
	u8 kind;	/* enum offnic_toe_note_kind */
	u32 seq;	/* rx, acked */
	u16 merged;	/* notifications this event stands for */
};

int offnic_toe_note_unpack(const u8 *rec, struct offnic_toe_note *n);

/* The engine's clocks and timers (toe_host; microseconds of the engine's clock) */
struct offnic_toe_config {
	u32 cycles_per_us;	/* core clocks per microsecond: 250 at 250 MHz */
	u32 delack_us, rto_min_us, rto_max_us, rto_initial_us, time_wait_us;
	u32 fin_wait2_us;	/* 0: no FIN_WAIT_2 limit */
	u32 max_retries;	/* retransmissions before the connection is reset */
};

/* The toe_host settings (BAR0); OFFNIC_ERR_MISSING on a build without the engine */
u32 offnic_toe_host(const struct offnic_hw *hw);
int offnic_toe_check(const struct offnic_hw *hw);
int offnic_toe_configure(const struct offnic_hw *hw, const struct offnic_toe_config *c);
int offnic_toe_set_ring_window(const struct offnic_hw *hw, u64 base, u64 bytes);
int offnic_toe_set_notes(const struct offnic_hw *hw, int events, u32 eq);
u32 offnic_toe_soft_limit(const struct offnic_hw *hw);

#endif /* OFFNIC_TOE_H */
