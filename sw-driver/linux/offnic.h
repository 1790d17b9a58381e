/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * offnic.ko: the Linux driver of the offnic FPGA NIC. One adapter per PCI function
 * (offnic_main.c), one netdev per Ethernet port (offnic_netdev.c), TX queues per port
 * (offnic_tx.c), RX queues shared by the ports (offnic_rx.c: the NIC's RSS table and
 * default queues are device-wide; a completion says the arrival port), one NAPI per
 * completion queue, one event queue per MSI-X vector. The register-level work is the
 * driver core's (sw-driver/core), compiled into the module.
 */
#ifndef OFFNIC_H
#define OFFNIC_H

#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>

#include "offnic_hw.h"

#define OFFNIC_DRV_NAME "offnic"
#define OFFNIC_DEFAULT_RING_LOG 10	/* 1024 records */
#define OFFNIC_MIN_RING_LOG 6
#define OFFNIC_MAX_RING_LOG 13
#define OFFNIC_MAX_QUEUES 64
#define OFFNIC_RX_COPYBREAK 256
#define OFFNIC_MAX_MTU 64000		/* with the fragmentation offload */
#define OFFNIC_STATS_PERIOD (10 * HZ)	/* read the wrapping counters at least this often */
#define OFFNIC_HEALTH_PERIOD HZ		/* look for queues a failed fetch stopped */

struct offnic_adapter;
struct offnic_cdev;
struct devlink;

/* One completion queue and the NAPI context that serves it */
struct offnic_cq {
	struct offnic_adapter *ad;
	int kind;
	u32 n;
	u32 eq;
	struct offnic_ring ring;
	struct napi_struct napi;
	bool open;
};

struct offnic_tx_slot {
	struct sk_buff *skb;	/* on a packet's first slot */
	dma_addr_t dma;
	u32 len;
	u16 ndesc;		/* on a packet's first slot */
	bool page;		/* mapped with skb_frag_dma_map */
};

struct offnic_txq {
	struct offnic_priv *priv;
	u32 n;			/* the NIC's TX queue */
	u32 index;		/* the netdev's subqueue */
	struct offnic_ring ring;
	struct offnic_tx_slot *slots;
	u16 clean;		/* first index not completed */
	struct offnic_cq cq;
	struct u64_stats_sync syncp;
	u64 packets;
	u64 bytes;
	u64 errors;
	u64 frag_refused;
};

struct offnic_rx_buf {
	struct page *page;
	dma_addr_t dma;
};

struct offnic_rx_port_stats {
	u64 packets;
	u64 bytes;
	u64 errors;
	u64 dropped;
	u64 reassembled;
};

struct offnic_rxq {
	struct offnic_adapter *ad;
	u32 n;
	struct offnic_ring ring;
	struct offnic_rx_buf *bufs;
	u16 clean;
	struct offnic_cq cq;
	struct u64_stats_sync syncp;
	struct offnic_rx_port_stats port[OFFNIC_MAX_PORTS];
	u64 alloc_failed;
};

struct offnic_eq {
	struct offnic_adapter *ad;
	u32 n;
	int irq;
	struct offnic_ring ring;
	char name[IFNAMSIZ + 16];
};

/* netdev_priv() of each port's netdev */
struct offnic_priv {
	struct offnic_adapter *ad;
	struct net_device *ndev;
	u32 port;
	u32 txq_base;		/* the NIC's first TX queue of this port */
	u32 n_txq;
	struct offnic_txq *txq;
	unsigned int tx_ring_log;
	bool up;
};

struct offnic_adapter {
	struct pci_dev *pdev;
	void __iomem *bar;
	struct offnic_hw hw;
	struct net_device *ndev[OFFNIC_MAX_PORTS];

	struct offnic_eq *eqs;
	u32 n_eqs;
	struct offnic_cq *cq_of[2][OFFNIC_MAX_QUEUES]; /* open CQs by kind and number */

	/* RX queues serve every port: up while any port is */
	struct net_device napi_dev;
	struct offnic_rxq *rxq;
	u32 n_rxq;
	bool rx_up;
	unsigned int rx_ring_log;
	unsigned int rx_buf_order;
	u32 rx_users;
	u32 rss_table[256];	/* the NIC's table is write-only: ours is the copy */
	u8 rss_key[OFFNIC_RSS_KEY_BYTES];
	u32 wire_mtu;

	/* interrupt moderation, for every queue of a kind */
	u32 mod_count[2];
	u32 mod_usecs[2];

	/* reassembly buffers (docs/frag.md) */
	u32 n_reasm;
	bool reasm_posted;
	void **reasm_cpu;
	dma_addr_t *reasm_dma;
	spinlock_t reasm_lock;	/* the three writes of a buffer post */

	/* the NIC's counters as 64-bit totals */
	struct mutex stats_lock;
	u32 *ctr_last;
	u64 *ctr_total;
	struct delayed_work stats_work;

	/* queues stopped by a failed descriptor fetch (offnic_health.c) */
	struct delayed_work health_work;
	bool health_on;
	u32 fetch_errors_seen[2];
	u64 queue_restarts[2];

	struct offnic_cdev *cdev;	/* /dev/offnicN (offnic_cdev.c) */
	struct devlink *devlink;	/* offnic_devlink.c */
};

static inline struct offnic_priv *offnic_priv(struct net_device *ndev)
{
	return netdev_priv(ndev);
}

/* offnic_main.c */
int offnic_cq_setup(struct offnic_adapter *ad, struct offnic_cq *cq, int kind, u32 n,
		    unsigned int log_size, int (*poll)(struct napi_struct *, int));
void offnic_cq_teardown(struct offnic_adapter *ad, struct offnic_cq *cq);
void offnic_update_counters(struct offnic_adapter *ad);

/* offnic_netdev.c */
int offnic_netdev_create(struct offnic_adapter *ad, u32 port);
void offnic_netdev_destroy(struct offnic_adapter *ad, u32 port);
int offnic_open(struct net_device *ndev);
int offnic_stop(struct net_device *ndev);

/* offnic_tx.c */
int offnic_tx_up(struct offnic_priv *priv);
void offnic_tx_down(struct offnic_priv *priv);
netdev_tx_t offnic_start_xmit(struct sk_buff *skb, struct net_device *ndev);

/* offnic_rx.c */
int offnic_rx_up(struct offnic_adapter *ad);
void offnic_rx_down(struct offnic_adapter *ad);
int offnic_reasm_setup(struct offnic_adapter *ad, u32 n);
void offnic_reasm_teardown(struct offnic_adapter *ad);

/* offnic_health.c */
void offnic_health_start(struct offnic_adapter *ad);
void offnic_health_stop(struct offnic_adapter *ad);

/* offnic_cdev.c */
int offnic_cdev_create(struct offnic_adapter *ad);
void offnic_cdev_destroy(struct offnic_adapter *ad);

/* offnic_devlink.c */
int offnic_devlink_create(struct offnic_adapter *ad);
void offnic_devlink_destroy(struct offnic_adapter *ad);

/* offnic_ethtool.c */
void offnic_set_ethtool_ops(struct net_device *ndev);

#endif /* OFFNIC_H */
