"""offnic.ko in a Linux VM drives the simulated NIC (issue 19, increment 2): QEMU 11.1's
vfio-user-pci client, the NIC's cycle-accurate model on the fast harness behind our
vfio-user server (sim/offnic_sim/vm/), each NIC port bridged to a TAP device in a network
namespace. The guest (Debian 12's kernel, busybox) loads the real module, brings ports up
and talks to the namespace peers; what the guest saw comes back on its serial console and
is checked here, with the NIC's MSI-X and the TAPs' counters.

Needs root (chroot, namespaces, TAP) and Debian's archive for the VM pieces
(`./offnic vm setup`; the first run builds them, about a minute); skips otherwise. Each
test boots a VM against a model ~10,000x slower than a board: about 1 to 1.5 minutes
each. They are marked `vm`: `./offnic test -m vm` runs only them, `-m "not vm"` skips them.
"""
import re

import sys
from pathlib import Path

import cocotb
import pytest

from offnic_sim.harness.hw import Design
from offnic_sim.harness.runner import run_cocotb
from offnic_sim.vm import guest_output, image, session
from offnic_sim.vm.session import PeerSpec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "offload"))   # rss_model

NIC = Design.of("nic.Nic", addr_bits=24, board_id=0)
REASON = image.unavailable_reason()
pytestmark = [pytest.mark.vm, pytest.mark.skipif(REASON is not None, reason=f"VM unavailable: {REASON}")]

# The guest's helpers: the netdev of NIC port k is the k-th one offnic registers
# (no other NIC in the VM: QEMU runs with -nic none).
PRELUDE = r"""
set -u
insmod /lib/offnic.ko || { echo "insmod failed"; exit 10; }
n=0; while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 60 ]; do sleep 1; n=$((n+1)); done
echo "netdevs: $(ls /sys/class/net | tr '\n' ' ')"
"""


def report(dut, out: session.Outcome) -> None:
    dut._log.info(f"vm: guest exit {out.exit_code}; {out.wall_s:.1f} s wall, {out.sim_us:.0f} us simulated "
                  f"({out.sim_us_per_wall_s:.1f} us of NIC time per wall second); {out.stats}")
    print("---- guest console ----\n" + out.console[-6000:] + "\n---- end ----")


# RSS spreading: UDP flows from the peer (source ports FLOW_PORT0 + i) to a closed port of
# the guest, FLOW_DATAGRAMS each; the indirection table leaves queue 0 (the default queue,
# where non-IP frames such as ARP go) out, so queues 1..7 see only these flows.
FLOWS, FLOW_DATAGRAMS, FLOW_PORT0 = 24, 2, 40000
RSS_WEIGHTS = "0 2 1 1 1 1 1 1"


async def _release_guest(ns, port: int = 8081) -> None:
    """Connect to the guest's `nc -l -p port` from the peer namespace: it waits there."""
    import subprocess
    import sys
    from cocotb.triggers import Timer
    code = (f"import socket, time\nfor _ in range(600):\n    try:\n"
            f"        socket.create_connection(('192.0.2.2', {port}), timeout=10).close(); break\n"
            f"    except OSError:\n        time.sleep(0.5)\n")
    p = subprocess.Popen(["ip", "netns", "exec", ns.name, sys.executable, "-c", code])
    while p.poll() is None:
        await Timer(20, unit="us")


