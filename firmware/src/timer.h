/* Time and deadlines on the bus's free-running microsecond counter (FW_REG_TIME_US). */
#ifndef TIMER_H
#define TIMER_H

#include <stdint.h>

uint32_t timer_now_us(void);
/* 1 once `deadline` (a timer_now_us() value) has passed; correct across the counter's wrap
 * for deadlines less than 2^31 us ahead. */
int timer_passed(uint32_t deadline);

#endif
