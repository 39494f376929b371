/* t-model-vs-hw.c: the CPU models of kernels/models against the tensor
 * cores themselves, bit for bit.
 *
 * One mma.sync instruction (qf_cuda_mma_probe: m16n8k16 bf16 and f16 on
 * sm_80+, m16n8k32 e4m3 on sm_89+) runs on crafted inputs -- the published
 * findings the models encode (Fasi, Higham, Mikaitis and Pranesh 2021:
 * truncation instead of rounding, no guard bits; Khattak and Mikaitis: the
 * bits each generation keeps; the same inputs as tests/models/t-model.c) --
 * and on random inputs; each of the 128 results is compared with
 * qf_model_dot of the preset for the device's architecture (a100.* for
 * sm_80, h100.* for sm_90, l40s.e4m3 for sm_89).  The agreement, or the
 * first disagreement with its inputs, is printed and, when the environment
 * variable QF_MODEL_VS_HW_REPORT names a file, appended to it as Markdown
 * (scripts/gpu-qualify.sh puts it in the report).  Without a device: exit
 * 77 (skipped).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/qf_model.h"
#include "qf_cuda.h"
#include "qf_format.h"
#include "qf_test.h"

static char arch[32], devname[128];
static const char *report_path;

/* Append a line to the report file (opened per line: Check runs each test
 * in its own process). */
static void repf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void repf(const char *fmt, ...)
{
    va_list ap;
    FILE *f;
    if (!report_path || !*report_path || !(f = fopen(report_path, "a")))
        return;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

/* The preset modelling instruction `kind` on this architecture, or NULL. */
static const char *preset_for(int kind)
{
    int cc = atoi(arch + 3);
    static const char *const fmt[] = {"bf16", "f16", "e4m3"};
    static char name[64];
    const char *gen = NULL;
    if (kind < 2)
        gen = cc >= 100 ? "b200" : cc >= 90 ? "h100" : (cc >= 80 && cc < 89) ? "a100" : NULL;
    else
        gen = cc >= 100 ? "b200" : cc >= 90 ? "h100" : cc == 89 ? "l40s" : NULL;
    if (!gen)
        return NULL;
    snprintf(name, sizeof name, "%s.%s", gen, fmt[kind]);
    return qf_model_preset(name) ? name : NULL;
}

static double lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(*s >> 11) * 0x1p-53) * 2 - 1;
}

/* Run one instruction on a, b and compare all 128 results; returns the
 * number of disagreements (the first one reported). */
static int compare(int kind, const char *label, const float *a, const float *b)
{
    const char *pname = preset_for(kind);
    const qf_model_params *p = pname ? qf_model_preset(pname) : NULL;
    int K = kind == 2 ? 32 : 16, i, j, l, bad = 0;
    float d[128];
    double ar[32], br[32];
    char err[256] = "";
    qf_status st;
    if (!p) {
        printf("model-vs-hw %s: no model preset for %s (not compared)\n", label, arch);
        repf("| %s | %s | - | no model preset for this architecture |\n", label, arch);
        return 0;
    }
    st = qf_cuda_mma_probe(kind, a, b, d, err, sizeof err);
    if (st == QF_EUNSUPPORTED) {
        printf("model-vs-hw %s: %s\n", label, err);
        repf("| %s | %s | %s | not run: %s |\n", label, arch, pname, err);
        return 0;
    }
    ck_assert_msg(st == QF_OK, "%s: %s", label, err);
    for (i = 0; i < 16; i++)
        for (j = 0; j < 8; j++) {
            double want;
            for (l = 0; l < K; l++) {
                ar[l] = a[i * K + l];
                br[l] = b[l * 8 + j];
            }
            ck_assert_int_eq(qf_model_dot(p, (size_t)K, ar, 1, br, 1, &want), QF_OK);
            if ((double)d[i * 8 + j] != want && !(isnan(want) && isnan(d[i * 8 + j]))) {
                if (!bad) {
                    char in[2048];
                    int n = 0;
                    for (l = 0; l < K && n < (int)sizeof in - 64; l++)
                        if (ar[l] != 0 || br[l] != 0)
                            n += snprintf(in + n, sizeof in - (size_t)n, "%s%a*%a", n ? " + " : "", ar[l],
                                          br[l]);
                    printf(
                        "model-vs-hw %s: FIRST DISAGREEMENT at D[%d][%d]: hardware %a, model %s %a; inputs "
                        "(nonzero products): %s\n",
                        label, i, j, (double)d[i * 8 + j], pname, want, in);
                    repf("| %s | %s | %s | DISAGREE at D[%d][%d]: hw %a, model %a; inputs %s |\n", label,
                         arch, pname, i, j, (double)d[i * 8 + j], want, in);
                }
                bad++;
            }
        }
    if (!bad) {
        printf("model-vs-hw %s: %s agrees with %s on all 128 results\n", label, arch, pname);
        repf("| %s | %s | %s | 128/128 bitwise equal |\n", label, arch, pname);
    }
    return bad;
}

