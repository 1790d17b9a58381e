// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * PCI probe and remove: BAR0, the driver core's OS layer, register-block discovery,
 * MSI-X vectors with one event queue each, and the completion queues' NAPI contexts
 * that the event queues wake. Then one netdev per port (offnic_netdev.c).
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/ethtool.h>
#include <linux/if_vlan.h>
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "offnic.h"

/* Until a board's vendor id is assigned: Xilinx's, with the device id of the build */
#define OFFNIC_PCI_VENDOR 0x10ee
#define OFFNIC_PCI_DEVICE 0x0f10

static unsigned int reasm_buffers = 16;
module_param(reasm_buffers, uint, 0444);
MODULE_PARM_DESC(reasm_buffers, "IPv4 reassembly buffers of 64 KiB given to the NIC (0: off)");

static unsigned int wire_mtu = 1500;
module_param(wire_mtu, uint, 0444);
MODULE_PARM_DESC(wire_mtu, "The ports' link MTU; a larger netdev MTU uses the fragmentation offload");

/* ------------------------------------------------------------------ the OS layer */

static u32 offnic_os_read32(void *ctx, u32 offset)
{
	struct offnic_adapter *ad = ctx;

	return ioread32(ad->bar + offset);
}

static void offnic_os_write32(void *ctx, u32 offset, u32 value)
{
	struct offnic_adapter *ad = ctx;

	iowrite32(value, ad->bar + offset);
}

static void *offnic_os_dma_alloc(void *ctx, size_t bytes, u64 *dma)
{
	struct offnic_adapter *ad = ctx;
	dma_addr_t addr;
	void *cpu;

	/* dma_alloc_coherent memory is zeroed and page aligned: rings need 4 KiB */
	cpu = dma_alloc_coherent(&ad->pdev->dev, max_t(size_t, bytes, PAGE_SIZE), &addr,
				 GFP_KERNEL);
	*dma = addr;
	return cpu;
}

static void offnic_os_dma_free(void *ctx, size_t bytes, void *cpu, u64 dma)
{
	struct offnic_adapter *ad = ctx;

	dma_free_coherent(&ad->pdev->dev, max_t(size_t, bytes, PAGE_SIZE), cpu, dma);
}

static void offnic_os_delay_us(void *ctx, unsigned int us)
{
	usleep_range(us, us + 10);
}

static void offnic_os_vlog(void *ctx, int level, const char *fmt, va_list args)
{
	struct offnic_adapter *ad = ctx;
	struct va_format vaf;
	va_list copy;

	va_copy(copy, args);
	vaf.fmt = fmt;
	vaf.va = &copy;
	if (level <= OFFNIC_LOG_ERR)
		dev_err(&ad->pdev->dev, "%pV", &vaf);
	else if (level <= OFFNIC_LOG_WARN)
		dev_warn(&ad->pdev->dev, "%pV", &vaf);
	else if (level <= OFFNIC_LOG_INFO)
		dev_info(&ad->pdev->dev, "%pV", &vaf);
	else
		dev_dbg(&ad->pdev->dev, "%pV", &vaf);
	va_end(copy);
}

static const struct offnic_os_ops offnic_linux_ops = {
	.read32 = offnic_os_read32,
	.write32 = offnic_os_write32,
	.dma_alloc = offnic_os_dma_alloc,
	.dma_free = offnic_os_dma_free,
	.delay_us = offnic_os_delay_us,
	.vlog = offnic_os_vlog,
};

/* ------------------------------------------------------------------ completion queues */

/*
 * Allocate and open completion queue n of a kind, reporting to event queue n mod
 * vectors, with its NAPI context on the adapter's NAPI device; armed and enabled.
 */
int offnic_cq_setup(struct offnic_adapter *ad, struct offnic_cq *cq, int kind, u32 n,
		    unsigned int log_size, int (*poll)(struct napi_struct *, int))
{
	int err;

	cq->ad = ad;
	cq->kind = kind;
	cq->n = n;
	cq->eq = n % ad->n_eqs;
	err = offnic_ring_alloc(&ad->hw, &cq->ring, log_size);
	if (err)
		return -ENOMEM;
	err = offnic_cq_open(&ad->hw, kind, n, &cq->ring, cq->eq, ad->mod_count[kind],
			     ad->mod_usecs[kind]);
	if (err) {
		offnic_ring_free(&ad->hw, &cq->ring);
		return -EINVAL;
	}
	if (kind == OFFNIC_TX)
		netif_napi_add_tx(&ad->napi_dev, &cq->napi, poll);
	else
		netif_napi_add(&ad->napi_dev, &cq->napi, poll);
	napi_enable(&cq->napi);
	WRITE_ONCE(ad->cq_of[kind][n], cq);
	cq->open = true;
	offnic_cq_done(&ad->hw, kind, n, cq->ring.cons, 1);
	return 0;
}

void offnic_cq_teardown(struct offnic_adapter *ad, struct offnic_cq *cq)
{
	if (!cq->open)
		return;
	offnic_cq_close(&ad->hw, cq->kind, cq->n);
	WRITE_ONCE(ad->cq_of[cq->kind][cq->n], NULL);
	synchronize_irq(ad->eqs[cq->eq].irq);
	napi_disable(&cq->napi);
	netif_napi_del(&cq->napi);
	offnic_ring_free(&ad->hw, &cq->ring);
	cq->open = false;
}

