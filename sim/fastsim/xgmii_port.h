// One Ethernet port's far end at the MAC's 64-bit XGMII (issue 21, docs: fastsim-spec).
// Transmit side (frames into the NIC): the same words, cycle for cycle, as cocotbext-eth
// 0.1.28's XgmiiSource with NicTB's settings (IFG 12, deficit idle count on, start in lane
// 0 or 4, preamble + SFD, FCS). Receive side (what the NIC sends): decoded as XgmiiSink
// does (start in lane 0 or 4, terminate in any lane, other control characters end the
// frame and are flagged), FCS checked.
// For the wrapper: while the port's MAC reset is high XgmiiSource drives rxd = 0, rxc = 0
// (not idles); tick() from the first rising edge that sees the reset low. Frame cycles are
// tick() counts in the MAC clock (cycle() at that edge), not core cycles. NicTB's Port.reset
// keeps XgmiiSource's queue; reset() here drops it (the spec's choice).
// Checked word for word against the references: tests/fast/test_xgmii_port.py.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace fastsim {

struct EthFrame {
  std::vector<uint8_t> data;  // destination MAC .. payload: preamble, SFD and FCS removed
  bool fcs_ok;
  uint64_t start_cycle, end_cycle;  // ticks (cycle() values) of the START and the end lane
  // Added beyond the spec: a control character other than TERMINATE ended the frame
  // (XgmiiSink keeps it in the frame; here it is flagged and counted instead).
  bool ctrl_error = false;
  uint8_t start_lane = 0, end_lane = 0;  // lanes of the START and of the ending character
};

// A frame sent into the NIC, whole: the tick and lane of its TERMINATE (XgmiiSource's
// sim_time_end = that edge + lane * period / 8).
struct TxDone {
  uint64_t cycle;
  uint8_t lane;
};

struct XgmiiCounters {
  uint64_t tx_frames = 0, tx_bytes = 0;      // into the NIC; bytes with FCS, no preamble
  uint64_t tx_bad_fcs = 0;                   // sent with a corrupted FCS on request
  uint64_t rx_frames = 0, rx_bytes = 0;      // from the NIC; bytes with FCS, no preamble
  uint64_t rx_bad_fcs = 0, rx_error_chars = 0, rx_runts = 0;  // runt: < 4 bytes after SFD
};

class XgmiiPort {
 public:
  XgmiiPort();
  void reset();  // idle; frames queued or in flight are dropped
  // Into the NIC: payload without FCS; padded to 60 B unless !pad; FCS appended
  // (its last byte inverted if bad_fcs, as NicTB's Port.send does).
  void send(const uint8_t* d, size_t n, bool pad, bool bad_fcs);
  // Each MAC clock rising edge: txd/txc are the NIC's transmit words before the edge;
  // *rxd/*rxc the words we drive into the NIC from this edge on.
  void tick(uint64_t txd, uint8_t txc, uint64_t* rxd, uint8_t* rxc);
  bool recv(EthFrame* out);  // oldest frame the NIC sent
  size_t tx_pending() const;  // frames queued or on the wire
  size_t tx_queued() const { return txq_.size(); }  // XgmiiSource.count(): not yet started
  size_t tx_done_pending() const { return tx_done_.size(); }
  bool tx_done_pop(TxDone* out);  // oldest frame sent whole, not yet reported
  size_t rx_pending() const;
  uint64_t cycle() const;    // ticks since construction or reset()
  const XgmiiCounters& counters() const { return cnt_; }

 private:
  void tx_word(uint64_t* d, uint8_t* c);
  void rx_word(uint64_t d, uint8_t c);
  void rx_finish(uint64_t lane_cycle, bool ctrl_error);

  uint64_t cycle_ = 0;
  XgmiiCounters cnt_;
  // transmit (XgmiiSource's state)
  std::deque<std::vector<uint8_t>> txq_;  // wire bytes: preamble, SFD, frame, FCS
  std::vector<uint8_t> cur_d_, cur_c_;   // the frame on the wire as lanes (with START/TERM)
  size_t cur_off_ = 0, cur_start_ = 0;  // next lane; the START's lane in cur_d_
  bool cur_active_ = false;
  std::deque<TxDone> tx_done_;
  int ifg_cnt_ = 0, deficit_ = 0;
  // receive (XgmiiSink's state)
  bool rx_in_frame_ = false;
  std::vector<uint8_t> rx_buf_;  // bytes after START: preamble rest, SFD, frame, FCS
  EthFrame rx_cur_;
  std::deque<EthFrame> rxq_;
};

}  // namespace fastsim
