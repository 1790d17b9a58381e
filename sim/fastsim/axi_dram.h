// The payload cache's DRAM tier on the NIC's m_axi (AXI4, 256-bit data, 34-bit address,
// 2-bit id: hw/src/offnic/axi/Axi4IO.scala) as an AXI4 slave stepped once per core clock.
// ddr4 timing: the answer cycles of sim/offnic_sim/host/ddr4_model.py's Ddr4Ram (the
// K3P-Q's DDR4 behind PG150's controller; parameters and sources in Ddr4Params below).
// ideal: as cocotbext-axi 0.1.28's AxiRam (no DRAM timing).
// Cycle-exact means: the same readies, B and R on every edge as the reference would drive
// in a cocotb bench whose master writes its signals at the rising edge (tests/fast/
// test_axi_dram.py). To get there axi_dram.cpp emulates the reference's cocotb tasks in
// the order cocotb 2 resumes them (see there); the reference's answer cycles depend on it.
// Supported: INCR bursts of full 32-byte beats (what the NIC issues) in both modes; in
// ideal mode also FIXED, WRAP (2/4/8/16 beats) and narrow beats, as AxiRam does them.
// Refused with SLVERR on every beat (reads: zero data; writes: the data is taken and
// dropped), answered at once, never a hang: what the references assert on. ddr4: anything
// but full-width INCR, and bursts crossing 4 KiB; ideal: INCR bursts crossing 4 KiB, beats
// wider than the bus, WRAP of another length. As the references: reads wrap around the
// memory, ddr4 writes past its end answer SLVERR (ideal: they wrap); WLAST is not checked
// (the burst length comes from AWLEN).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace fastsim {

struct AxiMaster { uint32_t awid; uint64_t awaddr; uint32_t awlen, awsize, awburst; bool awvalid;
                   uint32_t wdata[8]; uint32_t wstrb; bool wlast, wvalid, bready;
                   uint32_t arid; uint64_t araddr; uint32_t arlen, arsize, arburst; bool arvalid, rready; };
struct AxiSlave  { bool awready, wready; uint32_t bid, bresp; bool bvalid; bool arready;
                   uint32_t rid; uint32_t rdata[8]; uint32_t rresp; bool rlast, rvalid; };

// Ddr4Params of ddr4_model.py, the same values and sources. Times in ns.
struct Ddr4Params {
  // Board (../shared/boards/Nexus_K3P_Q.md, from corundum's ip/ddr4_0.tcl): nine
  // MT40A1G8SA-075 (8 Gb x8), tCK 825 ps, CL 19, CWL 14, 4:1 controller (UI = 4 tCK).
  double tck = 0.825;
  int cl_cycles = 19, cwl_cycles = 14, ui_ratio = 4;
  // JEDEC DDR4-2666 19-19-19 (-075 grade, Micron MT40A1G8 data sheet; JESD79-4).
  double trcd = 14.25, trp = 14.25, tras = 32.0;
  // 8 Gb refresh (JESD79-4, Micron MT40A1G8): tRFC1 350 ns every tREFI 7.8 us (0..85 C, 1x).
  double trfc = 350.0, trefi = 7800.0;
  // BL8 on the 64-bit bus: 64 bytes per burst, 4 tCK on the bus.
  int burst_bytes = 64, burst_cycles = 4;
  // ROW_COLUMN_BANK (PG150): [7:6] bank group, [9:8] bank, [16:10] column, [32:17] row.
  int bank_shift = 6, bank_bits = 4, row_shift = 17;
  uint64_t dram_bytes = 8ull << 30;
  // ASSUMPTION (PG150 gives no cycle counts): controller pipeline, UI cycles.
  int mc_cmd_cycles = 8, mc_rdata_cycles = 8, mc_wresp_cycles = 4;
  // ASSUMPTION: clock converter (3 destination cycles) + width converter (one register).
  double to_mc = 3 * 3.3 + 4.0, to_nic = 3 * 4.0 + 3.3;
  double ui() const { return ui_ratio * tck; }
  double cl() const { return cl_cycles * tck; }
  double cwl() const { return cwl_cycles * tck; }
  double burst() const { return burst_cycles * tck; }
};

// ddr4_model.Ddr4Timing: open-page FCFS schedule of 64-byte bursts on one rank.
class Ddr4Timing {
 public:
  explicit Ddr4Timing(const Ddr4Params& p = Ddr4Params());
  double access(uint64_t addr, double t, bool write);  // end of the burst's data on the bus
  void read(uint64_t addr, uint64_t nbytes, double t_nic, std::vector<double>* per_burst);
  double write(uint64_t addr, uint64_t nbytes, double t_nic);
  const Ddr4Params& params() const { return p_; }
  uint64_t refreshes() const { return refreshes_; }

 private:
  struct Bank { bool open = false; uint64_t row = 0; double ready = 0.0, activated = -1e18; };
  double refresh(double t);
  Ddr4Params p_;
  std::vector<Bank> banks_;
  double bus_free_ = 0.0;
  bool refresh_started_ = false;
  double next_refresh_ = 0.0;
  uint64_t refreshes_ = 0;
};

struct AxiDramCounters {
  uint64_t reads = 0, writes = 0, read_beats = 0, write_beats = 0, slverr = 0;
};

class AxiDram {
 public:
  AxiDram(size_t bytes, bool ddr4_timing, double period_ns);
  void tick(const AxiMaster& m, AxiSlave* s);  // each core clock rising edge, out of reset
  uint8_t* mem();
  size_t size() const;
  // Added: back to the state after construction but the memory's bytes (a reset of the
  // NIC's domain: Ddr4Ram's channels are cleared, its DRAM timing state is kept).
  void reset();
  // Added: the simulation time of the next tick (ns). Ddr4Ram schedules in absolute time
  // (refresh every tREFI from time 0), so the wrapper says when ticks start; later ticks
  // advance by period_ns. Default: the first tick at time 0.
  void set_now_ns(double t);
  uint64_t cycle() const { return cycle_; }
  const AxiDramCounters& counters() const { return cnt_; }

 private:
  std::vector<uint8_t> mem_;
  bool ddr4_;
  double period_ns_;
  int64_t period_ps_;
  int64_t now_ps_ = 0;  // simulation time of the next tick, in ps (the benches' precision)
  uint64_t cycle_ = 0;
  AxiDramCounters cnt_;
  Ddr4Timing timing_;
  void drive(AxiSlave* out) const;
  struct State;  // the emulated reference tasks (axi_dram.cpp)
  State* st_ = nullptr;

 public:
  ~AxiDram();
  AxiDram(const AxiDram&) = delete;
  AxiDram& operator=(const AxiDram&) = delete;
};

}  // namespace fastsim
