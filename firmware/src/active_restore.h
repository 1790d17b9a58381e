/* Active restore (issue 18; seed 004 section 3.2 only mentions it): while load control
 * waits in DECREASE for Cnum to fall below Soft_limit, the firmware asks the host to take
 * back the connections that cost the engine most, instead of waiting for them to end.
 * Cost is a connection's NIC packets since the last scan (the engine's per-connection
 * counters, read and cleared by the caller). Pure C, no hardware access: the firmware and
 * the host-side tests (tests/firmware/) compile the same file.
 *
 * One round: ar_wanted() says how many to ask for; ar_begin(); ar_offer() once per
 * installed connection with its cost (in any order, spread over main-loop passes if the
 * table is large); ar_finish() gives the picks, most expensive first, and remembers them
 * as pending. The host's answer (restored, or refused: the connection is busy)
 * ends a pending request with ar_answered(); ar_expire() ends the ones the host never
 * answered, so a lost message cannot block active restore for ever. */
#ifndef ACTIVE_RESTORE_H
#define ACTIVE_RESTORE_H

#include <stdint.h>

#include "load_control.h"

#define AR_MAX_PICK 8u     /* asked for in one round at most */
#define AR_MAX_PENDING 16u /* asked for and not yet answered, at most */

/* Results of ar_configure and ar_answered (the same numbers as fw_proto.h's FW_ST_*) */
enum ar_status { AR_OK = 0, AR_OUT_OF_RANGE = 3, AR_NOT_PENDING = 5 };

struct ar_pick {
    uint32_t conn; /* the engine's connection index */
    uint32_t cost; /* NIC packets in the last scan */
};

struct ar {
    /* Settings (mailbox) */
    uint32_t enabled;
    uint32_t max_per_round; /* 1..AR_MAX_PICK */
    uint32_t timeout_us;    /* a request unanswered this long is dropped (>= 1) */
    /* The round in progress: the `want` most expensive offers so far, sorted */
    uint32_t want;
    uint32_t nbest;
    struct ar_pick best[AR_MAX_PICK];
    /* Requests the host has not answered */
    uint32_t npending;
    uint32_t pending_conn[AR_MAX_PENDING];
    uint32_t pending_since_us[AR_MAX_PENDING];
    /* Counters */
    uint32_t requested;
    uint32_t answered;
    uint32_t expired;
    uint32_t bad_answers; /* answers for connections not asked for */
};

/* Disabled, one pick per round, requests time out after 10 ms. */
void ar_init(struct ar *ar);

/* Refused (settings unchanged) unless enabled <= 1, 1 <= max_per_round <= AR_MAX_PICK and
 * timeout_us >= 1. Disabling keeps the pending requests: their answers still count. */
enum ar_status ar_configure(struct ar *ar, uint32_t enabled, uint32_t max_per_round, uint32_t timeout_us);

/* How many connections to ask for now: none unless enabled, load control is in DECREASE
 * and Cnum exceeds Soft_limit; then the excess, less what is already asked for, at most
 * max_per_round and the room left for pending requests. */
uint32_t ar_wanted(const struct ar *ar, const struct lc *lc, uint32_t cnum);

/* Starts a round looking for `want` connections (clamped to AR_MAX_PICK). */
void ar_begin(struct ar *ar, uint32_t want);

/* One installed connection and its cost; the caller offers each connection at most once
 * per round. Ignored: a cost of 0 (taking it back saves the engine nothing), a connection
 * already pending, a repeat offer of one among the picks (so a faulty scan can never pick
 * a connection twice). Ties go to the lower connection index, so a round's picks do not
 * depend on the scan order. */
void ar_offer(struct ar *ar, uint32_t conn, uint32_t cost);

/* Ends the round: writes the picks (at most `want`) to `out`, most expensive first,
 * records them as pending since `now_us` and returns how many. */
uint32_t ar_finish(struct ar *ar, uint32_t now_us, struct ar_pick *out);

/* The host answered the request for `conn`. AR_NOT_PENDING (counted) if it was not asked. */
enum ar_status ar_answered(struct ar *ar, uint32_t conn);

/* Drops the requests older than timeout_us at `now_us` (wrapping microsecond clock);
 * returns how many. */
uint32_t ar_expire(struct ar *ar, uint32_t now_us);

#endif
