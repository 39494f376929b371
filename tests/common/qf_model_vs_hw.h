/* qf_model_vs_hw.h: the model-vs-hardware comparison shared by
 * tests/cuda/t-model-vs-hw.c (mma.sync) and tests/hip/t-model-vs-hw.c
 * (MFMA).
 *
 * A probe runs ONE matrix instruction with C = 0 on A [16][K] and B [K][N]
 * (row-major float values exact in the input format) and returns D
 * [16][N]; every result is compared bit for bit with qf_model_dot of the
 * architecture's model preset (kernels/models).  Crafted inputs encode the
 * published findings the models rest on (Fasi, Higham, Mikaitis and
 * Pranesh 2021; Khattak and Mikaitis; as tests/models/t-model.c): kept
 * bits, truncated normalization, no guard bits, block boundaries,
 * cancellation, truncation of a negative sum toward zero.  The result (all
 * equal, or the first disagreement with its nonzero products) is printed
 * and appended as a Markdown row to the file named by
 * QF_MODEL_VS_HW_REPORT (scripts/gpu-qualify.sh), opened per line since
 * Check runs each test in its own process.
 */
#ifndef QF_MODEL_VS_HW_H
#define QF_MODEL_VS_HW_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/qf_model.h"
#include "qf_format.h"
#include "qf_test.h"

typedef qf_status (*qf_mvh_probe_fn)(int kind, const float *a, const float *b, float *d, char *err,
                                     size_t err_size);

typedef struct qf_mvh {
    const char *arch;      /* "sm_90", "gfx90a" */
    qf_mvh_probe_fn probe; /* one instruction */
    int n;                 /* columns of B and D (8 for mma m16n8, 16 for MFMA 16x16) */
    int m;                 /* rows of A and D: 0 is 16 (64 for wgmma m64) */
} qf_mvh;

static inline void qf_mvh_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void qf_mvh_report(const char *fmt, ...)
{
    const char *path = getenv("QF_MODEL_VS_HW_REPORT");
    va_list ap;
    FILE *f;
    if (!path || !*path || !(f = fopen(path, "a")))
        return;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

/* Run the probe on a, b (instruction `kind`, reduction length K) and
 * compare all 16 x n results with preset pname (NULL: no model for this
 * architecture, reported and not compared); returns the number of
 * disagreements. */
static inline int qf_mvh_compare(const qf_mvh *h, int kind, int K, const char *pname, const char *label,
                                 const float *a, const float *b)
{
    const qf_model_params *p = pname ? qf_model_preset(pname) : NULL;
    int i, j, l, bad = 0, n = h->n, m = h->m ? h->m : 16;
    float d[64 * 16];
    double ar[64], br[64];
    char err[256] = "";
    qf_status st;
    ck_assert(K <= 64 && n <= 16 && m <= 64 && m * K <= 1024 && m * n <= 64 * 16);
    if (!p) {
        printf("model-vs-hw %s: no model preset for %s (not compared)\n", label, h->arch);
        qf_mvh_report("| %s | %s | - | no model preset for this architecture |\n", label, h->arch);
        return 0;
    }
    st = h->probe(kind, a, b, d, err, sizeof err);
    if (st == QF_EUNSUPPORTED) {
        /* A model exists for this device but the build has no code for the
         * instruction: the evidence is missing, which must not pass as
         * agreement (QF_MVH_ALLOW_UNSUPPORTED=1 accepts it knowingly). */
        const char *allow = getenv("QF_MVH_ALLOW_UNSUPPORTED");
        ck_assert_msg(allow && *allow && strcmp(allow, "0") != 0,
                      "%s on %s: not run (%s), though %s models it; set QF_MVH_ALLOW_UNSUPPORTED=1 to accept",
                      label, h->arch, err, pname);
        printf("model-vs-hw %s: %s\n", label, err);
        qf_mvh_report("| %s | %s | %s | not run: %s |\n", label, h->arch, pname, err);
        return 0;
    }
    ck_assert_msg(st == QF_OK, "%s: %s", label, err);
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double want, got = (double)d[i * n + j];
            for (l = 0; l < K; l++) {
                ar[l] = a[i * K + l];
                br[l] = b[l * n + j];
            }
            ck_assert_int_eq(qf_model_dot(p, (size_t)K, ar, 1, br, 1, &want), QF_OK);
            if (got == want || (isnan(want) && isnan(got)))
                continue;
            if (!bad) {
                char in[2048];
                int w = 0;
                for (l = 0; l < K && w < (int)sizeof in - 64; l++)
                    if (ar[l] != 0 && br[l] != 0)
                        w += snprintf(in + w, sizeof in - (size_t)w, "%s%a*%a", w ? " + " : "", ar[l], br[l]);
                printf("model-vs-hw %s: FIRST DISAGREEMENT at D[%d][%d]: hardware %a, model %s %a; nonzero "
                       "products: %s\n",
                       label, i, j, got, pname, want, in);
                qf_mvh_report("| %s | %s | %s | DISAGREE at D[%d][%d]: hw %a, model %a; products %s |\n",
                              label, h->arch, pname, i, j, got, want, in);
            }
            bad++;
        }
    if (!bad) {
        printf("model-vs-hw %s: %s agrees with %s on all %d results\n", label, h->arch, pname, m * n);
        qf_mvh_report("| %s | %s | %s | %d/%d bitwise equal |\n", label, h->arch, pname, m * n, m * n);
    }
    return bad;
}

