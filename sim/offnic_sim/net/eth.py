"""Ethernet II frames as bytes: the constants and helpers every layer uses (the Linux
bridges, the TCP references, the offloads' models)."""
from __future__ import annotations

ETH_P_IP = 0x0800
ETH_P_ARP = 0x0806
ETH_HLEN = 14


def mac_bytes(mac: str | bytes) -> bytes:
    if isinstance(mac, bytes):
        return mac
    return bytes(int(x, 16) for x in mac.split(":"))


def mac_str(mac: bytes) -> str:
    return ":".join(f"{b:02x}" for b in mac)


def eth_frame(dst: str | bytes, src: str | bytes, ethertype: int, payload: bytes) -> bytes:
    """An Ethernet II frame without FCS (what a TAP device reads and writes)."""
    return mac_bytes(dst) + mac_bytes(src) + ethertype.to_bytes(2, "big") + payload


def ethertype(frame: bytes) -> int:
    return int.from_bytes(frame[12:14], "big") if len(frame) >= ETH_HLEN else -1


def ip_of(frame: bytes) -> bytes | None:
    """The IPv4 packet carried by an Ethernet frame, or None."""
    return frame[ETH_HLEN:] if ethertype(frame) == ETH_P_IP else None
