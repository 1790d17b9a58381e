// SPDX-License-Identifier: MIT
/*
 * The payload-cache directory: a hash table from (file id, file block) to cache block,
 * and an LRU list over cache blocks. See cache_dir.h for the contract.
 *
 * Planning a packet is two walks over the blocks it touches that see the same blocks in
 * the same order: one that only counts the commands (so a too-small output array fails
 * before anything changes) and one that applies and writes them.
 */
#include "cache_dir.h"

#include <stdlib.h>
#include <string.h>

/* The kernel build defines these as kvzalloc()/kvfree(): the only allocation. */
#ifndef OCD_ZALLOC
#define OCD_ZALLOC(bytes) calloc(1, (bytes))
#define OCD_FREE(ptr) free(ptr)
#endif

#define NIL UINT32_MAX			/* "no block" in every link */
#define MAX_BLOCKS (UINT32_MAX - 1)
#define MAX_BUCKETS (1u << 31)
#define INT_LIMIT ((int)(~0u >> 1))

struct ocd_block {
	uint64_t file_id;
	uint64_t file_block;		/* which block of the file: bytes from file_block * block_bytes */
	uint32_t revision;
	uint32_t hash_next;
	uint32_t newer;			/* LRU neighbours */
	uint32_t older;
	uint32_t pin;			/* == dir->epoch while the packet being planned uses it */
	uint8_t valid;
};

struct ocd_dir {
	uint64_t cache_bytes;
	uint64_t file_limit;
	uint32_t block_bytes;
	uint32_t nblocks;
	uint32_t used;
	uint32_t bucket_mask;
	uint32_t newest;		/* LRU ends: victims are taken from the oldest end */
	uint32_t oldest;
	uint32_t epoch;			/* one per planned packet: pins need no clearing */
	struct ocd_block *block;
	uint32_t *bucket;
	ocd_stats stats;
};

/* What one packet sends: file bytes [off, end), touching blocks first..last. */
struct span {
	uint64_t file_id;
	uint32_t revision;
	uint64_t file_size;
	uint64_t off;
	uint64_t end;
	uint64_t host_base;
	uint64_t first;
	uint64_t last;
};

/* A command list being built; appends that continue the previous one extend it. */
struct cmd_list {
	ocd_cmd *out;			/* NULL: only count */
	uint64_t n;
	uint8_t last_op;
	uint64_t last_end;		/* where the last append ends, in its own address space */
};

/* ------------------------------------------------------------------ hash table */

static uint32_t bucket_of(const struct ocd_dir *dir, uint64_t file_id, uint64_t file_block)
{
	/* splitmix64's finaliser: ids and block numbers are small, dense integers. */
	uint64_t h = file_id * 0x9e3779b97f4a7c15ull + file_block;

	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (uint32_t)h & dir->bucket_mask;
}

/* The block holding (file_id, file_block) at any revision, or NIL. */
static uint32_t find(const struct ocd_dir *dir, uint64_t file_id, uint64_t file_block)
{
	uint32_t i = dir->bucket[bucket_of(dir, file_id, file_block)];

	while (i != NIL && (dir->block[i].file_id != file_id ||
			    dir->block[i].file_block != file_block))
		i = dir->block[i].hash_next;
	return i;
}

static void hash_add(struct ocd_dir *dir, uint32_t i)
{
	uint32_t *head = &dir->bucket[bucket_of(dir, dir->block[i].file_id,
						dir->block[i].file_block)];

	dir->block[i].hash_next = *head;
	*head = i;
}

static void hash_remove(struct ocd_dir *dir, uint32_t i)
{
	uint32_t *link = &dir->bucket[bucket_of(dir, dir->block[i].file_id,
						dir->block[i].file_block)];

	while (*link != i)
		link = &dir->block[*link].hash_next;
	*link = dir->block[i].hash_next;
}

/* ------------------------------------------------------------------ LRU list */

static void lru_unlink(struct ocd_dir *dir, uint32_t i)
{
	struct ocd_block *b = &dir->block[i];

	if (b->newer != NIL)
		dir->block[b->newer].older = b->older;
	else
		dir->newest = b->older;
	if (b->older != NIL)
		dir->block[b->older].newer = b->newer;
	else
		dir->oldest = b->newer;
}

static void lru_push_newest(struct ocd_dir *dir, uint32_t i)
{
	dir->block[i].newer = NIL;
	dir->block[i].older = dir->newest;
	if (dir->newest != NIL)
		dir->block[dir->newest].newer = i;
	else
		dir->oldest = i;
	dir->newest = i;
}

