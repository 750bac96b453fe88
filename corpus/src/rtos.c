/* A small preemptive RTOS and an application of five tasks: round robin
 * on the timer tick (a task runs for a time slice of two ticks at most),
 * yield and sleep through SVC (A-profile) or PendSV (ARMv7-M), a task
 * created and two deleted while the others run, and an idle task that
 * runs when every other task sleeps. The ports (src/rtos_port_a.S,
 * src/rtos_port_m.S) save and restore the tasks' registers; the kernel
 * here picks which task runs.
 *
 * Every task that yields or sleeps is suspended at the same instruction
 * (in rtos_call), so a trace alone must follow a resumed task until it
 * returns to its caller to tell which task it is. A-profile tasks trap
 * with interrupts masked and resume so, unmasking them themselves: an
 * interrupt pending meanwhile is taken one instruction later, where no
 * other task waits. A task that has just been switched in keeps running
 * for the rest of its slice, so it gets back to its own code before the
 * next switch.
 *
 * The emulator (tools/truth.py --tasks) reads `rtos_current` after every
 * return from an exception to a task, and `id` and `entry` of the task
 * control block it points to, to record which task runs each
 * instruction. */
#include "corpus.h"

#define MAX_TASKS 6
#define STACK_WORDS 192
#define TIMER_PERIOD 900u
#define SLICE 2u

enum { FREE = 0, READY, SLEEPING };
enum { OP_START = 0, OP_YIELD, OP_SLEEP, OP_EXIT };

/* The ports rely on `sp` at offset 0; the emulator reads `id` (offset 4)
 * and `entry` (offset 8). */
struct tcb {
    unsigned *sp;
    unsigned id;
    void (*entry)(void);
    unsigned state;
    unsigned wake;
    unsigned slice;
    unsigned request; /* ARMv7-M: the operation PendSV carries out */
    unsigned arg;
};

struct tcb *volatile rtos_current;
static struct tcb tcbs[MAX_TASKS];
static unsigned stacks[MAX_TASKS][STACK_WORDS] __attribute__((aligned(8)));
static unsigned next_id = 1;
static volatile unsigned rtos_ticks;
static struct tcb *idle_task;

#if CORPUS_M_PROFILE
#define ICSR (*(volatile unsigned *)0xE000ED04u)
#define PENDSVSET (1u << 28)
#endif

void idle(void);
static void rtos_exit(void);

/* Make a task of `entry` in a free slot: its stack holds the registers the
 * port restores, so that the exception return starts it at `entry`. */
static struct tcb *rtos_create(void (*entry)(void))
{
    for (unsigned i = 0; i < MAX_TASKS; i++) {
        struct tcb *t = &tcbs[i];
        if (t->state != FREE)
            continue;
        unsigned *sp = &stacks[i][STACK_WORDS];
        unsigned pc = (unsigned)entry;
#if CORPUS_M_PROFILE
        *--sp = 1u << 24;                 /* xPSR: Thumb */
        *--sp = pc & ~1u;                 /* return address */
        *--sp = (unsigned)rtos_exit;      /* LR */
        for (int r = 0; r < 5; r++)       /* r12, r3-r0 */
            *--sp = 0;
        *--sp = 0xFFFFFFF9u;              /* EXC_RETURN: thread, main stack */
        for (int r = 0; r < 9; r++)       /* r11-r3 */
            *--sp = 0;
#else
        *--sp = 0x1Fu | ((pc & 1u) << 5); /* CPSR: System mode, IRQ on */
        *--sp = pc & ~1u;                 /* return address */
        *--sp = (unsigned)rtos_exit;      /* LR */
        for (int r = 0; r < 13; r++)      /* r12-r0 */
            *--sp = 0;
#endif
        t->sp = sp;
        t->id = next_id++;
        t->entry = entry;
        t->wake = 0;
        t->request = 0;
        t->state = READY;
        return t;
    }
    return 0;
}

/* Pick the task to run next: the next ready one after the current one
 * (round robin), waking the sleepers whose time has come; the idle task
 * when none is ready. It gets a fresh time slice. Called by the ports
 * with interrupts masked. */
void rtos_schedule(void)
{
    struct tcb *cur = rtos_current;
    unsigned at = cur ? (unsigned)(cur - tcbs) : 0;
    struct tcb *next = idle_task;
    for (unsigned k = 0; k < MAX_TASKS; k++) {
        at = at + 1 == MAX_TASKS ? 0 : at + 1;
        struct tcb *t = &tcbs[at];
        if (t->state == SLEEPING && (int)(rtos_ticks - t->wake) >= 0)
            t->state = READY;
        if (t->state == READY && t != idle_task) {
            next = t;
            break;
        }
    }
    next->slice = SLICE;
    rtos_current = next;
}

/* Carry out operation `op` of the running task, and pick the next task. */
static void rtos_switch(unsigned op, unsigned arg)
{
    struct tcb *cur = rtos_current;
    if (op == OP_START) {
        DEV_TIMER = TIMER_PERIOD;
    } else if (op == OP_SLEEP) {
        cur->wake = rtos_ticks + arg;
        cur->state = SLEEPING;
    } else if (op == OP_EXIT) {
        cur->state = FREE;
    }
    rtos_schedule();
}

/* The supervisor call (A-profile: every operation; ARMv7-M: starting the
 * scheduler). */
