# offnic's Vivado non-project batch flow, the same for every board. Sourced by the entry
# script `./offnic vivado` writes (build/vivado/<board>/run.tcl), which sets:
#   board part top step out_dir ip_dir ip_tcl sources xdc_files flash_interface flash_size_mb
# step: synth (stop after synthesis), impl (after routing) or bit (bitstream and flash image).
# Reports go to $out_dir/reports, checkpoints to $out_dir.

proc offnic_report {name} {
    global out_dir
    report_utilization -file $out_dir/reports/${name}_utilization.rpt
    report_utilization -hierarchical -hierarchical_depth 4 -file $out_dir/reports/${name}_utilization_hier.rpt
    report_timing_summary -max_paths 20 -report_unconstrained -file $out_dir/reports/${name}_timing.rpt
    report_clock_interaction -file $out_dir/reports/${name}_clock_interaction.rpt
    report_cdc -details -file $out_dir/reports/${name}_cdc.rpt
    report_drc -file $out_dir/reports/${name}_drc.rpt
}

file mkdir $out_dir/reports $ip_dir
create_project -in_memory -part $part
set_property target_language Verilog [current_project]

# Vendor IP: created from its Tcl (create_ip + CONFIG.*), generated and synthesised out of
# context, once per configuration (the .xci keeps it; a changed CONFIG regenerates it).
source $ip_tcl
foreach ip [get_ips] {
    generate_target all $ip
    synth_ip $ip
}

foreach src $sources { read_verilog -sv $src }
foreach xdc $xdc_files { read_xdc $xdc }

synth_design -top $top -part $part -flatten_hierarchy rebuilt
write_checkpoint -force $out_dir/${top}_synth.dcp
offnic_report synth
if {$step eq "synth"} { return }

opt_design
place_design
phys_opt_design
route_design
write_checkpoint -force $out_dir/${top}_routed.dcp
offnic_report routed
report_power -file $out_dir/reports/routed_power.rpt
if {$step eq "impl"} { return }

# A build that misses timing still writes its bitstream (bring-up on a bench), but says so.
set wns [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -setup]]
if {$wns < 0} { puts "offnic: WARNING: timing not met (WNS $wns ns); see reports/routed_timing.rpt" }
write_bitstream -force -bin_file $out_dir/$top.bit
write_cfgmem -force -format mcs -size $flash_size_mb -interface $flash_interface \
    -loadbit "up 0x0 $out_dir/$top.bit" -checksum -file $out_dir/$top.mcs
