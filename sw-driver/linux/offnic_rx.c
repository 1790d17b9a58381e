// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Receive: the RX queues every port shares (RSS and the ports' default queues choose
 * one; the completion says the arrival port and so the netdev), page buffers (one page,
 * or a higher order for jumbo wire MTUs, per descriptor), NAPI per RX completion
 * queue, CHECKSUM_COMPLETE from the completion's sum, the RSS hash; and the datagrams
 * the NIC reassembled into its 64 KiB buffers (docs/frag.md), fixed up and delivered
 * whole.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/checksum.h>

#include "offnic.h"

static u32 offnic_rx_buf_len(const struct offnic_adapter *ad)
{
	return min_t(u32, PAGE_SIZE << ad->rx_buf_order, 0xffff);
}

static int offnic_rx_alloc(struct offnic_adapter *ad, struct offnic_rx_buf *b)
{
	struct page *page;
	dma_addr_t dma;

	page = dev_alloc_pages(ad->rx_buf_order);
	if (!page)
		return -ENOMEM;
	dma = dma_map_page(&ad->pdev->dev, page, 0, PAGE_SIZE << ad->rx_buf_order,
			   DMA_FROM_DEVICE);
	if (dma_mapping_error(&ad->pdev->dev, dma)) {
		__free_pages(page, ad->rx_buf_order);
		return -ENOMEM;
	}
	b->page = page;
	b->dma = dma;
	return 0;
}

static void offnic_rx_unmap(struct offnic_adapter *ad, struct offnic_rx_buf *b)
{
	dma_unmap_page(&ad->pdev->dev, b->dma, PAGE_SIZE << ad->rx_buf_order, DMA_FROM_DEVICE);
}

/* Post a buffer in every free slot (pages kept from copied frames are reused) */
static void offnic_rx_refill(struct offnic_rxq *rxq)
{
	struct offnic_adapter *ad = rxq->ad;
	struct offnic_desc d = { .len = (u16)offnic_rx_buf_len(ad), .opcode = OFFNIC_OP_BUFFER };
	u16 start = rxq->ring.prod;

	while (offnic_free(rxq->ring.prod, rxq->clean, rxq->ring.log_size)) {
		u32 slot = offnic_slot(rxq->ring.prod, rxq->ring.log_size);
		struct offnic_rx_buf *b = &rxq->bufs[slot];

		if (!b->page && offnic_rx_alloc(ad, b)) {
			rxq->alloc_failed++;
			break;
		}
		d.addr = b->dma;
		offnic_ring_put_desc(&rxq->ring, &d);
	}
	if (rxq->ring.prod != start)
		offnic_queue_doorbell(&ad->hw, OFFNIC_RX, rxq->n, rxq->ring.prod);
}

/* CHECKSUM_COMPLETE from the NIC's sum of big-endian words (folded, not complemented) */
static __wsum offnic_csum(u16 sum)
{
	return (__force __wsum)(__force u32)htons(sum);
}

static struct sk_buff *offnic_rx_build(struct offnic_rxq *rxq, struct net_device *ndev,
				       struct offnic_rx_buf *b, u32 len)
{
	struct offnic_adapter *ad = rxq->ad;
	struct sk_buff *skb;
	void *va = page_address(b->page);
	u32 hlen;

	dma_sync_single_for_cpu(&ad->pdev->dev, b->dma, len, DMA_FROM_DEVICE);
	skb = napi_alloc_skb(&rxq->cq.napi, OFFNIC_RX_COPYBREAK);
	if (!skb)
		return NULL;
	if (len <= OFFNIC_RX_COPYBREAK) {
		/* copied: the page stays mapped and goes back to the NIC */
		skb_put_data(skb, va, len);
		dma_sync_single_for_device(&ad->pdev->dev, b->dma, len, DMA_FROM_DEVICE);
		return skb;
	}
	hlen = eth_get_headlen(ndev, va, OFFNIC_RX_COPYBREAK);
	skb_put_data(skb, va, hlen);
	offnic_rx_unmap(ad, b);
	skb_add_rx_frag(skb, 0, b->page, hlen, len - hlen, PAGE_SIZE << ad->rx_buf_order);
	b->page = NULL;
	return skb;
}

