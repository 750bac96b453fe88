/* A-profile startup: vectors, stacks, SVC and IRQ entry stubs (A32). */
    .file "src/start_a.S"
    .syntax unified
    .arm
    .section .vectors, "ax"
    .global _start
    .type _start, %function
_start:
    b reset
    b hang          /* undefined instruction */
    b svc_entry
    b hang          /* prefetch abort */
    b hang          /* data abort */
    nop
    b irq_entry
    b hang          /* FIQ */
    .size _start, . - _start

    .text
    .type reset, %function
reset:
    cps #0x12                   /* IRQ mode */
    ldr sp, =__irq_stack_top
    cps #0x13                   /* SVC mode */
    ldr sp, =__svc_stack_top
    cps #0x1f                   /* System mode for the program */
    ldr sp, =__sys_stack_top
    ldr r0, =__bss_start
    ldr r1, =__bss_end
    mov r2, #0
1:  cmp r0, r1
    strlo r2, [r0], #4
    blo 1b
    ldr r0, =main
    blx r0
    .size reset, . - reset
    .global hang
    .type hang, %function
hang:
    b hang
    .size hang, . - hang

    .type svc_entry, %function
svc_entry:
    push {r0-r3, r12, lr}
    mrs r12, spsr
    push {r12, lr}
    tst r12, #0x20              /* caller in Thumb state? */
    ldrhne r2, [lr, #-2]
    bicne r2, r2, #0xff00
    ldreq r2, [lr, #-4]
    biceq r2, r2, #0xff000000
    bl svc_handler
    pop {r12, lr}
    msr spsr_cxsf, r12
    pop {r0-r3, r12, lr}
    movs pc, lr
    .size svc_entry, . - svc_entry

    .type irq_entry, %function
irq_entry:
    sub lr, lr, #4
    push {r0-r3, r12, lr}
    bl irq_handler
    ldm sp!, {r0-r3, r12, pc}^
    .size irq_entry, . - irq_entry

    .weak svc_handler
    .weak irq_handler
    .set svc_handler, hang
    .set irq_handler, hang
