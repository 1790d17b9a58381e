// The host side of the PCIe hard IP's user interface: see pcie_host.h for what is modelled.
// Field positions: PG213's descriptor formats, as hw/src/offnic/pcie/*.scala read them.
#include "pcie_host.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace fastsim {

namespace {

constexpr double kGen3BitsPerLane = 8e9 * 128 / 130;  // 8 GT/s, 128b/130b
constexpr uint64_t kPortDelayPs = 5000 + 5000;        // 5 ns each side (cocotbext SimPort)
constexpr uint32_t kReqMemRead = 0x0, kReqMemWrite = 0x1;
constexpr uint32_t kRcb = 64;                         // read completion boundary (RCB bit clear)
constexpr uint32_t kHostId = 0x0000;                  // the root complex, 00:00.0
constexpr uint32_t kNicBus = 1;                       // the bus enumeration gives the NIC

enum TimedKind { kUpArrive, kReadAnswer, kDownArrive };

int first_be_offset(uint32_t be) {
  if ((be & 0x7) == 0) return 3;
  if ((be & 0x3) == 0) return 2;
  if ((be & 0x1) == 0) return 1;
  return 0;
}

int last_be_offset(uint32_t be) {
  if ((be & 0xf) == 0x1) return 3;
  if ((be & 0xe) == 0x2) return 2;
  if ((be & 0xc) == 0x4) return 1;
  return 0;
}

}  // namespace

// ------------------------------------------------------------------ the workloads' tap

void PcieTap::add_range(uint64_t lo, uint64_t size, uint32_t label) {
  Range r{lo, lo + size, label};
  ranges.insert(std::upper_bound(ranges.begin(), ranges.end(), r,
                                 [](const Range& a, const Range& b) { return a.lo < b.lo; }),
                r);
}

uint32_t PcieTap::classify(uint64_t addr) const {
  // PcieTap.classify: the range with the last start at or below addr, if addr is inside it
  auto it = std::upper_bound(ranges.begin(), ranges.end(), addr, [](uint64_t a, const Range& r) { return a < r.lo; });
  if (it == ranges.begin()) return 0;
  --it;
  return addr < it->hi ? it->label : 0;
}

void PcieTap::count(int way, int kind, uint64_t addr, uint32_t tag, size_t header, size_t payload, uint64_t t_ps) {
  uint32_t label;
  if (kind == kCpl) {
    label = tags[1 - way][tag & 0xff];
  } else {
    label = classify(addr);
    if (kind == kMrd) tags[way][tag & 0xff] = label;
    if (kind == kMwr && watch[label] && bucket >= 0)
      watched.push_back(Watched{label, t_ps, static_cast<uint32_t>(std::max<size_t>(1, payload / 16))});
  }
  if (bucket < 0) return;
  if (static_cast<size_t>(bucket) >= buckets.size()) buckets.resize(bucket + 1);
  Bucket& b = buckets[bucket];
  if (b.n.empty()) b.n.assign(kMaxLabels * 2 * kKinds * 2, 0);
  uint64_t* c = &b.n[(static_cast<size_t>(label) * 2 * kKinds + way * kKinds + kind) * 2];
  c[0] += 1;
  c[1] += header + payload + 8;  // cocotbext-pcie's get_wire_size()
  int itf = way == 0 ? (kind == kCpl ? kCc : kRq) : (kind == kCpl ? kRc : kCq);
  size_t hdr = (itf == kRc || itf == kCc) ? 12 : 16;  // the user interface's descriptor sizes
  b.itf[itf][0] += (hdr + payload + 31) / 32;
  b.itf[itf][1] += 1;
}

