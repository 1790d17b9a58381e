/* The mailbox's commands: one command in, one response out (fw_proto.h). Pure C, no
 * hardware access: compiled for the firmware and for the host-side tests. */
#ifndef MAILBOX_CMD_H
#define MAILBOX_CMD_H

#include <stdint.h>

#include "load_control.h"

/* What the commands read and change. */
struct fw_ctx {
    struct lc lc;
    uint32_t state;     /* FW_STATE_* */
    uint32_t last_qlen; /* the inputs of the last lc_step, for GET_LOAD */
    uint32_t last_cnum;
};

/* Answers `cmd` (`cmd_words` words as the host left them in the command buffer) into `rsp`
 * (FW_MBOX_WORDS words); returns the status it answered with (FW_ST_*). Every command,
 * however malformed, gets a response. */
uint32_t mbox_handle(struct fw_ctx *ctx, const uint32_t *cmd, uint32_t cmd_words, uint32_t *rsp);

#endif
