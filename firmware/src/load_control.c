/* Seed 004 section 3.2, Figure 3. Where the seed is silent the choice is marked OURS. */
#include "load_control.h"

void lc_init(struct lc *lc, uint32_t hard_limit, uint32_t queue_size)
{
    uint32_t step = hard_limit / 64u;
    lc->hard_limit = hard_limit;
    lc->queue_size = queue_size;
    lc->hiwat = queue_size - queue_size / 4u; /* OURS: 3/4 of the queue */
    lc->lowat = queue_size / 4u;              /* OURS: 1/4 of the queue */
    lc->dec_step = step ? step : 1u;          /* OURS */
    lc->inc_step = lc->dec_step;
    lc->soft_limit = hard_limit; /* 3.2: "initially set to Hard_limit" */
    lc->state = LC_MONITOR;      /* 3.2: "starts in the MONITOR state" */
    lc->inputs_clamped = 0;
}

enum lc_status lc_set_watermarks(struct lc *lc, uint32_t hiwat, uint32_t lowat)
{
    if (hiwat > lc->queue_size)
        return LC_OUT_OF_RANGE;
    if (hiwat < lowat)
        return LC_BAD_ORDER;
    lc->hiwat = hiwat;
    lc->lowat = lowat;
    return LC_OK;
}

enum lc_status lc_set_steps(struct lc *lc, uint32_t dec_step, uint32_t inc_step)
{
    uint32_t max = lc->hard_limit ? lc->hard_limit : 1u;
    if (dec_step < 1u || dec_step > max || inc_step < 1u || inc_step > max)
        return LC_OUT_OF_RANGE;
    lc->dec_step = dec_step;
    lc->inc_step = inc_step;
    return LC_OK;
}

/* OURS: Soft_limit never goes below 1 (with a Soft_limit of 0, DECREASE would wait for
 * Cnum < 0 for ever) unless the table itself has no room. */
static int decrease(struct lc *lc)
{
    uint32_t floor = lc->hard_limit ? 1u : 0u;
    uint32_t s = lc->soft_limit;
    uint32_t next = s > floor + lc->dec_step ? s - lc->dec_step : floor;
    lc->soft_limit = next;
    return next != s;
}

/* 3.2: Soft_limit "is always less than or equal to Hard_limit". */
static int increase(struct lc *lc)
{
    uint32_t s = lc->soft_limit;
    uint32_t room = lc->hard_limit - s;
    uint32_t next = s + (lc->inc_step < room ? lc->inc_step : room);
    lc->soft_limit = next;
    return next != s;
}

int lc_step(struct lc *lc, uint32_t qlen, uint32_t cnum)
{
    if (qlen > lc->queue_size) { /* OURS: the hardware cannot count more than it holds */
        qlen = lc->queue_size;
        lc->inputs_clamped++;
    }
    if (cnum > lc->hard_limit) {
        cnum = lc->hard_limit;
        lc->inputs_clamped++;
    }
    switch (lc->state) {
    case LC_MONITOR:
        /* 3.2: "When Qlen becomes greater than Hiwat, the NIC reduces Soft_limit, sends a
         * message to the device driver ..., and transitions to the DECREASE state."
         * "If Qlen decreases below Lowat, then the NIC increases Soft_limit, sends a
         * message ..., and transitions to the INCREASE state."
         * OURS: no change of Soft_limit possible (already at its floor / at Hard_limit):
         * no message, and the machine stays in MONITOR. */
        if (qlen > lc->hiwat) {
            if (decrease(lc)) {
                lc->state = LC_DECREASE;
                return 1;
            }
        } else if (qlen < lc->lowat) {
            if (increase(lc)) {
                lc->state = LC_INCREASE;
                return 1;
            }
        }
        return 0;
    case LC_DECREASE:
        /* 3.2: "the NIC waits for connections to terminate. Once Cnum drops below
         * Soft_limit, the state machine transitions back to the MONITOR state." */
        if (cnum < lc->soft_limit)
            lc->state = LC_MONITOR;
        return 0;
    case LC_INCREASE:
        /* 3.2: "while in the INCREASE state, if Qlen increases above Hiwat, then the NIC
         * reduces Soft_limit, sends a message ..., and transitions to the DECREASE state."
         * "If Cnum increases to Soft_limit, then the NIC transitions to the MONITOR state."
         * OURS: overload is checked first; with nothing left to decrease, MONITOR. */
        if (qlen > lc->hiwat) {
            if (decrease(lc)) {
                lc->state = LC_DECREASE;
                return 1;
            }
            lc->state = LC_MONITOR;
        } else if (cnum >= lc->soft_limit) {
            lc->state = LC_MONITOR;
        }
        return 0;
    default: /* a corrupted state: start over where the seed starts */
        lc->state = LC_MONITOR;
        return 0;
    }
}
