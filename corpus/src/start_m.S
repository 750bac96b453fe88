/* ARMv7-M startup: vector table and reset handler (T32). */
    .file "src/start_m.S"
    .syntax unified
    .thumb
    .section .vectors, "a"
    .global _vectors
_vectors:
    .word __stack_top
    .word reset_handler
    .word hang                  /* 2 NMI */
    .word hang                  /* 3 HardFault */
    .word hang                  /* 4 MemManage */
    .word hang                  /* 5 BusFault */
    .word hang                  /* 6 UsageFault */
    .word 0, 0, 0, 0
    .word svc_handler           /* 11 SVCall */
    .word hang                  /* 12 DebugMonitor */
    .word 0
    .word hang                  /* 14 PendSV */
    .word timer_handler         /* 15 SysTick */
    .word irq_handler           /* 16 external interrupt 0 */

    .text
    .thumb_func
    .global reset_handler
    .type reset_handler, %function
reset_handler:
    ldr r0, =__data_start
    ldr r1, =__data_end
    ldr r2, =__data_load
1:  cmp r0, r1
    bhs 2f
    ldr r3, [r2], #4
    str r3, [r0], #4
    b 1b
2:  ldr r0, =__bss_start
    ldr r1, =__bss_end
    movs r2, #0
3:  cmp r0, r1
    bhs 4f
    str r2, [r0], #4
    b 3b
4:  bl main
    .size reset_handler, . - reset_handler
    .thumb_func
    .global hang
    .type hang, %function
hang:
    b hang
    .size hang, . - hang

    .weak svc_handler
    .weak irq_handler
    .weak timer_handler
    .thumb_set svc_handler, hang
    .thumb_set irq_handler, hang
    .thumb_set timer_handler, hang
