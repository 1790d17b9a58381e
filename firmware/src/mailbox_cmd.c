#include "mailbox_cmd.h"

#include "fw_bus.h"
#include "fw_proto.h"

/* rsp[0] header, rsp[1] status, rsp[2..] data */
static uint32_t answer(uint32_t *rsp, uint32_t op, uint32_t tag, uint32_t status, uint32_t data_words)
{
    rsp[0] = FW_HDR(op, data_words + 1u, tag);
    rsp[1] = status;
    return status;
}

uint32_t mbox_handle(struct fw_ctx *ctx, const uint32_t *cmd, uint32_t cmd_words, uint32_t *rsp)
{
    uint32_t hdr = cmd_words ? cmd[0] : 0u;
    uint32_t op = FW_HDR_OP(hdr), len = FW_HDR_LEN(hdr), tag = FW_HDR_TAG(hdr);
    const uint32_t *arg = cmd + 1;
    uint32_t i;

    if (cmd_words == 0u || len > cmd_words - 1u || len > FW_MBOX_WORDS - 1u)
        return answer(rsp, op, tag, FW_ST_BAD_LENGTH, 0);
    switch (op) {
    case FW_OP_GET_VERSION:
        if (len != 0u)
            return answer(rsp, op, tag, FW_ST_BAD_LENGTH, 0);
        rsp[2] = FW_VERSION;
        rsp[3] = ctx->state;
        return answer(rsp, op, tag, FW_ST_OK, 2);
    case FW_OP_ECHO:
        if (len > FW_MBOX_WORDS - 2u) /* the status word takes one */
            return answer(rsp, op, tag, FW_ST_BAD_LENGTH, 0);
        for (i = 0; i < len; i++)
            rsp[2 + i] = arg[i];
        return answer(rsp, op, tag, FW_ST_OK, len);
    case FW_OP_GET_LOAD:
        if (len != 0u)
            return answer(rsp, op, tag, FW_ST_BAD_LENGTH, 0);
        rsp[2] = ctx->lc.state;
        rsp[3] = ctx->lc.soft_limit;
        rsp[4] = ctx->lc.hard_limit;
        rsp[5] = ctx->lc.hiwat;
        rsp[6] = ctx->lc.lowat;
        rsp[7] = ctx->last_qlen;
        rsp[8] = ctx->last_cnum;
        rsp[9] = ctx->lc.dec_step;
        rsp[10] = ctx->lc.inc_step;
        rsp[11] = ctx->lc.inputs_clamped;
        return answer(rsp, op, tag, FW_ST_OK, 10);
    case FW_OP_SET_WATERMARKS:
        if (len != 2u)
            return answer(rsp, op, tag, FW_ST_BAD_LENGTH, 0);
        return answer(rsp, op, tag, (uint32_t)lc_set_watermarks(&ctx->lc, arg[0], arg[1]), 0);
    case FW_OP_SET_STEPS:
        if (len != 2u)
            return answer(rsp, op, tag, FW_ST_BAD_LENGTH, 0);
        return answer(rsp, op, tag, (uint32_t)lc_set_steps(&ctx->lc, arg[0], arg[1]), 0);
    default:
        return answer(rsp, op, tag, FW_ST_UNKNOWN_OPCODE, 0);
    }
}
