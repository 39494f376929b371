/* bench_encode.c: array encode into float8_e4m3fn (nearest-even,
 * saturating) against a plain binary64 -> float32 conversion loop over the
 * same array, measured side by side in one run.  Target (issue 2): the
 * ratio is at most 4.
 *
 * usage: bench_encode [N] [repeats]   (default 16M values, 7 repeats)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "qf_format.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Kept out of line so the compiler cannot drop or fuse it. */
__attribute__((noinline)) static void to_float(const double *x, size_t n, float *out)
{
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = (float)x[i];
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : (size_t)16 << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 7, r;
    const qf_format *f = qf_format_get(QF_FLOAT8_E4M3FN);
    qf_encode_opts o = qf_encode_opts_default();
    double *x = malloc(n * sizeof *x), *t_enc, *t_cvt;
    float *y = malloc(n * sizeof *y);
    uint8_t *c = malloc(n);
    size_t i;
    unsigned long long sum = 0;

    t_enc = calloc((size_t)reps, sizeof *t_enc);
    t_cvt = calloc((size_t)reps, sizeof *t_cvt);
    if (!x || !y || !c || !t_enc || !t_cvt || reps < 1) {
        fprintf(stderr, "bench_encode: out of memory or bad arguments\n");
        return 2;
    }
    /* Values across e4m3's whole range: subnormals, normals, overflow. */
    for (i = 0; i < n; i++) {
        uint64_t u = qf_rng_u64(1, i);
        double m = 1.0 + (double)(u >> 12) * 0x1p-52;
        int e = (int)((u & 0xFFF) % 26) - 14; /* 2^-14 .. 2^11 */
        x[i] = ((u >> 11) & 1 ? -1.0 : 1.0) * ldexp(m, e);
    }
    o.saturate = 1;
    /* warm up both paths (page faults, decode tables) */
    to_float(x, n, y);
    qf_format_encode_array(f, x, n, c, &o);
    for (r = 0; r < reps; r++) {
        double t0 = now();
        to_float(x, n, y);
        double t1 = now();
        qf_format_encode_array(f, x, n, c, &o);
        double t2 = now();
        t_cvt[r] = t1 - t0;
        t_enc[r] = t2 - t1;
        sum += c[r % n] + (unsigned long long)y[r % n];
    }
    qsort(t_cvt, (size_t)reps, sizeof *t_cvt, cmp);
    qsort(t_enc, (size_t)reps, sizeof *t_enc, cmp);
    printf("values: %zu, repeats: %d (median of each, interleaved)\n", n, reps);
    printf("binary64 -> float32 loop:          %.3f ns/value\n", 1e9 * t_cvt[reps / 2] / (double)n);
    printf("binary64 -> float8_e4m3fn rne sat: %.3f ns/value\n", 1e9 * t_enc[reps / 2] / (double)n);
    printf("encode e4m3fn/float32 = %.2f (target <= 4)\n", t_enc[reps / 2] / t_cvt[reps / 2]);
    if (sum == 42)
        puts("");
    free(x);
    free(y);
    free(c);
    free(t_enc);
    free(t_cvt);
    return 0;
}
