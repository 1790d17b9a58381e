// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ethtool: driver info, link (speed from the port's register), the NIC's counters
 * (-S: this port's MAC counters, then the device-wide ones), ring sizes (-g/-G),
 * interrupt moderation (-c/-C: count and time, per direction, every queue alike) and
 * RSS (-x/-X: key and indirection table, one for the device: the NIC has one).
 */
#include <linux/ethtool.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/rtnetlink.h>

#include "offnic.h"

static void offnic_get_drvinfo(struct net_device *ndev, struct ethtool_drvinfo *info)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	struct offnic_fw_info fw;

	strscpy(info->driver, OFFNIC_DRV_NAME, sizeof(info->driver));
	strscpy(info->bus_info, pci_name(priv->ad->pdev), sizeof(info->bus_info));
	if (!offnic_fw_get(&priv->ad->hw, &fw))
		snprintf(info->fw_version, sizeof(info->fw_version), "%u.%u.%u %s",
			 fw.version >> 16, (fw.version >> 8) & 0xff, fw.version & 0xff,
			 offnic_fw_state_name(fw.state));
}

static int offnic_get_link_ksettings(struct net_device *ndev, struct ethtool_link_ksettings *ks)
{
	struct offnic_priv *priv = offnic_priv(ndev);

	ethtool_link_ksettings_zero_link_mode(ks, supported);
	ethtool_link_ksettings_zero_link_mode(ks, advertising);
	ks->base.speed = netif_carrier_ok(ndev) ?
			 offnic_port_speed_mbps(&priv->ad->hw, priv->port) : SPEED_UNKNOWN;
	ks->base.duplex = netif_carrier_ok(ndev) ? DUPLEX_FULL : DUPLEX_UNKNOWN;
	ks->base.port = PORT_FIBRE;
	ks->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

/*
 * -S: the NIC's counters (this port's per-port values, then the device-wide ones), then
 * the driver's: queues restarted after a failed descriptor fetch, and this port's frames
 * per RX queue (RSS spreading shows there).
 */
#define OFFNIC_DRV_STATS 2
#define OFFNIC_RXQ_STATS 2

static bool offnic_stat_shown(struct offnic_priv *priv, unsigned int i)
{
	const struct offnic_hw *hw = &priv->ad->hw;
	u32 port;

	if (!offnic_counter_value_name(hw, i, &port))
		return false;
	return i >= hw->n_ports * offnic_counters_n_port_defs() || port == priv->port;
}

static int offnic_get_sset_count(struct net_device *ndev, int sset)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	unsigned int i, n = 0;

	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	for (i = 0; i < offnic_counters_n_values(&priv->ad->hw); i++)
		n += offnic_stat_shown(priv, i);
	return n + OFFNIC_DRV_STATS + OFFNIC_RXQ_STATS * priv->ad->n_rxq;
}

static void offnic_get_strings(struct net_device *ndev, u32 sset, u8 *data)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	unsigned int i;
	u32 port;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < offnic_counters_n_values(&priv->ad->hw); i++)
		if (offnic_stat_shown(priv, i))
			ethtool_sprintf(&data, "%s",
					offnic_counter_value_name(&priv->ad->hw, i, &port));
	ethtool_sprintf(&data, "tx_queue_restarts");
	ethtool_sprintf(&data, "rx_queue_restarts");
	for (i = 0; i < priv->ad->n_rxq; i++) {
		ethtool_sprintf(&data, "rxq%u_packets", i);
		ethtool_sprintf(&data, "rxq%u_bytes", i);
	}
}

