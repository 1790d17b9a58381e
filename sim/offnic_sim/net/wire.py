"""Ethernet wire arithmetic at a port's line rate: what a frame costs on the wire beyond
its own bytes (IEEE 802.3: 8 bytes of preamble and SFD before it, at least 12 of
inter-frame gap after it)."""
LINE_GBPS = 25.0            # a 25GBASE-R port's data rate
PRE = 8                     # preamble + SFD bytes before a frame's first byte
IFG = 12                    # minimum inter-frame gap, bytes
WIRE_OVERHEAD = PRE + IFG   # 20 bytes per frame beyond the frame (with its FCS)
