/* Word accesses to the firmware's bus (fw_bus.h) and to the NIC's register map. */
#ifndef MMIO_H
#define MMIO_H

#include <stdint.h>

#include "fw_bus.h"

static inline uint32_t fw_rd(uint32_t off) { return *(volatile uint32_t *)(FW_BUS_BASE + off); }
static inline void fw_wr(uint32_t off, uint32_t v) { *(volatile uint32_t *)(FW_BUS_BASE + off) = v; }
static inline uint32_t nic_rd(uint32_t off) { return *(volatile uint32_t *)(FW_NIC_BASE + off); }

#endif
