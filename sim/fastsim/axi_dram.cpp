// AxiDram: see axi_dram.h. The reference models are cocotb coroutines; their answer
// cycles depend on the order in which cocotb 2's scheduler resumes them within one clock
// edge (tasks waiting on the clock run in the order they started waiting, tasks woken by
// an event run after, in the order woken). To answer on the same cycles, this file runs
// the same tasks as small state machines under that same rule: per channel
// cocotbext-axi's StreamSink (AW, W, AR: queue limit 2) or StreamSource (B, R: limit 2),
// and the slave's processes (AxiRam's read and write loops, or Ddr4Ram's address, data
// and response loops).
#include "axi_dram.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fastsim {

// ---------------------------------------------------------------- DDR4 schedule

Ddr4Timing::Ddr4Timing(const Ddr4Params& p) : p_(p), banks_(size_t(1) << p.bank_bits) {}

double Ddr4Timing::refresh(double t) {
  // refreshes due by t: all banks precharged, then tRFC; the first one tREFI after time 0
  if (!refresh_started_) {
    refresh_started_ = true;
    next_refresh_ = p_.trefi;
  }
  while (next_refresh_ <= t) {
    double banks_ready = banks_[0].ready;
    for (const Bank& b : banks_) banks_ready = std::max(banks_ready, b.ready);
    double start = std::max(std::max(next_refresh_, banks_ready), bus_free_ - p_.burst());
    double end = start + p_.trp + p_.trfc;
    for (Bank& b : banks_) {
      b.open = false;
      b.ready = end;
    }
    refreshes_++;
    next_refresh_ += p_.trefi;
    t = std::max(t, end);
  }
  return t;
}

double Ddr4Timing::access(uint64_t addr, double t, bool write) {
  uint64_t a = addr % p_.dram_bytes;
  Bank& b = banks_[(a >> p_.bank_shift) & ((uint64_t(1) << p_.bank_bits) - 1)];
  uint64_t row = a >> p_.row_shift;
  t = refresh(std::max(t, b.ready));
  double cas;
  if (b.open && b.row == row) {
    cas = t;
  } else if (!b.open) {
    cas = t + p_.trcd;
    b.activated = t;
  } else {
    double pre = std::max(t, b.activated + p_.tras);
    cas = pre + p_.trp + p_.trcd;
    b.activated = pre + p_.trp;
  }
  double lat = write ? p_.cwl() : p_.cl();
  double data = std::max(cas + lat, bus_free_);  // the bus may be busy: the CAS waits
  bus_free_ = data + p_.burst();
  b.open = true;
  b.row = row;
  b.ready = data - lat + p_.burst();
  return bus_free_;
}

void Ddr4Timing::read(uint64_t addr, uint64_t nbytes, double t_nic, std::vector<double>* out) {
  double t = t_nic + p_.to_mc + p_.mc_cmd_cycles * p_.ui();
  uint64_t bb = uint64_t(p_.burst_bytes);
  out->clear();
  for (uint64_t a = addr - addr % bb; a < addr + nbytes; a += bb)
    out->push_back(access(a, t, false) + p_.mc_rdata_cycles * p_.ui() + p_.to_nic);
}

double Ddr4Timing::write(uint64_t addr, uint64_t nbytes, double t_nic) {
  double t = t_nic + p_.to_mc + p_.mc_cmd_cycles * p_.ui();
  uint64_t bb = uint64_t(p_.burst_bytes);
  double end = 0;
  bool first = true;
  for (uint64_t a = addr - addr % bb; a < addr + nbytes; a += bb) {
    double e = access(a, t, true);
    end = first ? e : std::max(end, e);
    first = false;
  }
  return end + p_.mc_wresp_cycles * p_.ui() + p_.to_nic;
}

// ---------------------------------------------------------------- the tasks

namespace {

constexpr int kLanes = 32;       // bytes per beat
constexpr int kMaxSize = 5;      // AXI size of a full beat
constexpr size_t kLimit = 2;     // every channel's queue_occupancy_limit in AxiSlave*
constexpr uint32_t kOkay = 0, kSlverr = 2;
constexpr uint32_t kFixed = 0, kIncr = 1, kWrap = 2;

struct Addr { uint32_t id; uint64_t addr; uint32_t len, size, burst; };
struct WBeat { uint32_t data[8]; uint32_t strb; bool last; };
struct RBeat { uint32_t id; uint32_t data[8]; uint32_t resp; bool last; };
struct BResp { uint32_t id, resp; };

enum TaskId { kAw, kW, kB, kAr, kR, kPw, kResp, kPr, kSd, kTasks };

}  // namespace