// A TLP on the link: a request of the NIC's (RQ) or its completion of ours (CC) going up,
// or a frame for CQ/RC going down.
struct PcieHost::Tlp {
  bool write = false, read = false;   // up: a memory request; neither: a completion (CC)
  uint64_t addr = 0;
  uint32_t dwords = 0, first_be = 0, last_be = 0, tag = 0, requester = 0, tc = 0, attr = 0;
  std::vector<uint32_t> dw;           // up: the whole frame; payload from dw[4] (RQ) or dw[3] (CC)
  Frame frame;                        // down: what the NIC will see
  bool to_rc = false;                 // down: RC (a completion) or CQ (a request)
};

PcieHost::PcieHost(size_t mem_bytes, double core_period_ns)
    : mem_bytes_(mem_bytes), period_ps_(static_cast<uint64_t>(core_period_ns * 1000 + 0.5)), mmio_ids_(256, 0) {
  // Untouched pages cost nothing, so host memory can be large.
  void* p = mmap(nullptr, mem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  mem_ = static_cast<uint8_t*>(p);
}

PcieHost::~PcieHost() {
  reset();
  munmap(mem_, mem_bytes_);
}

void PcieHost::reset() {
  while (!timed_.empty()) {
    delete timed_.top().tlp;
    timed_.pop();
  }
  cq_.clear();
  rc_.clear();
  cq_valid_ = rc_valid_ = false;
  rq_dw_.clear();
  cc_dw_.clear();
  down_free_ps_ = up_free_ps_ = 0;
  stats_.in_flight = 0;
}

void PcieHost::at(uint64_t t_ps, int kind, Tlp* tlp) { timed_.push(Timed{t_ps, seq_++, kind, tlp}); }

uint64_t PcieHost::wire_ps(size_t tlp_bytes) const {
  // cocotbext SimPort.handle_tx: (TLP + 8 bytes of framing) x symbol period, truncated.
  double symbol_s = 8.0 / (kGen3BitsPerLane * lanes_);
  return std::max<uint64_t>(static_cast<uint64_t>((tlp_bytes + 8) * symbol_s * 1e12), 1);
}

uint64_t PcieHost::send_down(size_t tlp_bytes) {
  down_free_ps_ = std::max(down_free_ps_, now_ps()) + wire_ps(tlp_bytes);
  return down_free_ps_ + kPortDelayPs;
}

uint64_t PcieHost::send_up(size_t tlp_bytes) {
  up_free_ps_ = std::max(up_free_ps_, now_ps()) + wire_ps(tlp_bytes);
  return up_free_ps_ + kPortDelayPs;
}

void PcieHost::notify(HostEvent ev) {
  events_.push_back(std::move(ev));
  ++events_count_;
}

bool PcieHost::next_event(HostEvent* ev) {
  if (events_.empty()) return false;
  *ev = std::move(events_.front());
  events_.pop_front();
  return true;
}

// ------------------------------------------------------------------ the driver's BAR0 accesses

// First and last dword byte enables of a request for n bytes starting `lead` bytes into its
// first dword (a one-dword request carries its enables in first_be alone, last_be 0).
static void set_byte_enables(uint8_t& first_be, uint8_t& last_be, uint32_t lead, size_t n, uint32_t dwords) {
  first_be = (0xf << lead) & 0xf;
  uint32_t tail = (lead + n) & 3;
  last_be = tail ? (0xf >> (4 - tail)) : 0xf;
  if (dwords == 1) {
    first_be &= last_be;
    last_be = 0;
  }
}

void PcieHost::mmio_write(uint64_t offset, const uint8_t* data, size_t n) {
  uint64_t addr = kBar0Addr + offset;
  uint32_t lead = addr & 3;
  uint32_t dwords = static_cast<uint32_t>((lead + n + 3) / 4);
  auto* t = new Tlp;
  Frame& f = t->frame;
  set_byte_enables(f.first_be, f.last_be, lead, n, dwords);
  f.dw = {static_cast<uint32_t>(addr & ~3ull), static_cast<uint32_t>(addr >> 32),
          (dwords & 0x7ff) | kReqMemWrite << 11 | kHostId << 16, static_cast<uint32_t>(kBar0Aperture) << 19};
  std::vector<uint8_t> bytes(dwords * 4, 0);
  std::memcpy(bytes.data() + lead, data, n);
  for (uint32_t k = 0; k < dwords; ++k) {
    uint32_t w;
    std::memcpy(&w, bytes.data() + 4 * k, 4);
    f.dw.push_back(w);
  }
  f.be.assign(4, 0);
  for (uint32_t k = 0; k < dwords; ++k) f.be.push_back(k == 0 ? f.first_be : k + 1 == dwords ? f.last_be : 0xf);
  size_t header = (addr >> 32) ? 16 : 12;
  tap_.count(1, PcieTap::kMwr, addr, 0, header, dwords * 4, std::max(down_free_ps_, now_ps()));
  at(send_down(header + dwords * 4), kDownArrive, t);
}

void PcieHost::mmio_read(uint64_t offset, size_t n, uint32_t id) {
  uint64_t addr = kBar0Addr + offset;
  uint32_t lead = addr & 3;
  uint32_t dwords = static_cast<uint32_t>((lead + n + 3) / 4);
  auto* t = new Tlp;
  Frame& f = t->frame;
  set_byte_enables(f.first_be, f.last_be, lead, n, dwords);
  uint8_t tag = cq_tag_++;
  mmio_ids_[tag] = id;
  f.dw = {static_cast<uint32_t>(addr & ~3ull), static_cast<uint32_t>(addr >> 32),
          (dwords & 0x7ff) | kReqMemRead << 11 | kHostId << 16,
          tag | static_cast<uint32_t>(kBar0Aperture) << 19};
  f.be.assign(4, 0);
  size_t header = (addr >> 32) ? 16 : 12;
  tap_.count(1, PcieTap::kMrd, addr, tag, header, 0, std::max(down_free_ps_, now_ps()));
  at(send_down(header), kDownArrive, t);
}

// ------------------------------------------------------------------ the NIC's TLPs

void PcieHost::on_rq(const std::vector<uint32_t>& dw, uint32_t tuser0) {
  ++stats_.rq_tlps;
  if (dw.size() < 4 || (tuser0 >> 11 & 1)) {  // too short, or discontinued: the IP drops it
    ++stats_.bad_requests;
    return;
  }
  auto* t = new Tlp;
  uint32_t req = dw[2] >> 11 & 0xf;
  t->write = req == kReqMemWrite;
  t->read = req == kReqMemRead;
  if (!t->write && !t->read) {
    ++stats_.bad_requests;
    delete t;
    return;
  }
  t->addr = static_cast<uint64_t>(dw[1]) << 32 | (dw[0] & ~3u);
  t->dwords = dw[2] & 0x7ff;
  if (t->dwords == 0) t->dwords = 1024;
  t->requester = dw[2] >> 16;
  if (!(dw[3] >> 24 & 1)) t->requester = (t->requester & 0xff) | kNicBus << 8;  // the IP fills in its bus
  t->tag = dw[3] & 0xff;
  t->tc = dw[3] >> 25 & 7;
  t->attr = dw[3] >> 28 & 7;
  t->first_be = tuser0 & 0xf;
  t->last_be = tuser0 >> 4 & 0xf;
  t->dw = dw;
  size_t header = (t->addr >> 32) ? 16 : 12;
  tap_.count(0, t->write ? PcieTap::kMwr : PcieTap::kMrd, t->addr, t->tag, header, t->write ? t->dwords * 4 : 0, std::max(up_free_ps_, now_ps()));
  at(send_up(header + (t->write ? t->dwords * 4 : 0)), kUpArrive, t);
}

void PcieHost::on_cc(const std::vector<uint32_t>& dw) {
  ++stats_.cc_tlps;
  if (dw.size() < 3) {
    ++stats_.bad_requests;
    return;
  }
  auto* t = new Tlp;
  t->dwords = dw[1] & 0x7ff;
  t->tag = dw[2] & 0xff;
  t->dw = dw;
  tap_.count(0, PcieTap::kCpl, 0, t->tag, 12, t->dwords * 4, std::max(up_free_ps_, now_ps()));
  at(send_up(12 + t->dwords * 4), kUpArrive, t);
}

void PcieHost::host_receives(Tlp* t) {
  if (t->read) {
    ++stats_.reads;
    ++stats_.in_flight;
    stats_.max_in_flight = std::max(stats_.max_in_flight, stats_.in_flight);
    double extra = jitter_ns_ > 0 ? std::uniform_real_distribution<double>(0.0, jitter_ns_)(rng_) : 0.0;
    at(now_ps() + static_cast<uint64_t>((latency_ns_ + extra) * 1000 + 0.5), kReadAnswer, t);
    return;
  }
  if (t->write) {
    uint32_t first = first_be_offset(t->first_be);
    uint32_t nbytes = t->dwords * 4 - first - last_be_offset(t->dwords == 1 ? t->first_be : t->last_be);
    uint64_t addr = t->addr + first;
    const uint8_t* src = reinterpret_cast<const uint8_t*>(t->dw.data() + 4) + first;
    if (t->dw.size() < 4 + t->dwords) {
      ++stats_.bad_requests;
    } else if (addr >= kMsiAddr && addr < kMsiAddr + 16) {  // an MSI(-X) message
      uint32_t data = 0;
      std::memcpy(&data, src, std::min<uint32_t>(nbytes, 4));
      ++stats_.msi;
      notify(HostEvent{HostEvent::kMsi, data, 0, {}});
    } else if (mem_range(addr, nbytes)) {
      std::memcpy(mem_ + addr, src, nbytes);
    } else {
      ++stats_.bad_requests;  // a write no region takes: dropped (the root complex logs it)
    }
    delete t;
    return;
  }
  // A completion of one of the driver's reads.
  uint32_t status = t->dw[1] >> 11 & 7;
  uint32_t nbytes = t->dw[0] >> 16 & 0x1fff;
  uint32_t lower = t->dw[0] & 0x7f;
  std::vector<uint8_t> data;
  if (t->dwords) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(t->dw.data() + 3);
    size_t avail = (t->dw.size() - 3) * 4;
    size_t skip = lower & 3;
    size_t n = std::min<size_t>(nbytes, avail > skip ? avail - skip : 0);
    data.assign(p + skip, p + skip + n);
  }
  notify(HostEvent{HostEvent::kMmioRead, mmio_ids_[t->tag], status, std::move(data)});
  delete t;
}

