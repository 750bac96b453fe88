/* A-profile port of the corpus RTOS (src/rtos.c): vectors, reset, and the
 * SVC and IRQ entries that switch tasks (A32).
 *
 * Tasks run in System mode on stacks of their own. Both entries save the
 * interrupted task's context on its own stack (SRS stores the return
 * address and SPSR there, then r0-r12 and LR), store its stack pointer
 * in its task control block (`rtos_current->sp`, offset 0), call the
 * kernel, and restore whichever task `rtos_current` names then: a task
 * resumes, or starts, with the exception return `RFE`. */
    .file "src/rtos_port_a.S"
    .syntax unified
    .arm
    .section .vectors, "ax"
    .global _start
    .type _start, %function
_start:
    b reset
    b hang          /* undefined instruction */
    b rtos_svc_entry
    b hang          /* prefetch abort */
    b hang          /* data abort */
    nop
    b rtos_irq_entry
    b hang          /* FIQ */
    .size _start, . - _start

    .text
    .type reset, %function
reset:
    cps #0x13                   /* SVC mode */
    ldr sp, =__svc_stack_top
    cps #0x1f                   /* System mode for main */
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

/* Resume (or start) the task rtos_current names (placed before the
 * entries, which branch back to it). */
    .type rtos_restore, %function
rtos_restore:
    ldr r0, =rtos_current
    ldr r0, [r0]
    ldr sp, [r0]
    pop {r0-r12, lr}
    rfeia sp!
    .size rtos_restore, . - rtos_restore

/* SVC: r0 = operation, r1 = argument (see rtos_svc). */
    .global rtos_svc_entry
    .type rtos_svc_entry, %function
rtos_svc_entry:
    srsdb sp!, #0x1f            /* return address and SPSR on the task's stack */
    cps #0x1f
    push {r0-r12, lr}
    ldr r2, =rtos_current
    ldr r2, [r2]
    cmp r2, #0                  /* no task before the scheduler starts */
    strne sp, [r2]
    bl rtos_svc
    b rtos_restore
    .size rtos_svc_entry, . - rtos_svc_entry

    .global rtos_irq_entry
    .type rtos_irq_entry, %function
rtos_irq_entry:
    sub lr, lr, #4
    srsdb sp!, #0x1f
    cps #0x1f
    push {r0-r12, lr}
    ldr r2, =rtos_current
    ldr r2, [r2]
    str sp, [r2]
    bl rtos_tick
    b rtos_restore
    .size rtos_irq_entry, . - rtos_irq_entry
