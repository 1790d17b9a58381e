#include "nic_chain.h"

#include "mmio.h"
#include "offnic_regs.h"

#define MAX_BLOCKS 256u /* more than the map can hold: the bound on a looping chain */

struct chain_walk nic_find_block(uint32_t type)
{
    struct chain_walk w = {0, 0, 0};
    uint32_t off = 0;
    for (;;) {
        uint32_t next;
        w.blocks++;
        if (nic_rd(off + OFFNIC_RB_DEVICE_ID_REG_TYPE) == type) {
            w.offset = off;
            return w;
        }
        next = nic_rd(off + OFFNIC_RB_DEVICE_ID_REG_NEXT);
        if (next == 0u)
            return w;
        if (next <= off || next >= FW_NIC_WINDOW || (next & 3u) || w.blocks >= MAX_BLOCKS) {
            w.error = 1;
            return w;
        }
        off = next;
    }
}