/* ------------------------------------------------------------------ event queues */

/* Vector k: every new event names a completion queue whose NAPI context runs it */
static irqreturn_t offnic_eq_irq(int irq, void *data)
{
	struct offnic_eq *eq = data;
	struct offnic_adapter *ad = eq->ad;
	struct offnic_event ev;
	unsigned int n = 0;

	while (offnic_eq_next(&eq->ring, &ev)) {
		struct offnic_cq *cq = NULL;

		eq->ring.cons = offnic_idx_add(eq->ring.cons, 1);
		n++;
		if (ev.type <= OFFNIC_EV_RX_CQ && ev.source < OFFNIC_MAX_QUEUES)
			cq = READ_ONCE(ad->cq_of[ev.type][ev.source]);
		if (cq)
			napi_schedule(&cq->napi);
	}
	offnic_eq_done(&ad->hw, eq->n, eq->ring.cons, 1);
	return n ? IRQ_HANDLED : IRQ_NONE;
}

static void offnic_eqs_teardown(struct offnic_adapter *ad)
{
	u32 k;

	for (k = 0; k < ad->n_eqs; k++) {
		struct offnic_eq *eq = &ad->eqs[k];

		offnic_eq_close(&ad->hw, k);
		if (eq->irq > 0)
			free_irq(eq->irq, eq);
		offnic_ring_free(&ad->hw, &eq->ring);
	}
	kfree(ad->eqs);
	ad->eqs = NULL;
	pci_free_irq_vectors(ad->pdev);
}

/* One event queue per MSI-X vector, each with room for an event from every CQ */
static int offnic_eqs_setup(struct offnic_adapter *ad)
{
	struct offnic_hw *hw = &ad->hw;
	u32 want = min3(hw->n_eqs, hw->n_msix, (u32)num_online_cpus());
	u32 cqs = hw->n_cqs[OFFNIC_TX] + hw->n_cqs[OFFNIC_RX];
	unsigned int log_size = max_t(unsigned int, OFFNIC_MIN_LOG_SIZE, order_base_2(cqs));
	int nvec, err;
	u32 k;

	nvec = pci_alloc_irq_vectors(ad->pdev, 1, max_t(u32, want, 1), PCI_IRQ_MSIX);
	if (nvec < 0)
		return nvec;
	ad->n_eqs = nvec;
	ad->eqs = kcalloc(nvec, sizeof(*ad->eqs), GFP_KERNEL);
	if (!ad->eqs) {
		pci_free_irq_vectors(ad->pdev);
		return -ENOMEM;
	}
	for (k = 0; k < ad->n_eqs; k++) {
		struct offnic_eq *eq = &ad->eqs[k];

		eq->ad = ad;
		eq->n = k;
		err = offnic_ring_alloc(hw, &eq->ring, log_size);
		if (err) {
			err = -ENOMEM;
			goto fail;
		}
		if (offnic_eq_open(hw, k, &eq->ring)) {
			err = -EINVAL;
			goto fail;
		}
		snprintf(eq->name, sizeof(eq->name), "%s-eq%u", pci_name(ad->pdev), k);
		eq->irq = pci_irq_vector(ad->pdev, k);
		err = request_irq(eq->irq, offnic_eq_irq, 0, eq->name, eq);
		if (err) {
			eq->irq = 0;
			goto fail;
		}
		offnic_eq_done(hw, k, eq->ring.cons, 1);
	}
	return 0;
fail:
	offnic_eqs_teardown(ad);
	return err;
}

/* ------------------------------------------------------------------ counters */

void offnic_update_counters(struct offnic_adapter *ad)
{
	mutex_lock(&ad->stats_lock);
	offnic_counters_update(&ad->hw, ad->ctr_last, ad->ctr_total);
	mutex_unlock(&ad->stats_lock);
}

/* The NIC's 32-bit counters wrap: read them often enough to see every wrap */
static void offnic_stats_work(struct work_struct *work)
{
	struct offnic_adapter *ad = container_of(to_delayed_work(work), struct offnic_adapter,
						 stats_work);

	offnic_update_counters(ad);
	schedule_delayed_work(&ad->stats_work, OFFNIC_STATS_PERIOD);
}

/* ------------------------------------------------------------------ probe, remove */

static void offnic_teardown(struct offnic_adapter *ad)
{
	u32 p;

	offnic_cdev_destroy(ad);
	offnic_devlink_destroy(ad);
	if (ad->health_on)
		offnic_health_stop(ad);
	for (p = 0; p < OFFNIC_MAX_PORTS; p++)
		if (ad->ndev[p])
			offnic_netdev_destroy(ad, p);
	cancel_delayed_work_sync(&ad->stats_work);
	offnic_reasm_teardown(ad);
	if (ad->eqs)
		offnic_eqs_teardown(ad);
	kfree(ad->ctr_last);
	kfree(ad->ctr_total);
}

