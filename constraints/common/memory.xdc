# Memory placement, the same on every board. firtool emits the payload cache's on-chip
# tier as module onchip_<words>x256 with the array Memory, and the TCP engine's control
# blocks as tcbRam_*; neither can carry a ram_style attribute through firtool, so they
# are placed here by name, as `./offnic synth` does for Yosys (URAM_MEMORIES in
# sim/offnic_sim/tasks.py): UltraRAM, 29 URAM288 for the 1 MiB cache instead of ~256 BRAM36.
set_property RAM_STYLE ULTRA [get_cells -quiet -hierarchical -regexp {.*onchip_.*/Memory.*}]
set_property RAM_STYLE ULTRA [get_cells -quiet -hierarchical -regexp {.*tcbRam_.*/Memory.*}]
