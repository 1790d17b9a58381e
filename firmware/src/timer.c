#include "timer.h"

#include "mmio.h"

uint32_t timer_now_us(void) { return fw_rd(FW_REG_TIME_US); }

int timer_passed(uint32_t deadline) { return (int32_t)(timer_now_us() - deadline) >= 0; }
