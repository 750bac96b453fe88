/* Shared definitions for the corpus programs: the emulated device page,
 * interrupt masking and the SVC call used by every program. */
#ifndef CORPUS_H
#define CORPUS_H

#define DEV_BASE 0x40000000u
/* Writing N makes an interrupt pending: A-profile: IRQ (N ignored);
 * ARMv7-M: exception number N (16 = external interrupt 0). */
#define DEV_TRIGGER (*(volatile unsigned *)(DEV_BASE + 0x0))
/* Writing N > 0 starts a periodic timer: an interrupt (A-profile IRQ,
 * ARMv7-M SysTick) becomes pending every N executed instructions.
 * Writing 0 stops it. */
#define DEV_TIMER (*(volatile unsigned *)(DEV_BASE + 0x4))
/* Output sink: bytes written here are ignored by the emulator. */
#define DEV_OUT (*(volatile unsigned *)(DEV_BASE + 0x8))

#if defined(__ARM_ARCH_7M__)
#define CORPUS_M_PROFILE 1
#define IRQ_EXTERNAL0 16u
#else
#define CORPUS_M_PROFILE 0
#define IRQ_EXTERNAL0 1u
#endif

static inline void irq_enable(void) { __asm volatile("cpsie i" ::: "memory"); }
static inline void irq_disable(void) { __asm volatile("cpsid i" ::: "memory"); }

/* SVC #1 with an operation code in r0 and an argument in r1. */
static inline void svc_call(unsigned op, unsigned arg)
{
    register unsigned r0 __asm("r0") = op;
    register unsigned r1 __asm("r1") = arg;
    __asm volatile("svc #1" : "+r"(r0) : "r"(r1) : "memory");
}

/* Handlers called by the startup code (A-profile) or through the vector
 * table (ARMv7-M). Programs define the ones they use. */
void svc_handler(unsigned op, unsigned arg);
void irq_handler(void);
void timer_handler(void);
int main(void);

#endif
