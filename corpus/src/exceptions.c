/* Supervisor calls, exception return, an interrupt from thread code and a
 * nested interrupt taken inside the SVC handler. */
#include "corpus.h"

enum { OP_ADD = 0, OP_MUL = 1, OP_NESTED = 2 };

static volatile unsigned total = 1;
static volatile unsigned svc_count;
static volatile unsigned irq_count;
static volatile unsigned nested_count;
static volatile unsigned in_svc;

void svc_handler(unsigned op, unsigned arg)
{
    in_svc = 1;
    svc_count++;
    if (op == OP_ADD) {
        total += arg;
    } else if (op == OP_MUL) {
        total *= arg | 1;
    } else if (op == OP_NESTED) {
        irq_enable();
        DEV_TRIGGER = IRQ_EXTERNAL0; /* taken here, inside the handler */
#if !CORPUS_M_PROFILE
        /* A-profile: the exception return restores the caller's mask.
         * ARMv7-M keeps PRIMASK, and an SVC with PRIMASK set escalates
         * to HardFault, so it stays clear there. */
        irq_disable();
#endif
    }
    in_svc = 0;
}

void irq_handler(void)
{
    irq_count++;
    if (in_svc)
        nested_count++;
    total ^= irq_count << 4;
}

int main(void)
{
    for (unsigned i = 0; i < 30; i++)
        svc_call(i % 3, i + 2);
    irq_enable();
    for (unsigned i = 0; i < 8; i++) {
        DEV_TRIGGER = IRQ_EXTERNAL0; /* interrupt from thread code */
        total += i;
    }
    irq_disable();
    return (int)(total + nested_count);
}
