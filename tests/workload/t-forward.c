/* t-forward.c: qf_workload_run and qf_workload_compare: the exact path
 * against itself (KL 0, top-1 1, no error), float32 kernels close to it,
 * the local GEMM error of the H100 FP8 model above that of the variant that
 * promotes every 128 products (and B200's 25-bit accumulator below both),
 * and weights that survive a save/load round trip bit for bit. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_kernel.h"
#include "qf_safetensors.h"
#include "qf_test.h"
#include "qf_workload.h"

static qf_registry *reg;
static qf_workload_config cfg;
static qf_workload_weights w;
static int64_t tokens[16];

static void setup(void)
{
    size_t i;
    ck_assert_int_eq(qf_registry_create(&reg), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(reg), QF_OK);
    cfg = qf_workload_config_default();
    cfg.dim = 64;
    cfg.ffn = 512; /* K of the down projection: 4 promotion intervals of 128 */
    cfg.vocab = 64;
    cfg.seq = 16;
    ck_assert_int_eq(qf_workload_weights_synthetic(&cfg, qf_test_seed(), &w), QF_OK);
    for (i = 0; i < cfg.seq; i++)
        tokens[i] = (int64_t)(qf_rng_u64(qf_test_seed() + 1, i) % cfg.vocab);
}

static void teardown(void)
{
    qf_workload_weights_free(&w);
    qf_registry_free(reg);
}

static qf_workload_plan kernels(const char *gemm)
{
    qf_workload_plan p;
    memset(&p, 0, sizeof p);
    p.kernel[QF_WL_OP_GEMM] = qf_registry_find(reg, gemm);
    p.kernel[QF_WL_OP_RMSNORM] = qf_registry_find(reg, "rmsnorm.cpu.f32");
    p.kernel[QF_WL_OP_ATTENTION] = qf_registry_find(reg, "attention.cpu.naive.f32");
    p.kernel[QF_WL_OP_ACTIVATION] = qf_registry_find(reg, "activation.cpu.f32");
    ck_assert_ptr_nonnull(p.kernel[QF_WL_OP_GEMM]);
    p.fp8_granularity = QF_BLOCK_FP8_TENSOR;
    return p;
}

static void run(const qf_workload_plan *p, qf_workload_trace *t)
{
    char err[512] = "";
    ck_assert_msg(qf_workload_run(&cfg, &w, tokens, p, t, err, sizeof err) == QF_OK, "%s", err);
}

START_TEST(test_exact_self)
{
    qf_workload_plan p;
    qf_workload_trace a, b;
    qf_workload_cmp c;
    size_t l;
    memset(&p, 0, sizeof p);
    p.exact = 1;
    run(&p, &a);
    run(&p, &b);
    ck_assert_str_eq(a.used[QF_WL_OP_GEMM], "exact (binary64 correctly rounded reference)");
    ck_assert_int_eq(qf_workload_compare(&a, &b, &c), QF_OK);
    ck_assert_double_eq(c.kl_mean, 0);
    ck_assert_double_eq(c.kl_max, 0);
    ck_assert_double_eq(c.top1, 1);
    for (l = 0; l < c.layers; l++)
        ck_assert_double_eq(c.layer[l].normwise, 0);
    ck_assert_double_eq(c.logits.max_abs, 0);
    /* the logits are not degenerate: a flat distribution would make KL 0 anyway */
    ck_assert(fabs(a.logits[0] - a.logits[1]) > 1e-3);
    qf_workload_cmp_free(&c);
    qf_workload_trace_free(&a);
    qf_workload_trace_free(&b);
}
END_TEST

START_TEST(test_f32_kernels)
{
    qf_workload_plan ex, p = kernels("gemm.cpu.naive.f32");
    qf_workload_trace a, b;
    qf_workload_cmp c;
    memset(&ex, 0, sizeof ex);
    ex.exact = 1;
    run(&ex, &a);
    run(&p, &b);
    ck_assert_ptr_nonnull(strstr(b.used[QF_WL_OP_GEMM], "gemm.cpu.naive.f32"));
    ck_assert_ptr_nonnull(strstr(b.used[QF_WL_OP_ROPE], "fallback"));
    ck_assert_int_eq(qf_workload_compare(&a, &b, &c), QF_OK);
    /* float32 arithmetic: errors of a few float32 ulps, not zero */
    ck_assert(c.logits.normwise > 0 && c.logits.normwise < 1e-5);
    ck_assert(c.kl_mean < 1e-9);
    ck_assert_double_eq(c.top1, 1);
    ck_assert(b.local[QF_WL_OP_GEMM] > 0 && b.local[QF_WL_OP_GEMM] < 1e-6);
    ck_assert(isnan(b.local[QF_WL_OP_ROPE]));
    qf_workload_cmp_free(&c);
    qf_workload_trace_free(&a);
    qf_workload_trace_free(&b);
}
END_TEST

