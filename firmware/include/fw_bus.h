/* The control processor's address space: the specification the NIC's hardware implements.
 *
 * One 32-bit bus (PicoRV32's native valid/ready memory interface), byte addresses:
 *
 *   FW_IMEM_BASE   instruction memory, block RAM, FW_IMEM_BYTES (build parameter); the host
 *                  writes the image here through BAR0 while the core is held in reset
 *   FW_DMEM_BASE   data memory (.data, .bss, stack), block RAM, FW_DMEM_BYTES (parameter)
 *   FW_NIC_BASE    the NIC's register map exactly as the host sees it in BAR0: block offsets
 *                  and registers from the generated sw-driver/include/offnic_regs.h
 *   FW_BUS_BASE    the firmware's own registers below (FW_REG_*), the command/response
 *                  buffers and the log ring; the host reaches them through the `fw` block
 *                  of its map (OFFNIC_RB_FW_*: cmd_*, rsp_*, doorbells, events, log_index/log_data)
 *
 * The hardware: hw/src/offnic/cpu/ (ControlProcessor, FwRegs, FwBusMap mirrors this file).
 *
 * Every FW_BUS register is 32 bits and accessed as a whole word. "fw" is the firmware,
 * "host" the driver, "hw" the NIC logic. */
#ifndef FW_BUS_H
#define FW_BUS_H

/* the linker script includes this file too: no C suffixes there */
#ifdef FW_LINKER_SCRIPT
#define FW_U32(x) x
#else
#define FW_U32(x) x##u
#endif

#define FW_IMEM_BASE FW_U32(0x00000000)
#define FW_DMEM_BASE FW_U32(0x00100000) /* IMEM and DMEM each up to 1 MiB */
#define FW_MEM_MAX_BYTES FW_U32(0x00100000)
#define FW_NIC_BASE FW_U32(0x40000000)
#define FW_NIC_WINDOW FW_U32(0x01000000) /* BAR0's 16 MiB */
#define FW_BUS_BASE FW_U32(0x80000000)
#define FW_BUS_WINDOW FW_U32(0x00001000)

/* --- identity, state, time ----------------------------------------------------- */
#define FW_REG_MAGIC 0x000        /* ro  const FW_BUS_MAGIC: the bus answers */
#define FW_BUS_MAGIC 0x4f46574bu  /*     "OFWK" */
#define FW_REG_VERSION 0x004      /* rw fw, ro host: firmware version (fw_proto.h FW_VERSION) */
#define FW_REG_STATE 0x008        /* rw fw, ro host: FW_STATE_*; hw resets it to 0 with the core */
#define FW_REG_HEARTBEAT 0x00c    /* rw fw, ro host: +1 every FW_HEARTBEAT_US: the firmware runs */
#define FW_REG_TIME_US 0x010      /* ro  free-running microseconds since the core left reset (wraps) */
#define FW_REG_BUS_ERRORS 0x014   /* ro  accesses the bus could not serve (unmapped, partial word) */

/* --- mailbox: one command at a time, each way a doorbell -------------------------
 * host: writes FW_CMD_BUF (header word + payload, fw_proto.h), rings the host->fw
 *       doorbell (its BAR0 register; hw sets MBOX_STATUS.H2F);
 * fw:   sees H2F, reads the command, writes FW_REG_MBOX_H2F_ACK (hw clears H2F), writes
 *       FW_RSP_BUF, then FW_REG_MBOX_F2H_DOORBELL (hw sets F2H and raises an event to the
 *       host on its event queue);
 * host: reads FW_RSP_BUF, acknowledges (hw clears F2H). The fw writes no response while
 *       F2H is set, and takes no command while it cannot answer. */
#define FW_REG_MBOX_STATUS 0x020       /* ro  bit 0 H2F: a command waits; bit 1 F2H: a response waits */
#define FW_MBOX_STATUS_H2F 0x1u
#define FW_MBOX_STATUS_F2H 0x2u
#define FW_REG_MBOX_H2F_ACK 0x024      /* wo  any write: the command was taken (clears H2F) */
#define FW_REG_MBOX_F2H_DOORBELL 0x028 /* wo  any write: the response is complete (sets F2H) */

/* --- events to the driver (asynchronous announcements, e.g. a new Soft_limit) -----
 * fw writes CODE and ARG, then PUSH; hw appends the pair to the host's event queue.
 * EVT_STATUS.FULL: no room now; the fw waits, it never pushes into a full queue. */
#define FW_REG_EVT_STATUS 0x030 /* ro  bit 0 FULL */
#define FW_EVT_STATUS_FULL 0x1u
#define FW_REG_EVT_CODE 0x034   /* rw  fw_proto.h FW_EVT_* */
#define FW_REG_EVT_ARG 0x038    /* rw */
#define FW_REG_EVT_PUSH 0x03c   /* wo  any write: push {CODE, ARG} */

/* --- load control (seed 004 section 3.2) -----------------------------------------
 * Inputs from hw: LC_SEQ counts load events (a NIC packet queued, a connection installed,
 * one removed); LC_QLEN is Qlen, the NIC-packet receive queue's length in packets;
 * LC_QUEUE_SIZE that queue's capacity; LC_HARD_LIMIT is Hard_limit, the connection
 * table's size. Cnum is the host map's toe.connections (OFFNIC_RB_TOE_REG_CONNECTIONS).
 * Outputs: LC_SOFT_LIMIT, which hw enforces (an install with Cnum >= Soft_limit is refused
 * with its own status), and copies of the machine's state for the host. LC_ACK: the last
 * LC_SEQ the fw ran the state machine for. */
#define FW_REG_LC_SEQ 0x040        /* ro */
#define FW_REG_LC_QLEN 0x044       /* ro */
#define FW_REG_LC_QUEUE_SIZE 0x048 /* ro */
#define FW_REG_LC_HARD_LIMIT 0x04c /* ro */
#define FW_REG_LC_SOFT_LIMIT 0x050 /* rw fw; hw refuses installs at or above it */
#define FW_REG_LC_STATE 0x054      /* rw fw: LC_MONITOR / LC_DECREASE / LC_INCREASE */
#define FW_REG_LC_ACK 0x058        /* rw fw */
#define FW_REG_LC_HIWAT 0x05c      /* rw fw, ro host: Hiwat in force */
#define FW_REG_LC_LOWAT 0x060      /* rw fw, ro host: Lowat in force */
#define FW_REG_LC_CNUM 0x064       /* ro  Cnum as the engine counts it (= toe.connections) */

/* --- log ring: FW_LOG_RECORDS records of FW_LOG_RECORD_BYTES --------------------
 * Record n (n counts from 0) is at FW_LOG_RING + (n % FW_LOG_RECORDS) * FW_LOG_RECORD_BYTES;
 * its word 0 holds n, so a reader sees an overwritten record. LOG_HEAD = records written. */
#define FW_REG_LOG_HEAD 0x080 /* rw fw, ro host */

/* --- buffers --------------------------------------------------------------------- */
#define FW_MBOX_WORDS 16
#define FW_CMD_BUF 0x100 /* ro fw, wo host: FW_MBOX_WORDS words */
#define FW_RSP_BUF 0x140 /* rw fw, ro host: FW_MBOX_WORDS words */
#define FW_LOG_RING 0x800
#define FW_LOG_RECORDS 64
#define FW_LOG_RECORD_BYTES 32
#define FW_LOG_RECORD_WORDS 8 /* seq, time_us, code, nargs, arg0..arg3 */

#endif
