// SPDX-License-Identifier: MIT
/*
 * Unit tests of the payload-cache directory: each behaviour the header promises, then a
 * randomised run against a reference model kept deliberately naive (linear searches,
 * LRU by timestamps) so that it shares no code or data structure with the library.
 *
 *   test_cache_dir [seed] [steps]     exit status 0 when every check passes
 */
#include "cache_dir.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			failures++;                                               \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                             \
			fputc('\n', stderr);                                      \
		}                                                                 \
	} while (0)

#define BS 4096u
#define MAX_CMDS 64

/* ------------------------------------------------------------------ helpers */

static ocd_cmd C(uint8_t op, uint64_t host_addr, uint64_t cache_off, uint32_t len)
{
	ocd_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = op;
	c.host_addr = host_addr;
	c.cache_off = cache_off;
	c.len = len;
	return c;
}

static ocd_cmd INS(uint64_t host_addr, uint64_t cache_off, uint32_t len)
{
	return C(OCD_INSERT, host_addr, cache_off, len);
}

static ocd_cmd FROM_CACHE(uint64_t cache_off, uint32_t len)
{
	return C(OCD_APPEND_CACHE, 0, cache_off, len);
}

static ocd_cmd FROM_HOST(uint64_t host_addr, uint32_t len)
{
	return C(OCD_APPEND_HOST, host_addr, 0, len);
}

static void print_cmds(const char *label, const ocd_cmd *c, int n)
{
	int k;

	fprintf(stderr, "  %s (%d):", label, n);
	for (k = 0; k < n; k++)
		fprintf(stderr, " [op %u host 0x%" PRIx64 " cache 0x%" PRIx64 " len %" PRIu32 "]",
			c[k].op, c[k].host_addr, c[k].cache_off, c[k].len);
	fputc('\n', stderr);
}

static int same_cmds(const ocd_cmd *a, int na, const ocd_cmd *b, int nb)
{
	int k;

	if (na != nb)
		return 0;
	for (k = 0; k < na; k++)
		if (a[k].op != b[k].op || a[k].host_addr != b[k].host_addr ||
		    a[k].cache_off != b[k].cache_off || a[k].len != b[k].len)
			return 0;
	return 1;
}

/* Plans a packet and checks its commands against @want. */
static void expect_plan(const char *what, ocd_dir *d, uint64_t file, uint32_t rev,
			uint64_t size, uint64_t off, uint32_t len, uint64_t host,
			const ocd_cmd *want, int nwant)
{
	ocd_cmd got[MAX_CMDS];
	int n = ocd_plan(d, file, rev, size, off, len, host, got, MAX_CMDS);

	if (!same_cmds(got, n, want, nwant)) {
		failures++;
		fprintf(stderr, "%s: commands differ\n", what);
		print_cmds("got ", got, n);
		print_cmds("want", want, nwant);
	}
}

static ocd_stats stats_of(const ocd_dir *d)
{
	ocd_stats s;

	ocd_get_stats(d, &s);
	return s;
}