/* Crafted rows, row r of A with column r of B (n columns); s is the tiny
 * factor (2^-12 for 16-bit inputs: s^2 = 2^-24 falls at float32's last
 * bit next to 1; 2^-6 for e4m3). */
static inline void qf_mvh_crafted(int m, int K, int n, double s, float *a, float *b)
{
    int l;
    memset(a, 0, sizeof(float) * (size_t)m * (size_t)K);
    memset(b, 0, sizeof(float) * (size_t)K * (size_t)n);
    /* row 0: 1 + 3 tiny products (kept bits, truncated normalization) */
    a[0 * K + 0] = 1, b[0 * n + 0] = 1;
    for (l = 1; l <= 3; l++)
        a[0 * K + l] = (float)s, b[l * n + 0] = (float)s;
    /* row 1: 3 * 1.75 + 1.5 s^2 (normalization truncates) */
    for (l = 0; l < 3; l++)
        a[1 * K + l] = 1.75f, b[l * n + 1] = 1;
    a[1 * K + 3] = (float)(1.5 * s), b[3 * n + 1] = (float)s;
    /* row 2: 1 - s^2 / 4 (no guard bits) */
    a[2 * K + 0] = 1, b[0 * n + 2] = 1;
    a[2 * K + 1] = (float)(s / 2), b[1 * n + 2] = (float)(-s / 2);
    /* row 3: four tiny products before 1 (block boundaries) */
    for (l = 0; l < 4; l++)
        a[3 * K + l] = (float)s, b[l * n + 3] = (float)s;
    a[3 * K + 4] = 1, b[4 * n + 3] = 1;
    /* row 4: cancellation 1 - 1 + s^2 */
    a[4 * K + 0] = 1, b[0 * n + 4] = 1;
    a[4 * K + 1] = 1, b[1 * n + 4] = -1;
    a[4 * K + 2] = (float)s, b[2 * n + 4] = (float)s;
    /* row 5: -1 - 3 s^2 (truncation toward zero, not down) */
    a[5 * K + 0] = -1, b[0 * n + 5] = 1;
    for (l = 1; l <= 3; l++)
        a[5 * K + l] = (float)-s, b[l * n + 5] = (float)s;
}

/* Uniform values in [-range, range) rounded into format f. */
static inline void qf_mvh_random(qf_format_id fid, double range, float *x, int count, uint64_t seed)
{
    const qf_format *f = qf_format_get(fid);
    uint64_t s = seed;
    int i;
    for (i = 0; i < count; i++) {
        double v;
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        v = (((double)(s >> 11) * 0x1p-53) * 2 - 1) * range;
        x[i] = (float)qf_format_decode(f, qf_format_encode(f, v, QF_ROUND_RNE, 1, 0, 0));
    }
}

/* The crafted case and four random ones for one instruction. */
static inline int qf_mvh_run(const qf_mvh *h, int kind, int K, qf_format_id fid, double tiny, double range,
                             const char *name, const char *pname)
{
    float a[1024], b[64 * 16];
    char label[128];
    int bad, m = h->m ? h->m : 16;
    uint64_t seed;
    ck_assert(m * K <= 1024 && K * h->n <= 64 * 16);
    qf_mvh_crafted(m, K, h->n, tiny, a, b);
    snprintf(label, sizeof label, "%s crafted", name);
    bad = qf_mvh_compare(h, kind, K, pname, label, a, b);
    for (seed = 1; seed <= 4; seed++) {
        qf_mvh_random(fid, range, a, m * K, seed * 2);
        qf_mvh_random(fid, range, b, K * h->n, seed * 2 + 1);
        snprintf(label, sizeof label, "%s random seed %llu", name, (unsigned long long)seed);
        bad += qf_mvh_compare(h, kind, K, pname, label, a, b);
    }
    return bad;
}

/* Header of the report's table for this device. */
static inline void qf_mvh_report_header(const char *devname, const char *arch)
{
    qf_mvh_report("\nDevice: %s (%s)\n\n| instruction and inputs | arch | model | result |\n| --- | --- | "
                  "--- | --- |\n",
                  devname, arch);
}

#endif
