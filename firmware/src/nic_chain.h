/* Finding register blocks in the NIC's map the way the driver does: walk the chain of
 * blocks from BAR0 offset 0 (offnic_regs.h: type, version, next in every header). */
#ifndef NIC_CHAIN_H
#define NIC_CHAIN_H

#include <stdint.h>

struct chain_walk {
    uint32_t offset; /* the block's offset in the map, 0 if not found */
    uint32_t blocks; /* blocks visited */
    uint32_t error;  /* 1: the chain was malformed (a `next` backwards or outside the map, or
                        too long); the walk stopped there */
};

struct chain_walk nic_find_block(uint32_t type);

#endif
