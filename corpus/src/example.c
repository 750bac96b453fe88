/* A cooperative scheduler running three tasks (CRC-32 over a buffer, an
 * insertion sort, number formatting) while a periodic timer interrupt
 * counts ticks. The program stops after a fixed number of ticks. */
#include "corpus.h"

#define TIMER_PERIOD 1500u
#define RUN_TICKS 24u
#define BUF_LEN 48
#define SORT_LEN 20

struct task {
    void (*run)(struct task *self);
    unsigned period;
    unsigned next_tick;
    unsigned runs;
};

static volatile unsigned ticks;
static unsigned char buffer[BUF_LEN];
static unsigned crc_result;
static int numbers[SORT_LEN];
static unsigned seed = 12345;
static char text[16];

void timer_handler(void) { ticks++; }

#if !CORPUS_M_PROFILE
/* A-profile: the timer is the only interrupt source. */
void irq_handler(void) { timer_handler(); }
#endif

static unsigned crc32(const unsigned char *data, unsigned len)
{
    unsigned crc = 0xffffffffu;
    for (unsigned i = 0; i < len; i++) {
        crc ^= data[i];
        for (int bit = 0; bit < 8; bit++)
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));
    }
    return ~crc;
}

static unsigned next_random(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 16;
}

static void insertion_sort(int *v, int len)
{
    for (int i = 1; i < len; i++) {
        int key = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > key) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = key;
    }
}

static int format_decimal(char *out, unsigned value)
{
    char tmp[12];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0);
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = 0;
    return n;
}

static void emit(const char *s)
{
    while (*s)
        DEV_OUT = (unsigned char)*s++;
}

static void crc_task(struct task *self)
{
    for (int i = 0; i < BUF_LEN; i++)
        buffer[i] = (unsigned char)(buffer[i] + i + self->runs);
    crc_result = crc32(buffer, BUF_LEN);
}

static void sort_task(struct task *self)
{
    (void)self;
    for (int i = 0; i < SORT_LEN; i++)
        numbers[i] = (int)(next_random() % 1000u) - 500;
    insertion_sort(numbers, SORT_LEN);
}

static void format_task(struct task *self)
{
    format_decimal(text, crc_result ^ self->runs);
    emit(text);
    emit(" ");
    format_decimal(text, ticks);
    emit(text);
    emit("\n");
}

static struct task tasks[] = {
    { crc_task, 3, 0, 0 },
    { sort_task, 5, 1, 0 },
    { format_task, 2, 0, 0 },
};

int main(void)
{
    DEV_TIMER = TIMER_PERIOD;
    irq_enable();
    while (ticks < RUN_TICKS) {
        for (unsigned i = 0; i < sizeof tasks / sizeof tasks[0]; i++) {
            struct task *t = &tasks[i];
            unsigned now = ticks;
            if (now >= t->next_tick) {
                t->run(t);
                t->runs++;
                t->next_tick = now + t->period;
            }
        }
    }
    irq_disable();
    DEV_TIMER = 0;
    return 0;
}