static int offnic_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct offnic_adapter *ad;
	struct offnic_hw *hw;
	unsigned int nvals;
	int err;
	u32 p;

	ad = devm_kzalloc(&pdev->dev, sizeof(*ad), GFP_KERNEL);
	if (!ad)
		return -ENOMEM;
	ad->pdev = pdev;
	hw = &ad->hw;
	pci_set_drvdata(pdev, ad);
	mutex_init(&ad->stats_lock);
	spin_lock_init(&ad->reasm_lock);
	INIT_DELAYED_WORK(&ad->stats_work, offnic_stats_work);
	init_dummy_netdev(&ad->napi_dev);

	err = pcim_enable_device(pdev);
	if (err)
		return err;
	err = pcim_iomap_regions(pdev, BIT(0), OFFNIC_DRV_NAME);
	if (err)
		return err;
	ad->bar = pcim_iomap_table(pdev)[0];
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err)
		return err;
	pci_set_master(pdev);

	if (offnic_hw_probe(hw, &offnic_linux_ops, ad,
			    (u32)min_t(resource_size_t, pci_resource_len(pdev, 0), U32_MAX)))
		return -ENODEV;
	if (hw->n_queues[OFFNIC_TX] > OFFNIC_MAX_QUEUES ||
	    hw->n_queues[OFFNIC_RX] > OFFNIC_MAX_QUEUES ||
	    hw->rss_table_size > ARRAY_SIZE(ad->rss_table) ||
	    hw->n_queues[OFFNIC_TX] < hw->n_ports) {
		dev_err(&pdev->dev, "a build this driver does not support\n");
		return -ENODEV;
	}
	ad->n_rxq = hw->n_queues[OFFNIC_RX];
	ad->rxq = devm_kcalloc(&pdev->dev, ad->n_rxq, sizeof(*ad->rxq), GFP_KERNEL);
	if (!ad->rxq)
		return -ENOMEM;
	for (p = 0; p < ad->n_rxq; p++) {
		ad->rxq[p].ad = ad;
		ad->rxq[p].n = p;
		u64_stats_init(&ad->rxq[p].syncp);
	}
	ad->rx_ring_log = OFFNIC_DEFAULT_RING_LOG;
	ad->wire_mtu = clamp_t(u32, wire_mtu, ETH_MIN_MTU, 9000);
	netdev_rss_key_fill(ad->rss_key, sizeof(ad->rss_key));
	for (p = 0; p < hw->rss_table_size; p++)
		ad->rss_table[p] = ethtool_rxfh_indir_default(p, ad->n_rxq);
	ad->mod_count[OFFNIC_TX] = 16;
	ad->mod_usecs[OFFNIC_TX] = 20;
	ad->mod_count[OFFNIC_RX] = 8;
	ad->mod_usecs[OFFNIC_RX] = 5;

	nvals = offnic_counters_n_values(hw);
	ad->ctr_last = kcalloc(nvals, sizeof(*ad->ctr_last), GFP_KERNEL);
	ad->ctr_total = kcalloc(nvals, sizeof(*ad->ctr_total), GFP_KERNEL);
	if (!ad->ctr_last || !ad->ctr_total) {
		err = -ENOMEM;
		goto fail;
	}
	offnic_update_counters(ad);

	err = offnic_eqs_setup(ad);
	if (err)
		goto fail;
	if (hw->reasm && reasm_buffers) {
		err = offnic_reasm_setup(ad, min_t(u32, reasm_buffers, 256));
		if (err)
			goto fail;
	}
	for (p = 0; p < hw->n_ports; p++) {
		offnic_set_wire_mtu(hw, p, ad->wire_mtu);
		/* a wire frame: MTU, Ethernet header, one VLAN tag, FCS */
		offnic_port_set_max_frame(hw, p, ad->wire_mtu + ETH_HLEN + VLAN_HLEN + ETH_FCS_LEN);
		err = offnic_netdev_create(ad, p);
		if (err)
			goto fail;
	}
	schedule_delayed_work(&ad->stats_work, OFFNIC_STATS_PERIOD);
	offnic_health_start(ad);
	ad->health_on = true;
	err = offnic_cdev_create(ad);
	if (!err)
		err = offnic_devlink_create(ad);
	if (err)
		goto fail;
	return 0;
fail:
	offnic_teardown(ad);
	return err;
}

static void offnic_remove(struct pci_dev *pdev)
{
	offnic_teardown(pci_get_drvdata(pdev));
}

static const struct pci_device_id offnic_pci_ids[] = {
	{ PCI_DEVICE(OFFNIC_PCI_VENDOR, OFFNIC_PCI_DEVICE) },
	{ }
};
MODULE_DEVICE_TABLE(pci, offnic_pci_ids);

static struct pci_driver offnic_pci_driver = {
	.name = OFFNIC_DRV_NAME,
	.id_table = offnic_pci_ids,
	.probe = offnic_probe,
	.remove = offnic_remove,
};
module_pci_driver(offnic_pci_driver);

MODULE_DESCRIPTION("offnic open FPGA NIC");
MODULE_LICENSE("Dual MIT/GPL");
