/* Reset entry (PicoRV32 starts at address 0): stack at the top of data memory, .data
 * copied from its load image in instruction memory, .bss cleared, then main(). */
    .section .text.start
    .global _start
_start:
    la   sp, __stack_top
    la   a0, __data_load
    la   a1, __data_start
    la   a2, __data_end
1:  bgeu a1, a2, 2f
    lw   t0, 0(a0)
    sw   t0, 0(a1)
    addi a0, a0, 4
    addi a1, a1, 4
    j    1b
2:  la   a1, __bss_start
    la   a2, __bss_end
3:  bgeu a1, a2, 4f
    sw   zero, 0(a1)
    addi a1, a1, 4
    j    3b
4:  call main
    /* main never returns; if it did, an ebreak stops the core (PicoRV32 raises trap) */
    ebreak