void PcieHost::answer_read(Tlp* req) {
  --stats_.in_flight;
  uint32_t first = first_be_offset(req->first_be);
  uint32_t byte_length = req->dwords * 4 - first - last_be_offset(req->dwords == 1 ? req->first_be : req->last_be);
  uint64_t base = req->addr;
  if (req->dwords * 4 > 0x1000 - (base & 0xfff)) {  // malformed: the root complex drops it, as cocotbext's
    ++stats_.bad_requests;
    delete req;
    return;
  }
  bool fault = faulted(base);
  bool ok = mem_range(base, req->dwords * 4ull) && !fault;
  if (fault) ++stats_.faulted_reads;
  auto completion = [&](uint32_t status, uint32_t lower, uint32_t byte_count, const uint8_t* data, uint32_t ndw) {
    auto* c = new Tlp;
    Frame& f = c->frame;
    c->to_rc = true;
    // The hard IP's view (usp_model.upstream_recv): the lower address rebuilt to 12 bits,
    // "request completed" on the last completion.
    uint32_t lower12 = static_cast<uint32_t>((req->addr + first + byte_length - byte_count) & 0xfff);
    if (status != 0) lower12 = lower;
    bool completed = status != 0 || byte_count <= ndw * 4 - (lower12 & 3);
    f.dw = {lower12 | (byte_count & 0x1fff) << 16 | static_cast<uint32_t>(completed) << 30,
            (ndw & 0x7ff) | status << 11 | req->requester << 16,
            req->tag | kHostId << 8 | req->tc << 25 | req->attr << 28};
    f.be.assign(3, 0);
    for (uint32_t k = 0; k < ndw; ++k) {
      uint32_t w;
      std::memcpy(&w, data + 4 * k, 4);
      f.dw.push_back(w);
    }
    // Byte enables as Tlp_us.pack_us_rc: the first and last dwords' bytes that carry data.
    uint32_t fbe = (0xf << (lower & 3)) & 0xf;
    uint32_t lbe = byte_count + (lower & 3) > ndw * 4 ? 0xf : 0xf >> ((4 - byte_count - lower) & 3);
    if (ndw == 1) {
      fbe &= lbe;
      lbe = 0;
    }
    for (uint32_t k = 0; k < ndw; ++k) f.be.push_back(k == 0 ? fbe : k + 1 == ndw ? lbe : 0xf);
    ++stats_.rc_tlps;
    tap_.count(1, PcieTap::kCpl, 0, req->tag, 12, ndw * 4, std::max(down_free_ps_, now_ps()));
    at(send_down(12 + ndw * 4), kDownArrive, c);
  };
  if (!ok) {  // no memory there: Unsupported Request
    completion(1, static_cast<uint32_t>(base & 0x7f), 0, nullptr, 0);
    delete req;
    return;
  }
  // rc.handle_mem_read_tlp: the largest TLPs up to max payload, cut back to an RCB boundary.
  uint32_t max_payload_dw = 32u << host_mps_code_;
  uint32_t rcb_mask = (kRcb - 1) & 0xfc;
  uint64_t addr = base + first;
  uint32_t m = 0, n = 0;
  while (m < req->dwords) {
    uint32_t ndw = req->dwords - m;
    if (ndw > max_payload_dw) ndw = max_payload_dw - static_cast<uint32_t>((addr & rcb_mask) >> 2);
    completion(0, static_cast<uint32_t>(addr & 0x7f), byte_length - n, mem_ + base + m * 4, ndw);
    m += ndw;
    n += ndw * 4 - static_cast<uint32_t>(addr & 3);
    addr += ndw * 4 - (addr & 3);
  }
  delete req;
}

