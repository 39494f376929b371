/* gemm.c: the known-bad GEMMs.  Each claims the arithmetic of a correct
 * kernel (table.c) and breaks it in one documented way:
 *
 *   gemm.bad.f16acc          float16 a, b, d; claims a float32 sequential
 *                            accumulator, but rounds the running sum to
 *                            float16 after every addition.  Shows once
 *                            K > 1 on data whose sums are not float16
 *                            values (K = 256, normal: errors of ~ 2^-11
 *                            |A||B| against a bound of ~ K 2^-24 |A||B|);
 *                            hidden at K = 1 (one product, exact, rounded
 *                            once) and on small integers whose partial sums
 *                            are exact in float16.
 *   gemm.bad.tile64          float32; rows are processed in tiles of 64,
 *                            and the edge tile (the last M % 64 rows, when
 *                            M is not a multiple of 64) has an off-by-one
 *                            K loop that drops the last product.  Shows
 *                            whenever M % 64 != 0; M = 64, 128 are right.
 *   gemm.bad.h100_fp8_as_f32 the H100 FP8 wgmma model without promotion
 *                            (kernels/models, preset h100.e4m3: blocks of
 *                            32 aligned to 13 fraction bits, truncated)
 *                            claimed as a plain float32 sequential
 *                            accumulator.  Shows at large K on data with
 *                            a nonzero mean (K = 4096, uniform(0, 1):
 *                            DeepSeek-V3's ~1e-2 relative error); hidden
 *                            at K = 1 and on small integers, where the
 *                            13 kept bits lose nothing.
 *   gemm.bad.racy_order      float32 sequential sum whose starting index
 *                            rotates from call to call (a clock reading
 *                            taken once per process plus a call counter,
 *                            standing in for thread timing), claimed
 *                            bitwise deterministic.  Every order has the
 *                            same error bound, so only the runner's two
 *                            runs compared bit for bit catch it: shows for
 *                            K >= 3 on random data; hidden at K <= 2
 *                            (addition commutes) and on exact sums.
 *   gemm.bad.overrun         float32; stores each row's last column as a
 *                            pair (value, 0) when N is odd, so the last
 *                            row writes one element past the output.
 *                            Shows for odd N (the runner's canary); even N
 *                            is right.
 *   gemm.bad.unwritten       float32; the epilogue stores whole chunks of
 *                            8 columns only and forgets the remainder, so
 *                            the last N % 8 columns are never written.
 *                            Shows when N % 8 != 0 (the runner's poison).
 *
 * All: d = a b (alpha = 1, beta = 0), row-major, no batch, no transposes,
 * no groups (the supports callback declines the rest).  Products and sums
 * of the float32 kernels are rounded to float32 each (the build has
 * -ffp-contract=off), exactly as gemm.cpu.naive.f32.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>

#include "_bad.h"
#include "qf_model.h"

enum { V_F16ACC, V_TILE64, V_RACY, V_OVERRUN, V_UNWRITTEN };

qf_status _qf_bad_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size)
{
    const qf_op_gemm *g = &op->u.gemm;
    (void)k;
    (void)dtype;
    if (g->alpha != 1 || g->beta != 0 || g->trans_a || g->trans_b || g->batch > 1 || g->groups) {
        snprintf(why, why_size, "only d = a b: alpha 1, beta 0, no transposes, no batch, no groups");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* The rotation of gemm.bad.racy_order: a clock reading taken once per
 * process, plus one per call, so that two calls in a row always start
 * their sums at different indices (a bare clock reading could repeat). */
static unsigned long racy_rotation(void)
{
    static unsigned long base, calls;
    static int have_base;
    if (!have_base) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        base = (unsigned long)ts.tv_nsec / 1024u + (unsigned long)ts.tv_sec;
        have_base = 1;
    }
    return base + calls++;
}

