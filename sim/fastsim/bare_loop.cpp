// The NIC's own Verilator model with nothing around it: the speed limit of any harness.
//
// Three clocks as the whole-NIC benches run them (the 250 MHz core clock, which is also the
// PCIe user clock, and both ports' 390.625 MHz MAC clocks), every edge evaluated, ports idle
// (XGMII idle characters in), the PCIe interface idle and always ready, nothing on m_axi.
// `./offnic bench sim` builds it with the fast harness's Verilator options and reports
// core cycles per wall second.
//
//   bare_loop CYCLES   run CYCLES core cycles after reset; prints one JSON line
#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "VNic.h"
#include "verilated.h"

namespace {

constexpr uint64_t kCoreHalfPs = 2000;  // 250 MHz
constexpr uint64_t kMacHalfPs = 1280;   // 390.625 MHz (25G, 64-bit XGMII)
constexpr uint64_t kXgmiiIdleD = 0x0707070707070707ULL;
constexpr uint8_t kXgmiiIdleC = 0xFF;

}  // namespace

double sc_time_stamp() { return 0; }

int main(int argc, char** argv) {
  const uint64_t cycles = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  auto ctx = std::make_unique<VerilatedContext>();
  ctx->commandArgs(argc, argv);
  auto top = std::make_unique<VNic>(ctx.get());

  top->m_axis_cc_tready = 1;
  top->m_axis_rq_tready = 1;
  top->s_axis_cq_tvalid = 0;
  top->s_axis_rc_tvalid = 0;
  top->cfg_max_payload = 1;   // 256 B, as the benches' driver sets it
  top->cfg_max_read_req = 2;  // 512 B
  top->port_xgmii_rxd_0 = kXgmiiIdleD;
  top->port_xgmii_rxd_1 = kXgmiiIdleD;
  top->port_xgmii_rxc_0 = kXgmiiIdleC;
  top->port_xgmii_rxc_1 = kXgmiiIdleC;
  top->m_axi_awready = 0;
  top->m_axi_wready = 0;
  top->m_axi_bvalid = 0;
  top->m_axi_arready = 0;
  top->m_axi_rvalid = 0;

  // Time in ps; each clock toggles at its next deadline, coinciding edges in one evaluation.
  uint64_t now = 0, next_core = kCoreHalfPs, next_mac = kMacHalfPs, core_rises = 0;
  uint8_t core = 0, mac = 0;
  const uint64_t reset_cycles = 16;
  top->reset = 1;
  top->port_mac_rst_0 = 1;
  top->port_mac_rst_1 = 1;
  top->clock = 0;
  top->port_mac_clk_0 = 0;
  top->port_mac_clk_1 = 0;
  top->eval();

  uint64_t evals = 0;
  auto t0 = std::chrono::steady_clock::now();
  auto t_run = t0;
  std::clock_t cpu_run = std::clock();  // CPU time too: on a loaded machine wall time is shared
  while (core_rises < cycles + reset_cycles) {
    now = next_core < next_mac ? next_core : next_mac;
    if (now == next_core) {
      core ^= 1;
      top->clock = core;
      next_core += kCoreHalfPs;
      if (core) {
        ++core_rises;
        if (core_rises == reset_cycles) {
          top->reset = 0;
          top->port_mac_rst_0 = 0;
          top->port_mac_rst_1 = 0;
          t_run = std::chrono::steady_clock::now();
          cpu_run = std::clock();
          evals = 0;
        }
      }
    }
    if (now == next_mac) {
      mac ^= 1;
      top->port_mac_clk_0 = mac;
      top->port_mac_clk_1 = mac;
      next_mac += kMacHalfPs;
    }
    ctx->time(now);
    top->eval();
    ++evals;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_run).count();
  const double cpu = static_cast<double>(std::clock() - cpu_run) / CLOCKS_PER_SEC;
  top->final();
  std::printf("{\"cycles\": %llu, \"evals\": %llu, \"wall_s\": %.4f, \"cpu_s\": %.4f, "
              "\"cycles_per_s\": %.0f, \"cycles_per_cpu_s\": %.0f}\n",
              static_cast<unsigned long long>(cycles), static_cast<unsigned long long>(evals), wall, cpu,
              static_cast<double>(cycles) / wall, static_cast<double>(cycles) / cpu);
  return 0;
}
