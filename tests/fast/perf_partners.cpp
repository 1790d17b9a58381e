// Cost per clock edge of the C++ partners under full load, for the harness's budget
// (issue 21: the whole NIC at 100,000 core cycles per wall second). Not a test: build and
// run by hand:
//   g++ -std=c++17 -O2 -Isim/fastsim tests/fast/perf_partners.cpp sim/fastsim/xgmii_port.cpp
//       sim/fastsim/axi_dram.cpp -o build/perf_partners && build/perf_partners
//   XgmiiPort: 1518-byte frames back to back into the NIC, its own words looped back as
//   the NIC's transmit side, so encoder and decoder (with CRC) both run at line rate.
//   AxiDram ddr4: a master keeping AW/W valid and AR valid with up to 8 reads outstanding
//   (as the NIC bounds them; Ddr4Ram itself takes reads without limit), 512-byte bursts,
//   always ready.
#include <chrono>
#include <cstdio>
#include <vector>

#include "axi_dram.h"
#include "xgmii_port.h"

using Clock = std::chrono::steady_clock;

int main() {
  const uint64_t n = 20000000;
  fastsim::XgmiiPort port;
  std::vector<uint8_t> frame(1514, 0x5A);
  uint64_t d = 0x0707070707070707ull, rd;
  uint8_t c = 0xFF, rc;
  fastsim::EthFrame f;
  uint64_t frames = 0, bad = 0;
  auto t0 = Clock::now();
  for (uint64_t i = 0; i < n; i++) {
    if (port.tx_pending() < 2) port.send(frame.data(), frame.size(), true, false);
    port.tick(d, c, &rd, &rc);
    d = rd;
    c = rc;
    while (port.recv(&f)) { frames++; bad += !f.fcs_ok; }
  }
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("XgmiiPort: %.1f ns per MAC edge (%.2f M edges/s), %llu frames decoded, %llu bad\n",
              s / double(n) * 1e9, double(n) / s / 1e6, (unsigned long long)frames, (unsigned long long)bad);

  fastsim::AxiDram dram(32u << 20, true, 4.0);
  fastsim::AxiMaster m{};
  fastsim::AxiSlave sl{};
  m.awlen = m.arlen = 15;
  m.awsize = m.arsize = 5;
  m.awburst = m.arburst = 1;
  m.awvalid = m.wvalid = m.arvalid = m.bready = m.rready = true;
  m.wstrb = 0xFFFFFFFFu;
  uint32_t wbeat = 0;
  uint64_t aw = 0, ar = 0, rbeats = 0, bs = 0;
  const uint64_t na = 5000000;
  t0 = Clock::now();
  for (uint64_t i = 0; i < na; i++) {
    m.awaddr = (aw * 512) % (16u << 20);
    m.araddr = (ar * 512 + (8u << 20)) % (16u << 20);
    m.wlast = wbeat == 15;
    m.arvalid = ar - rbeats / 16 < 8;
    fastsim::AxiSlave before = sl;
    dram.tick(m, &sl);
    if (before.awready && m.awvalid) aw++;
    if (before.arready && m.arvalid) ar++;
    if (before.wready && m.wvalid) wbeat = (wbeat + 1) % 16;
    if (before.rvalid && m.rready) rbeats++;
    if (before.bvalid && m.bready) bs++;
  }
  s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("AxiDram ddr4: %.1f ns per core edge (%.2f M edges/s); %llu read beats, %llu writes answered"
              " (%.1f Gb/s both ways at 250 MHz)\n",
              s / double(na) * 1e9, double(na) / s / 1e6, (unsigned long long)rbeats, (unsigned long long)bs,
              (double(rbeats) * 32 + double(bs) * 512) * 8 / (double(na) * 4.0));

  // idle: no frame, no burst (most edges of an idle or lightly loaded NIC)
  fastsim::XgmiiPort quiet;
  fastsim::AxiDram still(32u << 20, true, 4.0);
  fastsim::AxiMaster none{};
  d = 0x0707070707070707ull;
  c = 0xFF;
  t0 = Clock::now();
  for (uint64_t i = 0; i < n; i++) {
    quiet.tick(d, c, &rd, &rc);
    still.tick(none, &sl);
  }
  s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("idle: %.1f ns per edge for one XgmiiPort and one AxiDram together\n", s / double(n) * 1e9);
  return 0;
}
