// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Records and ring arithmetic of docs/queues.md; the reference they are tested
 * against is sim/offnic_sim/host/rings.py (tests/driver/test_core_records.py).
 */
#include "offnic_records.h"

static void put16(u8 *p, u16 v)
{
	p[0] = (u8)v;
	p[1] = (u8)(v >> 8);
}

static void put32(u8 *p, u32 v)
{
	put16(p, (u16)v);
	put16(p + 2, (u16)(v >> 16));
}

static u16 get16(const u8 *p)
{
	return (u16)(p[0] | p[1] << 8);
}

static u32 get32(const u8 *p)
{
	return get16(p) | (u32)get16(p + 2) << 16;
}

void offnic_desc_pack(u8 *rec, const struct offnic_desc *d)
{
	put32(rec, (u32)d->addr);
	put32(rec + 4, (u32)(d->addr >> 32));
	put16(rec + 8, d->len);
	rec[10] = d->opcode;
	rec[11] = d->flags;
	put16(rec + 12, d->csum_start);
	put16(rec + 14, d->csum_insert);
}

void offnic_desc_unpack(const u8 *rec, struct offnic_desc *d)
{
	d->addr = get32(rec) | (u64)get32(rec + 4) << 32;
	d->len = get16(rec + 8);
	d->opcode = rec[10];
	d->flags = rec[11];
	d->csum_start = get16(rec + 12);
	d->csum_insert = get16(rec + 14);
}

void offnic_cpl_pack(u8 *rec, const struct offnic_cpl *c)
{
	put16(rec, c->queue);
	put16(rec + 2, c->index);
	put16(rec + 4, (u16)c->len);
	rec[6] = c->status;
	rec[7] = c->flags;
	put32(rec + 8, c->rss_hash);
	put16(rec + 12, c->csum);
	rec[14] = c->rss_type;
	rec[15] = (u8)(((c->len >> 16) & 1) | (c->byte15_hi & 0xfe));
}

void offnic_cpl_unpack(const u8 *rec, struct offnic_cpl *c)
{
	c->queue = get16(rec);
	c->index = get16(rec + 2);
	c->len = get16(rec + 4) | (u32)(rec[15] & 1) << 16;
	c->status = rec[6];
	c->flags = rec[7];
	c->rss_hash = get32(rec + 8);
	c->csum = get16(rec + 12);
	c->rss_type = rec[14];
	c->byte15_hi = rec[15] & 0xfe;
}

void offnic_event_pack(u8 *rec, const struct offnic_event *e)
{
	memset(rec, 0, OFFNIC_RECORD_BYTES);
	put16(rec, e->source);
	rec[2] = e->type;
	rec[7] = e->flags;
}

void offnic_event_unpack(const u8 *rec, struct offnic_event *e)
{
	e->source = get16(rec);
	e->type = rec[2];
	e->flags = rec[7];
}

/* log2 of a ring size (a power of two from 2 to 32768), or -1 */
int offnic_log_size_of(u32 size)
{
	int log = 0;

	if (size < 1u << OFFNIC_MIN_LOG_SIZE || size > 1u << OFFNIC_MAX_LOG_SIZE ||
	    (size & (size - 1)))
		return -1;
	while ((1u << log) != size)
		log++;
	return log;
}

/*
 * The memory image of a completion or event ring whose producer starts at index
 * start: every record carries the phase of the pass before the one that next writes
 * it, so none looks new (all zero when start begins an even pass, 0 included).
 */
void offnic_ring_init(u8 *ring, unsigned int log_size, u16 start)
{
	u32 size = 1u << log_size;
	u32 s;

	memset(ring, 0, (size_t)size * OFFNIC_RECORD_BYTES);
	for (s = 0; s < size; s++) {
		/* the next index to land in slot s */
		u16 next = offnic_idx_add(start, (s - offnic_slot(start, log_size)) & (size - 1));

		if (offnic_phase_of(next, log_size) == 0)
			ring[s * OFFNIC_RECORD_BYTES + OFFNIC_FLAGS_BYTE] = OFFNIC_PHASE;
	}
}

/* The NIC's multicast hash: the top 6 bits of the IEEE CRC-32 of the 6 address bytes */
unsigned int offnic_mc_hash(const u8 *addr)
{
	u32 crc = 0xffffffffu;
	int i, b;

	for (i = 0; i < 6; i++) {
		crc ^= addr[i];
		for (b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return (~crc) >> 26;
}

static u16 ip_header_csum(const u8 *h, unsigned int ihl)
{
	u32 sum = 0;
	unsigned int i;

	for (i = 0; i < ihl; i += 2)
		sum += (u32)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

/*
 * The driver's part of a reassembled datagram's completion (docs/frag.md), done on
 * the frame in place (len bytes, headers as the first fragment brought them): IP
 * total length, fragment field cleared (DF as the completion says), ECN bits ORed
 * in, header checksum recomputed. Returns the IP header's offset, or -1 if the frame
 * cannot hold its headers.
 */
int offnic_reasm_fixup(u8 *frame, u32 len, unsigned int ecn, int df)
{
	unsigned int h = (len >= 14 && frame[12] == 0x81 && frame[13] == 0x00) ? 18 : 14;
	unsigned int ihl;
	u32 total;

	if (len < h + 20)
		return -1;
	ihl = (frame[h] & 15u) * 4;
	if (ihl < 20 || len < h + ihl)
		return -1;
	total = len - h;
	frame[h + 1] |= (u8)(ecn & 3);
	frame[h + 2] = (u8)(total >> 8);
	frame[h + 3] = (u8)total;
	frame[h + 6] = df ? 0x40 : 0;
	frame[h + 7] = 0;
	frame[h + 10] = 0;
	frame[h + 11] = 0;
	total = ip_header_csum(frame + h, ihl);
	frame[h + 10] = (u8)(total >> 8);
	frame[h + 11] = (u8)total;
	return (int)h;
}

/* Register key_i of the 40-byte Toeplitz key: key byte 4i in bits 31:24 */
u32 offnic_rss_key_word(const u8 *key, unsigned int i)
{
	const u8 *p = key + 4 * i;

	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}
