// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Transmit: each port's TX queues (one netdev subqueue each), a packet as a chain of
 * descriptors (head and page fragments, MORE on all but the last), the checksum
 * command of CHECKSUM_PARTIAL in the first one, one doorbell per batch (xmit_more),
 * byte queue limits; completions cleaned by the TX completion queue's NAPI context.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>

#include "offnic.h"

/* Descriptors a packet may need: stop the queue below this much room */
static u32 offnic_tx_room_needed(const struct offnic_adapter *ad)
{
	return min_t(u32, ad->hw.max_segs, MAX_SKB_FRAGS + 1);
}

static void offnic_tx_unmap(struct offnic_txq *txq, struct offnic_tx_slot *s)
{
	struct device *dev = &txq->priv->ad->pdev->dev;

	if (!s->len)
		return;
	if (s->page)
		dma_unmap_page(dev, s->dma, s->len, DMA_TO_DEVICE);
	else
		dma_unmap_single(dev, s->dma, s->len, DMA_TO_DEVICE);
	s->len = 0;
}

static struct offnic_tx_slot *offnic_tx_slot(struct offnic_txq *txq, u16 i)
{
	return &txq->slots[offnic_slot(i, txq->ring.log_size)];
}

/* Take every new completion of a TX queue; returns how many */
static int offnic_tx_clean(struct offnic_txq *txq, int budget)
{
	struct netdev_queue *nq = netdev_get_tx_queue(txq->priv->ndev, txq->index);
	struct offnic_adapter *ad = txq->priv->ad;
	unsigned int pkts = 0, bytes = 0, errors = 0, refused = 0;
	struct offnic_cpl cpl;
	u32 room;
	int done = 0;

	while (offnic_cq_next(&txq->cq.ring, &cpl)) {
		struct offnic_tx_slot *first = offnic_tx_slot(txq, txq->clean);
		u16 k;

		txq->cq.ring.cons = offnic_idx_add(txq->cq.ring.cons, 1);
		done++;
		if (unlikely(cpl.index != txq->clean || !first->skb)) {
			netdev_err(txq->priv->ndev, "TX queue %u: completion for index %u, expected %u\n",
				   txq->n, cpl.index, txq->clean);
			continue;
		}
		for (k = 0; k < first->ndesc; k++)
			offnic_tx_unmap(txq, offnic_tx_slot(txq, offnic_idx_add(txq->clean, k)));
		if (cpl.status == OFFNIC_ST_OK) {
			pkts++;
		} else {
			errors++;
			if (cpl.status >= OFFNIC_ST_FRAG_DF)
				refused++;
		}
		bytes += first->skb->len;
		napi_consume_skb(first->skb, budget);
		first->skb = NULL;
		txq->clean = offnic_idx_add(txq->clean, first->ndesc);
	}
	if (!done)
		return 0;
	offnic_cq_done(&ad->hw, OFFNIC_TX, txq->cq.n, txq->cq.ring.cons, 0);
	u64_stats_update_begin(&txq->syncp);
	txq->packets += pkts;
	txq->bytes += bytes;
	txq->errors += errors;
	txq->frag_refused += refused;
	u64_stats_update_end(&txq->syncp);
	netdev_tx_completed_queue(nq, pkts + errors, bytes);
	/* pairs with the barrier in offnic_start_xmit before it checks the room again */
	smp_mb();
	room = offnic_free(txq->ring.prod, txq->clean, txq->ring.log_size);
	if (netif_tx_queue_stopped(nq) && room >= offnic_tx_room_needed(ad))
		netif_tx_wake_queue(nq);
	return done;
}

static int offnic_tx_poll(struct napi_struct *napi, int budget)
{
	struct offnic_cq *cq = container_of(napi, struct offnic_cq, napi);
	struct offnic_txq *txq = container_of(cq, struct offnic_txq, cq);

	offnic_tx_clean(txq, budget);
	if (!budget)	/* netpoll: clean only, stay scheduled */
		return 0;
	if (napi_complete_done(napi, 0))
		offnic_cq_done(&cq->ad->hw, OFFNIC_TX, cq->n, cq->ring.cons, 1);
	return 0;
}

