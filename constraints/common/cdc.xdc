# Clock-domain crossings, the same on every board. Every crossing in offnic goes through
# hw/src/offnic/cdc/GraySync.scala, whose two synchroniser stages are the registers
# cdc_sync_<name>_0 and cdc_sync_<name>_1 (Gray-coded FIFO pointers and single bits).

# Keep both stages together and out of retiming; they must not be optimised into SRLs.
set_property ASYNC_REG TRUE [get_cells -hierarchical -regexp {.*cdc_sync_.*_[01]_reg.*}]

# The path into the first stage crosses domains: bound it by one period of the fastest
# clock that crosses (2.482 ns: the transceivers' user clock at 25.78125 Gb/s, 402.83 MHz,
# which the XGMII rate adapters cross to and from the 390.625 MHz MAC clock) instead of
# timing it against an unrelated clock. Gray coding keeps a multi-bit pointer correct as
# long as its bits arrive within one destination period of each other.
set_max_delay -datapath_only -to [get_cells -hierarchical -regexp {.*cdc_sync_.*_0_reg.*}] 2.482

# Reset synchronisers (hw/src/offnic/board/ResetSync.scala, stages cdc_sync_rst_*): the
# reset arrives asynchronously at their preset pins by design; release is synchronous.
set_false_path -to [get_pins -hierarchical -regexp {.*cdc_sync_rst_[0-9]+_reg.*/PRE}]
