/* Active restore: see active_restore.h. Every choice here is OURS (the seed names the
 * idea only). */
#include "active_restore.h"

void ar_init(struct ar *ar)
{
    uint32_t i;
    ar->enabled = 0;
    ar->max_per_round = 1;
    ar->timeout_us = 10000; /* OURS: a handoff back takes the host a syscall or two */
    ar->want = 0;
    ar->nbest = 0;
    ar->npending = 0;
    for (i = 0; i < AR_MAX_PENDING; i++)
        ar->pending_conn[i] = ar->pending_since_us[i] = 0;
    ar->requested = ar->answered = ar->expired = ar->bad_answers = 0;
}

enum ar_status ar_configure(struct ar *ar, uint32_t enabled, uint32_t max_per_round, uint32_t timeout_us)
{
    if (enabled > 1u || max_per_round < 1u || max_per_round > AR_MAX_PICK || timeout_us < 1u)
        return AR_OUT_OF_RANGE;
    ar->enabled = enabled;
    ar->max_per_round = max_per_round;
    ar->timeout_us = timeout_us;
    return AR_OK;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

uint32_t ar_wanted(const struct ar *ar, const struct lc *lc, uint32_t cnum)
{
    uint32_t excess;
    if (!ar->enabled || lc->state != LC_DECREASE || cnum <= lc->soft_limit)
        return 0;
    excess = cnum - lc->soft_limit;
    if (excess <= ar->npending)
        return 0; /* enough asked for already */
    return min_u32(min_u32(excess - ar->npending, ar->max_per_round), AR_MAX_PENDING - ar->npending);
}

void ar_begin(struct ar *ar, uint32_t want)
{
    ar->want = min_u32(want, AR_MAX_PICK);
    ar->nbest = 0;
}

static int is_pending(const struct ar *ar, uint32_t conn)
{
    uint32_t i;
    for (i = 0; i < ar->npending; i++)
        if (ar->pending_conn[i] == conn)
            return 1;
    return 0;
}

/* a before b in the picks: dearer first, the lower index on a tie */
static int dearer(uint32_t cost_a, uint32_t conn_a, const struct ar_pick *b)
{
    return cost_a > b->cost || (cost_a == b->cost && conn_a < b->conn);
}

void ar_offer(struct ar *ar, uint32_t conn, uint32_t cost)
{
    uint32_t i, at;
    if (cost == 0u || ar->want == 0u || is_pending(ar, conn))
        return;
    for (i = 0; i < ar->nbest; i++)
        if (ar->best[i].conn == conn)
            return; /* a repeat offer: never two picks of one connection */
    at = ar->nbest;
    while (at > 0u && dearer(cost, conn, &ar->best[at - 1u]))
        at--;
    if (at >= ar->want)
        return; /* cheaper than every pick so far, and no room */
    i = ar->nbest < ar->want ? ar->nbest++ : ar->want - 1u; /* the cheapest falls off if full */
    for (; i > at; i--)
        ar->best[i] = ar->best[i - 1u];
    ar->best[at].conn = conn;
    ar->best[at].cost = cost;
}

uint32_t ar_finish(struct ar *ar, uint32_t now_us, struct ar_pick *out)
{
    uint32_t i, n = 0;
    for (i = 0; i < ar->nbest && ar->npending < AR_MAX_PENDING; i++) {
        out[n++] = ar->best[i];
        ar->pending_conn[ar->npending] = ar->best[i].conn;
        ar->pending_since_us[ar->npending] = now_us;
        ar->npending++;
    }
    ar->requested += n;
    ar->want = 0;
    ar->nbest = 0;
    return n;
}

static void drop_pending(struct ar *ar, uint32_t i)
{
    for (; i + 1u < ar->npending; i++) { /* keep the order: oldest first */
        ar->pending_conn[i] = ar->pending_conn[i + 1u];
        ar->pending_since_us[i] = ar->pending_since_us[i + 1u];
    }
    ar->npending--;
}

enum ar_status ar_answered(struct ar *ar, uint32_t conn)
{
    uint32_t i;
    for (i = 0; i < ar->npending; i++) {
        if (ar->pending_conn[i] == conn) {
            drop_pending(ar, i);
            ar->answered++;
            return AR_OK;
        }
    }
    ar->bad_answers++;
    return AR_NOT_PENDING;
}

uint32_t ar_expire(struct ar *ar, uint32_t now_us)
{
    uint32_t i = 0, n = 0;
    while (i < ar->npending) {
        if (now_us - ar->pending_since_us[i] >= ar->timeout_us) { /* unsigned: wraps */
            drop_pending(ar, i);
            n++;
        } else {
            i++;
        }
    }
    ar->expired += n;
    return n;
}
