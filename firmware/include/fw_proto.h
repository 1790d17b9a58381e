/* What the firmware and the driver say to each other: version, states, mailbox commands,
 * events and log codes. Shared by the firmware, its host-side tests and the driver. */
#ifndef FW_PROTO_H
#define FW_PROTO_H

#define FW_VERSION 0x00010000u /* major 31:16, minor 15:8, patch 7:0 */

/* FW_REG_STATE */
#define FW_STATE_RESET 0u   /* hw's value while the core is in reset or before the fw ran */
#define FW_STATE_BOOTING 1u
#define FW_STATE_RUNNING 2u
#define FW_STATE_NO_TOE 3u  /* running, but the NIC has no TCP engine: load control idle */

/* Mailbox header word (command and response alike): opcode 7:0, payload words 15:8,
 * tag 31:16 (the host's, echoed). A response's payload starts with a FW_ST_* status. */
#define FW_HDR(op, len, tag) ((unsigned)(op) | ((unsigned)(len) << 8) | ((unsigned)(tag) << 16))
#define FW_HDR_OP(h) ((h) & 0xffu)
#define FW_HDR_LEN(h) (((h) >> 8) & 0xffu)
#define FW_HDR_TAG(h) (((h) >> 16) & 0xffffu)

#define FW_OP_GET_VERSION 0x01    /* -> status, version, state */
#define FW_OP_ECHO 0x02           /* payload (<= 14 words) -> status, payload */
#define FW_OP_GET_LOAD 0x03       /* -> status, lc state, soft, hard, hiwat, lowat, qlen, cnum,
                                     dec_step, inc_step, inputs_clamped */
#define FW_OP_SET_WATERMARKS 0x04 /* hiwat, lowat -> status */
#define FW_OP_SET_STEPS 0x05      /* dec_step, inc_step -> status */

#define FW_ST_OK 0u
#define FW_ST_UNKNOWN_OPCODE 1u
#define FW_ST_BAD_LENGTH 2u
#define FW_ST_OUT_OF_RANGE 3u /* a value outside what the hardware has (e.g. Hiwat > queue size) */
#define FW_ST_BAD_ORDER 4u    /* Hiwat < Lowat */
#define FW_ST_NOT_PENDING 5u  /* an answer to an active-restore request that was not made */

/* Events (FW_REG_EVT_CODE; the argument in FW_REG_EVT_ARG) */
#define FW_EVT_BOOTED 1u     /* arg: FW_VERSION */
#define FW_EVT_SOFT_LIMIT 2u /* arg: the new Soft_limit */

/* Log records: code, then up to four arguments */
#define FW_LOG_BOOT 1u        /* version, imem bytes, dmem bytes */
#define FW_LOG_NIC 2u         /* toe block offset (0: none), blocks walked, chain error */
#define FW_LOG_LC_INIT 3u     /* hard limit, queue size, hiwat, lowat */
#define FW_LOG_SOFT_LIMIT 4u  /* old, new, new lc state, qlen */
#define FW_LOG_CMD 5u         /* opcode, status, tag */
#define FW_LOG_WATERMARKS 6u  /* hiwat, lowat, status */
#define FW_LOG_CLAMPED 7u     /* qlen, cnum as read, clamped inputs so far */

#endif