void PcieHost::run_due() {
  uint64_t now = now_ps();
  while (!timed_.empty() && timed_.top().t_ps <= now) {
    Timed e = timed_.top();
    timed_.pop();
    if (e.kind == kUpArrive) {
      host_receives(e.tlp);
    } else if (e.kind == kReadAnswer) {
      answer_read(e.tlp);
    } else {
      (e.tlp->to_rc ? rc_ : cq_).push_back(std::move(e.tlp->frame));
      delete e.tlp;
    }
  }
}

// ------------------------------------------------------------------ the interface, per edge

// One beat of a frame onto CQ or RC (UsPcieSource._run without straddling): eight dwords,
// per-dword byte enables in tuser (RC: from bit 0; CQ: from bit 8), start and end flags.
void PcieHost::drive(Frame* f, bool rc, uint32_t* tdata, uint8_t* tkeep, uint8_t* tlast, uint32_t* tuser) {
  std::memset(tdata, 0, 8 * sizeof(uint32_t));
  std::memset(tuser, 0, 3 * sizeof(uint32_t));
  auto set_bits = [tuser](unsigned lsb, uint32_t v) {
    tuser[lsb / 32] |= v << (lsb % 32);
    if (lsb % 32 && (lsb % 32) + 4 > 32) tuser[lsb / 32 + 1] |= v >> (32 - lsb % 32);
  };
  bool first = f->pos == 0;
  if (first) {
    if (rc) {
      set_bits(32, 1);  // is_sop
    } else {
      set_bits(0, f->first_be & 0xf);
      set_bits(4, f->last_be & 0xf);
      set_bits(40, 1);  // sop
    }
  }
  uint8_t keep = 0;
  unsigned last_lane = 0;
  for (unsigned lane = 0; lane < 8 && f->pos < f->dw.size(); ++lane, ++f->pos) {
    tdata[lane] = f->dw[f->pos];
    keep |= 1u << lane;
    set_bits((rc ? 0 : 8) + lane * 4, f->be[f->pos] & 0xf);
    last_lane = lane;
  }
  *tkeep = keep;
  *tlast = f->pos >= f->dw.size();
  if (rc && *tlast) {
    set_bits(34, 1);  // is_eop
    set_bits(35, last_lane);
  }
}

