"""The Python BASE-R reference (sim/offnic_sim/phy/baser.py) on its own, no simulator:
the scrambler against the serial definition, every block type round trip, the state
machines' error paths, and the whole chain with gearbox and block lock through slips."""
import random

import pytest

from offnic_sim.phy import baser as b


def serial_scramble(bits, state):
    """Bit by bit, as 49.2.6 draws it: a 58-stage shift register of scrambled bits."""
    out = []
    for x in bits:
        s = x ^ state[38] ^ state[57]
        state = [s] + state[:-1]
        out.append(s)
    return out, state


def test_scrambler_matches_serial_definition():
    rng = random.Random(1)
    scr, desc = b.Scrambler(), b.Descrambler()
    state = [0] * 58
    for _ in range(200):
        w = rng.getrandbits(64)
        bits, state = serial_scramble([(w >> i) & 1 for i in range(64)], state)
        s = scr.step(w)
        assert s == sum(v << i for i, v in enumerate(bits))
        assert desc.step(s) == w


def test_descrambler_self_synchronises():
    scr, desc = b.Scrambler(state=0x123456789), b.Descrambler(state=0)
    words = [random.Random(2).getrandbits(64) for _ in range(4)]
    out = [desc.step(scr.step(w)) for w in words]
    assert out[0] != words[0] and out[1:] == words[1:]


def word(chars):
    """Eight lanes, each an int (data) or a str naming a control character."""
    names = {"I": b.X_IDLE, "S": b.X_START, "T": b.X_TERM, "E": b.X_ERROR, "Q": b.X_SEQ, "F": b.X_SIG,
             "L": b.X_LPI, "R": 0x1C}
    d = c = 0
    for i, ch in enumerate(chars):
        if isinstance(ch, str):
            d |= names[ch] << (8 * i)
            c |= 1 << i
        else:
            d |= ch << (8 * i)
    return d, c


VALID = {
    0x1E: ["I"] * 4 + ["L", "R", "I", "I"],
    0x2D: ["I", "I", "E", "I", "Q", 1, 2, 3],
    0x33: ["I", "I", "I", "I", "S", 0x55, 0x55, 0x55],
    0x66: ["Q", 0, 0, 1, "S", 0x55, 0x55, 0x55],
    0x55: ["Q", 0, 0, 1, "F", 4, 5, 6],
    0x78: ["S"] + [0x55] * 6 + [0xD5],
    0x4B: ["Q", 7, 8, 9, "I", "E", "I", "I"],
}
for k, t in enumerate([0x87, 0x99, 0xAA, 0xB4, 0xCC, 0xD2, 0xE1, 0xFF]):
    VALID[t] = list(range(0x10, 0x10 + k)) + ["T"] + ["I"] * (7 - k)


@pytest.mark.parametrize("btype", sorted(VALID))
def test_every_block_type_round_trips(btype):
    d, c = word(VALID[btype])
    kind, block = b.encode(d, c)
    assert block[0] == b.SYNC_CTRL and block[1] & 0xFF == btype
    assert b.decode(block) == (kind, (d, c))


def test_invalid_words_and_blocks_are_errors():
    for chars in (["I", "E"] + ["I"] * 6,            # /E/ among idles: no C block carries it
                  ["S"] + [0] * 6 + ["I"],            # start not followed by data
                  [1, 2, "T", 3] + ["I"] * 4,         # data after /T/
                  ["I", "S"] + [0] * 6,               # start in lane 1
                  ["I"] * 7 + [0xAB] if False else ["I"] * 4 + [0xAB] + ["I"] * 3,  # data among controls
                  [0x01, "I"] + ["I"] * 6):           # data then idle without /T/
        assert b.encode(*word(chars))[0] == "E", chars
    for header in (0, 3):
        assert b.decode((header, 0x1E))[0] == "E"
    assert b.decode((b.SYNC_CTRL, 0x00))[0] == "E"          # no such block type
    assert b.decode((b.SYNC_CTRL, 0x1E | (0x01 << 8)))[0] == "E"  # no such control code
    assert b.decode((b.SYNC_CTRL, 0x55 | (0x3 << 32)))[0] == "E"  # no such O code
    assert b.decode(b.ERROR_BLOCK) == ("E", b.ERROR_WORD)


def test_state_machines_reject_out_of_sequence():
    tx = b.TxCoder()
    start = word(["S"] + [0x55] * 6 + [0xD5])
    seq = [word(["I"] * 8), word([5] * 8), start, word(["I"] * 8), start, word([1] * 8), start,
           word(["T"] + ["I"] * 7)]
    kinds = [tx.step(*w) for w in seq]
    assert kinds[1] == b.ERROR_BLOCK  # data after idle
    assert kinds[2] == b.ERROR_BLOCK  # a start right after an error block (TX_E: S -> TX_E)
    assert b.ERROR_BLOCK not in kinds[3:6]
    assert kinds[6] == b.ERROR_BLOCK  # start inside a frame
    assert kinds[7] != b.ERROR_BLOCK  # /T/ after an error is fine
    rx = b.RxCoder()
    blocks = [b.encode(*w)[1] for w in (word(["S"] + [0x55] * 6 + [0xD5]), word([1] * 8),
                                        word([2, "T"] + ["I"] * 6), word([3] * 8), word(["I"] * 8))]
    out = [rx.step(x) for x in blocks]
    assert out[0] is None and out[1][1] == 0x01 and out[2] == (0x0101010101010101, 0)
    assert out[3] == b.ERROR_WORD  # /T/ followed by data
    assert out[4] == (0x0303030303030303, 0)  # RX_E -> RX_D on data: the frame is marked already


@pytest.mark.parametrize("slip_at", [None, 300, 301])
def test_chain_locks_and_relocks_after_a_slip(slip_at):
    rng = random.Random(3)
    words = [word(["I"] * 8)] * 200 + [word(["Q", rng.randrange(256), 0, 0] + ["I"] * 4) for _ in range(600)]
    it = iter(words)
    tx, rx = b.TxPcs(lambda: next(it)), b.RxPcs()
    for cycle in range(700):
        if cycle == slip_at:
            tx.gearbox.drop_bits(1 if slip_at % 2 == 0 else -1)
        rx.push(tx.word())
    assert rx.lock.lock
    assert rx.lock.losses == (0 if slip_at is None else 1)
    got = rx.words[-100:]
    assert all(w in words for w in got)
