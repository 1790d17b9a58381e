# Write the flash image (non-volatile) over JTAG: `./offnic flash --board B`.
# Expects: mcsfile, flash_part (Vivado's cfgmem part name), hw_server.
open_hw_manager
connect_hw_server -url $hw_server
open_hw_target
set dev [lindex [get_hw_devices xcku3p*] 0]
current_hw_device $dev
create_hw_cfgmem -hw_device $dev [lindex [get_cfgmem_parts $flash_part] 0]
set mem [get_property PROGRAM.HW_CFGMEM $dev]
set_property PROGRAM.ADDRESS_RANGE use_file $mem
set_property PROGRAM.FILES [list $mcsfile] $mem
set_property PROGRAM.BLANK_CHECK 0 $mem
set_property PROGRAM.ERASE 1 $mem
set_property PROGRAM.CFG_PROGRAM 1 $mem
set_property PROGRAM.VERIFY 1 $mem
# The FPGA must hold the configuration-memory loader while the flash is written
create_hw_bitstream -hw_device $dev [get_property PROGRAM.HW_CFGMEM_BITFILE $dev]
program_hw_devices $dev
program_hw_cfgmem -hw_cfgmem $mem
boot_hw_device $dev
close_hw_manager