struct AxiDram::State {
  // scheduler: tasks waiting on the next clock edge, in the order they began waiting;
  // tasks made ready by an event, in the order woken
  std::vector<int> clock_waiters, next_waiters;
  std::deque<std::pair<int, int>> run_queue;
  uint32_t cycles_left[kTasks] = {};  // ClockCycles(n) of _until, per task

  // sinks: AW, W, AR
  bool sink_ready[3] = {}, sink_asleep[3] = {}, sink_ready_rose[3] = {};
  bool valid_before[3] = {};
  int monitors[6] = {0, 1, 2, 3, 4, 5};  // sink k's valid monitor 2k, ready monitor 2k+1
  std::deque<Addr> awq, arq;
  std::deque<WBeat> wq;
  bool getter_waiting[3] = {};  // the consumer waits in queue.get()

  // sources: B, R
  bool src_valid[2] = {}, src_asleep[2] = {}, sender_blocked[2] = {};
  BResp b_cur{};
  RBeat r_cur{};
  std::deque<BResp> bq;
  std::deque<RBeat> rq;

  // write process (AxiRam: recv AW, W beats, send B; Ddr4Ram: same but B via _respond)
  int pw_state = 0;  // 0: wants AW, 1: wants W, 2: sending B (AxiRam)
  Addr pw_aw{};
  uint32_t pw_n = 0;
  uint64_t pw_addr = 0;
  BResp pw_b{};
  bool pw_unsupported = false;
  // Ddr4Ram: answers (time, B) for _respond
  std::deque<std::pair<double, BResp>> answers;
  int resp_state = 0;  // 0: wants an answer, 1: waiting cycles, 2: sending
  bool resp_waiting = false;
  BResp resp_b{};

  // read process (AxiRam: recv AR, send beats; Ddr4Ram: recv AR, schedule)
  int pr_state = 0;  // AxiRam: 0 wants AR, 1 sending beats
  Addr pr_ar{};
  uint32_t pr_n = 0;
  uint64_t pr_addr = 0;
  RBeat pr_beat{};
  struct Pending { uint32_t id; uint64_t first; std::vector<double> at; bool err; uint64_t serial; };
  std::deque<Pending> pending;
  uint64_t pending_serial = 0;
  int sd_state = 0;  // 0: wants a burst, 1: next beat, 2: waiting cycles, 3: sending
  bool sd_waiting = false;
  Pending sd_cur;
  uint32_t sd_n = 0;
  RBeat sd_beat{};
  std::vector<double> scratch;
};

AxiDram::AxiDram(size_t bytes, bool ddr4_timing, double period_ns)
    : mem_(bytes, 0), ddr4_(ddr4_timing), period_ns_(period_ns),
      period_ps_(int64_t(std::llround(period_ns * 1000.0))) {
  reset();
}

AxiDram::~AxiDram() { delete st_; }

uint8_t* AxiDram::mem() { return mem_.data(); }
size_t AxiDram::size() const { return mem_.size(); }
void AxiDram::set_now_ns(double t) { now_ps_ = int64_t(std::llround(t * 1000.0)); }

void AxiDram::reset() {
  // as the reference after its reset: channels cleared, ready/valid low, the channel
  // tasks restarted in the order their reset monitors were created (AW, W, B, AR, R);
  // the DRAM's bank and refresh state is kept (Ddr4Ram keeps its Ddr4Timing)
  delete st_;
  st_ = new State();
  for (int t : {kAw, kW, kB, kAr, kR}) st_->clock_waiters.push_back(t);
  st_->getter_waiting[0] = true;  // the write process waits for AW
  st_->getter_waiting[2] = true;  // the read process waits for AR
  st_->resp_waiting = true;
  st_->sd_waiting = true;
}

void AxiDram::drive(AxiSlave* out) const {
  const State& s = *st_;
  out->awready = s.sink_ready[0];
  out->wready = s.sink_ready[1];
  out->arready = s.sink_ready[2];
  out->bvalid = s.src_valid[0];
  out->bid = s.b_cur.id;
  out->bresp = s.b_cur.resp;
  out->rvalid = s.src_valid[1];
  out->rid = s.r_cur.id;
  std::memcpy(out->rdata, s.r_cur.data, sizeof out->rdata);
  out->rresp = s.r_cur.resp;
  out->rlast = s.r_cur.last;
}

