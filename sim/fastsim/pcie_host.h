// The host side of the UltraScale+ PCIe hard IP's user interface (PG213) at 256 bits,
// DWORD-aligned, no straddling, as NicTB configures cocotbext-pcie 0.2.16: CQ (the
// driver's BAR0 reads and writes into the NIC), CC (the NIC's completions of them), RQ
// (the NIC's memory reads and writes; MSI-X messages are writes to a vector's address)
// and RC (completions of the NIC's reads). Host memory lives here, with a read latency.
//
// Same as cocotbext-pcie: the bytes of every TLP, the completion splitting (largest TLPs
// up to max payload size, cut at the 64-byte read completion boundary), the RC
// descriptor's lower address, byte count, request-completed flag and tuser byte enables,
// the link's serialisation (Gen3 at 8 GT/s, 128b/130b, x`lanes`, 8 bytes of framing per
// TLP, 5 ns of port delay each side) and the host read latency with optional jitter;
// bad requests as the root complex treats them (no memory: Unsupported Request; a read
// across 4 KiB or a discontinued TLP: dropped and counted).
// Not modelled (they only move timing): DLLPs (ACK, flow-control updates) on the link,
// flow-control credits and the hard IP's completion buffer limits, tuser parity (zero).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <queue>
#include <random>
#include <vector>

#include "fastsim_abi.h"

namespace fastsim {

// News for Python, drained through fastsim_api.
struct HostEvent {
  enum Kind : uint32_t { kMmioRead = 1, kMsi = 2, kPort = 3, kPortSent = 4 } kind;
  uint32_t id;                 // kMmioRead: the request's id; kMsi: the message data; kPort, kPortSent: the port
  uint32_t status;             // kMmioRead: completion status (0 success)
  std::vector<uint8_t> data;   // kMmioRead: the bytes read
};

struct PcieHostStats {
  uint64_t reads = 0, in_flight = 0, max_in_flight = 0;  // host memory reads (HostMemory's names)
  uint64_t rq_tlps = 0, rc_tlps = 0, cq_tlps = 0, cc_tlps = 0, rq_beats = 0, rc_beats = 0;
  uint64_t msi = 0, bad_requests = 0;
  uint64_t faulted_reads = 0;  // reads answered Unsupported Request by the injected fault window
};

// The workloads' PCIe tap (bench/pcie_tap.PcieTap's arithmetic): every TLP put on the
// link, both ways, in wire bytes (header + payload + 8), attributed to a label by its
// address (ranges the workload names) or, a completion, by the tag of the request it
// answers; counted into the bucket the workload has switched to (none: not counted); with
// the 256-bit user-interface beats each TLP takes (no straddling), and the cycles of the
// NIC's writes into watched labels (when each starts on the link). No DLLPs: this link
// model has none. A TLP counts in the bucket current when it is queued for the link (NicTB's
// tap: when it starts on it, up to the link's queue later).
struct PcieTap {
  enum Kind { kMrd, kMwr, kCpl, kOther, kKinds };   // per way: index way * kKinds + kind
  enum Itf { kRq, kCc, kCq, kRc, kItfs };
  static constexpr int kMaxLabels = 256;            // label 0: "shared"
  struct Range { uint64_t lo, hi; uint32_t label; };
  struct Bucket {
    std::vector<uint64_t> n;   // [label][way * kKinds + kind][0: TLPs, 1: wire bytes]
    uint64_t itf[kItfs][2] = {};  // [itf][0: beats, 1: TLPs]
  };
  struct Watched { uint32_t label; uint64_t t_ps; uint32_t records; };  // t_ps: as PcieHost::now_ps
  std::vector<Range> ranges;                        // sorted by lo
  uint32_t tags[2][256] = {};                       // [way of the request][tag] -> label
  int bucket = -1;
  std::vector<Bucket> buckets;
  std::vector<uint8_t> watch = std::vector<uint8_t>(kMaxLabels, 0);
  std::vector<Watched> watched;

  void add_range(uint64_t lo, uint64_t size, uint32_t label);
  uint32_t classify(uint64_t addr) const;
  // way 0: up (NIC -> host), 1: down. addr: a request's; tag: a request's or a completion's;
  // t_ps: when the TLP starts on the link (cocotbext's handle_tx: after the TLPs ahead of it).
  void count(int way, int kind, uint64_t addr, uint32_t tag, size_t header, size_t payload, uint64_t t_ps);
};

class PcieHost {
 public:
  static constexpr uint64_t kMsiAddr = 0x8000'0000;      // as cocotbext-pcie's MSI region
  static constexpr uint64_t kBar0Addr = 0x1'0000'0000;   // where BAR0 is assigned
  static constexpr int kBar0Aperture = 24;               // log2 of BAR0's size (16 MiB)

  PcieHost(size_t mem_bytes, double core_period_ns);
  ~PcieHost();
  PcieHost(const PcieHost&) = delete;
  PcieHost& operator=(const PcieHost&) = delete;

  void reset();  // the link's state and every request in flight dropped; memory kept
  void tick(const fs_pcie_in& in, fs_pcie_out* out);  // each core clock rising edge

