#include "fw_log.h"

#include "mmio.h"
#include "timer.h"

static uint32_t written;

void fw_log_init(void)
{
    written = 0;
    fw_wr(FW_REG_LOG_HEAD, 0);
}

void fw_log(uint32_t code, uint32_t nargs, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3)
{
    uint32_t rec = FW_LOG_RING + (written % FW_LOG_RECORDS) * FW_LOG_RECORD_BYTES;
    /* the record number last: a reader that sees it sees the whole record */
    fw_wr(rec + 4, timer_now_us());
    fw_wr(rec + 8, code);
    fw_wr(rec + 12, nargs);
    fw_wr(rec + 16, a0);
    fw_wr(rec + 20, a1);
    fw_wr(rec + 24, a2);
    fw_wr(rec + 28, a3);
    fw_wr(rec, written);
    written++;
    fw_wr(FW_REG_LOG_HEAD, written);
}