static void offnic_rx_count(struct offnic_rxq *rxq, u32 port, u32 bytes, int error, int drop,
			    int reassembled)
{
	struct offnic_rx_port_stats *st = &rxq->port[port];

	u64_stats_update_begin(&rxq->syncp);
	if (error) {
		st->errors++;
	} else if (drop) {
		st->dropped++;
	} else {
		st->packets++;
		st->bytes += bytes;
		st->reassembled += reassembled;
	}
	u64_stats_update_end(&rxq->syncp);
}

static void offnic_rx_deliver(struct offnic_rxq *rxq, struct net_device *ndev,
			      struct sk_buff *skb, const struct offnic_cpl *cpl)
{
	skb_record_rx_queue(skb, rxq->n);
	if ((ndev->features & NETIF_F_RXHASH) && (cpl->flags & OFFNIC_CPL_RSS_VALID))
		skb_set_hash(skb, cpl->rss_hash, (cpl->rss_type & 0xc) ? PKT_HASH_TYPE_L4 :
			     PKT_HASH_TYPE_L3);
	skb->protocol = eth_type_trans(skb, ndev);
	napi_gro_receive(&rxq->cq.napi, skb);
}

/* A datagram the NIC reassembled into buffer cpl->index: copy, fix up, repost */
static void offnic_rx_reasm(struct offnic_rxq *rxq, struct net_device *ndev,
			    const struct offnic_cpl *cpl)
{
	struct offnic_adapter *ad = rxq->ad;
	u32 start = cpl->byte15_hi >> 1, len = cpl->len, port = cpl->flags & OFFNIC_CPL_PORT;
	struct sk_buff *skb;
	unsigned long flags;
	int h;

	if (cpl->index >= ad->n_reasm || start + len > OFFNIC_REASM_BUFFER_BYTES) {
		netdev_err(ndev, "reassembled completion for buffer %u (%u bytes at %u)\n",
			   cpl->index, len, start);
		offnic_rx_count(rxq, port, 0, 1, 0, 0);
		return;
	}
	skb = (ndev->flags & IFF_UP) ? napi_alloc_skb(&rxq->cq.napi, len) : NULL;
	if (skb)
		skb_put_data(skb, (u8 *)ad->reasm_cpu[cpl->index] + start, len);
	spin_lock_irqsave(&ad->reasm_lock, flags);
	offnic_reasm_post(&ad->hw, cpl->index, ad->reasm_dma[cpl->index]);
	spin_unlock_irqrestore(&ad->reasm_lock, flags);
	if (!skb) {
		offnic_rx_count(rxq, port, 0, 0, 1, 0);
		return;
	}
	h = offnic_reasm_fixup(skb->data, len, (cpl->rss_type >> 4) & 3, cpl->rss_type & 0x40);
	if (h < 0) {
		dev_kfree_skb_any(skb);
		offnic_rx_count(rxq, port, 0, 1, 0, 0);
		return;
	}
	if (ndev->features & NETIF_F_RXCSUM) {
		/* the NIC summed the IP payload; add the bytes from the Ethernet header's end */
		u32 ihl = (skb->data[h] & 15) * 4;

		skb->csum = csum_add(offnic_csum(cpl->csum),
				     csum_partial(skb->data + ETH_HLEN, h + ihl - ETH_HLEN, 0));
		skb->ip_summed = CHECKSUM_COMPLETE;
	}
	offnic_rx_count(rxq, port, len, 0, 0, 1);
	offnic_rx_deliver(rxq, ndev, skb, cpl);
}

