/* Seed 004's load control (Kim & Rixner, section 3.2 and Figure 3): the state machine that
 * keeps the NIC-packet queue length between two watermarks by moving Soft_limit, the
 * number of connections the host may hand off. Pure C, no hardware access: the firmware
 * and the host-side tests (tests/firmware/) compile the same file. */
#ifndef LOAD_CONTROL_H
#define LOAD_CONTROL_H

#include <stdint.h>

enum lc_state { LC_MONITOR = 0, LC_DECREASE = 1, LC_INCREASE = 2 };

/* Results of the setters (the same numbers as fw_proto.h's FW_ST_*) */
enum lc_status { LC_OK = 0, LC_OUT_OF_RANGE = 3, LC_BAD_ORDER = 4 };

struct lc {
    /* Fixed at initialisation (section 3.2: "Hard_limit is set when the firmware is
     * initialized and remains fixed"); queue_size bounds Qlen and the watermarks. */
    uint32_t hard_limit;
    uint32_t queue_size;
    /* Set at initialisation, changeable through the mailbox. */
    uint32_t hiwat;
    uint32_t lowat;
    uint32_t dec_step; /* how far one decrease lowers Soft_limit: the seed does not say */
    uint32_t inc_step; /* how far one increase raises it: the seed does not say */
    /* The machine */
    uint32_t soft_limit;
    uint32_t state;
    /* Inputs outside what the hardware can produce (Qlen > queue_size, Cnum > Hard_limit),
     * clamped and counted */
    uint32_t inputs_clamped;
};

/* Defaults where the seed gives none: Hiwat 3/4 of the queue (room for a burst before the
 * queue fills and drops, the seed's reason for a high watermark), Lowat 1/4, steps of
 * Hard_limit/64 (at least 1). */
void lc_init(struct lc *lc, uint32_t hard_limit, uint32_t queue_size);

/* Refused (state unchanged) unless lowat <= hiwat <= queue_size. */
enum lc_status lc_set_watermarks(struct lc *lc, uint32_t hiwat, uint32_t lowat);

/* Refused (state unchanged) unless 1 <= step <= max(Hard_limit, 1), for both. */
enum lc_status lc_set_steps(struct lc *lc, uint32_t dec_step, uint32_t inc_step);

/* One run of the machine on the current Qlen and Cnum (the seed runs it when a packet
 * arrives, a connection is handed off or one terminates). Returns 1 if Soft_limit changed:
 * the caller announces the new value to the driver. */
int lc_step(struct lc *lc, uint32_t qlen, uint32_t cnum);

#endif
