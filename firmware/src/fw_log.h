/* The log ring the host reads (fw_bus.h FW_LOG_RING): fixed records, never blocks; the
 * host sees what it missed from the record numbers. */
#ifndef FW_LOG_H
#define FW_LOG_H

#include <stdint.h>

void fw_log_init(void);
void fw_log(uint32_t code, uint32_t nargs, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3);

#endif
