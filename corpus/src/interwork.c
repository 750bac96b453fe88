/* A32 <-> T32 interworking: functions built for the other instruction set,
 * called directly (BLX imm), through pointers (BLX reg) and returning with
 * BX LR. */
#include "corpus.h"

#if defined(__thumb__)
#define OTHER_STATE __attribute__((target("arm"), noinline))
#else
#define OTHER_STATE __attribute__((target("thumb"), noinline))
#endif

typedef int (*unary_fn)(int);

static volatile int sink;

__attribute__((noinline)) static int square(int x) { return x * x; }
__attribute__((noinline)) static int twice(int x) { return x + x; }

OTHER_STATE static int other_mix(int a, int b)
{
    return (a << 2) ^ (b + 3);
}

OTHER_STATE static int other_apply(unary_fn f, int x)
{
    return f(x) + f(x + 1);
}

OTHER_STATE static int other_scale(int x)
{
    return x * 3 - 1;
}

static unary_fn volatile pointers[3] = { square, twice, other_scale };

int main(void)
{
    int acc = 0;
    for (int i = 0; i < 40; i++) {
        acc += other_mix(i, acc);
        acc += pointers[i % 3](i);
        acc += other_apply(pointers[(i + 1) % 3], i);
    }
    sink = acc;
    return 0;
}