void PcieHost::tick(const fs_pcie_in& in, fs_pcie_out* out) {
  ++cycle_;
  // Handshakes at this edge: ours (as last driven) and the NIC's.
  if (cq_valid_ && in.cq_tready && cq_.front().pos >= cq_.front().dw.size()) {
    cq_.pop_front();
    ++stats_.cq_tlps;
  }
  if (rc_valid_ && in.rc_tready) {
    ++stats_.rc_beats;
    if (rc_.front().pos >= rc_.front().dw.size()) rc_.pop_front();
  }
  if (in.rq_tvalid) {  // rq_tready is always high
    ++stats_.rq_beats;
    if (rq_dw_.empty()) rq_tuser0_ = in.rq_tuser[0];
    for (unsigned lane = 0; lane < 8; ++lane)
      if (in.rq_tkeep >> lane & 1) rq_dw_.push_back(in.rq_tdata[lane]);
    if (in.rq_tlast) {
      on_rq(rq_dw_, rq_tuser0_);
      rq_dw_.clear();
    }
  }
  if (in.cc_tvalid) {
    for (unsigned lane = 0; lane < 8; ++lane)
      if (in.cc_tkeep >> lane & 1) cc_dw_.push_back(in.cc_tdata[lane]);
    if (in.cc_tlast) {
      on_cc(cc_dw_);
      cc_dw_.clear();
    }
  }
  run_due();

  // A beat stays on the bus until taken; the next one goes up only after a handshake.
  bool cq_taken = !cq_valid_ || in.cq_tready;
  bool rc_taken = !rc_valid_ || in.rc_tready;
  if (cq_taken) {
    cq_valid_ = !cq_.empty();
    if (cq_valid_) drive(&cq_.front(), false, out_cq_data_, &out_cq_keep_, &out_cq_last_, out_cq_user_);
  }
  if (rc_taken) {
    rc_valid_ = !rc_.empty();
    if (rc_valid_) drive(&rc_.front(), true, out_rc_data_, &out_rc_keep_, &out_rc_last_, out_rc_user_);
  }
  out->cq_tvalid = cq_valid_;
  std::memcpy(out->cq_tdata, out_cq_data_, sizeof out->cq_tdata);
  out->cq_tkeep = out_cq_keep_;
  out->cq_tlast = out_cq_last_;
  std::memcpy(out->cq_tuser, out_cq_user_, sizeof out->cq_tuser);
  out->rc_tvalid = rc_valid_;
  std::memcpy(out->rc_tdata, out_rc_data_, sizeof out->rc_tdata);
  out->rc_tkeep = out_rc_keep_;
  out->rc_tlast = out_rc_last_;
  std::memcpy(out->rc_tuser, out_rc_user_, sizeof out->rc_tuser);
  out->cc_tready = 1;
  out->rq_tready = 1;
  // cfg_max_payload: the IP's field is two bits wide (usp_model drives `& 3`).
  out->max_payload = static_cast<uint8_t>(mps_code_ & 3);
  out->max_read_req = static_cast<uint8_t>(mrrs_code_);
  out->events = events_count_;
}

}  // namespace fastsim