@cocotb.test()
async def probe_ping_ethtool(dut):
    """offnic.ko probes the NIC (BAR0 chain walk, MSI-X), port 0 comes up, the guest pings the
    namespace peer across the NIC (two vCPUs, so two MSI-X vectors: RSS's queues raise both);
    then the management interfaces, each checked against the
    NIC's registers as the host reads them: `ethtool -C` (moderation registers), `-X` (a
    random Toeplitz key: the key registers; a weighted indirection table: 24 UDP flows from
    the peer land on the RX queues the RSS reference model names for that key and table,
    counted per queue by `ethtool -S`), `-G` with the port up and again while it is down (the
    queues' ring-size registers; pings after each), `devlink dev info` (the fw block's version
    and state) and `offnic-ctl` (chain, registers read and written, misaligned and
    out-of-BAR offsets refused, counters, firmware log, cache, connections: none, the NIC
    has no TCP engine block)."""
    import random
    import subprocess
    import sys
    from cocotb.triggers import Timer
    from offnic_sim.host import regs
    from rss_model import toeplitz, tuple_bytes
    rx_frames, rx_usecs, tx_frames, tx_usecs = 7, 13, 5, 11
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    dut._log.info(f"seed {seed} (OFFNIC_SEED replays)")
    key = rng.randbytes(40)
    hkey = ":".join(f"{b:02x}" for b in key)
    total = FLOWS * FLOW_DATAGRAMS
    script = PRELUDE + rf"""
ip link set eth0 up || exit 11
ip addr add 192.0.2.2/24 dev eth0
ping -c 3 -W 60 -w 240 192.0.2.1 || exit 12
ethtool -i eth0 || exit 13
ethtool -C eth0 rx-frames {rx_frames} rx-usecs {rx_usecs} tx-frames {tx_frames} tx-usecs {tx_usecs} || exit 14
echo "ETHTOOL-SET"
ethtool -c eth0 || exit 15
ethtool -g eth0 || exit 16
ethtool -S eth0 | head -40
ping -c 2 -W 60 -w 240 192.0.2.1 || exit 17
ethtool -X eth0 hkey {hkey} weight {RSS_WEIGHTS} || exit 40
echo "RSS-TABLE"
ethtool -x eth0 || exit 41
np0=$(awk '/^Udp: [0-9]/ {{print $3}}' /proc/net/snmp)
echo "RSS-BEFORE"
ethtool -S eth0 | grep rxq
echo "FLOWS-READY"
n=0; while [ $n -lt 300 ]; do np=$(awk '/^Udp: [0-9]/ {{print $3}}' /proc/net/snmp); [ $((np - np0)) -ge {total} ] && break; sleep 1; n=$((n+1)); done
echo "RSS-AFTER"
ethtool -S eth0 | grep -e rxq -e restarts
ethtool -G eth0 rx 256 tx 128 || exit 42
echo "RINGS-UP"
offnic-ctl queues || exit 43
ping -c 2 -W 60 -w 240 192.0.2.1 || exit 44
ip link set eth0 down
ethtool -G eth0 rx 512 tx 512 || exit 45
ip link set eth0 up || exit 46
ping -c 2 -W 60 -w 240 192.0.2.1 || exit 47
echo "RINGS-DOWN-UP"
ethtool -g eth0
offnic-ctl queues || exit 48
echo "DEVLINK"
devlink dev info || exit 50
echo "OFFNIC-CTL"
offnic-ctl info || exit 51
offnic-ctl blocks || exit 52
echo "REG0 $(offnic-ctl read 0)"
offnic-ctl read 0x3; echo "MISALIGNED-RC $?"
offnic-ctl read 0x1000000; echo "BEYOND-BAR-RC $?"
fw=$(offnic-ctl blocks | awk '$2 == "fw" {{print $1}}')
offnic-ctl write $((fw + 0x48)) 5 || exit 53
echo "LOGINDEX $(offnic-ctl read $((fw + 0x48)))"
offnic-ctl fw || exit 54
offnic-ctl fw-log || exit 55
offnic-ctl cache || exit 56
offnic-ctl conns; echo "CONNS-RC $?"
offnic-ctl counters | grep -e port0.mac_rx_frames -e nic_rx_packets
grep -e '-eq' /proc/interrupts
dmesg | grep -i offnic | tail -20
echo "HOST-CHECK"
nc -l -p 8081 </dev/null >/dev/null || exit 60
"""
    seen = {}

    async def host_side(ctx):
        dev, ns = ctx["device"], ctx["ns"][0]

        async def reg(block, name: str) -> int:
            return await dev.bar.read_dword(dev.blocks[block.type_id][0] + block.regs[name].offset)

        while "ETHTOOL-SET" not in ctx["console"]():
            await Timer(20, unit="us")
        for name, block in (("rx", regs.RX_CQS), ("tx", regs.TX_CQS)):
            seen[name] = list(zip(await dev.read_records(block, "mod_count"),
                                  await dev.read_records(block, "mod_time_us")))
        while "FLOWS-READY" not in ctx["console"]():
            await Timer(20, unit="us")
        send = (f"import socket\nfor i in range({FLOWS}):\n"
                f"    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('192.0.2.1', {FLOW_PORT0} + i))\n"
                f"    [s.sendto(bytes(64), ('192.0.2.2', 9)) for _ in range({FLOW_DATAGRAMS})]\n    s.close()\n")
        subprocess.run(["ip", "netns", "exec", ns.name, sys.executable, "-c", send], check=True)
        while "RINGS-UP" not in ctx["console"]():
            await Timer(20, unit="us")
        seen["rx_ctrl_up"] = await dev.read_records(regs.RX_QUEUES, "control")
        seen["tx_ctrl_up"] = await dev.read_records(regs.TX_QUEUES, "control")
        while "HOST-CHECK" not in ctx["console"]():
            await Timer(20, unit="us")
        seen["key"] = b""
        for i in range(10):   # byte 4i in bits 31:24
            seen["key"] += (await reg(regs.RSS, f"key_{i}")).to_bytes(4, "big")
        seen["rx_ctrl"] = await dev.read_records(regs.RX_QUEUES, "control")
        seen["tx_ctrl"] = await dev.read_records(regs.TX_QUEUES, "control")
        seen["fw_version"] = await reg(regs.FW, "fw_version")
        seen["fw_state"] = await reg(regs.FW, "state")
        await _release_guest(ns)

    # two vCPUs: two MSI-X vectors and event queues, RX completion queues alternating between them
    out = await session.run(dut, script, [PeerSpec("192.0.2.1/24")], name="ping", timeout_s=1200, during=host_side,
                            smp=2)
    report(dut, out)
    dut._log.info(f"registers the host read: { {k: v for k, v in seen.items() if k != 'key'} }")
    assert out.exit_code == 0, f"guest script exit {out.exit_code}"
    assert " 0% packet loss" in out.console
    assert out.stats["device"]["msi"] > 0, "no MSI-X message reached the guest"
    vectors = out.stats["msi_per_vector"]
    assert sum(1 for n in vectors if n) >= 2, f"RSS traffic should raise both vCPUs' vectors: {vectors}"
    assert out.stats["taps"][0].get("rx_frames", 0) >= 3   # the echo requests crossed the NIC into Linux
    assert "driver: offnic" in out.console
    # -C: ethtool -c reads the driver's values; the registers show they reached the hardware
    assert f"rx-usecs: {rx_usecs}" in out.console and f"rx-frames: {rx_frames}" in out.console
    for name, want in (("rx", (rx_frames, rx_usecs)), ("tx", (tx_frames, tx_usecs))):
        assert want in seen.get(name, []), f"{name} CQ moderation {want} not in the NIC's registers: {seen.get(name)}"
    # -X: the key in the NIC's key registers; the flows spread as the model says for key and table
    assert seen.get("key") == key, f"RSS key registers {seen.get('key', b'').hex()} != {key.hex()}"
    table = guest_output.indir_table(out.console, "RSS-TABLE")
    assert table and set(table) == {1, 2, 3, 4, 5, 6, 7}, f"indirection table {table}"
    want = {q: 0 for q in range(8)}
    for i in range(FLOWS):
        h = toeplitz(key, tuple_bytes("192.0.2.1", "192.0.2.2", FLOW_PORT0 + i, 9))
        want[table[h % len(table)]] += FLOW_DATAGRAMS
    before = guest_output.rxq_packets(out.console, "RSS-BEFORE")
    after = guest_output.rxq_packets(out.console, "RSS-AFTER")
    got = {q: after.get(q, 0) - before.get(q, 0) for q in range(8)}
    dut._log.info(f"RSS: frames per RX queue {got}, the model's {want}")
    assert all(got[q] == want[q] for q in range(1, 8)), f"per-queue frames {got} != model {want}"
    assert sum(1 for q in range(1, 8) if got[q]) >= 3, f"the flows did not spread: {got}"
    # -G: ring sizes in the queues' registers (log_size, enable), with the port up, then after down/up
    log_size, enable = 0xF, 1 << 8
    for tag, rx_log, tx_log in (("_up", 8, 7), ("", 9, 9)):
        rx, tx = seen[f"rx_ctrl{tag}"], seen[f"tx_ctrl{tag}"]
        assert all(c & log_size == rx_log and c & enable for c in rx), f"RX queue controls {rx}"
        assert all(c & log_size == tx_log and c & enable for c in tx[:4]), f"port 0's TX queue controls {tx}"
    assert "rx 0: size 256 on" in out.console and "tx 0: size 128 on" in out.console
    assert out.console.count("2 packets transmitted, 2 packets received") >= 3
    # devlink and offnic-ctl against the fw block's registers
    v = seen["fw_version"]
    state = ("reset", "booting", "running", "running-no-toe")[seen["fw_state"]]
    assert re.search(rf"^\s+fw {v >> 16}\.{(v >> 8) & 0xFF}\.{v & 0xFF}$", out.console, re.M), "devlink: fw version"
    assert re.search(rf"^\s+fw\.state {state}$", out.console, re.M), f"devlink: fw.state {state}"
    assert "REG0 0x0ff10001" in out.console and "LOGINDEX 0x00000005" in out.console
    # bad offsets are refused by the driver (EINVAL), not read
    assert "MISALIGNED-RC 1" in out.console and "BEYOND-BAR-RC 1" in out.console
    assert out.console.count("offnic-ctl: read: Invalid argument") == 2
    assert f"fw_version: {v >> 16}.{(v >> 8) & 0xFF}.{v & 0xFF}" in out.console
    assert re.search(r"^#0 \d+ us boot\(1\)", out.console, re.M), "offnic-ctl fw-log: the boot record"
    if regs.TOE.type_id in chain_types(out):
        assert "CONNS-RC 0" in out.console
    else:
        assert "offloaded connections: none (unsupported" in out.console and "CONNS-RC 3" in out.console
    m = re.search(r"^port0\.mac_rx_frames: (\d+)$", out.console, re.M)
    assert m and int(m.group(1)) >= total, "offnic-ctl counters: port 0's received frames"
    assert "Call Trace" not in out.console and "BUG" not in out.console