static int offnic_rx_poll(struct napi_struct *napi, int budget)
{
	struct offnic_cq *cq = container_of(napi, struct offnic_cq, napi);
	struct offnic_rxq *rxq = container_of(cq, struct offnic_rxq, cq);
	struct offnic_adapter *ad = rxq->ad;
	struct offnic_cpl cpl;
	int done = 0;

	while (done < budget && offnic_cq_next(&cq->ring, &cpl)) {
		u32 port = cpl.flags & OFFNIC_CPL_PORT;
		struct net_device *ndev = port < ad->hw.n_ports ? ad->ndev[port] : NULL;
		struct offnic_rx_buf *b;
		struct sk_buff *skb;

		cq->ring.cons = offnic_idx_add(cq->ring.cons, 1);
		done++;
		if (!ndev)
			continue;
		if (cpl.flags & OFFNIC_CPL_REASSEMBLED) {
			offnic_rx_reasm(rxq, ndev, &cpl);
			continue;
		}
		if (unlikely(cpl.index != rxq->clean)) {
			netdev_err(ndev, "RX queue %u: completion for index %u, expected %u\n",
				   rxq->n, cpl.index, rxq->clean);
			continue;
		}
		b = &rxq->bufs[offnic_slot(rxq->clean, rxq->ring.log_size)];
		rxq->clean = offnic_idx_add(rxq->clean, 1);
		if (cpl.status != OFFNIC_ST_OK || cpl.len > offnic_rx_buf_len(ad)) {
			offnic_rx_count(rxq, port, 0, 1, 0, 0);
			continue;
		}
		if (!(ndev->flags & IFF_UP)) {
			offnic_rx_count(rxq, port, 0, 0, 1, 0);
			continue;
		}
		skb = offnic_rx_build(rxq, ndev, b, cpl.len);
		if (!skb) {
			offnic_rx_count(rxq, port, 0, 0, 1, 0);
			continue;
		}
		if ((ndev->features & NETIF_F_RXCSUM) && (cpl.flags & OFFNIC_CPL_CSUM_VALID)) {
			skb->csum = offnic_csum(cpl.csum);
			skb->ip_summed = CHECKSUM_COMPLETE;
		}
		offnic_rx_count(rxq, port, cpl.len, 0, 0, 0);
		offnic_rx_deliver(rxq, ndev, skb, &cpl);
	}
	if (done) {
		offnic_cq_done(&ad->hw, OFFNIC_RX, cq->n, cq->ring.cons, 0);
		offnic_rx_refill(rxq);
	}
	if (done < budget && napi_complete_done(napi, done))
		offnic_cq_done(&ad->hw, OFFNIC_RX, cq->n, cq->ring.cons, 1);
	return done;
}

static void offnic_rxq_free(struct offnic_rxq *rxq)
{
	struct offnic_adapter *ad = rxq->ad;
	u32 i;

	for (i = 0; rxq->bufs && i < (1u << rxq->ring.log_size); i++) {
		struct offnic_rx_buf *b = &rxq->bufs[i];

		if (!b->page)
			continue;
		offnic_rx_unmap(ad, b);
		__free_pages(b->page, ad->rx_buf_order);
		b->page = NULL;
	}
	kvfree(rxq->bufs);
	rxq->bufs = NULL;
	offnic_ring_free(&ad->hw, &rxq->ring);
}

void offnic_rx_down(struct offnic_adapter *ad)
{
	u32 i;

	if (!ad->rx_up)
		return;
	ad->rx_up = false;
	if (ad->hw.reasm)
		offnic_reasm_enable(&ad->hw, 0);
	for (i = 0; i < ad->n_rxq; i++) {
		struct offnic_rxq *rxq = &ad->rxq[i];

		offnic_queue_close(&ad->hw, OFFNIC_RX, rxq->n);
		if (offnic_queue_wait_idle(&ad->hw, OFFNIC_RX, rxq->n, 1000))
			dev_warn(&ad->pdev->dev, "RX queue %u: a descriptor fetch did not end\n",
				 rxq->n);
	}
	/* frames already on their way to a buffer: the DMA engine's writes take microseconds */
	usleep_range(1000, 2000);
	for (i = 0; i < ad->n_rxq; i++) {
		offnic_cq_teardown(ad, &ad->rxq[i].cq);
		offnic_rxq_free(&ad->rxq[i]);
	}
}