  // Host memory at bus address 0 (the CPU's view: no simulated time).
  uint8_t* mem() { return mem_; }
  size_t mem_size() const { return mem_bytes_; }
  void set_read_latency(double ns, double jitter_ns) { latency_ns_ = ns; jitter_ns_ = jitter_ns; }
  void set_link(int lanes) { lanes_ = lanes; }
  void set_seed(uint64_t seed) { rng_.seed(seed); }
  // Device control as the driver programmed it: codes (0: 128 B .. 5: 4096 B).
  void set_sizes(int mps_code, int mrrs_code) { mps_code_ = mps_code; mrrs_code_ = mrrs_code; }
  void set_host_mps(int code) { host_mps_code_ = code; }  // the root complex's own max payload
  // Fault injection: rules (lo, hi, fault), first match wins, no match: no fault. A read of
  // the NIC's whose first byte a faulting rule covers completes Unsupported Request, as a
  // root complex answers a read the IOMMU refuses; a non-faulting rule exempts a range (a
  // ring) from a wider one. Writes are not touched: they are posted, and a real root
  // complex drops a refused one without telling the NIC.
  void add_read_fault(uint64_t lo, uint64_t hi, bool fault) { faults_.push_back({lo, hi, fault}); }
  void clear_read_faults() { faults_.clear(); }

  // The driver's BAR0 accesses; reads complete with a kMmioRead event carrying `id`.
  void mmio_write(uint64_t offset, const uint8_t* data, size_t n);
  void mmio_read(uint64_t offset, size_t n, uint32_t id);

  bool next_event(HostEvent* ev);
  size_t events_pending() const { return events_.size(); }
  uint32_t events_seen() const { return events_count_; }
  void notify(HostEvent ev);  // queue news for Python (also used for the ports)
  const PcieHostStats& stats() const { return stats_; }
  PcieTap& tap() { return tap_; }
  uint64_t cycle() const { return cycle_; }

 private:
  struct Tlp;  // in pcie_host.cpp
  struct Timed {
    uint64_t t_ps, seq;
    int kind;  // what to do at t_ps
    Tlp* tlp;
    bool operator>(const Timed& o) const { return t_ps != o.t_ps ? t_ps > o.t_ps : seq > o.seq; }
  };
  // A frame on CQ or RC: its dwords and the per-dword byte enables, as a UsPcieFrame.
  struct Frame {
    std::vector<uint32_t> dw;
    std::vector<uint8_t> be;
    uint8_t first_be = 0, last_be = 0;
    size_t pos = 0;
  };

  uint64_t now_ps() const { return cycle_ * period_ps_; }
  void at(uint64_t t_ps, int kind, Tlp* tlp);
  uint64_t send_down(size_t tlp_bytes);  // arrival time at the NIC's side of the link
  uint64_t send_up(size_t tlp_bytes);    // arrival time at the host
  uint64_t wire_ps(size_t tlp_bytes) const;
  void run_due();
  void on_rq(const std::vector<uint32_t>& dw, uint32_t tuser0);
  void on_cc(const std::vector<uint32_t>& dw);
  void host_receives(Tlp* t);
  void answer_read(Tlp* t);
  bool mem_range(uint64_t addr, size_t n) const { return addr < mem_bytes_ && n <= mem_bytes_ - addr; }
  bool faulted(uint64_t addr) const {
    for (const Fault& f : faults_)
      if (addr >= f.lo && addr < f.hi) return f.fault;
    return false;
  }
  static void drive(Frame* f, bool rc, uint32_t* tdata, uint8_t* tkeep, uint8_t* tlast, uint32_t* tuser);

  uint8_t* mem_;
  size_t mem_bytes_;
  struct Fault { uint64_t lo, hi; bool fault; };
  std::vector<Fault> faults_;
  uint64_t period_ps_;
  uint64_t cycle_ = 0, seq_ = 0;
  double latency_ns_ = 1000.0, jitter_ns_ = 0.0;
  int lanes_ = 8, mps_code_ = 0, mrrs_code_ = 2, host_mps_code_ = 0;
  std::mt19937_64 rng_;
  uint64_t down_free_ps_ = 0, up_free_ps_ = 0;  // each direction of the link is busy until then
  std::priority_queue<Timed, std::vector<Timed>, std::greater<Timed>> timed_;
  std::deque<Frame> cq_, rc_;             // frames waiting for (or on) the NIC's inputs
  bool cq_valid_ = false, rc_valid_ = false;
  uint32_t out_cq_data_[8] = {}, out_cq_user_[3] = {}, out_rc_data_[8] = {}, out_rc_user_[3] = {};  // the beats driven
  uint8_t out_cq_keep_ = 0, out_cq_last_ = 0, out_rc_keep_ = 0, out_rc_last_ = 0;
  std::vector<uint32_t> rq_dw_, cc_dw_;   // the NIC's TLP being received
  uint32_t rq_tuser0_ = 0;
  uint8_t cq_tag_ = 0;
  std::vector<uint32_t> mmio_ids_;        // by CQ tag: the driver's read id
  std::deque<HostEvent> events_;
  uint32_t events_count_ = 0;
  PcieHostStats stats_;
  PcieTap tap_;
};

}  // namespace fastsim