def chain_types(out: session.Outcome) -> set[int]:
    """The block types of the chain, as `offnic-ctl blocks` printed them."""
    return {int(t, 16) for t in re.findall(r"^0x[0-9a-f]+ +\w+ +type (0x[0-9a-f]+)", out.console, re.M)}


def test_probe_ping_ethtool():
    run_cocotb(NIC, __name__, testcase="probe_ping_ethtool", fast=True)


# The peer's side of the TCP test, run inside its namespace: serve BLOB_BYTES of seeded
# random data on :8000; when told (argv fetch), fetch the guest's file from :8080, print
# its MD5 and release the guest's wait on :8081.
PEER = r"""
import hashlib, http.server, os, random, socket, socketserver, sys, threading, time, urllib.request
mode, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if mode == "serve":
    blob = random.Random(seed).randbytes(n)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.send_header("Content-Length", str(len(blob))); self.end_headers()
            self.wfile.write(blob)
        def log_message(self, *a): pass
    print("blob md5", hashlib.md5(blob).hexdigest(), flush=True)
    socketserver.TCPServer.allow_reuse_address = True
    http.server.HTTPServer(("0.0.0.0", 8000), H).serve_forever()
else:
    data = urllib.request.urlopen("http://192.0.2.2:8080/tx", timeout=600).read()
    print("fetched md5", hashlib.md5(data).hexdigest(), len(data), flush=True)
    for _ in range(600):
        try:
            socket.create_connection(("192.0.2.2", 8081), timeout=10).close(); break
        except OSError:
            time.sleep(0.5)
"""
BLOB_BYTES = 128 << 10
UDP_BYTES, UDP_COUNT = 8000, 5