static qf_status gemm_run(int v, const qf_kernel_call *call)
{
    const qf_dtype_tuple *t = call->dtype;
    const qf_op_gemm *g;
    const qf_tensor *A, *B, *D;
    const qf_format *of;
    int64_t m, n, k, i, j, l, edge_first, n_stored;
    unsigned long rot = 0;
    char why[128];
    qf_status s;

    if (!call->op || call->op->op != QF_OP_GEMM || !t)
        return _qf_cpu_fail(call, QF_EINVAL, "not a gemm call");
    if ((s = _qf_bad_gemm_supports(call->kernel, call->op, t, why, sizeof why)) != QF_OK)
        return _qf_cpu_fail(call, s, "%s", why);
    g = &call->op->u.gemm;
    A = &call->in[0];
    B = &call->in[1];
    D = &call->out[0];
    m = (int64_t)g->m;
    n = (int64_t)g->n;
    k = (int64_t)g->k;
    if ((s = _qf_cpu_check2(call, A, "a", t->in[0], -1, m, k)) != QF_OK ||
        (s = _qf_cpu_check2(call, B, "b", t->in[1], -1, k, n)) != QF_OK ||
        (s = _qf_cpu_check2(call, D, "d", t->out[0], -1, m, n)) != QF_OK)
        return s;
    of = qf_format_get(t->out[0]);
    /* The defect of tile64: rows from edge_first on form the edge tile. */
    edge_first = m - m % 64;
    /* The defect of unwritten: only whole chunks of 8 columns are stored. */
    n_stored = v == V_UNWRITTEN ? n - n % 8 : n;
    if (v == V_RACY)
        rot = racy_rotation();
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            int64_t kk = v == V_TILE64 && i >= edge_first && k > 0 ? k - 1 : k;
            int64_t start = v == V_RACY && k > 0 ? (int64_t)(rot % (unsigned long)k) : 0;
            double r;
            if (v == V_F16ACC) {
                /* float16 products are exact in binary64; the running sum
                 * is rounded to float16 after every addition (the defect). */
                const qf_format *h = qf_format_get(QF_FLOAT16);
                double acc = 0;
                for (l = 0; l < kk; l++) {
                    double p = _qf_bad_ld(A, 0, i, l) * _qf_bad_ld(B, 0, l, j);
                    acc = qf_format_decode(h, qf_format_encode(h, acc + p, QF_ROUND_RNE, 0, 0, 0));
                }
                r = acc;
            } else {
                float acc = 0.0f;
                for (l = 0; l < kk; l++) {
                    int64_t ll = (start + l) % k;
                    float p = (float)_qf_bad_ld(A, 0, i, ll) * (float)_qf_bad_ld(B, 0, ll, j);
                    acc = acc + p;
                }
                r = acc;
            }
            if (j >= n_stored)
                continue;
            _qf_bad_st(D, _qf_cpu_off(D, 0, i, j), qf_format_encode(of, r, QF_ROUND_RNE, 0, 0, 0));
            if (v == V_OVERRUN && n % 2 && j == n - 1)
                /* The pair store of an odd row's last column: its second
                 * lane lands one element past the row (past the buffer
                 * in the last row). */
                _qf_bad_st(D, _qf_cpu_off(D, 0, i, j) + 1, 0);
        }
    return QF_OK;
}

qf_status _qf_bad_gemm_f16acc_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    return gemm_run(V_F16ACC, call);
}

qf_status _qf_bad_gemm_tile64_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    return gemm_run(V_TILE64, call);
}

qf_status _qf_bad_gemm_racy_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    return gemm_run(V_RACY, call);
}

qf_status _qf_bad_gemm_overrun_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    return gemm_run(V_OVERRUN, call);
}

qf_status _qf_bad_gemm_unwritten_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    return gemm_run(V_UNWRITTEN, call);
}

/* gemm.bad.h100_fp8_as_f32: the model kernel gemm.model.h100.e4m3 itself
 * (its arithmetic is right for what it models); only the claim differs. */
qf_status _qf_bad_gemm_fp8_as_f32_run(void *ctx, const qf_kernel_call *call)
{
    size_t i, n = 0;
    const qf_kernel *t = qf_kernels_models(&n);
    (void)ctx;
    for (i = 0; i < n; i++)
        if (!strcmp(t[i].name, "gemm.model.h100.e4m3"))
            return t[i].run(t[i].user, call);
    return _qf_cpu_fail(call, QF_EINVAL, "the model gemm.model.h100.e4m3 is not built");
}
