"""Handoffs per second through the host interface (issue 17): `./offnic bench toe --part nic`'s
`handoffs` case, run inside toe_nic_bench's simulation (its `Bench`: the whole NIC with the
engine on the fast harness, host memory behind 1 us reads).

Every command is a TX descriptor on a queue of its own (toe_cmdq.ToeQueue; completions
unmoderated: one per command, at once), and every answer is read from its block in host
memory, as a driver would:

- **sequential**: one connection at a time, as a host hands a live socket over: reserve,
  complete (the two-phase install: the host freezes its socket between them), then
  restore; the latency of each command from the doorbell to its completion seen by the
  driver, and the handoffs per second one at a time make.
- **pipelined**: `n` one-phase installs posted with one doorbell, then their `n` restores
  with one doorbell (ids from the installs' completions): the commands per second the NIC
  takes when the host never waits. (A two-phase install cannot be pipelined: complete
  names the id that reserve's answer gives.)

`command_flood` is Table 1's "commands" load: the same pipelined installs and restores,
round after round, while the host packets cross the NIC (toe_nic_bench.table1_phase), so
the host packets' delay shows whether handoff commands ever go ahead of them.

Each answer is checked: status OK, the id live (then not), the restored state and
addresses what was installed (no traffic in between: snd_nxt, rcv_nxt, the windows). The
NIC is otherwise idle; the driver model costs no CPU time (a real driver's socket freeze
and TCP_REPAIR calls are not counted).
"""
from __future__ import annotations

from offnic_sim.host.rings import Desc
from offnic_sim.toe.toe_cmdq import BLOCK_BYTES, OP_BASE, ToeQueue, pack_block, status_of, unpack_block
from offnic_sim.toe.toe_model import handoff_tcb
from offnic_sim.toe.toe_window import OP_COMPLETE, OP_INSTALL, OP_RESERVE, OP_RESTORE, ST_OK, conn_addr

CMD_QUEUE = 2          # the bench's ports use TX queues 0 and 1
RING = 4096            # each connection's send and receive ring (no data moves)