/* The RX queues, their completion queues and buffers; RSS over them; reassembly on */
int offnic_rx_up(struct offnic_adapter *ad)
{
	struct offnic_hw *hw = &ad->hw;
	u32 size = 1u << ad->rx_ring_log;
	u32 frame = ad->wire_mtu + ETH_HLEN + VLAN_HLEN;
	int err = -ENOMEM;
	u32 i, p;

	ad->rx_buf_order = frame > PAGE_SIZE ? get_order(frame) : 0;
	ad->rx_up = true;
	for (i = 0; i < ad->n_rxq; i++) {
		struct offnic_rxq *rxq = &ad->rxq[i];

		rxq->bufs = kvcalloc(size, sizeof(*rxq->bufs), GFP_KERNEL);
		if (!rxq->bufs)
			goto fail;
		if (offnic_ring_alloc(hw, &rxq->ring, ad->rx_ring_log))
			goto fail;
		err = offnic_cq_setup(ad, &rxq->cq, OFFNIC_RX, i, ad->rx_ring_log, offnic_rx_poll);
		if (err)
			goto fail;
		err = -EINVAL;
		if (offnic_queue_open(hw, OFFNIC_RX, i, &rxq->ring, 0))
			goto fail;
		rxq->clean = rxq->ring.prod;
		offnic_rx_refill(rxq);
		err = -ENOMEM;
	}
	for (p = 0; p < hw->n_ports; p++)
		offnic_set_default_queue(hw, p, p % ad->n_rxq);
	if (hw->rss) {
		offnic_rss_set_key(hw, ad->rss_key);
		offnic_rss_set_table(hw, ad->rss_table, hw->rss_table_size);
	}
	if (ad->n_reasm) {
		/* the NIC's pool keeps its buffers while reassembly is off: post them once */
		for (i = 0; !ad->reasm_posted && i < ad->n_reasm; i++)
			offnic_reasm_post(hw, i, ad->reasm_dma[i]);
		ad->reasm_posted = true;
		offnic_reasm_enable(hw, 1);
	}
	return 0;
fail:
	offnic_rx_down(ad);
	return err;
}

void offnic_reasm_teardown(struct offnic_adapter *ad)
{
	u32 i;

	for (i = 0; i < ad->n_reasm; i++)
		if (ad->reasm_cpu[i])
			dma_free_coherent(&ad->pdev->dev, OFFNIC_REASM_BUFFER_BYTES,
					  ad->reasm_cpu[i], ad->reasm_dma[i]);
	kfree(ad->reasm_cpu);
	kfree(ad->reasm_dma);
	ad->reasm_cpu = NULL;
	ad->reasm_dma = NULL;
	ad->n_reasm = 0;
}

/* n reassembly buffers of OFFNIC_REASM_BUFFER_BYTES, posted when the RX side comes up */
int offnic_reasm_setup(struct offnic_adapter *ad, u32 n)
{
	u32 i;

	ad->reasm_cpu = kcalloc(n, sizeof(*ad->reasm_cpu), GFP_KERNEL);
	ad->reasm_dma = kcalloc(n, sizeof(*ad->reasm_dma), GFP_KERNEL);
	if (!ad->reasm_cpu || !ad->reasm_dma)
		goto fail;
	ad->n_reasm = n;
	for (i = 0; i < n; i++) {
		ad->reasm_cpu[i] = dma_alloc_coherent(&ad->pdev->dev, OFFNIC_REASM_BUFFER_BYTES,
						      &ad->reasm_dma[i], GFP_KERNEL);
		if (!ad->reasm_cpu[i])
			goto fail;
	}
	return 0;
fail:
	offnic_reasm_teardown(ad);
	return -ENOMEM;
}