static void offnic_tx_drop(struct offnic_txq *txq, struct sk_buff *skb)
{
	dev_kfree_skb_any(skb);
	u64_stats_update_begin(&txq->syncp);
	txq->errors++;
	u64_stats_update_end(&txq->syncp);
}

netdev_tx_t offnic_start_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	struct offnic_adapter *ad = priv->ad;
	struct offnic_txq *txq = &priv->txq[skb_get_queue_mapping(skb)];
	struct netdev_queue *nq = netdev_get_tx_queue(ndev, txq->index);
	struct device *dev = &ad->pdev->dev;
	struct offnic_desc d = { 0 };
	u16 first = txq->ring.prod;
	u32 nfrags, k, headlen;

	if (unlikely(skb->len > ad->hw.max_tx_frame || skb->len > 0xffffu * ad->hw.max_segs))
		goto drop;
	nfrags = skb_shinfo(skb)->nr_frags;
	if (nfrags + 1 > ad->hw.max_segs || skb_headlen(skb) > 0xffff) {
		if (skb_linearize(skb))
			goto drop;
		nfrags = 0;
	}
	if (unlikely(skb_headlen(skb) > 0xffff))
		goto drop;
	if (unlikely(offnic_free(txq->ring.prod, txq->clean, txq->ring.log_size) < nfrags + 1)) {
		netif_tx_stop_queue(nq);
		return NETDEV_TX_BUSY;
	}

	headlen = skb_headlen(skb);
	for (k = 0; k <= nfrags; k++) {
		struct offnic_tx_slot *s = offnic_tx_slot(txq, txq->ring.prod);
		dma_addr_t dma = 0;
		u32 len;

		if (k == 0) {
			len = headlen;
			if (len)
				dma = dma_map_single(dev, skb->data, len, DMA_TO_DEVICE);
			s->page = false;
		} else {
			const skb_frag_t *frag = &skb_shinfo(skb)->frags[k - 1];

			len = skb_frag_size(frag);
			if (len > 0xffff)
				goto unmap;
			dma = skb_frag_dma_map(dev, frag, 0, len, DMA_TO_DEVICE);
			s->page = true;
		}
		if (len && dma_mapping_error(dev, dma))
			goto unmap;
		s->dma = dma;
		s->len = len;
		s->skb = NULL;
		d.addr = dma;
		d.len = (u16)len;
		d.opcode = OFFNIC_OP_DATA;
		d.flags = k < nfrags ? OFFNIC_DESC_MORE : 0;
		d.csum_start = 0;
		d.csum_insert = 0;
		if (k == 0 && skb->ip_summed == CHECKSUM_PARTIAL) {
			u32 start = skb_checksum_start_offset(skb);

			d.flags |= OFFNIC_DESC_CSUM;
			d.csum_start = (u16)start;
			d.csum_insert = (u16)(start + skb->csum_offset);
		}
		offnic_ring_put_desc(&txq->ring, &d);
	}
	offnic_tx_slot(txq, first)->skb = skb;
	offnic_tx_slot(txq, first)->ndesc = (u16)(nfrags + 1);
	netdev_tx_sent_queue(nq, skb->len);
	skb_tx_timestamp(skb);

	if (unlikely(offnic_free(txq->ring.prod, txq->clean, txq->ring.log_size) <
		     offnic_tx_room_needed(ad))) {
		netif_tx_stop_queue(nq);
		/* pairs with offnic_tx_clean's barrier: we see its progress or it sees us stop */
		smp_mb();
		if (offnic_free(txq->ring.prod, txq->clean, txq->ring.log_size) >=
		    offnic_tx_room_needed(ad))
			netif_tx_start_queue(nq);
	}
	if (!netdev_xmit_more() || netif_xmit_stopped(nq)) {
		/* descriptors in memory before the doorbell (iowrite32 orders them) */
		offnic_queue_doorbell(&ad->hw, OFFNIC_TX, txq->n, txq->ring.prod);
	}
	return NETDEV_TX_OK;

