// The control processor as the NIC will hold it, for the firmware's tests: PicoRV32 (from
// PyPI's pythondata-cpu-picorv32) with its instruction and data memories in block-RAM style
// (one-cycle synchronous read, byte-enable writes); the firmware bus (fw_bus.h) beyond them
// is brought out to cocotb, which plays the NIC. The image goes in the way the host will
// load it through BAR0: core held in reset, words written, core released.
`default_nettype none

module fw_bench #(
    parameter int IMEM_BYTES = 16384,
    parameter int DMEM_BYTES = 8192
) (
    input  wire        clk,
    input  wire        resetn,      // the core's reset (active low); the memories keep their contents
    // image load port: one word per cycle into instruction memory, only while in reset
    input  wire        load_valid,
    input  wire [31:0] load_addr,   // byte address
    input  wire [31:0] load_data,
    // the firmware bus: requests above the memories; cocotb answers with a one-cycle ready
    output wire        per_valid,
    output wire [31:0] per_addr,
    output wire [31:0] per_wdata,
    output wire [3:0]  per_wstrb,
    input  wire        per_ready,
    input  wire [31:0] per_rdata,
    output wire        trap,
    output reg         mem_error    // sticky: an access to no memory, or a write to IMEM
);
    localparam int IMEM_WORDS = IMEM_BYTES / 4;
    localparam int DMEM_WORDS = DMEM_BYTES / 4;
    localparam logic [31:0] DMEM_BASE = 32'h0010_0000;  // fw_bus.h FW_DMEM_BASE
    localparam logic [31:0] PER_BASE = 32'h4000_0000;   // FW_NIC_BASE and above

    wire        mem_valid, mem_instr;
    wire [31:0] mem_addr, mem_wdata;
    wire [3:0]  mem_wstrb;
    reg         ram_ready;
    reg  [31:0] ram_rdata;

    picorv32 #(
        .ENABLE_COUNTERS(1),
        .ENABLE_COUNTERS64(0),
        .ENABLE_MUL(1),
        .ENABLE_DIV(1),
        .COMPRESSED_ISA(0),
        .BARREL_SHIFTER(1),
        .CATCH_MISALIGN(1),
        .CATCH_ILLINSN(1),
        .ENABLE_IRQ(0),
        .PROGADDR_RESET(32'h0000_0000),
        .STACKADDR(DMEM_BASE + DMEM_BYTES)
    ) cpu (
        .clk(clk), .resetn(resetn), .trap(trap),
        .mem_valid(mem_valid), .mem_instr(mem_instr), .mem_ready(ram_ready | (per_ready & per_valid)),
        .mem_addr(mem_addr), .mem_wdata(mem_wdata), .mem_wstrb(mem_wstrb), .mem_rdata(per_valid ? per_rdata : ram_rdata),
        .mem_la_read(), .mem_la_write(), .mem_la_addr(), .mem_la_wdata(), .mem_la_wstrb(),
        .pcpi_valid(), .pcpi_insn(), .pcpi_rs1(), .pcpi_rs2(), .pcpi_wr(1'b0), .pcpi_rd(32'b0),
        .pcpi_wait(1'b0), .pcpi_ready(1'b0), .irq(32'b0), .eoi(),
        .trace_valid(), .trace_data()
    );

    wire in_imem = mem_addr < IMEM_BYTES;
    wire in_dmem = mem_addr >= DMEM_BASE && mem_addr < DMEM_BASE + DMEM_BYTES;
    wire in_per = mem_addr >= PER_BASE;
    assign per_valid = mem_valid && in_per;
    assign per_addr = mem_addr;
    assign per_wdata = mem_wdata;
    assign per_wstrb = mem_wstrb;

    reg [31:0] imem[IMEM_WORDS];
    reg [31:0] dmem[DMEM_WORDS];
    wire [31:0] imem_index = mem_addr / 4;
    wire [31:0] dmem_index = (mem_addr - DMEM_BASE) / 4;

    always @(posedge clk) begin
        ram_ready <= 1'b0;
        if (!resetn) begin
            mem_error <= 1'b0;
            if (load_valid && load_addr < IMEM_BYTES) imem[load_addr / 4] <= load_data;
        end else if (mem_valid && !ram_ready && !in_per) begin
            ram_ready <= 1'b1;  // unmapped accesses complete too (reading 0): never a hang
            ram_rdata <= 32'b0;
            if (in_imem) begin
                ram_rdata <= imem[imem_index];
                if (|mem_wstrb) mem_error <= 1'b1;
            end else if (in_dmem) begin
                ram_rdata <= dmem[dmem_index];
                for (int b = 0; b < 4; b++)
                    if (mem_wstrb[b]) dmem[dmem_index][8*b +: 8] <= mem_wdata[8*b +: 8];
            end else begin
                mem_error <= 1'b1;
            end
        end
    end
endmodule