@cocotb.test()
async def tcp_frag_reload(dut):
    """Bulk TCP both ways (the guest fetches 128 KB from the peer over HTTP, the peer fetches
    128 KB from the guest's busybox httpd; both compared by MD5); ICMP echoes of 4,000 B
    (IP fragments made by the guest's stack); the fragmentation offload: netdev MTU 9,000
    over the 1,500 B wire, 8,000 B echoes leave as one datagram the NIC cuts, and the
    peer's fragmented replies come back through the NIC's reassembly, and so do 8,000 B UDP
    datagrams, whose checksums the guest verifies (from the NIC's CHECKSUM_COMPLETE sum) before
    counting them at a closed port; then the module unloaded while HTTP downloads run
    through the port, loaded again, the port brought back up and pinging."""
    import hashlib
    import random
    import subprocess
    import sys
    from cocotb.triggers import Timer

    seed = random.getrandbits(32)
    blob_md5 = hashlib.md5(random.Random(seed).randbytes(BLOB_BYTES)).hexdigest()
    script = PRELUDE + rf"""
ip link set eth0 up || exit 11
ip addr add 192.0.2.2/24 dev eth0
n=0; until wget -q -O /tmp/rx http://192.0.2.1:8000/blob; do n=$((n+1)); [ $n -ge 5 ] && exit 20; sleep 2; done
echo "rx $(md5sum /tmp/rx)"
mkdir -p /www; dd if=/dev/urandom of=/www/tx bs=1024 count={BLOB_BYTES >> 10} 2>/dev/null
echo "tx $(md5sum /www/tx)"
httpd -p 8080 -h /www || exit 21
echo "HTTPD-READY"
nc -l -p 8081 </dev/null >/dev/null || exit 22
echo "PEER-DONE"
ping -c 2 -s 4000 -W 60 -w 240 192.0.2.1 || exit 23
echo "FRAG-OFFLOAD"
sysctl -w net.ipv4.ip_no_pmtu_disc=1 >/dev/null   # echoes without DF: the NIC refuses to cut DF datagrams
ip link set eth0 mtu 9000 || exit 24
ping -c 2 -s 8000 -W 60 -w 240 192.0.2.1 || exit 25
echo "UDP-READY"
n=0; while [ $n -lt 180 ]; do np=$(awk '/^Udp: [0-9]/ {{print $3}}' /proc/net/snmp); [ "$np" -ge {UDP_COUNT} ] && break; sleep 1; n=$((n+1)); done
grep '^Udp:' /proc/net/snmp
ethtool -S eth0 | grep -i -e frag -e reasm
ip link set eth0 mtu 1500
(while true; do wget -q -O /dev/null http://192.0.2.1:8000/blob; done) >/dev/null 2>&1 &
p=$!
a=$(cat /sys/class/net/eth0/statistics/rx_bytes); sleep 4; b=$(cat /sys/class/net/eth0/statistics/rx_bytes)
echo "UNLOAD-UNDER-TRAFFIC $a $b"
rmmod offnic || exit 30
kill $p
insmod /lib/offnic.ko || exit 31
n=0; while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 60 ]; do sleep 1; n=$((n+1)); done
ip link set eth0 up && ip addr add 192.0.2.2/24 dev eth0 || exit 32
ping -c 2 -W 60 -w 240 192.0.2.1 || exit 33
echo "RELOADED"
"""
    peer_out = {}

    async def peer(ctx):
        ns = ctx["ns"][0]
        cmd = ["ip", "netns", "exec", ns.name, sys.executable, "-c", PEER]
        server = subprocess.Popen([*cmd, "serve", str(seed), str(BLOB_BYTES)], stdout=subprocess.PIPE, text=True)
        try:
            while "HTTPD-READY" not in ctx["console"]():
                await Timer(20, unit="us")
            fetch = subprocess.Popen([*cmd, "fetch", "0", "0"], stdout=subprocess.PIPE, text=True)
            while fetch.poll() is None:
                await Timer(20, unit="us")
            peer_out["fetch"] = fetch.stdout.read()
            while "UDP-READY" not in ctx["console"]():
                await Timer(20, unit="us")
            # 8,000 B UDP datagrams to a closed port: fragmented by the peer's stack,
            # reassembled by the NIC; the guest counts each as NoPorts only if its UDP
            # checksum (CHECKSUM_COMPLETE from the NIC) is right, else InCsumErrors
            send = (f"import socket, random; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                    f"r = random.Random({seed}); "
                    f"[s.sendto(r.randbytes({UDP_BYTES}), ('192.0.2.2', 9)) for _ in range({UDP_COUNT})]")
            subprocess.run(["ip", "netns", "exec", ns.name, sys.executable, "-c", send], check=True)
            while "RELOADED" not in ctx["console"]():   # the server feeds the unload's traffic
                await Timer(20, unit="us")
        finally:
            server.kill()
            server.wait()

    out = await session.run(dut, script, [PeerSpec("192.0.2.1/24")], name="tcp", timeout_s=1200, during=peer)
    report(dut, out)
    print("peer:", peer_out)
    assert out.exit_code == 0, f"guest script exit {out.exit_code}"
    assert f"rx {blob_md5}" in out.console, "the guest received other bytes than the peer sent"
    tx = [line.split()[1] for line in out.console.splitlines() if line.startswith("tx ")]
    assert tx and f"fetched md5 {tx[0]} {BLOB_BYTES}" in peer_out.get("fetch", ""), \
        f"the peer received other bytes than the guest sent: {peer_out}"
    assert "4008 bytes from 192.0.2.1" in out.console      # 4,000 B echoes, cut by the stacks
    assert "8008 bytes from 192.0.2.1" in out.console      # 8,000 B echoes over a 9,000 B netdev MTU: cut by the NIC
    assert out.console.count("2 packets transmitted, 2 packets received") >= 3
    counters = {k: int(v) for k, v in re.findall(r"^\s+(nic_\w+): (\d+)$", out.console, re.M)}
    # the guest's two 8,008 B datagrams were cut by the NIC (6 fragments each), and the
    # peer's replies to both sizes reassembled by it (3 and 6 fragments each)
    assert counters.get("nic_tx_frag_datagrams", 0) >= 2 and counters.get("nic_tx_frag_fragments", 0) >= 12, counters
    assert counters.get("nic_reasm_reassembled", 0) >= 4 + UDP_COUNT, counters
    assert counters.get("nic_reasm_fragments", 0) >= 18 + 6 * UDP_COUNT, counters
    udp = [line.split() for line in out.console.splitlines() if line.startswith("Udp:")]
    udp = dict(zip(udp[0][1:], map(int, udp[1][1:]))) if len(udp) >= 2 else {}
    assert udp.get("NoPorts", 0) >= UDP_COUNT and udp.get("InCsumErrors", 1) == 0, f"guest UDP counters {udp}"
    assert counters.get("nic_tx_frag_refused", 1) == 0 and counters.get("nic_reasm_bad_checksum", 1) == 0, counters
    m = re.search(r"UNLOAD-UNDER-TRAFFIC (\d+) (\d+)", out.console)
    assert m and int(m.group(2)) > int(m.group(1)), "no traffic was flowing when the module was unloaded"
    assert "RELOADED" in out.console
    assert "Call Trace" not in out.console and "BUG" not in out.console


def test_tcp_frag_reload():
    run_cocotb(NIC, __name__, testcase="tcp_frag_reload", fast=True)
