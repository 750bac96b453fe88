/* ARMv7-M port of the corpus RTOS (src/rtos.c): vector table, reset, and
 * the SVCall and PendSV handlers that switch tasks (T32).
 *
 * Every task runs privileged on the main stack pointer, each on a stack
 * of its own. A handler pushes r3-r11 and EXC_RETURN below the frame the
 * exception entry stacked, stores the stack pointer in the task control
 * block (`rtos_current->sp`, offset 0), calls the kernel, and unstacks
 * whichever task `rtos_current` names then: the exception return resumes
 * it, or starts it from the frame rtos_create built. SVCall starts the
 * scheduler; PendSV (lowest priority, made pending by the timer and by
 * rtos_call) switches. */
    .file "src/rtos_port_m.S"
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
    .word rtos_svc_entry        /* 11 SVCall */
    .word hang                  /* 12 DebugMonitor */
    .word 0
    .word rtos_pendsv_entry     /* 14 PendSV */
    .word timer_handler         /* 15 SysTick */
    .word hang                  /* 16 external interrupt 0 */

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

/* Resume (or start) the task rtos_current names (placed before the
 * entries, which branch back to it). */
    .thumb_func
    .type rtos_restore, %function
rtos_restore:
    ldr r0, =rtos_current
    ldr r0, [r0]
    ldr sp, [r0]
    pop {r3-r11, lr}
    cpsie i
    bx lr
    .size rtos_restore, . - rtos_restore

/* SVCall: r0 = operation, r1 = argument (see rtos_svc). */
    .thumb_func
    .global rtos_svc_entry
    .type rtos_svc_entry, %function
rtos_svc_entry:
    push {r3-r11, lr}
    ldr r2, =rtos_current
    ldr r2, [r2]
    cbz r2, 1f                  /* no task before the scheduler starts */
    str sp, [r2]
1:  bl rtos_svc
    b rtos_restore
    .size rtos_svc_entry, . - rtos_svc_entry

    .thumb_func
    .global rtos_pendsv_entry
    .type rtos_pendsv_entry, %function
rtos_pendsv_entry:
    cpsid i                     /* the timer changes the task lists too */
    push {r3-r11, lr}
    ldr r2, =rtos_current
    ldr r2, [r2]
    str sp, [r2]
    bl rtos_pendsv
    b rtos_restore
    .size rtos_pendsv_entry, . - rtos_pendsv_entry