START_TEST(test_fp8_promotion)
{
    qf_workload_plan ex, h = kernels("gemm.model.h100.e4m3"), pr = kernels("gemm.model.h100_promote128.e4m3"),
                         bw = kernels("gemm.model.b200.e4m3");
    qf_workload_trace a, th, tp, tb;
    qf_workload_cmp ch, cp;
    memset(&ex, 0, sizeof ex);
    ex.exact = 1;
    run(&ex, &a);
    run(&h, &th);
    run(&pr, &tp);
    run(&bw, &tb);
    /* DeepSeek-V3 report 3.3.2 (docs/numerics.md#matrix-units): ~14 bits kept without promotion. */
    ck_assert_msg(th.local[QF_WL_OP_GEMM] > tp.local[QF_WL_OP_GEMM], "h100 %g <= promote128 %g",
                  th.local[QF_WL_OP_GEMM], tp.local[QF_WL_OP_GEMM]);
    ck_assert_msg(tp.local[QF_WL_OP_GEMM] > 100 * tb.local[QF_WL_OP_GEMM], "promote128 %g, b200 %g",
                  tp.local[QF_WL_OP_GEMM], tb.local[QF_WL_OP_GEMM]);
    ck_assert_int_eq(qf_workload_compare(&a, &th, &ch), QF_OK);
    ck_assert_int_eq(qf_workload_compare(&a, &tp, &cp), QF_OK);
    /* FP8 inputs: a visible end-to-end error, still far from noise */
    ck_assert(ch.logits.normwise > 1e-3 && ch.logits.normwise < 0.5);
    ck_assert(ch.kl_mean > 0 && isfinite(ch.kl_mean));
    ck_assert(cp.kl_mean > 0 && isfinite(cp.kl_mean));
    qf_workload_cmp_free(&ch);
    qf_workload_cmp_free(&cp);
    qf_workload_trace_free(&a);
    qf_workload_trace_free(&th);
    qf_workload_trace_free(&tp);
    qf_workload_trace_free(&tb);
}
END_TEST

START_TEST(test_save_load)
{
    char path[] = "/tmp/qf-t-workload-XXXXXX", file[64], err[512] = "";
    qf_safetensors st;
    qf_workload_config c2 = qf_workload_config_default();
    qf_workload_weights w2;
    qf_workload_plan ex;
    qf_workload_trace a, b;
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(file, sizeof file, "%s.safetensors", path);
    ck_assert_msg(qf_workload_weights_save(file, &cfg, &w, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_msg(qf_safetensors_open(file, &st, err, sizeof err) == QF_OK, "%s", err);
    c2.heads = cfg.heads;
    ck_assert_msg(qf_workload_weights_load(&st, &c2, &w2, err, sizeof err) == QF_OK, "%s", err);
    qf_safetensors_close(&st);
    ck_assert_uint_eq(c2.dim, cfg.dim);
    ck_assert_uint_eq(c2.ffn, cfg.ffn);
    ck_assert_uint_eq(c2.vocab, cfg.vocab);
    ck_assert_uint_eq(c2.kv_heads, cfg.kv_heads);
    ck_assert_uint_eq(c2.layers, cfg.layers);
    memset(&ex, 0, sizeof ex);
    ex.exact = 1;
    run(&ex, &a);
    ck_assert_int_eq(qf_workload_run(&c2, &w2, tokens, &ex, &b, err, sizeof err), QF_OK);
    ck_assert_int_eq(memcmp(a.logits, b.logits, cfg.seq * cfg.vocab * sizeof *a.logits), 0);
    qf_workload_trace_free(&a);
    qf_workload_trace_free(&b);
    qf_workload_weights_free(&w2);
    remove(file);
    remove(path);
}
END_TEST

START_TEST(test_bad_config)
{
    qf_workload_config c = qf_workload_config_default();
    char err[256] = "";
    c.kv_heads = 3;
    ck_assert_int_eq(qf_workload_config_check(&c, err, sizeof err), QF_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "kv heads"));
    c = qf_workload_config_default();
    c.seq = 0;
    ck_assert_int_eq(qf_workload_config_check(&c, err, sizeof err), QF_EINVAL);
    {
        qf_workload_plan ex;
        qf_workload_trace t;
        int64_t bad[16] = {0};
        memset(&ex, 0, sizeof ex);
        ex.exact = 1;
        bad[3] = (int64_t)cfg.vocab;
        ck_assert_int_eq(qf_workload_run(&cfg, &w, bad, &ex, &t, err, sizeof err), QF_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "position 3"));
    }
}
END_TEST

int main(void)
{
    return qf_test_main(
        "workload/forward", "forward", 300, setup, teardown,
        QF_TESTS(test_exact_self, test_f32_kernels, test_fp8_promotion, test_save_load, test_bad_config));
}
