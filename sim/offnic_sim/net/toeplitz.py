"""The Toeplitz hash as the hardware computes it (hw: offload.Toeplitz): shared by the
reassembler's and the connection table's models."""
from __future__ import annotations


def toeplitz(data: int, bits: int, hash_key: int, width: int, key_bits: int) -> int:
    """Output bit j: parity of data AND key bits j .. j+width-1 (MSB first) of a
    `key_bits`-bit key (hw: offload.Toeplitz.window)."""
    mask = (1 << width) - 1
    out = 0
    for j in range(bits):
        window = (hash_key >> (key_bits - width - j)) & mask
        out |= (bin(data & window).count("1") & 1) << j
    return out