unmap:
	while (txq->ring.prod != first) {
		txq->ring.prod = offnic_idx_add(txq->ring.prod, 0xffff);
		offnic_tx_unmap(txq, offnic_tx_slot(txq, txq->ring.prod));
	}
drop:
	offnic_tx_drop(txq, skb);
	return NETDEV_TX_OK;
}

static void offnic_txq_free(struct offnic_txq *txq)
{
	struct offnic_adapter *ad = txq->priv->ad;
	u16 i;

	/* packets the NIC never completed: unmap and free */
	for (i = txq->clean; i != txq->ring.prod; i = offnic_idx_add(i, 1)) {
		struct offnic_tx_slot *s = offnic_tx_slot(txq, i);

		offnic_tx_unmap(txq, s);
		if (s->skb)
			dev_kfree_skb_any(s->skb);
		s->skb = NULL;
	}
	offnic_ring_free(&ad->hw, &txq->ring);
	kvfree(txq->slots);
	txq->slots = NULL;
}

/*
 * Give the NIC up to 10 ms to complete what was posted (NAPI cleans it meanwhile), so
 * no DMA read of a packet is still on its way when its buffers are unmapped.
 */
static void offnic_tx_drain(struct offnic_txq *txq)
{
	int ms;

	for (ms = 0; ms < 10 && READ_ONCE(txq->clean) != txq->ring.prod; ms++)
		usleep_range(1000, 2000);
	if (READ_ONCE(txq->clean) != txq->ring.prod)
		netdev_warn(txq->priv->ndev, "TX queue %u: %u descriptors not completed at close\n",
			    txq->n, offnic_used(txq->ring.prod, READ_ONCE(txq->clean)));
}

void offnic_tx_down(struct offnic_priv *priv)
{
	struct offnic_adapter *ad = priv->ad;
	u32 i;

	for (i = 0; i < priv->n_txq; i++) {
		struct offnic_txq *txq = &priv->txq[i];

		if (!txq->slots)
			continue;
		if (txq->cq.open)
			offnic_tx_drain(txq);
		offnic_queue_close(&ad->hw, OFFNIC_TX, txq->n);
		if (offnic_queue_wait_idle(&ad->hw, OFFNIC_TX, txq->n, 1000))
			netdev_warn(priv->ndev, "TX queue %u: a descriptor fetch did not end\n",
				    txq->n);
		offnic_cq_teardown(ad, &txq->cq);
		offnic_txq_free(txq);
		netdev_tx_reset_queue(netdev_get_tx_queue(priv->ndev, i));
	}
}

int offnic_tx_up(struct offnic_priv *priv)
{
	struct offnic_adapter *ad = priv->ad;
	u32 size = 1u << priv->tx_ring_log;
	int err = -ENOMEM;
	u32 i;

	for (i = 0; i < priv->n_txq; i++) {
		struct offnic_txq *txq = &priv->txq[i];

		txq->slots = kvcalloc(size, sizeof(*txq->slots), GFP_KERNEL);
		if (!txq->slots)
			goto fail;
		if (offnic_ring_alloc(&ad->hw, &txq->ring, priv->tx_ring_log))
			goto fail;
		err = offnic_cq_setup(ad, &txq->cq, OFFNIC_TX, txq->n, priv->tx_ring_log,
				      offnic_tx_poll);
		if (err)
			goto fail;
		err = -EINVAL;
		if (offnic_queue_open(&ad->hw, OFFNIC_TX, txq->n, &txq->ring, priv->port))
			goto fail;
		txq->clean = txq->ring.prod;
	}
	err = netif_set_real_num_tx_queues(priv->ndev, priv->n_txq);
	if (err)
		goto fail;
	return 0;
fail:
	offnic_tx_down(priv);
	return err;
}
