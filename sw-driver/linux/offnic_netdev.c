// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * One netdev per Ethernet port: open and stop (the port's TX queues, and the RX
 * queues every port shares), station address and receive filter, MTU (above the wire
 * MTU the NIC cuts IPv4 datagrams into fragments and reassembles them on receive),
 * statistics and link state. The NIC has no link-status register yet: the carrier
 * follows open and stop.
 */
#include <linux/crc32.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>

#include "offnic.h"

/* The NIC's multicast hash of each group in the netdev's list */
static u64 offnic_mc_filter(struct net_device *ndev)
{
	struct netdev_hw_addr *ha;
	u64 bits = 0;

	netdev_for_each_mc_addr(ha, ndev)
		bits |= BIT_ULL(offnic_mc_hash(ha->addr));
	return bits;
}

static void offnic_set_rx_mode(struct net_device *ndev)
{
	struct offnic_priv *priv = offnic_priv(ndev);

	offnic_port_set_rx_filter(&priv->ad->hw, priv->port, !!(ndev->flags & IFF_PROMISC),
				  !!(ndev->flags & IFF_ALLMULTI), 1, offnic_mc_filter(ndev));
}

static int offnic_set_mac_address(struct net_device *ndev, void *p)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	int err;

	err = eth_prepare_mac_addr_change(ndev, p);
	if (err)
		return err;
	eth_commit_mac_addr_change(ndev, p);
	offnic_port_set_mac(&priv->ad->hw, priv->port, ndev->dev_addr);
	return 0;
}

/* Filter nothing in: the port's frames are dropped by the NIC while it is down */
static void offnic_port_quiet(struct offnic_priv *priv)
{
	offnic_port_set_rx_filter(&priv->ad->hw, priv->port, 0, 0, 0, 0);
}

int offnic_open(struct net_device *ndev)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	struct offnic_adapter *ad = priv->ad;
	int err;

	ASSERT_RTNL();
	if (!ad->rx_users) {
		err = offnic_rx_up(ad);
		if (err)
			return err;
	}
	ad->rx_users++;
	err = offnic_tx_up(priv);
	if (err) {
		if (!--ad->rx_users)
			offnic_rx_down(ad);
		return err;
	}
	offnic_port_set_mac(&ad->hw, priv->port, ndev->dev_addr);
	offnic_set_rx_mode(ndev);
	priv->up = true;
	netif_tx_start_all_queues(ndev);
	netif_carrier_on(ndev);
	return 0;
}

int offnic_stop(struct net_device *ndev)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	struct offnic_adapter *ad = priv->ad;

	ASSERT_RTNL();
	if (!priv->up)
		return 0;
	priv->up = false;
	offnic_port_quiet(priv);
	netif_carrier_off(ndev);
	netif_tx_disable(ndev);
	offnic_tx_down(priv);
	if (!--ad->rx_users)
		offnic_rx_down(ad);
	return 0;
}

static int offnic_change_mtu(struct net_device *ndev, int mtu)
{
	/* TX frames of any size up to max_mtu: the NIC cuts IPv4 datagrams at the wire MTU */
	ndev->mtu = mtu;
	return 0;
}

static void offnic_get_stats64(struct net_device *ndev, struct rtnl_link_stats64 *s)
{
	struct offnic_priv *priv = offnic_priv(ndev);
	struct offnic_adapter *ad = priv->ad;
	unsigned int start;
	u32 i;

	for (i = 0; i < priv->n_txq; i++) {
		struct offnic_txq *txq = &priv->txq[i];
		u64 packets, bytes, errors;

		do {
			start = u64_stats_fetch_begin(&txq->syncp);
			packets = txq->packets;
			bytes = txq->bytes;
			errors = txq->errors;
		} while (u64_stats_fetch_retry(&txq->syncp, start));
		s->tx_packets += packets;
		s->tx_bytes += bytes;
		s->tx_errors += errors;
	}
	for (i = 0; i < ad->n_rxq; i++) {
		struct offnic_rxq *rxq = &ad->rxq[i];
		struct offnic_rx_port_stats st;

		do {
			start = u64_stats_fetch_begin(&rxq->syncp);
			st = rxq->port[priv->port];
		} while (u64_stats_fetch_retry(&rxq->syncp, start));
		s->rx_packets += st.packets;
		s->rx_bytes += st.bytes;
		s->rx_errors += st.errors;
		s->rx_dropped += st.dropped;
	}
}

static const struct net_device_ops offnic_netdev_ops = {
	.ndo_open = offnic_open,
	.ndo_stop = offnic_stop,
	.ndo_start_xmit = offnic_start_xmit,
	.ndo_set_rx_mode = offnic_set_rx_mode,
	.ndo_set_mac_address = offnic_set_mac_address,
	.ndo_validate_addr = eth_validate_addr,
	.ndo_change_mtu = offnic_change_mtu,
	.ndo_get_stats64 = offnic_get_stats64,
};

int offnic_netdev_create(struct offnic_adapter *ad, u32 port)
{
	struct offnic_hw *hw = &ad->hw;
	u32 per_port = hw->n_queues[OFFNIC_TX] / hw->n_ports;
	struct offnic_priv *priv;
	struct net_device *ndev;
	int err;
	u32 i;

	ndev = alloc_etherdev_mqs(sizeof(*priv), per_port, ad->n_rxq);
	if (!ndev)
		return -ENOMEM;
	SET_NETDEV_DEV(ndev, &ad->pdev->dev);
	priv = offnic_priv(ndev);
	priv->ad = ad;
	priv->ndev = ndev;
	priv->port = port;
	priv->txq_base = port * per_port;
	priv->n_txq = per_port;
	priv->tx_ring_log = OFFNIC_DEFAULT_RING_LOG;
	/* the queues' state and counters live as long as the netdev; rings only while up */
	priv->txq = kcalloc(per_port, sizeof(*priv->txq), GFP_KERNEL);
	if (!priv->txq) {
		free_netdev(ndev);
		return -ENOMEM;
	}
	for (i = 0; i < per_port; i++) {
		priv->txq[i].priv = priv;
		priv->txq[i].n = priv->txq_base + i;
		priv->txq[i].index = i;
		u64_stats_init(&priv->txq[i].syncp);
	}

	ndev->netdev_ops = &offnic_netdev_ops;
	offnic_set_ethtool_ops(ndev);
	ndev->hw_features = NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_RXCSUM | NETIF_F_RXHASH;
	ndev->features = ndev->hw_features;
	ndev->vlan_features = NETIF_F_SG | NETIF_F_HW_CSUM;
	ndev->min_mtu = ETH_MIN_MTU;
	/* the longest TX frame the NIC takes, less its Ethernet and VLAN headers */
	ndev->max_mtu = min_t(u32, OFFNIC_MAX_MTU, hw->max_tx_frame - ETH_HLEN - VLAN_HLEN);
	ndev->mtu = min_t(u32, ETH_DATA_LEN, ndev->max_mtu);
	/* no station address store on the board yet */
	eth_hw_addr_random(ndev);
	netif_carrier_off(ndev);

	offnic_port_quiet(priv);
	err = register_netdev(ndev);
	if (err) {
		kfree(priv->txq);
		free_netdev(ndev);
		return err;
	}
	ad->ndev[port] = ndev;
	return 0;
}

void offnic_netdev_destroy(struct offnic_adapter *ad, u32 port)
{
	struct net_device *ndev = ad->ndev[port];

	unregister_netdev(ndev);
	ad->ndev[port] = NULL;
	kfree(offnic_priv(ndev)->txq);
	free_netdev(ndev);
}
