# Clock-domain crossings, the same on every board. Every crossing in offnic goes through
# hw/src/offnic/cdc/GraySync.scala, whose two synchroniser stages are the registers
# cdc_sync_<name>_0 and cdc_sync_<name>_1 (Gray-coded FIFO pointers and single bits).

# Keep both stages together and out of retiming; they must not be optimised into SRLs.
set_property ASYNC_REG TRUE [get_cells -hierarchical -regexp {.*cdc_sync_.*_[01]_reg.*}]

# The path into the first stage crosses domains: bound it by one period of the faster of
# the core and MAC clocks (2.56 ns at 390.625 MHz) instead of timing it against an
# unrelated clock. Gray coding keeps a multi-bit pointer correct as long as its bits
# arrive within one destination period of each other.
set_max_delay -datapath_only -to [get_cells -hierarchical -regexp {.*cdc_sync_.*_0_reg.*}] 2.560
