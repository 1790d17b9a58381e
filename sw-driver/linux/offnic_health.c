// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Queue health: a TX or RX queue whose descriptor fetch the host answered with an error
 * (a DMA read refused: Unsupported Request, Completer Abort, poisoned, timed out) is
 * stopped by the NIC with status.error set and no event (docs/queues.md). Every second
 * the engines' desc_fetch_errors counters are read; when one moved, the open queues of
 * that kind are scanned and a stopped one is restarted where it stood (its ring and
 * posted buffers kept). A packet whose data read failed needs nothing here: it
 * completes DMA_ERROR and counts as a TX error (offnic_tx.c).
 */
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>

#include "offnic.h"

static void offnic_health_check(struct offnic_adapter *ad, int kind, u32 q)
{
	if (!offnic_queue_failed(&ad->hw, kind, q))
		return;
	dev_warn(&ad->pdev->dev, "%s queue %u: descriptor fetch failed (DMA error): restarting it\n",
		 kind == OFFNIC_TX ? "TX" : "RX", q);
	if (offnic_queue_restart(&ad->hw, kind, q))
		dev_warn(&ad->pdev->dev, "%s queue %u: a descriptor fetch did not end\n",
			 kind == OFFNIC_TX ? "TX" : "RX", q);
	ad->queue_restarts[kind]++;
}

/* The open queues of a kind (under RTNL: open, stop and ring resizes hold it) */
static void offnic_health_scan(struct offnic_adapter *ad, int kind)
{
	u32 p, i;

	if (kind == OFFNIC_RX) {
		for (i = 0; ad->rx_up && i < ad->n_rxq; i++)
			offnic_health_check(ad, OFFNIC_RX, ad->rxq[i].n);
		return;
	}
	for (p = 0; p < ad->hw.n_ports; p++) {
		struct offnic_priv *priv = ad->ndev[p] ? offnic_priv(ad->ndev[p]) : NULL;

		for (i = 0; priv && priv->up && i < priv->n_txq; i++)
			offnic_health_check(ad, OFFNIC_TX, priv->txq[i].n);
	}
}

static void offnic_health_work(struct work_struct *work)
{
	struct offnic_adapter *ad = container_of(to_delayed_work(work), struct offnic_adapter,
						 health_work);
	int kind;
	u32 errs;

	if (rtnl_trylock()) {
		for (kind = OFFNIC_TX; kind <= OFFNIC_RX; kind++) {
			errs = offnic_desc_fetch_errors(&ad->hw, kind);
			if (errs == ad->fetch_errors_seen[kind])
				continue;
			ad->fetch_errors_seen[kind] = errs;
			offnic_health_scan(ad, kind);
		}
		rtnl_unlock();
	}
	schedule_delayed_work(&ad->health_work, OFFNIC_HEALTH_PERIOD);
}

void offnic_health_start(struct offnic_adapter *ad)
{
	int kind;

	for (kind = OFFNIC_TX; kind <= OFFNIC_RX; kind++)
		ad->fetch_errors_seen[kind] = offnic_desc_fetch_errors(&ad->hw, kind);
	INIT_DELAYED_WORK(&ad->health_work, offnic_health_work);
	schedule_delayed_work(&ad->health_work, OFFNIC_HEALTH_PERIOD);
}

void offnic_health_stop(struct offnic_adapter *ad)
{
	cancel_delayed_work_sync(&ad->health_work);
}
