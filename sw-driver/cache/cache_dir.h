/* SPDX-License-Identifier: MIT */
/*
 * The host's directory of the NIC payload cache (Kim, Rixner & Pai, "Network Interface
 * Data Caching", sections 4.2-4.3 and 5.1).
 *
 * The NIC only stores bytes where it is told to; every policy lives here, in the driver
 * core. The cache is cut into blocks of `block_bytes` at cache offsets 0, block_bytes,
 * 2 * block_bytes, ...; a block holds one block of one file (file bytes
 * [k * block_bytes, (k + 1) * block_bytes)), keyed by (file id, k) with the file's
 * revision stored beside it. Replacement is LRU over blocks; a file that changed is
 * noticed lazily, when a lookup finds an older revision. Files larger than the cache are
 * never cached: their bytes always come from host memory.
 *
 * For each packet, ocd_plan() turns "send these bytes of this file" into the NIC's
 * transmit commands: inserts of the missing blocks first, then the appends that make up
 * the payload in file order.
 *
 * OS-independent C99 for user space (the simulation loads it through ctypes) and the
 * Linux driver alike: no globals, no OS calls, and memory only in ocd_create() and
 * ocd_destroy(). Not thread-safe: the caller serialises calls on one directory.
 */
#ifndef OFFNIC_CACHE_DIR_H
#define OFFNIC_CACHE_DIR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Command opcodes: the NIC's TX descriptor opcodes (docs/queues.md). */
enum {
	OCD_APPEND_HOST = 0,	/* append len bytes from host memory at host_addr */
	OCD_INSERT = 1,		/* copy len bytes from host_addr into the cache at cache_off */
	OCD_APPEND_CACHE = 2,	/* append len bytes of the cache from cache_off */
};

/* ocd_plan() errors. */
enum {
	OCD_ERR_MAX_OUT = -1,	/* the output array is too small; nothing changed */
	OCD_ERR_RANGE = -2,	/* the byte range is not inside the file; nothing changed */
};

typedef struct ocd_dir ocd_dir;

/* One command; fields an opcode does not use are 0. */
typedef struct {
	uint8_t op;
	uint64_t host_addr;
	uint64_t cache_off;
	uint32_t len;
} ocd_cmd;

/*
 * Counters since creation (or ocd_reset_stats()). A "block access" is one block touched
 * by one packet: a 4 KiB block sent in three packets is three accesses.
 */
typedef struct {
	uint64_t requests;		/* responses replayed by ocd_replay_response() */
	uint64_t content_bytes;		/* file bytes asked for */
	uint64_t bytes_from_cache;	/* ... sent by APPEND_CACHE */
	uint64_t bytes_from_host;	/* ... sent by APPEND_HOST (uncacheable or no block free) */
	uint64_t bytes_inserted;	/* bytes copied into the cache by INSERT */
	uint64_t inserts;		/* INSERT commands (one per block filled) */
	uint64_t hits;			/* block accesses that found the block, same revision */
	uint64_t misses;		/* block accesses that did not */
	uint64_t invalidations;		/* blocks dropped for an older revision (lazy or eager) */
	uint64_t evictions;		/* valid blocks replaced to make room (LRU) */
	uint64_t uncacheable_bytes;	/* file bytes of files larger than the file limit */
	uint64_t alloc_failures;	/* misses left uncached: every block pinned by the packet */
} ocd_stats;

/*
 * ocd_create() - an empty directory for a cache of @cache_bytes, in blocks of
 * @block_bytes. The cache is used in whole blocks (a remainder is left unused).
 * Returns NULL if @block_bytes is 0, the cache holds no whole block or more than
 * 2^32 - 2 blocks, or memory runs out.
 */
ocd_dir *ocd_create(uint64_t cache_bytes, uint32_t block_bytes);
void ocd_destroy(ocd_dir *dir);

/* The bytes of cache in use: whole blocks only. */
uint64_t ocd_cache_bytes(const ocd_dir *dir);
uint32_t ocd_block_bytes(const ocd_dir *dir);

/*
 * ocd_set_file_limit() - files larger than @bytes are sent from host memory and never
 * cached. The default is the cache size (seed section 5.1), under which a packet can
 * never need more blocks than the cache has. A larger limit lets a file stream through
 * the cache; then a packet may touch more blocks than fit, and the blocks it cannot pin
 * are sent from host memory (counted as alloc_failures).
 */
void ocd_set_file_limit(ocd_dir *dir, uint64_t bytes);

/*
 * ocd_plan() - the commands for one packet's payload: bytes [@file_off, @file_off + @len)
 * of file @file_id at @revision, @file_size bytes long, whose byte k is at host address
 * @host_base + k.
 *
 * Writes to @out, in order:
 *  1. an INSERT for each touched block that is not cached at @revision, in file order:
 *     the whole block (or up to the file's end), from host_base + block * block_bytes to
 *     the block's cache offset;
 *  2. the payload in file order as APPEND_CACHE and APPEND_HOST commands, each merged
 *     with the one before when it continues it (in the cache or in host memory).
 * Blocks are never evicted to make room for another block of the same packet (the
 * packet pins them); a block that finds no room is sent from host memory instead.
 *
 * Returns the number of commands (0 for @len 0), OCD_ERR_MAX_OUT if more than @max_out
 * would be needed, OCD_ERR_RANGE if the range is not inside the file; on error the
 * directory and its counters are unchanged. ocd_max_cmds() is always enough.
 */
int ocd_plan(ocd_dir *dir, uint64_t file_id, uint32_t revision, uint64_t file_size,
	     uint64_t file_off, uint32_t len, uint64_t host_base, ocd_cmd *out, int max_out);

/*
 * ocd_max_cmds() - the most commands ocd_plan() can write for @len bytes: an insert and
 * an append per block touched, and a range can touch (@len + block_bytes - 2) /
 * block_bytes + 1 blocks. Saturates at INT_MAX.
 */
int ocd_max_cmds(const ocd_dir *dir, uint32_t len);

/*
 * ocd_replay_response() - the counters of sending a whole file: [0, @file_size) cut into
 * packets of at most @mss payload bytes, each planned as by ocd_plan() (same directory
 * state and counters, no commands), and requests + 1 (@mss 0: only that). For trace
 * studies.
 */
void ocd_replay_response(ocd_dir *dir, uint64_t file_id, uint32_t revision,
			 uint64_t file_size, uint32_t mss);

/* ocd_replay_response() for each of @n requests, given as parallel arrays (@revisions
 * may be NULL: all 0). */
void ocd_replay_trace(ocd_dir *dir, size_t n, const uint64_t *file_ids,
		      const uint32_t *revisions, const uint64_t *file_sizes, uint32_t mss);

void ocd_get_stats(const ocd_dir *dir, ocd_stats *stats);
void ocd_reset_stats(ocd_dir *dir);

/*
 * ocd_invalidate_file() - drop every cached block of @file_id now (the eager form of
 * revision checks, e.g. when the file is deleted). Scans the whole directory: O(blocks).
 */
void ocd_invalidate_file(ocd_dir *dir, uint64_t file_id);

/* Blocks holding data (for tests and statistics). */
uint32_t ocd_cached_blocks(const ocd_dir *dir);

#ifdef __cplusplus
}
#endif

#endif /* OFFNIC_CACHE_DIR_H */
