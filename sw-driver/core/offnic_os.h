/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The OS layer of the offnic driver core: the types and the few services the core
 * needs (32-bit register access to BAR0, DMA-coherent memory, a delay, a log), given
 * as an ops table by whoever runs it: the Linux module (offnic_main.c) or a user-space
 * host (the ctypes tests). The core has no globals and calls nothing else.
 */
#ifndef OFFNIC_OS_H
#define OFFNIC_OS_H

#ifdef __KERNEL__
#include <linux/kernel.h>
#include <linux/types.h>
#include <linux/string.h>
#include <linux/stdarg.h>
#include <linux/compiler.h>
#include <asm/barrier.h>
/* Order a record's phase bit, read first, before its other bytes (the NIC writes both) */
#define offnic_dma_rmb() dma_rmb()
#else
/* user space: the core/Makefile defines __printf(a, b) */
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define offnic_dma_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif

enum offnic_log_level {
	OFFNIC_LOG_ERR = 3,
	OFFNIC_LOG_WARN = 4,
	OFFNIC_LOG_INFO = 6,
	OFFNIC_LOG_DEBUG = 7,
};

/*
 * What the core asks of its host. @ctx is passed back unchanged. Register offsets are
 * BAR0 byte offsets. dma_alloc returns zeroed memory aligned to 4 KiB (rings need it),
 * its bus address in *@dma, or NULL.
 */
struct offnic_os_ops {
	u32 (*read32)(void *ctx, u32 offset);
	void (*write32)(void *ctx, u32 offset, u32 value);
	void *(*dma_alloc)(void *ctx, size_t bytes, u64 *dma);
	void (*dma_free)(void *ctx, size_t bytes, void *cpu, u64 dma);
	void (*delay_us)(void *ctx, unsigned int us);
	void (*vlog)(void *ctx, int level, const char *fmt, va_list args);
};

#endif /* OFFNIC_OS_H */
