"""Connection selection (seed 004 §3.3): which established connections the host offers
to the NIC's TCP engine, per listening port.

- `Fcfs`: hand off every connection as it is established, while the NIC has room.
- `Threshold(n)` (the seed's T_n): hand a connection off once it has sent n packets, so
  that the many short-lived connections of a web workload stay on the host and the few
  long-lived ones, which carry most packets (the seed's Fig. 4), go to the NIC.

As in the seed, the policy is consulted when a connection is established and when the
application sends, and a connection whose first handoff was refused stays on the host
for good (it keeps working there). The host never offers more connections than the
NIC's current Soft_limit allows (load control, §3.2): with `offloaded` connections on
the NIC, at most Soft_limit - offloaded more. A lowered Soft_limit only stops new
handoffs; taking connections back is the firmware's optional active restore.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Where(Enum):
    HOST = "host"            # on the host, may still be offered
    OFFERED = "offered"      # a handoff is in flight
    NIC = "nic"              # carried by the NIC
    KEPT = "kept"            # refused once (or taken back): on the host for good


@dataclass(frozen=True)
class Fcfs:
    def wants(self, sent_packets: int) -> bool:
        return True


@dataclass(frozen=True)
class Threshold:
    n: int                   # packets sent before a handoff is worth it

    def wants(self, sent_packets: int) -> bool:
        return sent_packets >= self.n


@dataclass
class _Conn:
    port: int
    sent: int = 0
    where: Where = Where.HOST


@dataclass
class ConnectionSelector:
    """The host's selection state: policies by listening port (`default` for the rest;
    None: never offload), each connection's packets sent and where it is, and the NIC's
    Soft_limit as last announced."""
    soft_limit: int
    policies: dict[int, Fcfs | Threshold] = field(default_factory=dict)
    default: Fcfs | Threshold | None = None
    conns: dict[object, _Conn] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: dict(offered=0, accepted=0, refused=0,
                                                                   held_by_limit=0, closed_on_nic=0))

    @property
    def on_nic(self) -> int:
        """Connections the NIC holds or is being offered (both count against Soft_limit)."""
        return sum(1 for c in self.conns.values() if c.where in (Where.NIC, Where.OFFERED))

    def where(self, conn: object) -> Where:
        return self.conns[conn].where

    def _consider(self, conn: object) -> bool:
        c = self.conns[conn]
        policy = self.policies.get(c.port, self.default)
        if c.where is not Where.HOST or policy is None or not policy.wants(c.sent):
            return False
        if self.on_nic >= self.soft_limit:
            self.counters["held_by_limit"] += 1
            return False
        c.where = Where.OFFERED
        self.counters["offered"] += 1
        return True

    # -- events from the host stack; each returns True when the host should hand `conn` off now
    def established(self, conn: object, listen_port: int) -> bool:
        assert conn not in self.conns, f"{conn} established twice"
        self.conns[conn] = _Conn(listen_port)
        return self._consider(conn)

    def sent(self, conn: object, packets: int = 1) -> bool:
        c = self.conns[conn]
        if c.where is Where.HOST:      # the host's own packets; the NIC counts its own
            c.sent += packets
        return self._consider(conn)

    # -- outcomes
    def handoff_done(self, conn: object, accepted: bool) -> None:
        c = self.conns[conn]
        assert c.where is Where.OFFERED, f"{conn}: no handoff in flight ({c.where})"
        c.where = Where.NIC if accepted else Where.KEPT
        self.counters["accepted" if accepted else "refused"] += 1

    def restored(self, conn: object) -> None:
        """The host took the connection back (its request or the firmware's): it stays."""
        self.conns[conn].where = Where.KEPT

    def closed(self, conn: object) -> None:
        c = self.conns.pop(conn)
        self.counters["closed_on_nic"] += c.where is Where.NIC

    def set_soft_limit(self, n: int) -> None:
        """The firmware announced a new Soft_limit (load control)."""
        assert n >= 0
        self.soft_limit = n
