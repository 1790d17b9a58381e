// XgmiiPort: see xgmii_port.h. The transmit state machine follows XgmiiSource._run of
// cocotbext-eth 0.1.28 (read, not copied): a frame starts in lane 0, or in lane 4 when
// the deficit idle count allows it; after a frame the IFG is counted in bytes and a
// deficit of up to 3 idles is carried into the next gap.
#include "xgmii_port.h"

#include <algorithm>
#include <cstring>

namespace fastsim {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "XGMII lanes are copied as bytes of a word");

namespace {

constexpr uint8_t kIdle = 0x07, kStart = 0xFB, kTerm = 0xFD;
constexpr uint8_t kPre = 0x55, kSfd = 0xD5;
constexpr int kLanes = 8;
constexpr int kIfg = 12;          // XgmiiSource's default ifg (NicTB keeps it)
constexpr size_t kMinLen = 60;    // XgmiiFrame.from_payload(min_len=60)
constexpr uint64_t kIdleWord = 0x0707070707070707ull;

// zlib's CRC-32 (reflected 0xEDB88320), the FCS XgmiiFrame computes with zlib.crc32;
// sliced by 8 bytes, since every frame is summed once each way at line rate.
struct CrcTable {
  uint32_t t[8][256];
  CrcTable() {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
      for (int s = 1; s < 8; s++) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
};
const CrcTable kCrc;

uint32_t crc32(const uint8_t* d, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (; n >= 8; n -= 8, d += 8) {
    uint32_t lo = c ^ (uint32_t(d[0]) | uint32_t(d[1]) << 8 | uint32_t(d[2]) << 16 | uint32_t(d[3]) << 24);
    c = kCrc.t[7][lo & 0xFF] ^ kCrc.t[6][(lo >> 8) & 0xFF] ^ kCrc.t[5][(lo >> 16) & 0xFF] ^
        kCrc.t[4][lo >> 24] ^ kCrc.t[3][d[4]] ^ kCrc.t[2][d[5]] ^ kCrc.t[1][d[6]] ^ kCrc.t[0][d[7]];
  }
  for (; n; n--, d++) c = kCrc.t[0][(c ^ *d) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

}  // namespace

XgmiiPort::XgmiiPort() {
  rx_buf_.reserve(16384);  // a jumbo frame without reallocation
  reset();
}

void XgmiiPort::reset() {
  cycle_ = 0;
  txq_.clear();
  cur_d_.clear();
  cur_c_.clear();
  cur_off_ = 0;
  cur_active_ = false;
  tx_done_.clear();
  ifg_cnt_ = 0;
  deficit_ = 0;
  rx_in_frame_ = false;
  rx_buf_.clear();
  rxq_.clear();
}

void XgmiiPort::send(const uint8_t* d, size_t n, bool pad, bool bad_fcs) {
  std::vector<uint8_t> f;
  size_t len = std::max(n, pad ? kMinLen : size_t(0));
  f.reserve(8 + len + 4);
  f.insert(f.end(), 7, kPre);
  f.push_back(kSfd);
  f.insert(f.end(), d, d + n);
  f.resize(8 + len, 0);
  uint32_t fcs = crc32(f.data() + 8, len);
  for (int k = 0; k < 4; k++) f.push_back(uint8_t(fcs >> (8 * k)));
  if (bad_fcs) {  // NicTB's Port.send inverts the FCS's last byte
    f.back() ^= 0xFF;
    cnt_.tx_bad_fcs++;
  }
  cnt_.tx_frames++;
  cnt_.tx_bytes += len + 4;
  txq_.push_back(std::move(f));
}

void XgmiiPort::tx_word(uint64_t* d, uint8_t* c) {
  if (ifg_cnt_ + deficit_ > kLanes - 1) {
    // still in the gap after a frame: a whole idle word, the deficit shrinks by what
    // this word gave beyond the IFG
    ifg_cnt_ -= kLanes;
    if (ifg_cnt_ < 0) {
      deficit_ = std::max(deficit_ + ifg_cnt_, 0);
      ifg_cnt_ = 0;
    }
  } else if (!cur_active_) {
    if (!txq_.empty()) {
      std::vector<uint8_t>& f = txq_.front();
      cur_d_.clear();
      cur_c_.clear();
      // start in lane 4 when the gap so far is long enough to keep the deficit <= 3
      int min_ifg = 3 - deficit_;
      if (ifg_cnt_ > min_ifg) {
        ifg_cnt_ -= 4;
        cur_d_.assign(4, kIdle);
        cur_c_.assign(4, 1);
      }
      cur_start_ = cur_d_.size();
      cur_d_.push_back(kStart);
      cur_c_.push_back(1);
      cur_d_.insert(cur_d_.end(), f.begin() + 1, f.end());
      cur_c_.resize(cur_d_.size(), 0);
      cur_d_.push_back(kTerm);
      cur_c_.push_back(1);
      txq_.pop_front();
      deficit_ = std::max(deficit_ + ifg_cnt_, 0);
      ifg_cnt_ = 0;
      cur_off_ = 0;
      cur_active_ = true;
    } else {
      deficit_ = 0;
      ifg_cnt_ = 0;
    }
  }
  if (!cur_active_) {
    *d = kIdleWord;
    *c = 0xFF;
    return;
  }
  uint64_t dv = 0;
  uint8_t cv = 0;
  if (cur_off_ > cur_start_ && cur_off_ + kLanes < cur_d_.size()) {
    // eight data lanes: past the START, before the TERMINATE (the last lane of the frame)
    std::memcpy(&dv, &cur_d_[cur_off_], kLanes);  // lane k = byte k (little-endian host)
    cur_off_ += kLanes;
    *d = dv;
    *c = cv;
    return;
  }
  for (int k = 0; k < kLanes; k++) {
    if (cur_active_) {
      dv |= uint64_t(cur_d_[cur_off_]) << (8 * k);
      cv |= uint8_t(cur_c_[cur_off_] << k);
      if (++cur_off_ >= cur_d_.size()) {
        ifg_cnt_ = std::max(kIfg - (kLanes - k), 0);
        cur_active_ = false;
        tx_done_.push_back(TxDone{cycle_, static_cast<uint8_t>(k)});
      }
    } else {
      dv |= uint64_t(kIdle) << (8 * k);
      cv |= uint8_t(1 << k);
    }
  }
  *d = dv;
  *c = cv;
}

void XgmiiPort::rx_finish(uint64_t lane_cycle, bool ctrl_error) {
  // XgmiiFrame.check_fcs/get_payload on the bytes from the START on (START read as a
  // preamble byte): payload after the first SFD, FCS the last 4 bytes
  EthFrame& f = rx_cur_;
  f.end_cycle = lane_cycle;
  f.ctrl_error = ctrl_error;
  const std::vector<uint8_t>& b = rx_buf_;
  auto sfd = std::find(b.begin(), b.end(), kSfd);
  f.data.clear();
  f.fcs_ok = false;
  if (sfd == b.end()) {
    cnt_.rx_runts++;
  } else {
    size_t pre = size_t(sfd - b.begin()) + 1;
    size_t end = b.size() >= 4 ? b.size() - 4 : 0;
    if (end > pre) f.data.assign(b.begin() + pre, b.begin() + end);
    if (b.size() >= 4 && b.size() - pre >= 4) {
      uint32_t c = crc32(f.data.data(), f.data.size());
      f.fcs_ok = true;
      for (int k = 0; k < 4; k++)
        if (b[b.size() - 4 + k] != uint8_t(c >> (8 * k))) f.fcs_ok = false;
    } else {
      cnt_.rx_runts++;
    }
    cnt_.rx_bytes += b.size() - pre;
  }
  cnt_.rx_frames++;
  if (!f.fcs_ok) cnt_.rx_bad_fcs++;
  rxq_.push_back(std::move(f));
  rx_cur_ = EthFrame();
  rx_buf_.clear();
  rx_in_frame_ = false;
}

void XgmiiPort::rx_word(uint64_t d, uint8_t c) {
  if (!rx_in_frame_ && d == kIdleWord && c == 0xFF) return;
  if (rx_in_frame_ && c == 0) {  // eight data bytes of the frame
    uint8_t b[kLanes];
    std::memcpy(b, &d, kLanes);  // lane k is byte k of the word on a little-endian host
    rx_buf_.insert(rx_buf_.end(), b, b + kLanes);
    return;
  }
  for (int k = 0; k < kLanes; k++) {
    uint8_t dv = uint8_t(d >> (8 * k));
    bool cv = (c >> k) & 1;
    if (!rx_in_frame_) {
      if (cv && dv == kStart) {  // XgmiiSink takes a START in any lane
        rx_in_frame_ = true;
        rx_buf_.clear();
        rx_buf_.push_back(kPre);
        rx_cur_ = EthFrame();
        rx_cur_.start_cycle = cycle_;
        rx_cur_.start_lane = uint8_t(k);
      }
    } else if (cv) {
      // any control character ends the frame; one other than TERMINATE stays in it
      bool err = dv != kTerm;
      if (err) {
        rx_buf_.push_back(dv);
        cnt_.rx_error_chars++;
      }
      rx_cur_.end_lane = uint8_t(k);
      rx_finish(cycle_, err);
    } else {
      rx_buf_.push_back(dv);
    }
  }
}

void XgmiiPort::tick(uint64_t txd, uint8_t txc, uint64_t* rxd, uint8_t* rxc) {
  rx_word(txd, txc);
  tx_word(rxd, rxc);
  cycle_++;
}

bool XgmiiPort::tx_done_pop(TxDone* out) {
  if (tx_done_.empty()) return false;
  *out = tx_done_.front();
  tx_done_.pop_front();
  return true;
}

bool XgmiiPort::recv(EthFrame* out) {
  if (rxq_.empty()) return false;
  *out = std::move(rxq_.front());
  rxq_.pop_front();
  return true;
}

size_t XgmiiPort::tx_pending() const { return txq_.size() + (cur_active_ ? 1 : 0); }
size_t XgmiiPort::rx_pending() const { return rxq_.size(); }
uint64_t XgmiiPort::cycle() const { return cycle_; }

}  // namespace fastsim