static void lru_push_oldest(struct ocd_dir *dir, uint32_t i)
{
	dir->block[i].older = NIL;
	dir->block[i].newer = dir->oldest;
	if (dir->oldest != NIL)
		dir->block[dir->oldest].older = i;
	else
		dir->newest = i;
	dir->oldest = i;
}

/* The oldest block from @i on (going newer) that the current packet has not pinned. */
static uint32_t unpinned_from(const struct ocd_dir *dir, uint32_t i)
{
	while (i != NIL && dir->block[i].pin == dir->epoch)
		i = dir->block[i].newer;
	return i;
}

/* ------------------------------------------------------------------ create / destroy */

ocd_dir *ocd_create(uint64_t cache_bytes, uint32_t block_bytes)
{
	uint64_t nblocks, nbuckets, dir_bytes, block_bytes_total, total;
	struct ocd_dir *dir;
	uint32_t i;

	if (block_bytes == 0)
		return NULL;
	nblocks = cache_bytes / block_bytes;
	if (nblocks == 0 || nblocks > MAX_BLOCKS)
		return NULL;
	/* Load factor at most 1/2, so chains stay short. */
	nbuckets = 1;
	while (nbuckets < 2 * nblocks && nbuckets < MAX_BUCKETS)
		nbuckets <<= 1;

	/* One allocation: the directory, then the blocks, then the buckets. */
	dir_bytes = (sizeof(*dir) + 7) & ~(uint64_t)7;
	block_bytes_total = nblocks * sizeof(struct ocd_block);
	total = dir_bytes + block_bytes_total + nbuckets * sizeof(uint32_t);
	if (total > (uint64_t)(size_t)-1)
		return NULL;
	dir = OCD_ZALLOC((size_t)total);
	if (!dir)
		return NULL;
	dir->block = (struct ocd_block *)((char *)dir + dir_bytes);
	dir->bucket = (uint32_t *)((char *)dir->block + block_bytes_total);

	dir->block_bytes = block_bytes;
	dir->nblocks = (uint32_t)nblocks;
	dir->cache_bytes = nblocks * block_bytes;
	dir->file_limit = dir->cache_bytes;
	dir->bucket_mask = (uint32_t)(nbuckets - 1);
	memset(dir->bucket, 0xff, nbuckets * sizeof(uint32_t));	/* all NIL */
	/* Empty blocks are the oldest, lowest offset first. */
	dir->newest = NIL;
	dir->oldest = NIL;
	for (i = 0; i < dir->nblocks; i++) {
		dir->block[i].hash_next = NIL;
		lru_push_newest(dir, i);
	}
	return dir;
}

void ocd_destroy(ocd_dir *dir)
{
	if (dir)
		OCD_FREE(dir);
}

uint64_t ocd_cache_bytes(const ocd_dir *dir)
{
	return dir->cache_bytes;
}

uint32_t ocd_block_bytes(const ocd_dir *dir)
{
	return dir->block_bytes;
}

void ocd_set_file_limit(ocd_dir *dir, uint64_t bytes)
{
	dir->file_limit = bytes;
}

uint32_t ocd_cached_blocks(const ocd_dir *dir)
{
	return dir->used;
}

void ocd_get_stats(const ocd_dir *dir, ocd_stats *stats)
{
	*stats = dir->stats;
}

void ocd_reset_stats(ocd_dir *dir)
{
	memset(&dir->stats, 0, sizeof(dir->stats));
}

int ocd_max_cmds(const ocd_dir *dir, uint32_t len)
{
	uint64_t blocks;

	if (len == 0)
		return 0;
	blocks = ((uint64_t)len + dir->block_bytes - 2) / dir->block_bytes + 1;
	return 2 * blocks > (uint64_t)INT_LIMIT ? INT_LIMIT : (int)(2 * blocks);
}

/* ------------------------------------------------------------------ planning */

static void list_push(struct cmd_list *l, uint8_t op, uint64_t host_addr, uint64_t cache_off,
		      uint32_t len)
{
	if (l->out) {
		ocd_cmd *c = &l->out[l->n];

		memset(c, 0, sizeof(*c));
		c->op = op;
		c->host_addr = host_addr;
		c->cache_off = cache_off;
		c->len = len;
	}
	l->n++;
}

