/* A longer workload whose length is set by one constant: a sieve of
 * Eratosthenes and a pseudo-random mixing pass, repeated LOOPS times. */
#include "corpus.h"

#define LOOPS 6
#define SIEVE 200

static unsigned char composite[SIEVE];
static volatile unsigned result;

__attribute__((noinline)) static unsigned sieve(void)
{
    unsigned primes = 0;
    for (unsigned i = 0; i < SIEVE; i++)
        composite[i] = 0;
    for (unsigned i = 2; i < SIEVE; i++) {
        if (composite[i])
            continue;
        primes++;
        for (unsigned j = i * i; j < SIEVE; j += i)
            composite[j] = 1;
    }
    return primes;
}

__attribute__((noinline)) static unsigned mix(unsigned seed, unsigned rounds)
{
    unsigned x = seed;
    for (unsigned r = 0; r < rounds; r++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    return x;
}

int main(void)
{
    unsigned acc = 0;
    for (unsigned loop = 0; loop < LOOPS; loop++) {
        acc += sieve();
        acc = mix(acc + loop, 64);
    }
    result = acc;
    return 0;
}