/* Crafted rows (tests/models/t-model.c): row r of A with column r of B;
 * values scaled for the format (float16 / bf16: products of 2^-12 are
 * 2^-24, below float32's last kept bit of 1). */
static void crafted(int kind, float *a, float *b)
{
    int K = kind == 2 ? 32 : 16;
    double s = kind == 2 ? 0x1p-6 : 0x1p-12; /* e4m3: 2^-6 squared is 2^-12, kept at 13 bits */
    memset(a, 0, sizeof(float) * 16 * (size_t)K);
    memset(b, 0, sizeof(float) * (size_t)K * 8);
    /* row 0: 1 + 3 tiny products (kept bits, truncated normalization) */
    a[0 * K + 0] = 1, b[0 * 8 + 0] = 1;
    for (int l = 1; l <= 3; l++)
        a[0 * K + l] = (float)s, b[l * 8 + 0] = (float)s;
    /* row 1: 3 * 1.75 + one product of 1.5 s * s (normalization truncates) */
    for (int l = 0; l < 3; l++)
        a[1 * K + l] = 1.75f, b[l * 8 + 1] = 1;
    a[1 * K + 3] = (float)(1.5 * s), b[3 * 8 + 1] = (float)s;
    /* row 2: 1 - s^2 / 2^2 (no guard bits) */
    a[2 * K + 0] = 1, b[0 * 8 + 2] = 1;
    a[2 * K + 1] = (float)(s / 2), b[1 * 8 + 2] = (float)(-s / 2);
    /* row 3: four tiny products before 1 (block boundaries) */
    for (int l = 0; l < 4; l++)
        a[3 * K + l] = (float)s, b[l * 8 + 3] = (float)s;
    a[3 * K + 4] = 1, b[4 * 8 + 3] = 1;
    /* row 4: cancellation 1 - 1 + tiny */
    a[4 * K + 0] = 1, b[0 * 8 + 4] = 1;
    a[4 * K + 1] = 1, b[1 * 8 + 4] = -1;
    a[4 * K + 2] = (float)s, b[2 * 8 + 4] = (float)s;
    /* row 5: negative sum (truncation toward zero, not down) */
    a[5 * K + 0] = -1, b[0 * 8 + 5] = 1;
    for (int l = 1; l <= 3; l++)
        a[5 * K + l] = (float)-s, b[l * 8 + 5] = (float)s;
}

/* Random values quantized into the input format. */
static void random_in(int kind, float *x, int n, uint64_t seed)
{
    const qf_format *f = qf_format_get(kind == 0 ? QF_BFLOAT16 : kind == 1 ? QF_FLOAT16 : QF_FLOAT8_E4M3FN);
    uint64_t s = seed;
    for (int i = 0; i < n; i++) {
        double v = lcg(&s) * (kind == 2 ? 8 : 2);
        x[i] = (float)qf_format_decode(f, qf_format_encode(f, v, QF_ROUND_RNE, 1, 0, 0));
    }
}

static int run_kind(int kind)
{
    static const char *const names[] = {"mma.m16n8k16.bf16", "mma.m16n8k16.f16", "mma.m16n8k32.e4m3"};
    float a[16 * 32], b[32 * 8];
    char label[96];
    int bad = 0, K = kind == 2 ? 32 : 16;
    crafted(kind, a, b);
    snprintf(label, sizeof label, "%s crafted", names[kind]);
    bad += compare(kind, label, a, b);
    for (uint64_t seed = 1; seed <= 4; seed++) {
        random_in(kind, a, 16 * K, seed * 2);
        random_in(kind, b, K * 8, seed * 2 + 1);
        snprintf(label, sizeof label, "%s random seed %llu", names[kind], (unsigned long long)seed);
        bad += compare(kind, label, a, b);
    }
    return bad;
}

START_TEST(test_bf16)
{
    ck_assert_int_eq(run_kind(0), 0);
}
END_TEST

START_TEST(test_f16)
{
    ck_assert_int_eq(run_kind(1), 0);
}
END_TEST

START_TEST(test_e4m3)
{
    ck_assert_int_eq(run_kind(2), 0);
}
END_TEST

int main(void)
{
    char why[256] = "";
    Suite *s;
    TCase *tc;
    if (qf_cuda_device_count(why, sizeof why) == 0) {
        printf("SKIP cuda/model-vs-hw: %s\n", why);
        return QF_TEST_SKIP;
    }
    if (qf_cuda_device_arch(0, arch, sizeof arch, devname, sizeof devname) != QF_OK) {
        printf("SKIP cuda/model-vs-hw: cannot read device 0's properties\n");
        return QF_TEST_SKIP;
    }
    printf("device 0: %s (%s)\n", devname, arch);
    report_path = getenv("QF_MODEL_VS_HW_REPORT");
    repf("\nDevice: %s (%s)\n\n| instruction and inputs | arch | model | result |\n| --- | --- | --- | --- "
         "|\n",
         devname, arch);
    s = suite_create("cuda/model-vs-hw");
    tc = tcase_create("mma");
    tcase_add_test(tc, test_bf16);
    tcase_add_test(tc, test_f16);
    tcase_add_test(tc, test_e4m3);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
