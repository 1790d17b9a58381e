/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The host interface's records and ring arithmetic (docs/queues.md): 16-byte
 * descriptors, completions and events, packed and unpacked byte by byte (little
 * endian whatever the CPU), free-running 16-bit indexes, phase bits; the receive
 * filter's multicast hash; the header fix-up of a datagram the NIC reassembled.
 * Pure functions: no register access, no memory allocation.
 */
#ifndef OFFNIC_RECORDS_H
#define OFFNIC_RECORDS_H

#include "offnic_os.h"

#define OFFNIC_RECORD_BYTES 16
#define OFFNIC_INDEX_MASK 0xffffu
#define OFFNIC_MIN_LOG_SIZE 1
#define OFFNIC_MAX_LOG_SIZE 15
#define OFFNIC_RING_ALIGN 4096

/* Descriptor opcodes (byte 10) and flags (byte 11, TX only) */
#define OFFNIC_OP_DATA 0x00
#define OFFNIC_OP_BUFFER 0x00
#define OFFNIC_OP_CACHE_INSERT 0x01
#define OFFNIC_OP_CACHE_APPEND 0x02
#define OFFNIC_DESC_MORE 0x01
#define OFFNIC_DESC_CSUM 0x02

/* Completion status (byte 6) */
enum offnic_cpl_status {
	OFFNIC_ST_OK = 0,
	OFFNIC_ST_DMA_ERROR = 1,
	OFFNIC_ST_BAD_DESC = 2,
	OFFNIC_ST_TOO_LONG = 3,
	OFFNIC_ST_CACHE_RANGE = 4,
	OFFNIC_ST_FRAG_DF = 5,
	OFFNIC_ST_FRAG_OPTIONS = 6,
	OFFNIC_ST_FRAG_MALFORMED = 7,
};

/* Completion flags (byte 7); the phase bit is bit 7 of byte 7 in events too */
#define OFFNIC_CPL_PORT 0x01
#define OFFNIC_CPL_CSUM_VALID 0x02
#define OFFNIC_CPL_RSS_VALID 0x04
#define OFFNIC_CPL_REASSEMBLED 0x08
#define OFFNIC_PHASE 0x80
#define OFFNIC_FLAGS_BYTE 7

/* Event types (byte 2) */
#define OFFNIC_EV_TX_CQ 0
#define OFFNIC_EV_RX_CQ 1

/* Reassembly buffers (docs/frag.md): the frame starts at most here, ends by here */
#define OFFNIC_REASM_PAYLOAD_AT 78
#define OFFNIC_REASM_BUFFER_BYTES (OFFNIC_REASM_PAYLOAD_AT + 65535 - 20)

struct offnic_desc {
	u64 addr;
	u16 len;
	u8 opcode;
	u8 flags;
	u16 csum_start;  /* opcode-specific bytes 12-13 for opcodes but DATA */
	u16 csum_insert; /* bytes 14-15 */
};

struct offnic_cpl {
	u16 queue;
	u16 index;
	u32 len;      /* 17 bits: bit 16 is byte 15 bit 0 */
	u8 status;
	u8 flags;
	u32 rss_hash;
	u16 csum;
	u8 rss_type;
	u8 byte15_hi; /* byte 15 bits 7:1 (reassembled: where the frame starts) */
};

struct offnic_event {
	u16 source;
	u8 type;
	u8 flags;
};

void offnic_desc_pack(u8 *rec, const struct offnic_desc *d);
void offnic_desc_unpack(const u8 *rec, struct offnic_desc *d);
void offnic_cpl_pack(u8 *rec, const struct offnic_cpl *c);
void offnic_cpl_unpack(const u8 *rec, struct offnic_cpl *c);
void offnic_event_pack(u8 *rec, const struct offnic_event *e);
void offnic_event_unpack(const u8 *rec, struct offnic_event *e);

static inline u16 offnic_idx_add(u16 i, u32 n)
{
	return (u16)((i + n) & OFFNIC_INDEX_MASK);
}

/* Records between consumer and producer */
static inline u32 offnic_used(u16 prod, u16 cons)
{
	return (u16)(prod - cons);
}

/* Records the producer may still write before the ring is full */
static inline u32 offnic_free(u16 prod, u16 cons, unsigned int log_size)
{
	return (1u << log_size) - offnic_used(prod, cons);
}

static inline int offnic_is_empty(u16 prod, u16 cons)
{
	return prod == cons;
}

static inline int offnic_is_full(u16 prod, u16 cons, unsigned int log_size)
{
	return offnic_used(prod, cons) == 1u << log_size;
}

static inline u32 offnic_slot(u16 i, unsigned int log_size)
{
	return i & ((1u << log_size) - 1);
}

static inline u32 offnic_record_offset(u16 i, unsigned int log_size)
{
	return offnic_slot(i, log_size) * OFFNIC_RECORD_BYTES;
}

/* The phase bit the NIC writes into record i: the inverse of bit log_size of i */
static inline unsigned int offnic_phase_of(u16 i, unsigned int log_size)
{
	return ((i >> log_size) & 1) ^ 1;
}

/* Whether the completion or event read at index cons was written on this pass */
static inline int offnic_is_new(const u8 *rec, u16 cons, unsigned int log_size)
{
	return ((rec[OFFNIC_FLAGS_BYTE] >> 7) & 1) == offnic_phase_of(cons, log_size);
}

int offnic_log_size_of(u32 size);
void offnic_ring_init(u8 *ring, unsigned int log_size, u16 start);
unsigned int offnic_mc_hash(const u8 *addr);
int offnic_reasm_fixup(u8 *frame, u32 len, unsigned int ecn, int df);
u32 offnic_rss_key_word(const u8 *key, unsigned int i);

#endif /* OFFNIC_RECORDS_H */