static void offnic_get_ethtool_stats(struct net_device *ndev, struct ethtool_stats *stats,
				     u64 *data)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	struct offnic_adapter *ad = priv->ad;
	unsigned int i, k = 0;

	offnic_update_counters(ad);
	mutex_lock(&ad->stats_lock);
	for (i = 0; i < offnic_counters_n_values(&ad->hw); i++)
		if (offnic_stat_shown(priv, i))
			data[k++] = ad->ctr_total[i];
	mutex_unlock(&ad->stats_lock);
	data[k++] = ad->queue_restarts[OFFNIC_TX];
	data[k++] = ad->queue_restarts[OFFNIC_RX];
	for (i = 0; i < ad->n_rxq; i++) {
		struct offnic_rxq *rxq = &ad->rxq[i];
		unsigned int start;
		u64 packets, bytes;

		do {
			start = u64_stats_fetch_begin(&rxq->syncp);
			packets = rxq->port[priv->port].packets;
			bytes = rxq->port[priv->port].bytes;
		} while (u64_stats_fetch_retry(&rxq->syncp, start));
		data[k++] = packets;
		data[k++] = bytes;
	}
}

static void offnic_get_ringparam(struct net_device *ndev, struct ethtool_ringparam *ring,
				 struct kernel_ethtool_ringparam *kring,
				 struct netlink_ext_ack *extack)
{
	struct offnic_priv *priv = offnic_priv(ndev);

	ring->rx_max_pending = 1u << OFFNIC_MAX_RING_LOG;
	ring->tx_max_pending = 1u << OFFNIC_MAX_RING_LOG;
	ring->rx_pending = 1u << priv->ad->rx_ring_log;
	ring->tx_pending = 1u << priv->tx_ring_log;
}

/* Sizes are powers of two: a request is rounded up; the RX side is the device's */
static int offnic_set_ringparam(struct net_device *ndev, struct ethtool_ringparam *ring,
				struct kernel_ethtool_ringparam *kring,
				struct netlink_ext_ack *extack)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	struct offnic_adapter *ad = priv->ad;
	unsigned int tx_log, rx_log;
	int err = 0;

	if (ring->rx_mini_pending || ring->rx_jumbo_pending)
		return -EINVAL;
	tx_log = clamp_t(unsigned int, order_base_2(ring->tx_pending), OFFNIC_MIN_RING_LOG,
			 OFFNIC_MAX_RING_LOG);
	rx_log = clamp_t(unsigned int, order_base_2(ring->rx_pending), OFFNIC_MIN_RING_LOG,
			 OFFNIC_MAX_RING_LOG);
	if (tx_log != priv->tx_ring_log) {
		if (priv->up) {
			netif_tx_disable(ndev);
			offnic_tx_down(priv);
			priv->tx_ring_log = tx_log;
			err = offnic_tx_up(priv);
			if (!err)
				netif_tx_start_all_queues(ndev);
		} else {
			priv->tx_ring_log = tx_log;
		}
	}
	if (!err && rx_log != ad->rx_ring_log) {
		ad->rx_ring_log = rx_log;
		if (ad->rx_users) {
			offnic_rx_down(ad);
			err = offnic_rx_up(ad);
		}
	}
	if (err)
		netdev_err(ndev, "could not reopen the queues with the new ring sizes: %d\n", err);
	return err;
}

static int offnic_get_coalesce(struct net_device *ndev, struct ethtool_coalesce *ec,
			       struct kernel_ethtool_coalesce *kec, struct netlink_ext_ack *extack)
{
	struct offnic_adapter *ad = offnic_priv(ndev)->ad;

	ec->rx_max_coalesced_frames = ad->mod_count[OFFNIC_RX];
	ec->rx_coalesce_usecs = ad->mod_usecs[OFFNIC_RX];
	ec->tx_max_coalesced_frames = ad->mod_count[OFFNIC_TX];
	ec->tx_coalesce_usecs = ad->mod_usecs[OFFNIC_TX];
	return 0;
}

/* Moderation of every completion queue of a direction, open ones at once */
static int offnic_set_coalesce(struct net_device *ndev, struct ethtool_coalesce *ec,
			       struct kernel_ethtool_coalesce *kec, struct netlink_ext_ack *extack)
{
	struct offnic_adapter *ad = offnic_priv(ndev)->ad;
	int kind;
	u32 q;

