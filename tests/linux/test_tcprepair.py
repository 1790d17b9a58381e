"""sim/offnic_sim/linux/tcprepair.py against the real kernel: freezing, releasing and restoring
established TCP connections with TCP_REPAIR (the host side of a TCP offload handoff).

Two namespaces, A (10.77.0.1) and B (10.77.0.2), are joined by two TAP ports (MTU 1500)
and a Python thread copying frames between them: the "wire", which sits where the NIC
will. It can hold or drop each direction and logs every TCP header, which a handoff
needs: the frozen socket must be cut off the wire (see tcprepair's docstring). A veth
pair works here too, but with no tc classifiers or netem and no iptables/nft on these
machines nothing short of an XDP program could cut it.

- Mid-transfer handoff: both directions stream seeded random bytes; at the freeze A
  holds unacknowledged, never-sent and unread data; the state goes through JSON; the
  restored socket in the same namespace carries on and both 3 MB streams are exact.
- A frozen socket keeps working: for 100 ms B streams into frozen A, which keeps
  queueing, ACKing and sending its own queue while its application is locked out
  (EPERM/EINVAL); the handoff then taken under a cut and restored ends exact.
- Selecting TCP_SEND_QUEUE on a socket that can still transmit marks its unsent data
  as sent without sending it, visible in TCP_INFO (which freeze() relies on).
- Sequence numbers across 2**32: make_connected_pair with ISNs 2**32-1000 and 2**32-10,
  1 MB each way, exact, first data byte at ISN+1 on the wire, final numbers wrapped.
- release() sends nothing (an ordinary close() with unread data sends RST), and a
  segment arriving afterwards draws a RST from Linux.
- Negotiated options survive a restore: TCP_INFO options, window scales and MSS equal
  before and after, for a real handshake and for odd pair options, full-sized segments
  after; the TSval clock on the wire runs on across the handoff or resumes where it
  stopped (clock="paused"), and B's PAWS drops nothing.
- A handoff to MiniEngine, a small TCP speaker in Python that moves the connection on
  by itself on the wire and hands back `TcpState.advanced()`: restored, exact.
- JSON round trip, advanced() arithmetic, the constants against the installed headers
  and the struct tcp_info offsets against live values (the pure ones need no root).

Needs root (skips otherwise). Seed: OFFNIC_SEED or 6006, printed. Runs in about 3 s.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Iterator

import pytest

from offnic_sim.net import ipfrag
from offnic_sim.linux import linuxnet
from offnic_sim.linux import tcprepair
from offnic_sim.linux.linuxnet import ETH_P_IP, Namespace, TapPort, eth_frame, ip_of
from offnic_sim.linux.tcprepair import (PairOptions, TcpState, freeze, make_connected_pair, release, restore, seq_add,
                                  seq_diff, tcp_info)

REASON = linuxnet.unavailable_reason()
needs_linux = pytest.mark.skipif(REASON is not None, reason=f"real Linux networking unavailable: {REASON}")

SEED = int(os.environ.get("OFFNIC_SEED") or 6006)
A_IP, B_IP = "10.77.0.1", "10.77.0.2"
A_MAC, B_MAC = "02:0f:4e:00:0a:01", "02:0f:4e:00:0b:01"
PORT = 5000
MTU = 1500
TCP_CLOSE = 7


def rng_for(name: str) -> random.Random:
    return random.Random(f"{SEED}/{name}")


@pytest.fixture(scope="module", autouse=True)
def announce_seed():
    print(f"[test_tcprepair] seed {SEED} (replay: OFFNIC_SEED={SEED} pytest tests/linux/test_tcprepair.py)")


# ============================================================================ the wire

@dataclass(frozen=True)
class Seg:
    """The TCP header fields of one frame on the wire."""

    t: float
    way: str                 # "ab" (A -> B) or "ba"
    src: tuple[str, int]
    dst: tuple[str, int]
    seq: int
    ack: int
    flags: int
    window: int
    payload: int             # payload length
    tsval: int | None
    tsecr: int | None

    FIN, SYN, RST, PSH, ACK = 1, 2, 4, 8, 16


def parse_tcp(frame: bytes, way: str = "", t: float = 0.0) -> Seg | None:
    ip = ip_of(frame)
    if ip is None or len(ip) < 40 or ip[9] != socket.IPPROTO_TCP:
        return None
    ihl = (ip[0] & 15) * 4
    total = int.from_bytes(ip[2:4], "big")
    tcp = ip[ihl:total]
    sport, dport, seq, ack, off_flags, window = struct.unpack("!HHIIHH", tcp[:16])
    doff = (off_flags >> 12) * 4
    tsval = tsecr = None
    opts, i = tcp[20:doff], 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        if kind == 8 and opts[i + 1] == 10:
            tsval, tsecr = struct.unpack("!II", opts[i + 2:i + 10])
        i += opts[i + 1]
    src = (socket.inet_ntoa(ip[12:16]), sport)
    dst = (socket.inet_ntoa(ip[16:20]), dport)
    return Seg(t, way, src, dst, seq, ack, off_flags & 0x3F, window, len(tcp) - doff, tsval, tsecr)


class Wire:
    """Namespaces A and B joined by a TAP port each and a thread copying frames.

    Each direction ("ab", "ba") passes, holds (frames queue up, `flush()` delivers them
    in order) or drops. Every TCP frame that reaches the wire is logged as a `Seg` with
    its time and direction, whatever then happens to it. A `hook` sees each frame about
    to be delivered and may take it instead (the stand-in engine does). No ARP: each
    side has a permanent neighbour entry for the other."""

    def __init__(self, ns_a: Namespace, ns_b: Namespace):
        self.taps = {
            "ab": TapPort(ns_a, mtu=MTU, mac=A_MAC, addr=f"{A_IP}/24", sim_mac=B_MAC, sim_ips=(B_IP,),
                          answer_arp=False, static_neigh=True),
            "ba": TapPort(ns_b, mtu=MTU, mac=B_MAC, addr=f"{B_IP}/24", sim_mac=A_MAC, sim_ips=(A_IP,),
                          answer_arp=False, static_neigh=True),
        }
        self.mode = {"ab": "pass", "ba": "pass"}
        self.held: dict[str, list[bytes]] = {"ab": [], "ba": []}
        self.log: list[Seg] = []
        self.dropped = 0
        self.hook = None                  # callable(way, frame) -> bool: True if it took the frame
        self._lock = threading.RLock()    # the hook may send() from inside _handle()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wire", daemon=True)

    def __enter__(self) -> "Wire":
        for tap in self.taps.values():
            tap.__enter__()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(2)
        for tap in self.taps.values():
            tap.close()

    def _out(self, way: str) -> TapPort:
        return self.taps["ba" if way == "ab" else "ab"]

    def _run(self) -> None:
        fds = {self.taps[w].fd: w for w in ("ab", "ba")}
        while not self._stop.is_set():
            ready, _, _ = select.select(list(fds), [], [], 0.02)
            for fd in ready:
                way = fds[fd]
                for frame in self.taps[way].read_frames():
                    self._handle(way, frame)

    def _handle(self, way: str, frame: bytes) -> None:
        with self._lock:
            seg = parse_tcp(frame, way, time.monotonic())
            if seg is not None:
                self.log.append(seg)
            mode = self.mode[way]
            if mode == "hold":
                self.held[way].append(frame)
            elif mode == "pass":
                self._deliver(way, frame)
            else:
                self.dropped += 1

    def _deliver(self, way: str, frame: bytes) -> None:
        if self.hook is None or not self.hook(way, frame):
            self._out(way).write_frame(frame)

    def set(self, way: str, mode: str) -> None:
        assert mode in ("pass", "hold", "drop")
        with self._lock:
            self.mode[way] = mode

    def hold(self, *ways: str) -> None:
        for way in ways or ("ab", "ba"):
            self.set(way, "hold")

    def flush(self, *ways: str) -> int:
        """Deliver the held frames in order and pass from now on. Returns how many."""
        n = 0
        with self._lock:
            for way in ways or ("ab", "ba"):
                for frame in self.held[way]:
                    self._deliver(way, frame)
                n += len(self.held[way])
                self.held[way] = []
                self.mode[way] = "pass"
        return n

    def send(self, way: str, frame: bytes) -> None:
        """Put a frame on the wire as if it came from that side."""
        with self._lock:
            self._out(way).write_frame(frame)

    def segs(self, way: str | None = None, since: float = 0.0) -> list[Seg]:
        with self._lock:
            return [s for s in self.log if s.t >= since and (way is None or s.way == way)]


@contextlib.contextmanager
def two_namespaces() -> Iterator[tuple[Namespace, Namespace, Wire]]:
    """Namespaces A and B and the wire between them, for a `with` block."""
    with Namespace() as na, Namespace() as nb, Wire(na, nb) as wire:
        yield na, nb, wire


def handshake(na: Namespace, nb: Namespace, *, b_rcvbuf: int | None = None, a_rcvbuf: int | None = None,
              port: int = PORT, a_port: int = 0) -> tuple[socket.socket, socket.socket]:
    """An ordinary connection A -> B:PORT (real SYN handshake over the wire), from
    A's port `a_port` (0: an ephemeral one, which Linux may share between connections
    to different peer ports; restore() binds it again)."""
    lst = nb.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if b_rcvbuf:
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, b_rcvbuf)
    lst.bind((B_IP, port))
    lst.listen(1)
    a = na.socket(socket.AF_INET, socket.SOCK_STREAM)
    if a_rcvbuf:                          # before the SYN: it sets the window scale
        a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a_rcvbuf)
    if a_port:
        a.bind((A_IP, a_port))
    a.settimeout(5)
    a.connect((B_IP, port))
    lst.settimeout(5)
    b, _ = lst.accept()
    nb.own(b)
    lst.close()
    a.settimeout(None)
    b.settimeout(None)
    return a, b


# ============================================================================ applications

class Stream:
    """One side's application in a thread: writes `tx`, reads and checks that what
    arrives is `rx` (byte-exact, in order). Reading and writing can be paused; `park()`
    stops the thread touching the socket (for a freeze) and `resume(sock)` continues on
    another socket."""

    def __init__(self, name: str, sock: socket.socket, tx: bytes, rx: bytes):
        self.name = name
        self.sock = sock
        self.tx, self.rx = tx, rx
        self.tx_pos = self.rx_pos = 0
        self.reading = self.writing = True
        self.tx_limit: int | None = None    # write no further than this (None: to the end)
        self.error: str | None = None
        self._gate = threading.Lock()
        self._want_park = False
        self._stop = False
        self._thread = threading.Thread(target=self._run, name=f"stream-{name}", daemon=True)

    def start(self) -> "Stream":
        self.sock.setblocking(False)
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        return self.tx_pos == len(self.tx) and self.rx_pos == len(self.rx)

    def park(self) -> None:
        self._want_park = True
        self._gate.acquire()
        self._want_park = False

    def resume(self, sock: socket.socket | None = None) -> None:
        if sock is not None:
            self.sock = sock
            sock.setblocking(False)
        self._gate.release()

    def stop(self) -> None:
        self._stop = True
        self._thread.join(2)

    def _run(self) -> None:
        while not self._stop and self.error is None:
            if self._want_park:
                time.sleep(0.001)
                continue
            with self._gate:
                try:
                    self._step()
                except OSError as e:
                    self.error = f"{self.name}: {e!r} at tx {self.tx_pos} rx {self.rx_pos}"

    def _step(self) -> None:
        sock = self.sock
        r = [sock] if self.reading and self.rx_pos < len(self.rx) else []
        end = len(self.tx) if self.tx_limit is None else min(self.tx_limit, len(self.tx))
        w = [sock] if self.writing and self.tx_pos < end else []
        if not r and not w:
            time.sleep(0.002)
            return
        rr, ww, _ = select.select(r, w, [], 0.005)
        if rr:
            try:
                data = sock.recv(1 << 16)
            except BlockingIOError:
                data = None
            if data == b"":
                raise OSError(errno.ECONNRESET, "peer closed")
            if data:
                want = self.rx[self.rx_pos:self.rx_pos + len(data)]
                if data != want:
                    bad = next(i for i in range(len(data)) if i >= len(want) or data[i] != want[i])
                    self.error = f"{self.name}: stream differs at byte {self.rx_pos + bad}"
                    return
                self.rx_pos += len(data)
        if ww:
            try:
                self.tx_pos += sock.send(self.tx[self.tx_pos:min(self.tx_pos + (1 << 16), end)])
            except BlockingIOError:
                pass


def wait_for(cond, timeout: float, what: str, streams: tuple[Stream, ...] = ()) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        for s in streams:
            assert s.error is None, s.error
        if time.monotonic() > deadline:
            state = ", ".join(f"{s.name} tx {s.tx_pos}/{len(s.tx)} rx {s.rx_pos}/{len(s.rx)}" for s in streams)
            raise AssertionError(f"timed out waiting for {what} ({state})")
        time.sleep(0.002)
    for s in streams:
        assert s.error is None, s.error


def streams_for(name: str, a: socket.socket, b: socket.socket, size: int) -> tuple[Stream, Stream]:
    rng = rng_for(name)
    a_to_b, b_to_a = rng.randbytes(size), rng.randbytes(size)
    return Stream("A", a, a_to_b, b_to_a), Stream("B", b, b_to_a, a_to_b)


# ============================================================================ handoff

@needs_linux
def test_freeze_restore_mid_transfer():
    """Both directions streaming; A is handed off (frozen, released, restored from its
    state after a JSON round trip) while it holds sent-but-unacknowledged, never-sent and
    unread data; the restored socket carries on and both streams arrive exact."""
    size = 3 << 20
    with two_namespaces() as (na, nb, wire):
        # B's small receive buffer keeps A window-limited (never-sent data piles up).
        a, b = handshake(na, nb, b_rcvbuf=32 << 10)
        sa, sb = streams_for("mid", a, b, size)
        sa.reading = False                  # A's receive queue fills and stays full
        sa.start(), sb.start()
        wait_for(lambda: sb.rx_pos > size // 4, 10, "a quarter of A -> B", (sa, sb))
        wire.hold("ba")                     # B's ACKs stop reaching A: A has data in flight
        time.sleep(0.02)
        wire.hold("ab")
        sa.park()
        before = tcp_info(a)
        state = freeze(a)
        release(a)
        assert state.in_flight > 0 and state.unsent > 0 and state.recv_queue, \
            (state.in_flight, state.unsent, len(state.recv_queue))
        sent_before = sa.tx_pos
        assert seq_diff(state.write_seq, state.snd_una) == len(state.send_queue)
        assert state.send_queue == sa.tx[sent_before - len(state.send_queue):sent_before]
        assert state.recv_queue == sa.rx[sa.rx_pos:sa.rx_pos + len(state.recv_queue)]
        assert before.notsent_bytes == state.unsent
        print(f"frozen A: {state.in_flight} B in flight, {state.unsent} B never sent, "
              f"{len(state.recv_queue)} B unread; {sum(map(len, wire.held.values()))} frames held")
        carried = TcpState.from_dict(json.loads(json.dumps(state.to_dict())))
        assert carried == state
        a2 = restore(na, carried)
        sa.reading = True
        sa.resume(a2)
        print(f"flushed {wire.flush()} held frames")
        wait_for(lambda: sa.done and sb.done, 20, "both streams", (sa, sb))
        sa.stop(), sb.stop()


def rcv_nxt_of(sock: socket.socket) -> int:
    """rcv_nxt of a socket in repair mode. Only the receive queue is selected: selecting
    the send queue on a socket that is still on the wire is not harmless (see
    test_send_queue_mode_marks_data_sent)."""
    sock.setsockopt(socket.IPPROTO_TCP, tcprepair.TCP_REPAIR_QUEUE, tcprepair.TCP_RECV_QUEUE)
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, tcprepair.TCP_QUEUE_SEQ) % 2**32
    finally:
        sock.setsockopt(socket.IPPROTO_TCP, tcprepair.TCP_REPAIR_QUEUE, tcprepair.TCP_NO_QUEUE)


def ioctl(sock: socket.socket, req: int) -> int:
    return tcprepair._ioctl_int(sock, req)


@needs_linux
def test_frozen_socket_keeps_working():
    """What Linux does with segments for a socket in repair mode: it processes them as
    usual (queues the data, ACKs it, takes ACKs and sends more of its queue), only the
    application is locked out. So a state read without cutting the wire goes stale: B
    sends for 100 ms into frozen A, and A acknowledges bytes a reading at the start of
    those 100 ms does not hold. The handoff proper is then taken with the wire held,
    restored after the 100 ms, and both streams still end exact."""
    size = 2 << 20
    with two_namespaces() as (na, nb, wire):
        a, b = handshake(na, nb)
        sa, sb = streams_for("frozen", a, b, size)
        sa.start(), sb.start()
        wait_for(lambda: sa.rx_pos > size // 8 and sb.rx_pos > size // 8, 10, "an eighth each way", (sa, sb))
        sa.park()
        a.setsockopt(socket.IPPROTO_TCP, tcprepair.TCP_REPAIR, tcprepair.TCP_REPAIR_ON)
        rcv0, inq0, outq0 = rcv_nxt_of(a), ioctl(a, tcprepair.SIOCINQ), ioctl(a, tcprepair.SIOCOUTQ)
        t0 = time.monotonic()
        with pytest.raises(OSError) as e:
            a.recv(100)                     # tcp_recvmsg: repair mode without MSG_PEEK
        assert e.value.errno == errno.EPERM
        with pytest.raises(OSError) as e:
            a.send(b"x")                    # tcp_sendmsg: repair mode, TCP_NO_QUEUE
        assert e.value.errno == errno.EINVAL
        time.sleep(0.1)
        rcv1, inq1, outq1 = rcv_nxt_of(a), ioctl(a, tcprepair.SIOCINQ), ioctl(a, tcprepair.SIOCOUTQ)
        segs = wire.segs("ab", since=t0)
        got = seq_diff(rcv1, rcv0)
        acked = max((seq_diff(s.ack, rcv0) for s in segs if s.flags & Seg.ACK), default=0)
        data_out = sum(s.payload for s in segs)
        print(f"frozen 100 ms: A received {got} B more and sent {len(segs)} segments, ACKing up to {acked} B "
              f"past the first look and carrying {data_out} B of its queue; receive queue {inq0} -> {inq1} B, "
              f"send queue {outq0} -> {outq1} B")
        assert got > 0 and acked > 0, "a frozen socket stopped processing segments?"
        assert inq1 == inq0 + got
        # The handoff proper: cut the wire, read (now it settles), hand over.
        wire.hold()
        state = freeze(a)                   # already in repair mode: just reads
        assert seq_diff(state.rcv_nxt, rcv0) >= got
        release(a)
        sa.resume(restore(na, state))
        wire.flush()
        wait_for(lambda: sa.done and sb.done, 20, "both streams", (sa, sb))
        sa.stop(), sb.stop()


@needs_linux
def test_send_queue_mode_marks_data_sent():
    """With TCP_REPAIR_QUEUE = TCP_SEND_QUEUE selected, anything that makes Linux
    transmit (here B's ACKs reaching A) moves all of A's unsent data to "sent" without
    transmitting it (tcp_write_xmit's repair branch): TCP_INFO's count of new data sent
    (bytes_sent - bytes_retrans) does not move, which is how freeze() spots it during its
    own reads. What does reach the wire afterwards are retransmissions: a live socket
    heals within milliseconds (tail loss probe, then RACK). After a restore, marks made
    before the freeze look like data in flight and wait for the RTO (no RTT sample yet:
    1-3 s seen in the frozen-socket test before rcv_nxt_of() avoided this)."""
    with two_namespaces() as (na, nb, wire):
        a, b = handshake(na, nb)
        wire.hold("ba")                     # B's ACKs held: A stays cwnd-limited, with unsent data
        a.setblocking(False)
        a.send(b"z" * 200000)
        time.sleep(0.02)
        a.setsockopt(socket.IPPROTO_TCP, tcprepair.TCP_REPAIR, tcprepair.TCP_REPAIR_ON)
        info0, unsent0 = tcp_info(a), ioctl(a, tcprepair.SIOCOUTQNSD)
        assert unsent0 > 0
        a.setsockopt(socket.IPPROTO_TCP, tcprepair.TCP_REPAIR_QUEUE, tcprepair.TCP_SEND_QUEUE)
        t0 = time.monotonic()
        wire.flush("ba")                    # the ACKs open cwnd: Linux "sends" the rest
        time.sleep(0.05)
        info1, unsent1 = tcp_info(a), ioctl(a, tcprepair.SIOCOUTQNSD)
        a.setsockopt(socket.IPPROTO_TCP, tcprepair.TCP_REPAIR_QUEUE, tcprepair.TCP_NO_QUEUE)
        data = sum(s.payload for s in wire.segs("ab", since=t0))
        print(f"TCP_SEND_QUEUE selected: {unsent0 - unsent1} B marked sent, none transmitted as new data; "
              f"{data} B retransmitted in the next 50 ms ({info1.bytes_retrans - info0.bytes_retrans} B by TCP_INFO)")
        assert unsent1 == 0
        assert tcprepair._new_data_sent(info1) == tcprepair._new_data_sent(info0)
        release(a)


# ============================================================================ pairs

@needs_linux
def test_sequence_numbers_wrap():
    """make_connected_pair with ISNs just below 2**32: 1 MB each way crosses the wrap,
    exact; the first data byte on the wire is ISN + 1; the final numbers wrapped."""
    isn_a, isn_b = 2**32 - 1000, 2**32 - 10
    size = 1 << 20
    with two_namespaces() as (na, nb, wire):
        a, b = make_connected_pair(na, (A_IP, 0), nb, (B_IP, 0), isn_a, isn_b)
        assert tcp_info(a).state == tcp_info(b).state == tcprepair.TCP_ESTABLISHED
        sa, sb = streams_for("wrap", a, b, size)
        sa.start(), sb.start()
        wait_for(lambda: sa.done and sb.done, 20, "both streams", (sa, sb))
        sa.stop(), sb.stop()
        first = {w: min((s for s in wire.segs(w) if s.payload), key=lambda s: s.t) for w in ("ab", "ba")}
        assert first["ab"].seq == seq_add(isn_a, 1) and first["ba"].seq == seq_add(isn_b, 1)
        assert not any(s.flags & (Seg.SYN | Seg.RST) for s in wire.segs())
        time.sleep(0.05)                    # last ACKs
        for sock, isn_out, isn_in in ((a, isn_a, isn_b), (b, isn_b, isn_a)):
            st = freeze(sock)
            assert st.snd_una == st.write_seq == (isn_out + 1 + size) % 2**32 < isn_out
            assert st.rcv_nxt == (isn_in + 1 + size) % 2**32
            tcprepair.thaw(sock)


# ============================================================================ release

@needs_linux
def test_release_sends_nothing():
    """An ordinary close() with unread data sends RST; release() of a frozen socket with
    unread and never-sent data sends nothing at all. A segment from
    the peer afterwards meets no socket and Linux answers RST: whoever takes the
    connection over must catch the peer's segments before the host stack does."""
    with two_namespaces() as (na, nb, wire):
        # Control: the capture does see what close() sends.
        c, d = handshake(na, nb, port=PORT + 1)
        d.sendall(b"unread" * 100)
        time.sleep(0.05)
        t0 = time.monotonic()
        c.close()
        wait_for(lambda: any(s.flags & Seg.RST for s in wire.segs("ab", since=t0)), 5,
                 "the RST of close() with unread data on the capture")

        a, b = handshake(na, nb)
        b.sendall(b"unread" * 100)          # A never reads it
        time.sleep(0.05)
        wire.hold("ba")                     # B's ACKs stay on the wire: A is left cwnd-limited
        a.setblocking(False)
        a.send(b"z" * 200000)               # 10 segments go out, the rest waits
        time.sleep(0.02)                    # well within A's 200 ms RTO: A is quiet now
        state = freeze(a)
        assert state.recv_queue and state.in_flight > 0 and state.unsent > 0, state
        # The capture stamps a frame when the bridge reads it: on a loaded machine the
        # last of A's in-flight segments may be read after the freeze. Count from then.
        wait_for(lambda: any(seq_add(s.seq, s.payload) == state.snd_nxt for s in wire.segs("ab")), 5,
                 "A's last in-flight segment on the capture")
        t0 = time.monotonic()
        release(a)
        time.sleep(0.3)
        after = wire.segs("ab", since=t0)
        assert after == [], f"release() sent {after}"
        print(f"release(): nothing on the wire for 300 ms (had {len(state.recv_queue)} B unread, "
              f"{state.in_flight} B in flight, {state.unsent} B never sent)")

        t1 = time.monotonic()
        wire.flush("ba")                    # B's ACKs reach a connection that is gone
        wait_for(lambda: any(s.flags & Seg.RST for s in wire.segs("ab", since=t1)), 5,
                 "an RST for a segment to a released connection")
        wait_for(lambda: tcp_info(b).state == TCP_CLOSE, 5, "B closed by the RST")
        assert b.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == errno.ECONNRESET


# ============================================================================ options

NEGOTIATED = tcprepair.TCPI_OPT_TIMESTAMPS | tcprepair.TCPI_OPT_SACK | tcprepair.TCPI_OPT_WSCALE


def negotiated(sock: socket.socket) -> tuple[int, int, int, int, int]:
    i = tcp_info(sock)
    return (i.options & NEGOTIATED, i.snd_wscale, i.rcv_wscale, i.snd_mss,
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG))


def handoff(na: Namespace, wire: Wire, sock: socket.socket, *, pause: float = 0.0, **restore_kw) -> socket.socket:
    """Cut, freeze, release, (wait), restore, reconnect the wire."""
    wire.hold()
    state = freeze(sock)
    release(sock)
    time.sleep(pause)
    new = restore(na, state, **restore_kw)
    wire.flush()
    return new


_exchange_rng = rng_for("exchange")


def exchange(a: socket.socket, b: socket.socket, n: int = 20000) -> None:
    """n seeded random bytes each way, checked."""
    for x, y in ((a, b), (b, a)):
        x.setblocking(True)
        y.setblocking(True)
        data = _exchange_rng.randbytes(n)
        x.sendall(data)
        got = b""
        y.settimeout(5)
        while len(got) < n:
            got += y.recv(n - len(got))
        assert got == data


@needs_linux
def test_options_survive_restore():
    """TCP_INFO's negotiated options, both window scales and the MSS are the same before
    and after a handoff, for a real handshake and for a pair with odd options; segments
    after the restore are full-sized; the TSval clock runs on across the handoff (the
    peer sees TSval grow by the time the connection was away), or restarts where it
    stopped with clock="paused", and the peer's PAWS drops nothing."""
    with two_namespaces() as (na, nb, wire):
        a, b = handshake(na, nb)
        exchange(a, b)
        before = negotiated(a)
        assert before[0] == NEGOTIATED, before
        for clock in ("running", "paused"):
            t0 = time.monotonic()
            ts0 = max((s for s in wire.segs("ab") if s.tsval is not None), key=lambda s: s.t).tsval
            a = handoff(na, wire, a, pause=0.15, clock=clock)
            t1 = time.monotonic()
            exchange(a, b, 100000)
            after = [s for s in wire.segs("ab", since=t1) if s.tsval is not None]
            step = seq_diff(after[0].tsval, ts0)
            away_ms = (after[0].t - t0) * 1000
            print(f"clock {clock}: away {away_ms:.0f} ms, TSval moved {step}")
            if clock == "running":
                assert away_ms - 20 <= step <= away_ms + 20
            else:
                assert 0 < step <= 20
            assert negotiated(a) == before, (negotiated(a), before)
            assert max(s.payload for s in after) == before[3]
        assert nb.mib()["TcpExt.PAWSEstab"] == 0

        # Without timestamps. mss_cache (tcpi_snd_mss, TCP_MAXSEG) then reads 12 short:
        # connect() sized the header for timestamps because the namespace's
        # tcp_timestamps sysctl is on; tcp_current_mss() corrects that per segment, so
        # the segments on the wire are still the full 1200 bytes.
        opts = PairOptions(mss=1200, wscale=3, sack=False, timestamps=False)
        c, d = make_connected_pair(na, (A_IP, 0), nb, (B_IP, 0), 1, 2, options=opts)
        t0 = time.monotonic()
        exchange(c, d, 100000)
        before = negotiated(c)
        assert before == (tcprepair.TCPI_OPT_WSCALE, 3, 3, 1188, 1188), before
        c = handoff(na, wire, c)
        exchange(c, d, 100000)
        assert negotiated(c) == before
        segs = [s for s in wire.segs(since=t0) if s.payload]
        assert max(s.payload for s in segs) == 1200 and all(s.tsval is None for s in segs)


# ============================================================================ engine

def tcp_payload(frame: bytes) -> bytes:
    ip = ip_of(frame)
    ihl = (ip[0] & 15) * 4
    total = int.from_bytes(ip[2:4], "big")
    doff = (ip[ihl + 12] >> 4) * 4
    return ip[ihl + doff:total]


class MiniEngine:
    """A stand-in for the offload engine: after the handoff it holds A's connection,
    talking TCP to B on the wire from nothing but the TcpState, and hands it back as
    `state.advanced(...)`. In order only, no retransmission (the wire loses nothing
    here), a constant advertised window. Like a restored socket it does not know
    ts_recent (Linux does not expose it): it echoes 0 until B's first segment."""

    def __init__(self, wire: Wire, state: TcpState):
        self.wire, self.st = wire, state
        self.snd_una, self.snd_nxt = state.snd_una, state.snd_nxt
        self.rcv_nxt = state.rcv_nxt
        self.snd_wnd = state.window.snd_wnd
        self.queued = bytearray(state.send_queue[state.in_flight:])   # never sent
        self.written = bytearray()
        self.transmitted = 0
        self.received = bytearray()
        self.ts_recent = 0
        self.ident = 0
        # The wire's own lock: the wire calls on_frame() holding it and the engine sends
        # through the wire, so one lock for both keeps them from deadlocking.
        self.cond = threading.Condition(wire._lock)
        self.src = socket.inet_aton(state.local_ip)
        self.dst = socket.inet_aton(state.remote_ip)
        assert state.in_flight == 0, "this engine does not retransmit what Linux had in flight"

    # -- the wire hook: B's segments for A's connection come here
    def on_frame(self, way: str, frame: bytes) -> bool:
        seg = parse_tcp(frame, way)
        if way != "ba" or seg is None or seg.dst != (self.st.local_ip, self.st.local_port):
            return False
        data = tcp_payload(frame)
        with self.cond:
            assert not seg.flags & (Seg.SYN | Seg.RST | Seg.FIN), seg
            if seg.tsval is not None:
                self.ts_recent = seg.tsval
            if 0 < seq_diff(seg.ack, self.snd_una) <= seq_diff(self.snd_nxt, self.snd_una):
                self.snd_una = seg.ack
            self.snd_wnd = seg.window << self.st.snd_wscale
            if data:
                if seg.seq == self.rcv_nxt:
                    self.received += data
                    self.rcv_nxt = seq_add(self.rcv_nxt, len(data))
                self._emit(self.snd_nxt, b"")        # ACK (or duplicate ACK)
            self.cond.notify_all()
        return True

    def _emit(self, seq: int, payload: bytes) -> None:
        st = self.st
        opts = b""
        if st.timestamps:
            opts = b"\x01\x01\x08\x0a" + struct.pack("!II", st.ts_at(time.monotonic_ns()), self.ts_recent)
        flags = Seg.ACK | (Seg.PSH if payload else 0)
        window = st.window.rcv_wnd >> st.rcv_wscale
        hdr = struct.pack("!HHIIBBHHH", st.local_port, st.remote_port, seq, self.rcv_nxt,
                          (20 + len(opts)) // 4 << 4, flags, window, 0, 0) + opts
        pseudo = self.src + self.dst + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(hdr) + len(payload))
        csum = ~ipfrag.ones_sum16(pseudo + hdr + payload) & 0xFFFF
        tcp = hdr[:16] + csum.to_bytes(2, "big") + hdr[18:] + payload
        self.ident += 1
        ip = ipfrag.ipv4_header(self.src, self.dst, socket.IPPROTO_TCP, len(tcp), self.ident,
                                frag_off=ipfrag.IP_DF) + tcp
        self.wire.send("ab", eth_frame(B_MAC, A_MAC, ETH_P_IP, ip))

    # -- the application side
    def write(self, data: bytes, *, transmit: bool = True) -> None:
        """A's application writes through the engine; transmit=False keeps it queued."""
        mss = self.st.mss - (12 if self.st.timestamps else 0)
        with self.cond:
            self.written += data
            self.queued += data
            while transmit and self.queued:
                chunk = bytes(self.queued[:mss])
                assert seq_diff(seq_add(self.snd_nxt, len(chunk)), self.snd_una) <= self.snd_wnd, "B's window"
                del self.queued[:len(chunk)]
                self._emit(self.snd_nxt, chunk)
                self.snd_nxt = seq_add(self.snd_nxt, len(chunk))
                self.transmitted += len(chunk)

    def wait(self, cond, what: str, timeout: float = 5.0) -> None:
        with self.cond:
            assert self.cond.wait_for(cond, timeout), f"engine: timed out waiting for {what}"

    def handback(self) -> TcpState:
        with self.cond:
            return self.st.advanced(written=bytes(self.written), transmitted=self.transmitted,
                                    acked=seq_diff(self.snd_una, self.st.snd_una), received=bytes(self.received),
                                    snd_wnd=self.snd_wnd)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    sock.setblocking(True)
    sock.settimeout(5)
    got = b""
    while len(got) < n:
        chunk = sock.recv(n - len(got))
        assert chunk, "connection closed"
        got += chunk
    return got


@needs_linux
def test_handoff_to_engine_and_back():
    """A is handed to MiniEngine, which carries the connection on by itself (sends 20 kB
    that B acknowledges, receives 15 kB from B, sends 3 kB whose ACK it never sees and
    queues 5 kB it never sends), then hands back `advanced()`: the restored socket holds
    B's 15 kB for the application, retransmission state for the 3 kB (B's held ACK
    acknowledges it) and sends the 5 kB itself. Sequence numbers cross 2**32 meanwhile;
    B sees one continuous connection (no RST, no PAWS drop) and every byte once."""
    rng = rng_for("engine")
    out, back, tail, more = rng.randbytes(20000), rng.randbytes(15000), rng.randbytes(3000), rng.randbytes(5000)
    with two_namespaces() as (na, nb, wire):
        a, b = make_connected_pair(na, (A_IP, 0), nb, (B_IP, 0), 2**32 - 30000, 12345)
        exchange(a, b)
        wire.hold()
        state = freeze(a)
        release(a)
        engine = MiniEngine(wire, state)
        wire.hook = engine.on_frame
        wire.flush()

        engine.write(out)
        assert recv_exact(b, len(out)) == out
        engine.wait(lambda: engine.snd_una == engine.snd_nxt, "B's ACK")
        b.sendall(back)
        engine.wait(lambda: len(engine.received) == len(back), "B's data")
        wire.hold("ba")                     # B's ACK of `tail` stays on the wire
        engine.write(tail)
        engine.write(more, transmit=False)
        time.sleep(0.05)
        wire.hold("ab")
        wire.hook = None
        handed = engine.handback()
        assert seq_diff(handed.snd_una, state.snd_una) == len(out)
        assert handed.in_flight == len(tail) and handed.unsent == len(more)
        assert handed.send_queue == tail + more and handed.recv_queue == back
        assert handed.snd_una < state.snd_una, "sequence numbers did not wrap"

        a2 = restore(na, handed)
        wire.flush()
        assert recv_exact(a2, len(back)) == back
        assert recv_exact(b, len(tail) + len(more)) == tail + more
        exchange(a2, b, 100000)
        assert not any(s.flags & Seg.RST for s in wire.segs())
        assert nb.mib()["TcpExt.PAWSEstab"] == 0


# ============================================================================ pure checks

def sample_state(rng: random.Random) -> TcpState:
    return TcpState(
        local_ip=A_IP, local_port=40000, remote_ip=B_IP, remote_port=PORT,
        snd_una=2**32 - 5, send_queue=rng.randbytes(10), unsent=4,
        rcv_nxt=3, recv_queue=rng.randbytes(6),
        window=tcprepair.RepairWindow(snd_wl1=2**32 - 100, snd_wnd=65536, max_window=70000, rcv_wnd=64000,
                                      rcv_wup=2**32 - 50),
        mss=1460, wscale_ok=True, snd_wscale=7, rcv_wscale=9, sack_ok=True, timestamps=True,
        ts_val=2**32 - 2, ts_clock_ns=123_456_789_000, sndbuf=87040, rcvbuf=131072,
        info=tcprepair.CongestionInfo(10, 2**31 - 1, 150, 75, 201000, 0, 1448, 1448, 0))


def test_state_json_round_trip():
    """to_dict() -> JSON -> from_dict() gives the same state; the derived numbers in the
    dict are right and checked on the way back; inconsistent states are refused."""
    st = sample_state(rng_for("json"))
    d = json.loads(json.dumps(st.to_dict()))
    assert TcpState.from_dict(d) == st
    assert d["derived"] == {"write_seq": 5, "snd_nxt": 1, "copied_seq": 2**32 - 3,
                            "send_queue_len": 10, "recv_queue_len": 6}
    d["derived"]["snd_nxt"] = 2
    with pytest.raises(ValueError, match="derived"):
        TcpState.from_dict(d)
    no_info = TcpState.from_dict({k: v for k, v in st.to_dict().items() if k != "info"})
    assert no_info.info is None
    with pytest.raises(ValueError):
        TcpState(**{**st.__dict__, "unsent": 11})
    with pytest.raises(ValueError):
        TcpState(**{**st.__dict__, "snd_una": 2**32})
    # ms clock: 5 ms later, rounded up to even past the possibly lost bit 0, wrapped
    assert st.ts_at(st.ts_clock_ns + 5_000_000) == 4 and st.ts_at(None) == 0
    usec = TcpState(**{**st.__dict__, "ts_val": 1001})
    assert usec.ts_usec and usec.ts_at(st.ts_clock_ns + 5_000_000) == 6001 and usec.ts_at(None) == 1001


def test_advanced_arithmetic():
    """advanced(): the queues and sequence numbers move as Linux's would, across 2**32,
    and impossible moves are refused."""
    st = sample_state(rng_for("advanced"))
    new = st.advanced(written=b"abc", transmitted=7, acked=8, received=b"xyz", read=2, snd_wnd=80000)
    assert new.snd_una == 3 and new.send_queue == (st.send_queue + b"abc")[8:] and new.unsent == 0
    assert new.snd_nxt == new.write_seq == seq_add(st.write_seq, 3)
    assert new.rcv_nxt == 6 and new.recv_queue == (st.recv_queue + b"xyz")[2:]
    assert new.copied_seq == seq_add(st.copied_seq, 2)
    w = new.window
    assert (w.snd_wl1, w.snd_wnd, w.max_window, w.rcv_wnd, w.rcv_wup) == (6, 80000, 80000, 64000, 6)
    old_edge = seq_add(st.window.rcv_wup, st.window.rcv_wnd)
    assert seq_diff(seq_add(w.rcv_wup, w.rcv_wnd), old_edge) >= 0       # the right edge never moves left
    assert st.advanced() == st
    assert st.advanced(read=1).window == st.window                # reading alone sends nothing
    for bad in (dict(transmitted=5), dict(acked=7), dict(read=7), dict(written=b"x", transmitted=6)):
        with pytest.raises(ValueError):
            st.advanced(**bad)


def test_constants_match_headers():
    """Our constants equal what the installed headers define (when they define them)."""
    if not os.path.exists("/usr/include/linux/tcp.h"):
        pytest.skip("no kernel headers in /usr/include")
    found = tcprepair.header_constants()
    assert {"TCP_REPAIR", "TCP_REPAIR_WINDOW", "TCP_QUEUE_SEQ", "TCP_SEND_QUEUE", "SIOCOUTQNSD"} <= set(found)
    wrong = {k: (getattr(tcprepair, k), v) for k, v in found.items() if getattr(tcprepair, k) != v}
    assert not wrong, wrong
    print(f"{len(found)} constants checked against /usr/include")


@needs_linux
def test_tcp_info_layout():
    """The struct tcp_info offsets, against values got another way on a live socket."""
    with two_namespaces() as (na, nb, wire):
        a, b = handshake(na, nb, b_rcvbuf=8 << 10)
        exchange(a, b, 5000)
        a.setblocking(False)
        with pytest.raises(BlockingIOError):
            while True:
                a.send(b"z" * 65536)
        time.sleep(0.05)
        i = tcp_info(a)
        assert i.state == tcprepair.TCP_ESTABLISHED and i.pmtu == MTU
        assert i.snd_mss == a.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG) == MTU - 52
        assert i.notsent_bytes == tcprepair._ioctl_int(a, tcprepair.SIOCOUTQNSD) > 0
        assert i.bytes_received == 5000 and i.options & NEGOTIATED == NEGOTIATED
        assert i.snd_wscale == 0 and i.rcv_wscale > 0          # B's 8 kB buffer needs no scaling
        st = freeze(a)
        i = tcp_info(a)
        assert (i.snd_wnd, i.rcv_wnd) == (st.window.snd_wnd, st.window.rcv_wnd)
        tcprepair.thaw(a)
