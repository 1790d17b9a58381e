"""The driver's part of a reassembled datagram (docs/frag.md): where the NIC places it in
a reassembly buffer, and the header fix-up the completion asks for."""
from __future__ import annotations

from offnic_sim.net import ipfrag

PAYLOAD_AT = 78                                  # ReasmLayout.PayloadAt
BUFFER_BYTES = PAYLOAD_AT + ipfrag.IP_MAX_LEN - 20   # 65,593: the largest datagram's place


def rebuild(buffer: bytes, start: int, frame_len: int, ecn: int, df: bool) -> bytes:
    """The driver's part of a reassembled datagram's completion: the frame is
    buffer[start : start + frame_len], headers as the offset-0 fragment brought them; set
    the IP total length, clear the fragment field (DF as the completion says), OR in the
    ECN bits and recompute the header checksum (what Linux's ip_frag_reasm does)."""
    frame = bytearray(buffer[start:start + frame_len])
    h = 18 if frame[12:14] == b"\x81\x00" else 14
    ihl = (frame[h] & 15) * 4
    frame[h + 1] |= ecn
    frame[h + 2:h + 4] = (frame_len - h).to_bytes(2, "big")
    frame[h + 6:h + 8] = (ipfrag.IP_DF if df else 0).to_bytes(2, "big")
    frame[h:h + ihl] = ipfrag.with_checksum(frame[h:h + ihl])
    return bytes(frame)
