/* The control processor's firmware: boot, then a polling main loop that answers the
 * mailbox, runs load control (seed 004 section 3.2) on every new load event and
 * announces each new Soft_limit to the driver. No interrupts: every source is polled. */
#include <stdint.h>

#include "fw_bus.h"
#include "fw_log.h"
#include "fw_proto.h"
#include "load_control.h"
#include "mailbox_cmd.h"
#include "mmio.h"
#include "nic_chain.h"
#include "offnic_regs.h"
#include "timer.h"

#define FW_HEARTBEAT_US 100u

/* Announcements waiting for room in the host's event queue. Load control runs only
 * while there is room here for what one step can produce, so none is ever dropped: a
 * full event queue holds load control back instead (Soft_limit itself is in force in
 * the hardware the moment the firmware writes it). */
#define PENDING_EVENTS 8u
static uint32_t pending_code[PENDING_EVENTS], pending_arg[PENDING_EVENTS];
static uint32_t pending_head, pending_count;

static struct fw_ctx ctx;
static uint32_t toe_base; /* the toe block's offset in the NIC's map */

static void announce(uint32_t code, uint32_t arg)
{
    uint32_t slot = (pending_head + pending_count) % PENDING_EVENTS;
    pending_code[slot] = code;
    pending_arg[slot] = arg;
    pending_count++;
}

static void drain_events(void)
{
    while (pending_count && !(fw_rd(FW_REG_EVT_STATUS) & FW_EVT_STATUS_FULL)) {
        fw_wr(FW_REG_EVT_CODE, pending_code[pending_head]);
        fw_wr(FW_REG_EVT_ARG, pending_arg[pending_head]);
        fw_wr(FW_REG_EVT_PUSH, 1);
        pending_head = (pending_head + 1u) % PENDING_EVENTS;
        pending_count--;
    }
}

static void publish_lc(void)
{
    fw_wr(FW_REG_LC_SOFT_LIMIT, ctx.lc.soft_limit);
    fw_wr(FW_REG_LC_STATE, ctx.lc.state);
    fw_wr(FW_REG_LC_HIWAT, ctx.lc.hiwat);
    fw_wr(FW_REG_LC_LOWAT, ctx.lc.lowat);
}

static void serve_mailbox(void)
{
    uint32_t status = fw_rd(FW_REG_MBOX_STATUS);
    uint32_t cmd[FW_MBOX_WORDS], rsp[FW_MBOX_WORDS];
    uint32_t i, st, len;
    if (!(status & FW_MBOX_STATUS_H2F) || (status & FW_MBOX_STATUS_F2H))
        return; /* nothing asked, or the last answer not yet taken */
    for (i = 0; i < FW_MBOX_WORDS; i++)
        cmd[i] = fw_rd(FW_CMD_BUF + 4u * i);
    fw_wr(FW_REG_MBOX_H2F_ACK, 1);
    st = mbox_handle(&ctx, cmd, FW_MBOX_WORDS, rsp);
    len = 1u + FW_HDR_LEN(rsp[0]);
    for (i = 0; i < len; i++)
        fw_wr(FW_RSP_BUF + 4u * i, rsp[i]);
    publish_lc(); /* what the command changed is in force before the host hears the answer */
    fw_log(FW_LOG_CMD, 3, FW_HDR_OP(cmd[0]), st, FW_HDR_TAG(cmd[0]), 0);
    if (FW_HDR_OP(cmd[0]) == FW_OP_SET_WATERMARKS && FW_HDR_LEN(cmd[0]) == 2u)
        fw_log(FW_LOG_WATERMARKS, 3, cmd[1], cmd[2], st, 0);
    fw_wr(FW_REG_MBOX_F2H_DOORBELL, 1);
}

static void run_load_control(uint32_t *seen_seq)
{
    uint32_t seq = fw_rd(FW_REG_LC_SEQ);
    uint32_t qlen, cnum, before, clamped;
    if (seq == *seen_seq || pending_count >= PENDING_EVENTS)
        return;
    if (!toe_base) { /* no connections to control: taken, nothing to do */
        *seen_seq = seq;
        fw_wr(FW_REG_LC_ACK, seq);
        return;
    }
    qlen = fw_rd(FW_REG_LC_QLEN);
    cnum = nic_rd(toe_base + OFFNIC_RB_TOE_REG_CONNECTIONS); /* Cnum */
    before = ctx.lc.soft_limit;
    clamped = ctx.lc.inputs_clamped;
    ctx.last_qlen = qlen;
    ctx.last_cnum = cnum;
    if (lc_step(&ctx.lc, qlen, cnum)) {
        fw_wr(FW_REG_LC_SOFT_LIMIT, ctx.lc.soft_limit); /* in force before it is announced */
        announce(FW_EVT_SOFT_LIMIT, ctx.lc.soft_limit);
        fw_log(FW_LOG_SOFT_LIMIT, 4, before, ctx.lc.soft_limit, ctx.lc.state, qlen);
    }
    if (ctx.lc.inputs_clamped != clamped)
        fw_log(FW_LOG_CLAMPED, 3, qlen, cnum, ctx.lc.inputs_clamped, 0);
    fw_wr(FW_REG_LC_STATE, ctx.lc.state);
    *seen_seq = seq;
    fw_wr(FW_REG_LC_ACK, seq);
}

extern char __imem_size[], __dmem_size[]; /* from the linker script */

int main(void)
{
    struct chain_walk toe;
    uint32_t seen_seq, beat = 0, next_beat;

    fw_wr(FW_REG_STATE, FW_STATE_BOOTING);
    fw_wr(FW_REG_VERSION, FW_VERSION);
    fw_wr(FW_REG_HEARTBEAT, 0);
    fw_log_init();
    fw_log(FW_LOG_BOOT, 3, FW_VERSION, (uint32_t)__imem_size, (uint32_t)__dmem_size, 0);

    toe = nic_find_block(OFFNIC_RB_TOE_TYPE);
    toe_base = toe.offset;
    fw_log(FW_LOG_NIC, 3, toe.offset, toe.blocks, toe.error, 0);
    lc_init(&ctx.lc, toe_base ? fw_rd(FW_REG_LC_HARD_LIMIT) : 0u, fw_rd(FW_REG_LC_QUEUE_SIZE));
    publish_lc();
    fw_log(FW_LOG_LC_INIT, 4, ctx.lc.hard_limit, ctx.lc.queue_size, ctx.lc.hiwat, ctx.lc.lowat);

    ctx.state = toe_base ? FW_STATE_RUNNING : FW_STATE_NO_TOE;
    seen_seq = fw_rd(FW_REG_LC_SEQ); /* events before boot: the machine starts fresh */
    fw_wr(FW_REG_LC_ACK, seen_seq);
    announce(FW_EVT_BOOTED, FW_VERSION);
    fw_wr(FW_REG_STATE, ctx.state);
    next_beat = timer_now_us() + FW_HEARTBEAT_US;

    for (;;) {
        serve_mailbox();
        run_load_control(&seen_seq);
        drain_events();
        if (timer_passed(next_beat)) {
            fw_wr(FW_REG_HEARTBEAT, ++beat);
            next_beat += FW_HEARTBEAT_US;
        }
    }
}
