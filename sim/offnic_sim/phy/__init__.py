"""The 10GBASE-R / 25GBASE-R PCS as a Python reference (IEEE 802.3 clause 49): the 64b/66b
code, scrambling, the gearbox between 66-bit blocks and a 64-bit serdes word, block lock
(baser.py), and cocotb drivers for a PCS's serdes side built on it (serdes.py)."""