void AxiDram::tick(const AxiMaster& m, AxiSlave* out) {
  State& s = *st_;
  // Fast path: every task asleep and no valid or ready rising to wake one: nothing runs
  // at this edge (most edges: the NIC's DRAM tier is idle most of the time).
  if (s.clock_waiters.empty() && !s.sink_ready_rose[0] && !s.sink_ready_rose[1] && !s.sink_ready_rose[2] &&
      (!m.awvalid || s.valid_before[0]) && (!m.wvalid || s.valid_before[1]) && (!m.arvalid || s.valid_before[2])) {
    s.valid_before[0] = m.awvalid;
    s.valid_before[1] = m.wvalid;
    s.valid_before[2] = m.arvalid;
    drive(out);
    cycle_++;
    now_ps_ += period_ps_;
    return;
  }
  const double now = double(now_ps_) / 1000.0;  // get_sim_time("ns") of this edge
  enum Reason { kEdge, kEvent };
  // the run queue of this edge: a FIFO kept in State so no edge allocates
  auto& ready = s.run_queue;
  ready.clear();

  auto wait_clock = [&](int t) { s.next_waiters.push_back(t); };
  auto wake = [&](int t) { ready.emplace_back(t, kEvent); };
  auto wake_sink = [&](int k) {  // StreamSink's wake_event resumes a sleeping sink
    if (s.sink_asleep[k]) {
      s.sink_asleep[k] = false;
      wake(k == 0 ? kAw : k == 1 ? kW : kAr);
    }
  };
  auto wake_source = [&](int k) {  // StreamSource's active_event resumes a sleeping source
    if (s.src_asleep[k]) {
      s.src_asleep[k] = false;
      wake(k == 0 ? kB : kR);
    }
  };
  auto dequeued = [&](int k) {  // StreamSource's dequeue_event resumes a blocked send()
    if (s.sender_blocked[k]) {
      s.sender_blocked[k] = false;
      wake(k == 0 ? (ddr4_ ? kResp : kPw) : (ddr4_ ? kSd : kPr));
    }
  };
  // Ddr4Ram's _until: edges to wait so that the item is handed on the edge before t
  auto until_cycles = [&](double t) -> uint32_t {
    double w = t - period_ns_ - now;
    if (w <= 0) return 0;
    double c = std::ceil(w / period_ns_ - 1e-9);
    return c < 1 ? 1 : uint32_t(c);
  };
  auto read_word = [&](uint64_t addr, uint32_t* data) -> bool {
    uint64_t a = addr % mem_.size();  // AxiRam and Ddr4Ram reads wrap around the memory
    if (a + kLanes > mem_.size()) {
      std::memset(data, 0, kLanes);
      return false;
    }
    std::memcpy(data, &mem_[a], kLanes);
    return true;
  };
  // one beat's enabled bytes, in runs as AxiSlaveWrite and Ddr4RamWrite write them;
  // false if a run is refused (outside the memory)
  auto write_word = [&](uint64_t word_addr, const WBeat& w) -> bool {
    const uint8_t* d = reinterpret_cast<const uint8_t*>(w.data);
    bool ok = true;
    int k = 0;
    while (k < kLanes) {
      if (!((w.strb >> k) & 1)) { k++; continue; }
      int j = k;
      while (j < kLanes && ((w.strb >> j) & 1)) j++;
      uint64_t at;
      if (ddr4_) {
        at = word_addr + uint64_t(k);          // Ddr4RamWrite: no wrap, refused past the end
        if (word_addr + uint64_t(j) > mem_.size()) { ok = false; k = j; continue; }
      } else {
        at = (word_addr + uint64_t(k)) % mem_.size();  // AxiRamWrite wraps
        if (at + uint64_t(j - k) > mem_.size()) { ok = false; k = j; continue; }
      }
      std::memcpy(&mem_[at], d + k, size_t(j - k));
      k = j;
    }
    return ok;
  };
  // what the reference cannot take: Ddr4Ram only full-width INCR within 4 KiB; AxiRam
  // anything but an INCR burst crossing 4 KiB (both assert); answered with SLVERR
  auto unsupported = [&](const Addr& a) -> bool {
    if (a.size > uint32_t(kMaxSize) || a.burst > kWrap) return true;
    uint64_t nb = uint64_t(1) << a.size;
    uint64_t aligned = a.addr / nb * nb, total = nb * (a.len + 1);
    if (a.burst == kWrap && (total & (total - 1))) return true;
    if (ddr4_) {
      if (a.burst != kIncr || a.size != uint32_t(kMaxSize)) return true;
      uint64_t first = a.addr - a.addr % kLanes;
      return 0x1000 - (first & 0xFFF) < uint64_t(a.len + 1) * kLanes;
    }
    return a.burst == kIncr && 0x1000 - (aligned & 0xFFF) < total;
  };
  // the next beat's address of an AxiSlave burst (FIXED stays, WRAP wraps)
  auto next_addr = [&](const Addr& a, uint64_t cur) -> uint64_t {
    if (a.burst == kFixed) return cur;
    uint64_t nb = uint64_t(1) << a.size, total = nb * (a.len + 1);
    cur += nb;
    if (a.burst == kWrap) {
      uint64_t lower = a.addr / total * total;
      if (cur == lower + total) cur = lower;
    }
    return cur;
  };

  // value changes after the edge before: a sink's own ready rising and the master's valid
  // rising wake a sleeping sink (StreamMonitor's ready and valid monitors); those start
  // waiting for this edge after the tasks that were already waiting
  // Those monitors fire in the order their value-change callbacks were registered; one
  // that fires registers again, behind the others.
  const bool valid_now[3] = {m.awvalid, m.wvalid, m.arvalid};
  {
    int fired[6], nf = 0, kept[6], nk = 0;
    for (int i = 0; i < 6; i++) {
      int mon = s.monitors[i], k = mon / 2;
      bool f = (mon & 1) ? s.sink_ready_rose[k] : (valid_now[k] && !s.valid_before[k]);
      if (f) { wake_sink(k); fired[nf++] = mon; } else { kept[nk++] = mon; }
    }
    for (int i = 0; i < nk; i++) s.monitors[i] = kept[i];
    for (int i = 0; i < nf; i++) s.monitors[nk + i] = fired[i];
  }
  for (int k = 0; k < 3; k++) {
    s.sink_ready_rose[k] = false;
    s.valid_before[k] = valid_now[k];
  }
  for (auto& r : ready) s.clock_waiters.push_back(r.first);
  ready.clear();

  // this edge: the clock waiters in the order they began waiting, then what they wake
  for (int t : s.clock_waiters) ready.emplace_back(t, kEdge);
  s.clock_waiters.clear();
  s.next_waiters.clear();

  while (!ready.empty()) {
    const int t = ready.front().first;
    const Reason why = Reason(ready.front().second);
    ready.pop_front();
    switch (t) {
      case kAw: case kW: case kAr: {  // StreamSink._run
        const int k = t == kAw ? 0 : t == kW ? 1 : 2;
        if (why == kEvent) { wait_clock(t); break; }  // woken: back to awaiting the edge
        const bool took = s.sink_ready[k] && valid_now[k];
        if (took) {
          if (k == 1) {
            WBeat w;
            std::memcpy(w.data, m.wdata, sizeof w.data);
            w.strb = m.wstrb;
            w.last = m.wlast;
            s.wq.push_back(w);
          } else if (k == 0) {
            s.awq.push_back(Addr{m.awid, m.awaddr, m.awlen, m.awsize, m.awburst});
          } else {
            s.arq.push_back(Addr{m.arid, m.araddr, m.arlen, m.arsize, m.arburst});
          }
          if (s.getter_waiting[k]) {
            s.getter_waiting[k] = false;
            wake(k == 2 ? kPr : kPw);
          }
        }
        size_t n = k == 0 ? s.awq.size() : k == 1 ? s.wq.size() : s.arq.size();
        const bool paused = n >= kLimit;
        if (!paused && !s.sink_ready[k]) s.sink_ready_rose[k] = true;
        s.sink_ready[k] = !paused;
        if (!valid_now[k] || paused) s.sink_asleep[k] = true;
        else wait_clock(t);
        break;
      }
      case kB: case kR: {  // StreamSource._run
        const int k = t == kB ? 0 : 1;
        if (why == kEvent) { wait_clock(t); break; }
        const bool rdy = k == 0 ? m.bready : m.rready;
        if ((rdy && s.src_valid[k]) || !s.src_valid[k]) {
          bool have = k == 0 ? !s.bq.empty() : !s.rq.empty();
          if (have) {
            if (k == 0) { s.b_cur = s.bq.front(); s.bq.pop_front(); }
            else { s.r_cur = s.rq.front(); s.rq.pop_front(); }
            s.src_valid[k] = true;
            dequeued(k);
            wait_clock(t);
          } else {
            s.src_valid[k] = false;
            s.src_asleep[k] = true;
          }
        } else {
          wait_clock(t);
        }
        break;
      }
      case kPw: {  // the write process: AxiSlaveWrite / Ddr4RamWrite._process_write
        for (;;) {
          if (s.pw_state == 0) {
            if (s.awq.empty()) { s.getter_waiting[0] = true; break; }
            s.pw_aw = s.awq.front();
            s.awq.pop_front();
            wake_sink(0);
            s.pw_unsupported = unsupported(s.pw_aw);
            uint64_t nb = uint64_t(1) << std::min<uint32_t>(s.pw_aw.size, kMaxSize);
            s.pw_addr = ddr4_ ? s.pw_aw.addr - s.pw_aw.addr % kLanes : s.pw_aw.addr / nb * nb;
            s.pw_n = 0;
            s.pw_b = BResp{s.pw_aw.id, kOkay};
            s.pw_state = 1;
          }
          if (s.pw_state == 1) {
            if (s.wq.empty()) { s.getter_waiting[1] = true; break; }
            WBeat w = s.wq.front();
            s.wq.pop_front();
            wake_sink(1);
            cnt_.write_beats++;
            if (s.pw_unsupported) {
              s.pw_b.resp = kSlverr;  // the data is taken and dropped
            } else {
              uint64_t word = ddr4_ ? s.pw_addr + uint64_t(s.pw_n) * kLanes : s.pw_addr / kLanes * kLanes;
              if (!write_word(word, w)) s.pw_b.resp = kSlverr;
              if (!ddr4_) s.pw_addr = next_addr(s.pw_aw, s.pw_addr);
            }
            if (++s.pw_n < s.pw_aw.len + 1) continue;
            cnt_.writes++;
            if (s.pw_b.resp != kOkay) cnt_.slverr++;
            if (ddr4_) {
              // the B answers when the DRAM has written the last burst (now if refused)
              double at = s.pw_unsupported ? now
                  : timing_.write(s.pw_addr, uint64_t(s.pw_aw.len + 1) * kLanes, now);
              s.answers.emplace_back(at, s.pw_b);
              if (s.resp_waiting) { s.resp_waiting = false; wake(kResp); }
              s.pw_state = 0;
              continue;
            }
            s.pw_state = 2;
          }
          if (s.pw_state == 2) {  // AxiRam: await b_channel.send(b)
            if (s.bq.size() >= kLimit) { s.sender_blocked[0] = true; break; }
            s.bq.push_back(s.pw_b);
            wake_source(0);
            s.pw_state = 0;
          }
        }
        break;
      }
      case kResp: {  // Ddr4RamWrite._respond
        for (;;) {
          if (s.resp_state == 0) {
            if (s.answers.empty()) { s.resp_waiting = true; break; }
            double at = s.answers.front().first;
            s.resp_b = s.answers.front().second;
            s.answers.pop_front();
            uint32_t c = until_cycles(at);
            if (c) { s.cycles_left[kResp] = c; s.resp_state = 1; wait_clock(kResp); break; }
            s.resp_state = 2;
          }
          if (s.resp_state == 1) {
            if (why != kEdge) break;  // not expected: only the edge resumes it here
            if (--s.cycles_left[kResp]) { wait_clock(kResp); break; }
            s.resp_state = 2;
          }
          if (s.resp_state == 2) {
            if (s.bq.size() >= kLimit) { s.sender_blocked[0] = true; break; }
            s.bq.push_back(s.resp_b);
            wake_source(0);
            s.resp_state = 0;
          }
        }
        break;
      }
      case kPr: {  // the read process: AxiSlaveRead / Ddr4RamRead._process_read
        for (;;) {
          if (s.pr_state == 0) {
            if (s.arq.empty()) { s.getter_waiting[2] = true; break; }
            s.pr_ar = s.arq.front();
            s.arq.pop_front();
            wake_sink(2);
            cnt_.reads++;
            const bool bad = unsupported(s.pr_ar);
            if (bad) cnt_.slverr++;
            if (ddr4_) {
              State::Pending p;
              p.id = s.pr_ar.id;
              p.first = s.pr_ar.addr - s.pr_ar.addr % kLanes;
              p.err = bad;
              p.serial = ++s.pending_serial;
              const uint32_t beats = s.pr_ar.len + 1;
              if (bad) {
                p.at.assign(beats, now);  // refused: every beat at once
              } else {
                timing_.read(p.first, uint64_t(beats) * kLanes, now, &s.scratch);
                const uint64_t step = uint64_t(timing_.params().burst_bytes);
                for (uint32_t n = 0; n < beats; n++)
                  p.at.push_back(s.scratch[(p.first + uint64_t(n) * kLanes) / step - p.first / step]);
              }
              s.pending.push_back(std::move(p));
              if (s.sd_waiting) { s.sd_waiting = false; wake(kSd); }
              continue;
            }
            uint64_t nb = uint64_t(1) << std::min<uint32_t>(s.pr_ar.size, kMaxSize);
            s.pr_addr = s.pr_ar.addr / nb * nb;
            s.pr_n = 0;
            s.pr_state = 1;
          }
          if (s.pr_state == 1) {  // AxiRam: read the word, then await r_channel.send
            const bool bad = unsupported(s.pr_ar);
            RBeat& r = s.pr_beat;
            r.id = s.pr_ar.id;
            r.last = s.pr_n == s.pr_ar.len;
            if (bad) {
              std::memset(r.data, 0, sizeof r.data);
              r.resp = kSlverr;
            } else {
              r.resp = read_word(s.pr_addr / kLanes * kLanes, r.data) ? kOkay : kSlverr;
            }
            s.pr_state = 2;
          }
          if (s.pr_state == 2) {
            if (s.rq.size() >= kLimit) { s.sender_blocked[1] = true; break; }
            s.rq.push_back(s.pr_beat);
            cnt_.read_beats++;
            wake_source(1);
            s.pr_addr = next_addr(s.pr_ar, s.pr_addr);
            s.pr_state = ++s.pr_n <= s.pr_ar.len ? 1 : 0;
          }
        }
        break;
      }
      case kSd: {  // Ddr4RamRead._send_data
        for (;;) {
          if (s.sd_state == 0) {
            if (s.pending.empty()) { s.sd_waiting = true; break; }
            s.sd_cur = s.pending.front();
            s.sd_n = 0;
            s.sd_state = 1;
          }
          if (s.sd_state == 1) {
            if (s.sd_n == s.sd_cur.at.size()) {
              if (!s.pending.empty() && s.pending.front().serial == s.sd_cur.serial) s.pending.pop_front();
              s.sd_state = 0;
              continue;
            }
            uint32_t c = until_cycles(s.sd_cur.at[s.sd_n]);
            if (c) { s.cycles_left[kSd] = c; s.sd_state = 2; wait_clock(kSd); break; }
            s.sd_state = 3;
          } else if (s.sd_state == 2) {
            if (why != kEdge) break;
            if (--s.cycles_left[kSd]) { wait_clock(kSd); break; }
            s.sd_state = 3;
          }
          if (s.sd_state == 3) {  // the beat is read when _until returns, before send()
            RBeat& r = s.sd_beat;
            r.id = s.sd_cur.id;
            r.last = s.sd_n + 1 == s.sd_cur.at.size();
            if (s.sd_cur.err) {
              std::memset(r.data, 0, sizeof r.data);
              r.resp = kSlverr;
            } else {
              r.resp = read_word(s.sd_cur.first + uint64_t(s.sd_n) * kLanes, r.data) ? kOkay : kSlverr;
            }
            s.sd_state = 4;
          }
          if (s.sd_state == 4) {
            if (s.rq.size() >= kLimit) { s.sender_blocked[1] = true; break; }
            s.rq.push_back(s.sd_beat);
            cnt_.read_beats++;
            wake_source(1);
            s.sd_n++;
            s.sd_state = 1;
          }
        }
        break;
      }
      default: break;
    }
  }
  s.clock_waiters.swap(s.next_waiters);

  drive(out);
  cycle_++;
  now_ps_ += period_ps_;
}

}  // namespace fastsim