/* Appends are merged when one continues where the previous one ended. */
static void list_append(struct cmd_list *l, uint8_t op, uint64_t addr, uint32_t len)
{
	if (l->n > 0 && l->last_op == op && l->last_end == addr) {
		if (l->out)
			l->out[l->n - 1].len += len;
	} else {
		list_push(l, op, op == OCD_APPEND_HOST ? addr : 0,
			  op == OCD_APPEND_CACHE ? addr : 0, len);
		l->last_op = op;
	}
	l->last_end = addr + len;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void next_epoch(struct ocd_dir *dir)
{
	uint32_t i;

	if (++dir->epoch == 0) {
		/* Wrapped: a stamp from 2^32 packets ago would read as a pin. */
		for (i = 0; i < dir->nblocks; i++)
			dir->block[i].pin = 0;
		dir->epoch = 1;
	}
}

/* Pin what the packet finds cached (any revision) before any block is chosen to evict. */
static void pin_present(struct ocd_dir *dir, const struct span *s)
{
	uint64_t b;
	uint32_t i;

	for (b = s->first; b <= s->last; b++) {
		i = find(dir, s->file_id, b);
		if (i != NIL)
			dir->block[i].pin = dir->epoch;
	}
}

/* Block @i now holds file block @b of the span at its revision. */
static void fill(struct ocd_dir *dir, uint32_t i, const struct span *s, uint64_t b, int stale)
{
	struct ocd_block *blk = &dir->block[i];

	if (stale) {
		dir->stats.invalidations++;
	} else {
		if (blk->valid) {
			dir->stats.evictions++;
			hash_remove(dir, i);
		} else {
			blk->valid = 1;
			dir->used++;
		}
		blk->file_id = s->file_id;
		blk->file_block = b;
		hash_add(dir, i);
	}
	blk->revision = s->revision;
}

/*
 * Resolve each block of the span, in file order, to a cache block: the one holding it
 * (refilled if its revision is old), or else the oldest unpinned block. Lists the inserts
 * and the appends. Without @commit nothing changes; with it the directory, the LRU order
 * and the counters are updated. The unpinned blocks keep their order either way (only
 * pinned ones move), so both see the same victims.
 */
static void walk(struct ocd_dir *dir, const struct span *s, int commit,
		 struct cmd_list *inserts, struct cmd_list *appends)
{
	uint64_t bs = dir->block_bytes;
	uint32_t victim = unpinned_from(dir, dir->oldest);
	uint64_t b, lo, hi, block_end;
	uint32_t i;
	int fresh, stale;

	for (b = s->first; b <= s->last; b++) {
		i = find(dir, s->file_id, b);
		stale = i != NIL && dir->block[i].revision != s->revision;
		fresh = i != NIL && !stale;
		if (i == NIL && victim != NIL) {
			i = victim;
			victim = unpinned_from(dir, dir->block[i].newer);
		}
		if (!fresh && i != NIL) {
			block_end = min_u64((b + 1) * bs, s->file_size);
			list_push(inserts, OCD_INSERT, s->host_base + b * bs, (uint64_t)i * bs,
				  (uint32_t)(block_end - b * bs));
			if (commit) {
				fill(dir, i, s, b, stale);
				dir->stats.inserts++;
				dir->stats.bytes_inserted += block_end - b * bs;
			}
		}

		lo = b == s->first ? s->off : b * bs;
		hi = min_u64((b + 1) * bs, s->end);
		if (i != NIL)
			list_append(appends, OCD_APPEND_CACHE, (uint64_t)i * bs + (lo - b * bs),
				    (uint32_t)(hi - lo));
		else
			list_append(appends, OCD_APPEND_HOST, s->host_base + lo, (uint32_t)(hi - lo));

		if (!commit)
			continue;
		if (fresh)
			dir->stats.hits++;
		else
			dir->stats.misses++;
		if (i != NIL) {
			dir->stats.bytes_from_cache += hi - lo;
			dir->block[i].pin = dir->epoch;
			lru_unlink(dir, i);
			lru_push_newest(dir, i);
		} else {
			dir->stats.alloc_failures++;
			dir->stats.bytes_from_host += hi - lo;
		}
	}
}

/* Plans a packet of a cacheable file; @out NULL: counters only (trace replays). */
static int64_t plan_cached(struct ocd_dir *dir, const struct span *s, ocd_cmd *out,
			   uint64_t max_out)
{
	struct cmd_list inserts = { 0 }, appends = { 0 };
	uint64_t n_inserts;

	next_epoch(dir);
	pin_present(dir, s);
	if (out) {
		walk(dir, s, 0, &inserts, &appends);
		if (inserts.n + appends.n > max_out)
			return OCD_ERR_MAX_OUT;
		n_inserts = inserts.n;
		memset(&inserts, 0, sizeof(inserts));
		memset(&appends, 0, sizeof(appends));
		inserts.out = out;
		appends.out = out + n_inserts;	/* the inserts go first */
	}
	walk(dir, s, 1, &inserts, &appends);
	dir->stats.content_bytes += s->end - s->off;
	return (int64_t)(inserts.n + appends.n);
}

static void count_uncached(struct ocd_dir *dir, uint64_t bytes)
{
	dir->stats.content_bytes += bytes;
	dir->stats.bytes_from_host += bytes;
	dir->stats.uncacheable_bytes += bytes;
}

static void span_init(const struct ocd_dir *dir, struct span *s, uint64_t file_id,
		      uint32_t revision, uint64_t file_size, uint64_t off, uint64_t len,
		      uint64_t host_base)
{
	s->file_id = file_id;
	s->revision = revision;
	s->file_size = file_size;
	s->off = off;
	s->end = off + len;
	s->host_base = host_base;
	s->first = off / dir->block_bytes;
	s->last = (s->end - 1) / dir->block_bytes;
}

int ocd_plan(ocd_dir *dir, uint64_t file_id, uint32_t revision, uint64_t file_size,
	     uint64_t file_off, uint32_t len, uint64_t host_base, ocd_cmd *out, int max_out)
{
	struct span s;

	if (file_off > file_size || len > file_size - file_off)
		return OCD_ERR_RANGE;
	if (len == 0)
		return 0;
	if (!out || max_out < 1)
		return OCD_ERR_MAX_OUT;
	if (file_size > dir->file_limit) {
		memset(out, 0, sizeof(*out));
		out->op = OCD_APPEND_HOST;
		out->host_addr = host_base + file_off;
		out->len = len;
		count_uncached(dir, len);
		return 1;
	}
	span_init(dir, &s, file_id, revision, file_size, file_off, len, host_base);
	return (int)plan_cached(dir, &s, out, (uint64_t)max_out);
}

/* A packet that only reads the newest block, already current, changes nothing but counters. */
static int rereads_newest(const struct ocd_dir *dir, const struct span *s)
{
	const struct ocd_block *blk;

	if (s->first != s->last || dir->newest == NIL)
		return 0;
	blk = &dir->block[dir->newest];
	return blk->valid && blk->file_id == s->file_id && blk->file_block == s->first &&
	       blk->revision == s->revision;
}

void ocd_replay_response(ocd_dir *dir, uint64_t file_id, uint32_t revision,
			 uint64_t file_size, uint32_t mss)
{
	struct span s;
	uint64_t off, len;

	dir->stats.requests++;
	if (mss == 0)
		return;
	if (file_size > dir->file_limit) {
		count_uncached(dir, file_size);
		return;
	}
	for (off = 0; off < file_size; off += len) {
		len = min_u64(mss, file_size - off);
		span_init(dir, &s, file_id, revision, file_size, off, len, 0);
		if (rereads_newest(dir, &s)) {
			/* What plan_cached() would do, without the lookups: most packets. */
			dir->stats.hits++;
			dir->stats.bytes_from_cache += len;
			dir->stats.content_bytes += len;
		} else {
			plan_cached(dir, &s, NULL, 0);
		}
	}
}

void ocd_replay_trace(ocd_dir *dir, size_t n, const uint64_t *file_ids,
		      const uint32_t *revisions, const uint64_t *file_sizes, uint32_t mss)
{
	size_t k;

	for (k = 0; k < n; k++)
		ocd_replay_response(dir, file_ids[k], revisions ? revisions[k] : 0,
				    file_sizes[k], mss);
}

void ocd_invalidate_file(ocd_dir *dir, uint64_t file_id)
{
	uint32_t i;

	for (i = 0; i < dir->nblocks; i++) {
		if (!dir->block[i].valid || dir->block[i].file_id != file_id)
			continue;
		hash_remove(dir, i);
		dir->block[i].valid = 0;
		dir->used--;
		dir->stats.invalidations++;
		/* Free blocks are the first to be reused. */
		lru_unlink(dir, i);
		lru_push_oldest(dir, i);
	}
}