	if (ec->rx_max_coalesced_frames > 0xffff || ec->rx_coalesce_usecs > 0xffff ||
	    ec->tx_max_coalesced_frames > 0xffff || ec->tx_coalesce_usecs > 0xffff)
		return -ERANGE;
	ad->mod_count[OFFNIC_RX] = ec->rx_max_coalesced_frames;
	ad->mod_usecs[OFFNIC_RX] = ec->rx_coalesce_usecs;
	ad->mod_count[OFFNIC_TX] = ec->tx_max_coalesced_frames;
	ad->mod_usecs[OFFNIC_TX] = ec->tx_coalesce_usecs;
	for (kind = OFFNIC_TX; kind <= OFFNIC_RX; kind++)
		for (q = 0; q < ad->hw.n_cqs[kind] && q < OFFNIC_MAX_QUEUES; q++)
			if (ad->cq_of[kind][q])
				offnic_set_moderation(&ad->hw, kind, q, ad->mod_count[kind],
						      ad->mod_usecs[kind]);
	return 0;
}

static int offnic_get_rxnfc(struct net_device *ndev, struct ethtool_rxnfc *cmd, u32 *rules)
{
	if (cmd->cmd != ETHTOOL_GRXRINGS)
		return -EOPNOTSUPP;
	cmd->data = offnic_priv(ndev)->ad->n_rxq;
	return 0;
}

static u32 offnic_get_rxfh_key_size(struct net_device *ndev)
{
	return offnic_priv(ndev)->ad->hw.rss ? OFFNIC_RSS_KEY_BYTES : 0;
}

static u32 offnic_get_rxfh_indir_size(struct net_device *ndev)
{
	return offnic_priv(ndev)->ad->hw.rss_table_size;
}

static int offnic_get_rxfh(struct net_device *ndev, u32 *indir, u8 *key, u8 *hfunc)
{
	struct offnic_adapter *ad = offnic_priv(ndev)->ad;

	if (hfunc)
		*hfunc = ETH_RSS_HASH_TOP;
	if (indir)
		memcpy(indir, ad->rss_table, ad->hw.rss_table_size * sizeof(*indir));
	if (key)
		offnic_rss_get_key(&ad->hw, key);
	return 0;
}

static int offnic_set_rxfh(struct net_device *ndev, const u32 *indir, const u8 *key,
			   const u8 hfunc)
{
	struct offnic_adapter *ad = offnic_priv(ndev)->ad;
	u32 i;

	if (!ad->hw.rss)
		return -EOPNOTSUPP;
	if (hfunc != ETH_RSS_HASH_NO_CHANGE && hfunc != ETH_RSS_HASH_TOP)
		return -EOPNOTSUPP;
	if (indir) {
		for (i = 0; i < ad->hw.rss_table_size; i++)
			if (indir[i] >= ad->n_rxq)
				return -EINVAL;
		memcpy(ad->rss_table, indir, ad->hw.rss_table_size * sizeof(*indir));
		offnic_rss_set_table(&ad->hw, ad->rss_table, ad->hw.rss_table_size);
	}
	if (key) {
		memcpy(ad->rss_key, key, OFFNIC_RSS_KEY_BYTES);
		offnic_rss_set_key(&ad->hw, ad->rss_key);
	}
	return 0;
}

static const struct ethtool_ops offnic_ethtool_ops = {
	.supported_coalesce_params = ETHTOOL_COALESCE_USECS | ETHTOOL_COALESCE_MAX_FRAMES,
	.get_drvinfo = offnic_get_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = offnic_get_link_ksettings,
	.get_sset_count = offnic_get_sset_count,
	.get_strings = offnic_get_strings,
	.get_ethtool_stats = offnic_get_ethtool_stats,
	.get_ringparam = offnic_get_ringparam,
	.set_ringparam = offnic_set_ringparam,
	.get_coalesce = offnic_get_coalesce,
	.set_coalesce = offnic_set_coalesce,
	.get_rxnfc = offnic_get_rxnfc,
	.get_rxfh_key_size = offnic_get_rxfh_key_size,
	.get_rxfh_indir_size = offnic_get_rxfh_indir_size,
	.get_rxfh = offnic_get_rxfh,
	.set_rxfh = offnic_set_rxfh,
};

void offnic_set_ethtool_ops(struct net_device *ndev)
{
	ndev->ethtool_ops = &offnic_ethtool_ops;
}
