# Load a bitstream into the FPGA over JTAG (volatile): `./offnic program --board B`.
# Expects: bitfile (path), hw_server (host:port, default localhost:3121).
open_hw_manager
connect_hw_server -url $hw_server
open_hw_target
set dev [lindex [get_hw_devices xcku3p*] 0]
current_hw_device $dev
set_property PROGRAM.FILE $bitfile $dev
program_hw_devices $dev
refresh_hw_device $dev
close_hw_manager