void rtos_svc(unsigned op, unsigned arg) { rtos_switch(op, arg); }

#if CORPUS_M_PROFILE
/* PendSV: the running task's request (none when the timer asked), and
 * the next task. */
void rtos_pendsv(void)
{
    struct tcb *cur = rtos_current;
    unsigned op = cur->request;
    cur->request = 0;
    rtos_switch(op, cur->arg);
}
#endif

/* The timer tick: the running task's slice ends after SLICE ticks (the
 * idle task's at once). Returns whether to switch. */
static int rtos_tick_expired(void)
{
    struct tcb *cur = rtos_current;
    rtos_ticks++;
    return cur == idle_task || --cur->slice == 0;
}

#if CORPUS_M_PROFILE
void timer_handler(void)
{
    if (rtos_tick_expired())
        ICSR = PENDSVSET;
}
#else
void rtos_tick(void)
{
    if (rtos_tick_expired())
        rtos_schedule();
}
#endif

/* Every task that yields or sleeps is suspended here: at the `cpsie i`
 * after the SVC (A-profile, resuming with interrupts masked), or where
 * PendSV is taken after the store that makes it pending (ARMv7-M). */
static volatile unsigned rtos_calls;

__attribute__((noinline)) static void rtos_call(unsigned op, unsigned arg)
{
    rtos_calls++;
#if CORPUS_M_PROFILE
    struct tcb *cur = rtos_current;
    cur->arg = arg;
    cur->request = op;
    ICSR = PENDSVSET;
    __asm volatile("dsb\n\tisb" ::: "memory");
#else
    irq_disable();
    svc_call(op, arg);
    irq_enable();
#endif
}

__attribute__((noinline)) static void rtos_yield(void) { rtos_call(OP_YIELD, 0); }

__attribute__((noinline)) static void rtos_sleep(unsigned ticks) { rtos_call(OP_SLEEP, ticks); }

/* The running task ends: it is never resumed. */
__attribute__((noinline, noreturn)) static void rtos_exit(void)
{
    rtos_call(OP_EXIT, 0);
    for (;;) {
    }
}

/* Delete another task (it never runs again). */
static void rtos_kill(struct tcb *t)
{
    irq_disable();
    t->state = FREE;
    irq_enable();
}

/* ---- the application ------------------------------------------------ */

static volatile unsigned idle_loops;
static unsigned char buffer[64];
static int numbers[16];
static unsigned seed = 2024;
static volatile unsigned results[8];
static struct tcb *sorter;
static volatile unsigned finished;

__attribute__((noinline)) static unsigned checksum(const unsigned char *data, unsigned len)
{
    unsigned sum = 0;
    for (unsigned i = 0; i < len; i++)
        sum = (sum << 3 | sum >> 29) ^ data[i];
    return sum;
}

static unsigned next_random(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 16;
}

__attribute__((noinline)) static void shell_sort(int *v, int len)
{
    for (int gap = len / 2; gap > 0; gap /= 2)
        for (int i = gap; i < len; i++)
            for (int j = i - gap; j >= 0 && v[j] > v[j + gap]; j -= gap) {
                int x = v[j];
                v[j] = v[j + gap];
                v[j + gap] = x;
            }
}

__attribute__((noinline)) static unsigned digits(unsigned value)
{
    unsigned n = 0;
    do {
        DEV_OUT = '0' + value % 10u;
        value /= 10u;
        n++;
    } while (value != 0);
    return n;
}

void task_d(void);

/* Fills and checks the buffer; creates task_d, deletes the sorter, and
 * stops the program at the end. */
void task_a(void)
{
    for (unsigned round = 0; round < 20; round++) {
        if (round % 3 == 2)
            rtos_sleep(3);
        else
            rtos_yield();
        for (unsigned i = 0; i < sizeof buffer; i++)
            buffer[i] = (unsigned char)(buffer[i] * 7u + i + round);
        results[0] = checksum(buffer, sizeof buffer);
        if (round == 4)
            rtos_create(task_d);
        if (round == 12)
            rtos_kill(sorter);
    }
    finished = 1;
    irq_disable();
    DEV_TIMER = 0;
    for (;;) {
    }
}

/* Sorts random numbers and sleeps; deleted by task_a while it sleeps. */
void task_b(void)
{
    for (;;) {
        for (unsigned i = 0; i < 16; i++)
            numbers[i] = (int)(next_random() % 1000u);
        shell_sort(numbers, 16);
        results[1] = (unsigned)numbers[0];
        rtos_sleep(2);
    }
}

/* Works a few rounds, yielding, then ends itself. */
void task_c(void)
{
    for (unsigned round = 0; round < 5; round++) {
        results[2] += checksum(buffer + round, 16);
        rtos_yield();
    }
    rtos_exit();
}

/* Created by task_a: prints numbers and sleeps. */
void task_d(void)
{
    for (unsigned round = 0;; round++) {
        results[3] += digits(results[0] ^ round);
        if (round & 1)
            rtos_sleep(1);
        else
            rtos_yield();
    }
}

void idle(void)
{
    for (;;)
        idle_loops++;
}

int main(void)
{
    idle_task = rtos_create(idle);
    rtos_create(task_a);
    sorter = rtos_create(task_b);
    rtos_create(task_c);
    rtos_current = 0;
    svc_call(OP_START, 0);
    return 0;
}
