/* Control-flow mix: loops, direct and indirect calls, a function-pointer
 * table, switches lowered to jump tables, recursion, conditional
 * execution (IT blocks / conditional A32 instructions) and CBZ/CBNZ. */
#include "corpus.h"

typedef int (*op_fn)(int, int);

struct node {
    struct node *next;
    int value;
};

static volatile int sink;
static struct node nodes[12];

__attribute__((noinline)) static int op_add(int a, int b) { return a + b; }
__attribute__((noinline)) static int op_sub(int a, int b) { return a - b; }
__attribute__((noinline)) static int op_mul(int a, int b) { return a * b; }
__attribute__((noinline)) static int op_xor(int a, int b) { return a ^ b; }
__attribute__((noinline)) static int op_max(int a, int b) { return a > b ? a : b; }

static op_fn const ops[] = { op_add, op_sub, op_mul, op_xor, op_max };

/* Dense switch with small bodies: a byte table (TBB) or LDR PC table. */
__attribute__((noinline)) static void dispatch(int code, int value)
{
    switch (code) {
    case 0: sink += value; break;
    case 1: sink -= value; break;
    case 2: sink ^= value; break;
    case 3: sink |= value << 1; break;
    case 4: sink &= ~value; break;
    case 5: sink = sink * 3 + value; break;
    case 6: sink = value - sink; break;
    default: sink = 0; break;
    }
}

/* 128 NOPs, written out so that the compiler knows their size. */
#define NOPS4 "nop\n\tnop\n\tnop\n\tnop\n\t"
#define NOPS16 NOPS4 NOPS4 NOPS4 NOPS4
#define NOPS128 NOPS16 NOPS16 NOPS16 NOPS16 NOPS16 NOPS16 NOPS16 NOPS16

/* A switch whose case bodies are far apart: a halfword table (TBH). */
__attribute__((noinline)) static int far_switch(int code, int value)
{
    switch (code) {
    case 0:
        __asm volatile(NOPS128);
        return value + 1;
    case 1:
        return value * 5;
    case 2:
        __asm volatile(NOPS128);
        return value - 9;
    case 3:
        return value << 3;
    case 4:
        return value ^ 0x55;
    default:
        return -value;
    }
}

/* Recursion. */
__attribute__((noinline)) static int fib(int n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}

/* Conditional execution: min/max/abs/clamp become IT blocks (T32) or
 * conditional instructions (A32); half of them fail. */
__attribute__((noinline)) static int clamp(int x, int lo, int hi)
{
    if (x < lo)
        x = lo;
    if (x > hi)
        x = hi;
    return x;
}

__attribute__((noinline)) static int abs_diff(int a, int b)
{
    int d = a - b;
    return d < 0 ? -d : d;
}

/* Null tests: CBZ/CBNZ in T32. */
__attribute__((noinline)) static int list_sum(const struct node *n)
{
    int sum = 0;
    while (n != 0) {
        sum += n->value;
        n = n->next;
    }
    return sum;
}

__attribute__((noinline)) static int count_zero(const int *v, int len)
{
    int zeros = 0;
    for (int i = 0; i < len; i++) {
        if (v[i] == 0)
            zeros++;
    }
    return zeros;
}

int main(void)
{
    int acc = 1;
    static const int values[10] = { 3, 0, 7, 0, 0, 9, 1, 0, 4, 2 };

    for (int i = 0; i < 12; i++) {
        nodes[i].value = i * 7 - 20;
        nodes[i].next = i + 1 < 12 ? &nodes[i + 1] : 0;
    }
    for (int i = 0; i < 40; i++) {
        acc = ops[i % 5](acc, i + 3);
        dispatch(i % 9, acc);
        acc += far_switch(i % 7, i);
        acc = clamp(acc, -1000, 1000) + abs_diff(i, 20);
    }
    acc += fib(11);
    acc += list_sum(&nodes[0]) + list_sum(&nodes[6]) + list_sum(0);
    acc += count_zero(values, 10);
    sink = acc;
    return 0;
}