static int same_stats(const ocd_stats *a, const ocd_stats *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static void print_stats(const char *label, const ocd_stats *s)
{
	fprintf(stderr,
		"  %s: req %" PRIu64 " content %" PRIu64 " cache %" PRIu64 " host %" PRIu64
		" inserted %" PRIu64 " inserts %" PRIu64 " hits %" PRIu64 " misses %" PRIu64
		" inval %" PRIu64 " evict %" PRIu64 " uncacheable %" PRIu64 " allocfail %" PRIu64
		"\n", label, s->requests, s->content_bytes, s->bytes_from_cache,
		s->bytes_from_host, s->bytes_inserted, s->inserts, s->hits, s->misses,
		s->invalidations, s->evictions, s->uncacheable_bytes, s->alloc_failures);
}

/* The identities every counter set satisfies. */
static void check_stats_arithmetic(const char *what, const ocd_stats *s)
{
	CHECK(s->content_bytes == s->bytes_from_cache + s->bytes_from_host,
	      "%s: content = from cache + from host", what);
	CHECK(s->uncacheable_bytes <= s->bytes_from_host, "%s: uncacheable within host", what);
	CHECK(s->inserts + s->alloc_failures == s->misses, "%s: every miss inserts or fails", what);
	CHECK(s->bytes_inserted <= (uint64_t)s->inserts * BS, "%s: inserts are blocks", what);
}

/* ------------------------------------------------------------------ behaviours */

static void test_create_args(void)
{
	ocd_dir *d;

	CHECK(ocd_create(1 << 20, 0) == NULL, "block size 0");
	CHECK(ocd_create(4095, BS) == NULL, "no whole block");
	CHECK(ocd_create(0, BS) == NULL, "no cache");
	d = ocd_create(3 * BS + 100, BS);
	CHECK(d != NULL, "3.02 blocks");
	CHECK(ocd_cache_bytes(d) == 3 * BS, "whole blocks only: %" PRIu64, ocd_cache_bytes(d));
	CHECK(ocd_block_bytes(d) == BS, "block size kept");
	CHECK(ocd_cached_blocks(d) == 0, "starts empty");
	ocd_destroy(d);
	ocd_destroy(NULL);
}

static void test_hit_and_miss(void)
{
	ocd_dir *d = ocd_create(4 * BS, BS);
	ocd_cmd miss[] = { INS(0x10000, 0, BS), FROM_CACHE(100, 1000) };
	ocd_cmd hit[] = { FROM_CACHE(100, 1000) };
	ocd_stats s;

	expect_plan("first packet", d, 7, 0, 3 * BS, 100, 1000, 0x10000, miss, 2);
	expect_plan("same bytes again", d, 7, 0, 3 * BS, 100, 1000, 0x10000, hit, 1);
	s = stats_of(d);
	CHECK(s.hits == 1 && s.misses == 1 && s.inserts == 1, "1 hit 1 miss");
	CHECK(s.bytes_inserted == BS && s.bytes_from_cache == 2000 && s.content_bytes == 2000,
	      "byte counters");
	CHECK(s.requests == 0, "ocd_plan counts no requests");
	CHECK(ocd_cached_blocks(d) == 1, "one block cached");
	check_stats_arithmetic("hit and miss", &s);
	ocd_destroy(d);
}

/* Three blocks, four one-block files: which one the fourth evicts follows the last use. */
static void test_lru_order(void)
{
	ocd_dir *d = ocd_create(3 * BS, BS);
	ocd_cmd c[MAX_CMDS];
	ocd_cmd fill_a[] = { INS(0xa000, 0, 100), FROM_CACHE(0, 100) };
	ocd_cmd fill_b[] = { INS(0xb000, BS, 100), FROM_CACHE(BS, 100) };
	ocd_cmd fill_c[] = { INS(0xc000, 2 * BS, 100), FROM_CACHE(2 * BS, 100) };
	ocd_cmd hit_a[] = { FROM_CACHE(0, 100) };
	ocd_cmd d_over_b[] = { INS(0xd000, BS, 100), FROM_CACHE(BS, 100) };
	ocd_cmd b_over_c[] = { INS(0xb000, 2 * BS, 100), FROM_CACHE(2 * BS, 100) };
	ocd_stats s;

	expect_plan("fill a", d, 1, 0, 100, 0, 100, 0xa000, fill_a, 2);
	expect_plan("fill b", d, 2, 0, 100, 0, 100, 0xb000, fill_b, 2);
	expect_plan("fill c", d, 3, 0, 100, 0, 100, 0xc000, fill_c, 2);
	expect_plan("use a", d, 1, 0, 100, 0, 100, 0xa000, hit_a, 1);
	expect_plan("d evicts b, the least recently used", d, 4, 0, 100, 0, 100, 0xd000, d_over_b, 2);
	expect_plan("b evicts c", d, 2, 0, 100, 0, 100, 0xb000, b_over_c, 2);
	/* Oldest to newest: a, d, b. */
	CHECK(ocd_plan(d, 3, 0, 100, 0, 100, 0xc000, c, MAX_CMDS) == 2 && c[0].cache_off == 0,
	      "c evicts a");
	s = stats_of(d);
	CHECK(s.evictions == 3, "three evictions, got %" PRIu64, s.evictions);
	CHECK(ocd_cached_blocks(d) == 3, "cache full");
	check_stats_arithmetic("lru", &s);
	ocd_destroy(d);
}

static void test_revision(void)
{
	ocd_dir *d = ocd_create(4 * BS, BS);
	ocd_cmd fill[] = { INS(0x1000, 0, BS), FROM_CACHE(0, BS) };
	ocd_cmd hit[] = { FROM_CACHE(0, BS) };
	ocd_stats s;

	expect_plan("rev 0", d, 9, 0, BS, 0, BS, 0x1000, fill, 2);
	expect_plan("rev 1 refills the same block", d, 9, 1, BS, 0, BS, 0x1000, fill, 2);
	expect_plan("rev 1 hits", d, 9, 1, BS, 0, BS, 0x1000, hit, 1);
	expect_plan("rev 0 is stale too", d, 9, 0, BS, 0, BS, 0x1000, fill, 2);
	s = stats_of(d);
	CHECK(s.invalidations == 2 && s.evictions == 0, "2 invalidations, no evictions");
	CHECK(s.misses == 3 && s.hits == 1, "misses/hits");
	CHECK(ocd_cached_blocks(d) == 1, "one block");
	check_stats_arithmetic("revision", &s);
	ocd_destroy(d);
}

static void test_eager_invalidation(void)
{
	ocd_dir *d = ocd_create(4 * BS, BS);
	ocd_cmd c[MAX_CMDS];
	ocd_cmd refill[] = { INS(0x9000, BS, BS), INS(0x9000 + BS, 0, BS),
			     FROM_CACHE(BS, BS), FROM_CACHE(0, BS) };

	ocd_plan(d, 1, 0, 2 * BS, 0, 2 * BS, 0x1000, c, MAX_CMDS);	/* blocks 0, 1 */
	ocd_plan(d, 2, 0, BS, 0, BS, 0x5000, c, MAX_CMDS);		/* block 2 */
	ocd_invalidate_file(d, 1);
	CHECK(ocd_cached_blocks(d) == 1, "file 1 dropped");
	CHECK(stats_of(d).invalidations == 2, "two blocks invalidated");
	/* Freed blocks are reused first (the last freed first), before block 3 (empty). */
	expect_plan("reuse freed blocks", d, 3, 0, 2 * BS, 0, 2 * BS, 0x9000, refill, 4);
	CHECK(ocd_plan(d, 2, 0, BS, 0, BS, 0x5000, c, MAX_CMDS) == 1, "file 2 still cached");
	ocd_invalidate_file(d, 12345);
	CHECK(ocd_cached_blocks(d) == 3, "unknown file: no change");
	ocd_destroy(d);
}

static void test_straddle_and_merge(void)
{
	ocd_dir *d = ocd_create(4 * BS, BS);
	/* Blocks 0 and 1 of the file land in cache blocks 0 and 1: one append. */
	ocd_cmd straddle[] = { INS(0x100000, 0, BS), INS(0x100000 + BS, BS, BS),
			       FROM_CACHE(4000, 200) };
	/* File 2's blocks 1 and 2 land in cache blocks 3 and 2: two appends. */
	ocd_cmd reversed_fill[] = { INS(0x200000 + BS, 2 * BS, BS), FROM_CACHE(2 * BS, BS) };
	ocd_cmd reversed[] = { INS(0x200000, 3 * BS, BS), FROM_CACHE(3 * BS + 10, BS - 10),
			       FROM_CACHE(2 * BS, 20) };
	ocd_cmd whole[] = { FROM_CACHE(3 * BS + 10, BS - 10), FROM_CACHE(2 * BS, BS) };

	expect_plan("straddle", d, 1, 0, 3 * BS, 4000, 200, 0x100000, straddle, 3);
	expect_plan("block 1 of file 2", d, 2, 0, 3 * BS, BS, BS, 0x200000, reversed_fill, 2);
	expect_plan("non-contiguous cache blocks", d, 2, 0, 3 * BS, 10, BS + 10, 0x200000,
		    reversed, 3);
	expect_plan("all hits", d, 2, 0, 3 * BS, 10, 2 * BS - 10, 0x200000, whole, 2);
	ocd_destroy(d);
}

static void test_partial_last_block(void)
{
	ocd_dir *d = ocd_create(4 * BS, BS);
	ocd_cmd tail[] = { INS(0x40000 + BS, 0, 904), FROM_CACHE(800, 104) };
	ocd_cmd head[] = { INS(0x40000, BS, BS), FROM_CACHE(BS + 4000, 96), FROM_CACHE(0, 804) };

	expect_plan("last block of a 5000-byte file", d, 5, 0, 5000, BS + 800, 104, 0x40000, tail, 2);
	expect_plan("bytes 4000..4900", d, 5, 0, 5000, 4000, 900, 0x40000, head, 3);
	CHECK(stats_of(d).bytes_inserted == 5000, "inserted exactly the file");
	ocd_destroy(d);
}

static void test_uncacheable(void)
{
	ocd_dir *d = ocd_create(2 * BS, BS);
	ocd_cmd host[] = { FROM_HOST(0x70000 + 5000, 3000) };
	ocd_cmd fits[] = { INS(0x80000, 0, BS), INS(0x80000 + BS, BS, BS), FROM_CACHE(0, 2 * BS) };
	ocd_stats s;

	expect_plan("file larger than the cache", d, 1, 0, 2 * BS + 1, 5000, 3000, 0x70000, host, 1);
	expect_plan("file exactly the cache", d, 2, 0, 2 * BS, 0, 2 * BS, 0x80000, fits, 3);
	s = stats_of(d);
	CHECK(s.uncacheable_bytes == 3000 && s.bytes_from_host == 3000, "host bytes");
	CHECK(s.hits + s.misses == 2, "no lookups for uncacheable files");
	ocd_destroy(d);
}

static void test_file_limit(void)
{
	ocd_dir *d = ocd_create(2 * BS, BS);
	ocd_cmd host[] = { FROM_HOST(0x70001, 100) };
	ocd_cmd cached[] = { INS(0x70000, 0, 100), FROM_CACHE(1, 99) };

	ocd_set_file_limit(d, 100);
	expect_plan("above a lowered limit", d, 3, 0, 101, 1, 100, 0x70000, host, 1);
	expect_plan("at the limit", d, 4, 0, 100, 1, 99, 0x70000, cached, 2);
	ocd_destroy(d);
}

static void test_pinning(void)
{
	ocd_dir *d = ocd_create(2 * BS, BS);
	ocd_cmd c[MAX_CMDS];
	/* Three blocks into two: the third is sent from host memory. */
	ocd_cmd over[] = { INS(0x10000, 0, BS), INS(0x10000 + BS, BS, BS),
			   FROM_CACHE(0, 2 * BS), FROM_HOST(0x10000 + 2 * BS, BS) };
	/* The packet's cached block 1 is the oldest, yet block 0 does not evict it. */
	ocd_cmd keep[] = { INS(0x20000, BS, BS), FROM_CACHE(2 * BS - 10, 10), FROM_CACHE(0, BS) };
	ocd_stats s;

	ocd_set_file_limit(d, UINT64_MAX);
	expect_plan("packet larger than the cache", d, 1, 0, 3 * BS, 0, 3 * BS, 0x10000, over, 4);
	s = stats_of(d);
	CHECK(s.alloc_failures == 1 && s.inserts == 2 && s.bytes_from_host == BS,
	      "one block could not be cached");
	CHECK(s.uncacheable_bytes == 0, "the file itself was cacheable");
	ocd_destroy(d);

	d = ocd_create(2 * BS, BS);
	ocd_plan(d, 2, 0, 2 * BS, BS, BS, 0x20000, c, MAX_CMDS);	/* block 1 -> cache 0 */
	ocd_plan(d, 3, 0, BS, 0, BS, 0x30000, c, MAX_CMDS);		/* cache 1 */
	ocd_plan(d, 3, 0, BS, 0, BS, 0x30000, c, MAX_CMDS);		/* cache 1 newest */
	ocd_plan(d, 2, 0, 2 * BS, BS, 10, 0x20000, c, MAX_CMDS);	/* cache 0 newest */
	ocd_plan(d, 3, 0, BS, 0, BS, 0x30000, c, MAX_CMDS);		/* cache 0 oldest */
	/* Bytes [BS - 10, 2 BS) of file 2: its block 1 sits in the oldest cache block. */
	expect_plan("pinned hit survives", d, 2, 0, 2 * BS, BS - 10, BS + 10, 0x20000, keep, 3);
	s = stats_of(d);
	CHECK(s.evictions == 1, "file 3 evicted, not file 2's block 1: %" PRIu64, s.evictions);
	ocd_destroy(d);
}

static void test_tiny_cache(void)
{
	ocd_dir *d = ocd_create(64, 64);
	ocd_cmd a[] = { INS(0x100, 0, 64), FROM_CACHE(10, 20) };
	ocd_cmd b[] = { INS(0x200, 0, 36), FROM_CACHE(0, 36) };
	ocd_cmd two_blocks[] = { FROM_HOST(0x300 + 60, 5) };
	ocd_stats s;

	expect_plan("1-block cache", d, 1, 0, 64, 10, 20, 0x100, a, 2);
	expect_plan("another file replaces it", d, 2, 0, 36, 0, 36, 0x200, b, 2);
	expect_plan("2-block file is uncacheable", d, 3, 0, 65, 60, 5, 0x300, two_blocks, 1);
	s = stats_of(d);
	CHECK(s.evictions == 1 && s.inserts == 2, "one eviction");
	CHECK(s.bytes_inserted == 100, "64 + 36 bytes inserted");
	ocd_destroy(d);
}

static void test_max_out(void)
{
	ocd_dir *d = ocd_create(4 * BS, BS);
	ocd_dir *twin = ocd_create(4 * BS, BS);
	ocd_cmd c[MAX_CMDS], t[MAX_CMDS];
	ocd_stats before, after;
	int n, m;

	ocd_plan(d, 1, 0, 3 * BS, 0, 10, 0, c, MAX_CMDS);
	ocd_plan(twin, 1, 0, 3 * BS, 0, 10, 0, t, MAX_CMDS);
	before = stats_of(d);
	/* Needs 2 inserts + 1 append: blocks 0, 1, 2 of the file in cache blocks 0, 1, 2. */
	CHECK(ocd_plan(d, 1, 0, 3 * BS, BS - 1, 2 * BS, 0, c, 2) == OCD_ERR_MAX_OUT, "2 < 3");
	CHECK(ocd_plan(d, 1, 0, 3 * BS, BS - 1, 2 * BS, 0, NULL, 0) == OCD_ERR_MAX_OUT, "NULL");
	after = stats_of(d);
	CHECK(same_stats(&before, &after), "counters unchanged");
	n = ocd_plan(d, 1, 0, 3 * BS, BS - 1, 2 * BS, 0, c, 3);
	m = ocd_plan(twin, 1, 0, 3 * BS, BS - 1, 2 * BS, 0, t, MAX_CMDS);
	CHECK(n == 3 && same_cmds(c, n, t, m), "the failed calls changed nothing: %d %d", n, m);
	CHECK(ocd_max_cmds(d, 2 * BS) >= n, "bound holds");
	CHECK(ocd_max_cmds(d, 1) == 2 && ocd_max_cmds(d, 2) == 4 && ocd_max_cmds(d, 0) == 0,
	      "ocd_max_cmds small lengths");
	CHECK(ocd_plan(d, 1, 0, 3 * BS, 3 * BS - 5, 6, 0, c, MAX_CMDS) == OCD_ERR_RANGE,
	      "beyond the file");
	CHECK(ocd_plan(d, 1, 0, 3 * BS, UINT64_MAX, 6, 0, c, MAX_CMDS) == OCD_ERR_RANGE,
	      "offset overflow");
	CHECK(ocd_plan(d, 1, 0, 3 * BS, 3 * BS, 0, 0, c, MAX_CMDS) == 0, "empty at the end");
	ocd_destroy(d);
	ocd_destroy(twin);
}

/* ocd_replay_response() is ocd_plan() per packet, counters and all. */
static void test_replay_matches_plan(void)
{
	static const uint64_t sizes[] = { 1, 1448, 4096, 5000, 9000, 20000, 40000, 70000 };
	static const uint32_t mss[] = { 1448, 4096, 9000 };
	ocd_cmd c[MAX_CMDS];
	unsigned m, r;

	for (m = 0; m < sizeof(mss) / sizeof(mss[0]); m++) {
		ocd_dir *fast = ocd_create(12 * BS, BS);
		ocd_dir *slow = ocd_create(12 * BS, BS);
		uint64_t x = 88172645463325252ull;

		for (r = 0; r < 3000; r++) {
			uint64_t file, size, off;
			uint32_t rev;
			ocd_stats a, b;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			file = x % 23;
			size = sizes[file % 8];
			rev = (uint32_t)(x >> 40) % 16 == 0;
			ocd_replay_response(fast, file, rev, size, mss[m]);
			for (off = 0; off < size; off += mss[m]) {
				uint32_t len = size - off < mss[m] ? (uint32_t)(size - off) : mss[m];

				ocd_plan(slow, file, rev, size, off, len, 0, c, MAX_CMDS);
			}
			a = stats_of(fast);
			b = stats_of(slow);
			b.requests = a.requests;
			if (!same_stats(&a, &b)) {
				failures++;
				fprintf(stderr, "replay != plans at request %u, mss %u\n", r, mss[m]);
				print_stats("replay", &a);
				print_stats("plans ", &b);
				break;
			}
		}
		CHECK(stats_of(fast).requests == 3000, "requests counted");
		{
			ocd_stats s = stats_of(fast);

			check_stats_arithmetic("replay", &s);
		}
		ocd_destroy(fast);
		ocd_destroy(slow);
	}
}

/* ------------------------------------------------------------------ reference model */

struct ref_block {
	int valid;
	uint64_t file, fblock;
	uint32_t rev;
	int64_t stamp;			/* last use; the smallest is evicted first */
	int pinned;
};

struct ref {
	struct ref_block *b;
	uint32_t n;
	uint64_t bs, limit;
	int64_t clock, low;
	ocd_stats st;
};

static void ref_init(struct ref *r, uint32_t nblocks, uint64_t bs)
{
	uint32_t i;

	memset(r, 0, sizeof(*r));
	r->b = calloc(nblocks, sizeof(*r->b));
	r->n = nblocks;
	r->bs = bs;
	r->limit = (uint64_t)nblocks * bs;
	for (i = 0; i < nblocks; i++)
		r->b[i].stamp = (int64_t)i - nblocks;	/* empty blocks: lowest offset first */
	r->low = -(int64_t)nblocks - 1;
}

static int64_t ref_find(const struct ref *r, uint64_t file, uint64_t fblock)
{
	uint32_t i;

	for (i = 0; i < r->n; i++)
		if (r->b[i].valid && r->b[i].file == file && r->b[i].fblock == fblock)
			return i;
	return -1;
}

static void ref_add(ocd_cmd *list, int *n, ocd_cmd c)
{
	if (c.op != OCD_INSERT && *n > 0 && list[*n - 1].op == c.op) {
		ocd_cmd *p = &list[*n - 1];
		uint64_t end = c.op == OCD_APPEND_HOST ? p->host_addr + p->len
						       : p->cache_off + p->len;
		uint64_t start = c.op == OCD_APPEND_HOST ? c.host_addr : c.cache_off;

		if (end == start) {
			p->len += c.len;
			return;
		}
	}
	list[(*n)++] = c;
}

static int ref_plan(struct ref *r, uint64_t file, uint32_t rev, uint64_t size, uint64_t off,
		    uint32_t len, uint64_t host, ocd_cmd *out)
{
	ocd_cmd ins[MAX_CMDS], app[MAX_CMDS];
	int ni = 0, na = 0, k;
	uint64_t b, first, last;
	uint32_t i;

	if (off > size || len > size - off)
		return OCD_ERR_RANGE;
	if (len == 0)
		return 0;
	r->st.content_bytes += len;
	if (size > r->limit) {
		r->st.bytes_from_host += len;
		r->st.uncacheable_bytes += len;
		out[0] = FROM_HOST(host + off, len);
		return 1;
	}
	first = off / r->bs;
	last = (off + len - 1) / r->bs;
	for (i = 0; i < r->n; i++)
		r->b[i].pinned = 0;
	for (b = first; b <= last; b++) {
		int64_t f = ref_find(r, file, b);

		if (f >= 0)
			r->b[f].pinned = 1;
	}
	for (b = first; b <= last; b++) {
		int64_t f = ref_find(r, file, b);
		uint64_t lo = b == first ? off : b * r->bs;
		uint64_t hi = (b + 1) * r->bs < off + len ? (b + 1) * r->bs : off + len;
		int fresh = f >= 0 && r->b[f].rev == rev;

		if (f < 0) {
			for (i = 0; i < r->n; i++)
				if (!r->b[i].pinned && (f < 0 || r->b[i].stamp < r->b[f].stamp))
					f = i;
		}
		if (fresh) {
			r->st.hits++;
		} else {
			r->st.misses++;
			if (f >= 0) {
				uint64_t end = (b + 1) * r->bs < size ? (b + 1) * r->bs : size;
				struct ref_block *blk = &r->b[f];

				if (blk->valid && blk->file == file && blk->fblock == b)
					r->st.invalidations++;
				else if (blk->valid)
					r->st.evictions++;
				blk->valid = 1;
				blk->file = file;
				blk->fblock = b;
				blk->rev = rev;
				r->st.inserts++;
				r->st.bytes_inserted += end - b * r->bs;
				ins[ni++] = INS(host + b * r->bs, f * r->bs, (uint32_t)(end - b * r->bs));
			} else {
				r->st.alloc_failures++;
			}
		}
		if (f >= 0) {
			r->b[f].pinned = 1;
			r->b[f].stamp = ++r->clock;
			r->st.bytes_from_cache += hi - lo;
			ref_add(app, &na, FROM_CACHE(f * r->bs + lo - b * r->bs, (uint32_t)(hi - lo)));
		} else {
			r->st.bytes_from_host += hi - lo;
			ref_add(app, &na, FROM_HOST(host + lo, (uint32_t)(hi - lo)));
		}
	}
	for (k = 0; k < ni; k++)
		out[k] = ins[k];
	for (k = 0; k < na; k++)
		out[ni + k] = app[k];
	return ni + na;
}

static void ref_invalidate_file(struct ref *r, uint64_t file)
{
	uint32_t i;

	for (i = 0; i < r->n; i++) {
		if (r->b[i].valid && r->b[i].file == file) {
			r->b[i].valid = 0;
			r->b[i].stamp = r->low--;
			r->st.invalidations++;
		}
	}
}

static uint64_t rng_next(uint64_t *x)
{
	/* xorshift64*: any seed but 0. */
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ull;
}

static void test_random_against_reference(uint64_t seed, unsigned steps)
{
	static const uint32_t block_sizes[] = { 16, 64, 4096 };
	unsigned config;

	for (config = 0; config < 12; config++) {
		uint64_t x = seed * 0x9e3779b97f4a7c15ull + config + 1;
		uint64_t bs = block_sizes[config % 3];
		uint32_t nblocks = 1 + (uint32_t)(rng_next(&x) % 9);
		uint64_t file_sizes[16];
		uint32_t revs[16];
		ocd_dir *d = ocd_create(nblocks * bs, (uint32_t)bs);
		struct ref r;
		unsigned step, f;

		ref_init(&r, nblocks, bs);
		for (f = 0; f < 16; f++) {
			file_sizes[f] = 1 + rng_next(&x) % (bs * (nblocks + 2));
			revs[f] = 0;
		}
		for (step = 0; step < steps && failures == 0; step++) {
			ocd_cmd got[MAX_CMDS], want[MAX_CMDS];
			uint64_t roll = rng_next(&x) % 100, off, host;
			uint32_t len;
			int n, m;

			f = (unsigned)(rng_next(&x) % 16);
			if (roll < 3) {
				revs[f]++;
			} else if (roll < 5) {
				ocd_invalidate_file(d, f);
				ref_invalidate_file(&r, f);
				continue;
			} else if (roll < 6) {
				/* Let files stream through: packets may outgrow the cache. */
				r.limit = rng_next(&x) % 2 ? UINT64_MAX : nblocks * bs;
				ocd_set_file_limit(d, r.limit);
			}
			off = rng_next(&x) % (file_sizes[f] + 1);
			len = (uint32_t)(rng_next(&x) % (file_sizes[f] - off + 1));
			if (len > 6 * bs)
				len = (uint32_t)(6 * bs);
			host = (rng_next(&x) % 1024) << 20;
			n = ocd_plan(d, f, revs[f], file_sizes[f], off, len, host, got, MAX_CMDS);
			m = ref_plan(&r, f, revs[f], file_sizes[f], off, len, host, want);
			if (!same_cmds(got, n, want, m)) {
				failures++;
				fprintf(stderr, "seed %" PRIu64 " config %u step %u: file %u rev %u size %"
					PRIu64 " off %" PRIu64 " len %u (blocks %u x %" PRIu64 ")\n",
					seed, config, step, f, revs[f], file_sizes[f], off, len,
					nblocks, bs);
				print_cmds("library  ", got, n);
				print_cmds("reference", want, m);
			}
		}
		{
			ocd_stats s = stats_of(d);

			if (!same_stats(&s, &r.st)) {
				failures++;
				fprintf(stderr, "seed %" PRIu64 " config %u: counters differ\n", seed,
					config);
				print_stats("library  ", &s);
				print_stats("reference", &r.st);
			}
			CHECK(s.content_bytes == s.bytes_from_cache + s.bytes_from_host,
			      "random: content identity");
			CHECK(s.inserts + s.alloc_failures == s.misses, "random: miss identity");
		}
		free(r.b);
		ocd_destroy(d);
	}
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	unsigned steps = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 20000;

	test_create_args();
	test_hit_and_miss();
	test_lru_order();
	test_revision();
	test_eager_invalidation();
	test_straddle_and_merge();
	test_partial_last_block();
	test_uncacheable();
	test_file_limit();
	test_pinning();
	test_tiny_cache();
	test_max_out();
	test_replay_matches_plan();
	test_random_against_reference(seed, steps);
	if (failures) {
		fprintf(stderr, "test_cache_dir: %d check(s) failed (seed %" PRIu64 ")\n", failures,
			seed);
		return 1;
	}
	printf("test_cache_dir: all checks passed (seed %" PRIu64 ", %u random steps x 12)\n",
	       seed, steps);
	return 0;
}