def _stats(v: list[float]) -> dict:
    s = sorted(v)
    return {"median_us": round(s[len(s) // 2] / 1000, 3), "p99_us": round(s[min(len(s) - 1, int(len(s) * 0.99))] / 1000, 3),
            "min_us": round(s[0] / 1000, 3), "n": len(s)}


def _check_restored(c, ans: dict, what: str) -> None:
    t, hs = ans["tcb"], c.hs
    assert (t.snd_nxt, t.snd_una, t.rcv_nxt) == (hs.snd_nxt, hs.snd_una, hs.rcv_nxt), (what, t, hs)
    assert ans["addr"] == conn_addr(c.key, c.hs), (what, ans["addr"])


async def open_cmd_queue(drv) -> None:
    """The commands' TX queue (unmoderated completions), once per simulation."""
    if CMD_QUEUE not in drv.queues["tx"]:
        await drv.open_tx_queue(CMD_QUEUE, size=256, port=0, mod_count=1, mod_time_us=0)


async def run_handoffs(b, cfg: dict, now_ns) -> dict:
    drv = b.drv
    await open_cmd_queue(drv)
    cq = ToeQueue(drv, CMD_QUEUE)
    n_seq, n_pipe = cfg.get("handoff_seq", 32), cfg.get("handoff_pipe", 48)
    before = await b.regs()
    b.tap.bucket = "handoffs"          # PCIe bytes of every command from here on
    conns = [b.new_conn(1000 + k, 0, mss=1448, ts=True, snd_size=RING, rcv_size=RING, stream_len=0)
             for k in range(max(n_seq, n_pipe))]

    # ---- Sequential: reserve, complete, restore, one connection at a time.
    lat = {"reserve": [], "complete": [], "restore": [], "handoff_cycle": []}
    t_seq0 = now_ns()
    for c in conns[:n_seq]:
        addr, tcb = conn_addr(c.key, c.hs), handoff_tcb(c.hs, b.eparams)
        t0 = now_ns()
        r = await cq.command(OP_RESERVE, 0, 0, None, addr)
        t1 = now_ns()
        assert r["status"] == ST_OK, ("reserve", r)
        cid = r["id"]
        r = await cq.command(OP_COMPLETE, cid, c.hs.ts_val, tcb, addr)
        t2 = now_ns()
        assert r["status"] == ST_OK and r["id"] == cid, ("complete", r)
        r = await cq.command(OP_RESTORE, cid)
        t3 = now_ns()
        assert r["status"] == ST_OK and r["id"] == cid, ("restore", r)
        _check_restored(c, r, "sequential")
        lat["reserve"].append(t1 - t0)
        lat["complete"].append(t2 - t1)
        lat["restore"].append(t3 - t2)
        lat["handoff_cycle"].append(t3 - t0)
    seq_ns = now_ns() - t_seq0

    # ---- Pipelined: n installs with one doorbell, then their n restores with one.
    blocks = [drv.alloc(256, 256) for _ in range(n_pipe)]
    t0 = now_ns()
    t1 = t0 + await pipelined_round(b, conns[:n_pipe], blocks, now_ns)
    t2 = now_ns()

    after = await b.regs()
    tot = b.tap.totals("handoffs")
    b.tap.bucket = None
    pcie = tot["up"] + tot["down"]
    n_cmds = 3 * n_seq + 2 * n_pipe
    moved = {k: after[k] - before[k] for k in ("cmdq_commands", "cmdq_refused", "cmdq_bad_desc", "cmdq_block_errors",
                                              "table_inserts", "table_deletes")}
    assert moved["cmdq_commands"] == n_cmds and moved["cmdq_refused"] == moved["cmdq_bad_desc"] == \
        moved["cmdq_block_errors"] == 0, moved
    assert moved["table_inserts"] == moved["table_deletes"] == n_seq + n_pipe and after["connections"] == 0, moved
    return {
        "sequential": {k: _stats(v) for k, v in lat.items()} | {
            "connections": n_seq, "handoffs_per_s": round(n_seq / (seq_ns / 1e9)),
            "what": "reserve + complete + restore, one connection at a time, each command waited for"},
        "pipelined": {"connections": n_pipe, "installs_per_s": round(n_pipe / ((t1 - t0) / 1e9)),
                      "restores_per_s": round(n_pipe / ((t2 - t1) / 1e9)),
                      "handoffs_per_s": round(n_pipe / ((t2 - t0) / 1e9)),
                      "install_batch_us": round((t1 - t0) / 1000, 2), "restore_batch_us": round((t2 - t1) / 1000, 2),
                      "what": "one-phase installs with one doorbell, then their restores with one"},
        "pcie_bytes_per_command": round(pcie / n_cmds, 1),
        "counters": moved,
    }


async def pipelined_round(b, conns: list, blocks: list, now_ns) -> float:
    """One install per connection behind one doorbell (its command block in `blocks`), then
    their restores behind one; every answer checked (status, id, the install's addresses,
    the restored state). Returns the installs' time (ns)."""
    drv = b.drv
    for c, blk in zip(conns, blocks):
        blk.write(0, pack_block(handoff_tcb(c.hs, b.eparams), conn_addr(c.key, c.hs)))
    t0 = now_ns()
    toks = await drv.send_descs_batch(CMD_QUEUE, [([Desc.with_arg(blk.addr, 0, OP_BASE + OP_INSTALL, c.hs.ts_val)], None)
                                                  for c, blk in zip(conns, blocks)])
    cpls = [await t.wait(20000) for t in toks]
    t_install = now_ns() - t0
    ids = []
    for c, cpl, blk in zip(conns, cpls, blocks):
        assert status_of(cpl.status) == ST_OK, ("pipelined install", c.k, cpl)
        ids.append(cpl.len)
        ans = unpack_block(blk.read(0, BLOCK_BYTES))    # the install's answer, in its block
        assert ans["addr"] == conn_addr(c.key, c.hs), ("install answer", ans)
    assert len(set(ids)) == len(conns), ids
    for blk in blocks:
        blk.write(0, bytes(BLOCK_BYTES))
    toks = await drv.send_descs_batch(CMD_QUEUE, [([Desc.with_arg(blk.addr, cid, OP_BASE + OP_RESTORE, 0)], None)
                                                  for cid, blk in zip(ids, blocks)])
    for c, cid, t, blk in zip(conns, ids, toks, blocks):
        cpl = await t.wait(20000)
        assert status_of(cpl.status) == ST_OK and cpl.len == cid, ("pipelined restore", c.k, cpl)
        _check_restored(c, unpack_block(blk.read(0, BLOCK_BYTES)), "pipelined")
    return t_install


async def command_flood(b, stop, batch: int = 16) -> dict:
    """Installs and restores, `batch` of each per doorbell, until `stop()` (pipelined_round,
    every answer checked). Returns the commands done and their rounds."""
    drv = b.drv
    await open_cmd_queue(drv)
    conns = [b.new_conn(2000 + k, 0, mss=1448, ts=True, snd_size=RING, rcv_size=RING, stream_len=0)
             for k in range(batch)]
    blocks = [drv.alloc(256, 256) for _ in range(batch)]
    done = rounds = 0
    while not stop():
        await pipelined_round(b, conns, blocks, lambda: 0.0)
        done += 2 * batch
        rounds += 1
    return {"commands": done, "rounds": rounds}
