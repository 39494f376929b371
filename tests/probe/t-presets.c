/* t-presets.c: `qf_probe_gemm` on every matrix-unit model preset
 * (qf_model_presets(), registered as gemm.model.<preset>) recovers the
 * preset's parameters from the kernel's outputs alone: the sum kind
 * (aligned block, odd/even halves, pairwise float32 tree), the block,
 * alignment bits and their rounding, product bits, accumulator width and
 * rounding, flushing of inputs and results, and the promotion interval.
 *
 * Where the probe reports a field as unobservable, the test proves it: the
 * model with the other value gives the same bits on every one of 3000
 * random dot products (or, for flushed results, no product of two normal
 * inputs of these formats is a float32 subnormal).  A product width of
 * the preset at or beyond the products' own width is no truncation at all
 * (MI300 fp16: 24 bits of a 22-bit product) and counts as exact.
 */
#include <float.h>
#include <math.h>

#include "qf_model.h"
#include "qf_probe.h"
#include "qf_test.h"

static qf_registry *reg;

/* The model with one field changed gives the same bits on random inputs? */
static int same_model(const qf_model_params *p, const qf_model_params *q, size_t K)
{
    const qf_format *fa = qf_format_get(p->in_a), *fb = qf_format_get(p->in_b);
    double a[256], b[256], x, y;
    uint64_t seed = qf_test_seed();
    for (int t = 0; t < 3000; t++) {
        for (size_t l = 0; l < K; l++) {
            uint64_t u = qf_rng_u64(seed + (uint64_t)t, l);
            double va = ldexp((double)(u & 0xffff) / 65536.0 + 0.5, (int)((u >> 16) % 9) - 4);
            double vb = ldexp((double)((u >> 24) & 0xffff) / 65536.0 + 0.5, (int)((u >> 40) % 9) - 4);
            a[l] = qf_format_decode(fa, qf_format_encode(fa, (u >> 50) & 1 ? -va : va, QF_ROUND_RNE, 1, 0, 0));
            b[l] = qf_format_decode(fb, qf_format_encode(fb, vb, QF_ROUND_RNE, 1, 0, 0));
        }
        qf_model_dot(p, K, a, 1, b, 1, &x);
        qf_model_dot(q, K, a, 1, b, 1, &y);
        if (x != y)
            return 0;
    }
    return 1;
}

START_TEST(every_preset)
{
    size_t n, i, bad = 0;
    const qf_model_params *ps = qf_model_presets(&n);
    for (i = 0; i < n; i += qf_test_stride(5)) {
        const qf_model_params *p = &ps[i];
        char name[96], err[512];
        qf_probe_opts o = {.k = 256, .cols = 2, .seed = qf_test_seed()};
        qf_probe_result *r = malloc(sizeof *r);
        const qf_format *fa = qf_format_get(p->in_a), *fb = qf_format_get(p->in_b);
        int pbits = fa->man_bits + fb->man_bits + 1, want_pf = p->product_frac_bits >= pbits ? 0 : p->product_frac_bits;
        int ok = 1;
        ck_assert_ptr_nonnull(r);
        snprintf(name, sizeof name, "gemm.model.%s", p->name);
        if (qf_probe_gemm(reg, name, &o, r, err, sizeof err) != QF_OK) {
            fprintf(stderr, "%s: probe failed: %s\n", name, err);
            bad++;
            free(r);
            continue;
        }
#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "%s: ", name);                                                                   \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
            ok = 0;                                                                                          \
        }                                                                                                    \
    } while (0)
        switch (p->sum) {
        case QF_MODEL_SUM_TREE:
            CHECK(r->order.kind == QF_PROBE_ORDER_BLOCKED && r->order.inner == QF_PROBE_ORDER_PAIRWISE &&
                      r->order.block == p->block && r->order.fused == 1,
                  "tree sum of %d: order %s", p->block, r->order.text);
            CHECK(r->align == QF_PROBE_ALIGN_EXACT, "two-term float32 additions align exactly");
            break;
        case QF_MODEL_SUM_ODD_EVEN:
            CHECK(r->order.odd_even && r->order.fused == p->block / 2 && r->block == p->block,
                  "odd/even %d: order %s fused %d", p->block, r->order.text, r->order.fused);
            break;
        default:
            CHECK(r->order.fused == p->block && r->block == p->block && !r->order.odd_even, "block %d: got %d (%s)",
                  p->block, r->block, r->order.text);
            if (p->promote_interval)
                CHECK(r->order.kind == QF_PROBE_ORDER_BLOCKED && r->order.block == p->promote_interval &&
                          r->promote_interval == p->promote_interval,
                      "promotion %d: order %s", p->promote_interval, r->order.text);
            else
                CHECK(r->order.kind == QF_PROBE_ORDER_SEQUENTIAL && !r->promote_interval, "order %s",
                      r->order.text);
            break;
        }
        if (p->sum != QF_MODEL_SUM_TREE) {
            qf_probe_align al = p->align == QF_MODEL_ALIGN_RTZ     ? QF_PROBE_ALIGN_TRUNCATE
                                : p->align == QF_MODEL_ALIGN_FLOOR ? QF_PROBE_ALIGN_FLOOR
                                                                   : QF_PROBE_ALIGN_NEAREST;
            CHECK(r->align_frac_bits == p->align_frac_bits && r->align == al, "alignment %d/%d: got %d/%d",
                  p->align_frac_bits, (int)al, r->align_frac_bits, (int)r->align);
        }
        CHECK(r->product_frac_bits == want_pf, "product bits %d: got %d", want_pf, r->product_frac_bits);
        CHECK(r->acc_frac_bits == p->acc_frac_bits, "accumulator %d: got %d", p->acc_frac_bits, r->acc_frac_bits);
        if (r->acc_frac_min != r->acc_frac_bits) {
            qf_model_params q = *p;
            q.acc_frac_bits = r->acc_frac_min;
            CHECK(same_model(p, &q, 256), "accumulator widths %d..%d said to fit, but %d differs on random inputs",
                  r->acc_frac_min, r->acc_frac_bits, r->acc_frac_min);
        }
        if (r->acc_round_known)
            CHECK(r->acc_round == p->acc_round, "rounding %s: got %s", qf_round_name(p->acc_round),
                  qf_round_name(r->acc_round));
        else {
            qf_model_params q = *p;
            q.acc_round = p->acc_round == QF_ROUND_RTZ ? QF_ROUND_RNE : QF_ROUND_RTZ;
            CHECK(same_model(p, &q, 256), "rounding said unobservable, but the other rounding differs");
        }
        CHECK(r->flush_in == p->flush_in, "flush of inputs %d: got %d", p->flush_in, r->flush_in);
        if (r->flush_out == QF_PROBE_UNOBSERVABLE)
            CHECK(fa->min_normal * fb->min_normal >= FLT_MIN, "flush of results said unobservable");
        else
            CHECK(r->flush_out == p->flush_out, "flush of results %d: got %d", p->flush_out, r->flush_out);
        CHECK(r->deterministic_threads, "the models are deterministic");
        CHECK(r->validated && r->validated_ok == r->validated, "replay %zu of %zu", r->validated_ok, r->validated);
#undef CHECK
        fprintf(stderr, "%-32s %-26s block %2d align %2d %-8s acc %d..%d %s  %5zu calls %.2f s%s\n", name,
                r->order.text, r->block, r->align_frac_bits,
                r->align == QF_PROBE_ALIGN_FLOOR ? "floor" : r->align == QF_PROBE_ALIGN_TRUNCATE ? "truncate" : "exact",
                r->acc_frac_min, r->acc_frac_bits, r->acc_round_known ? qf_round_name(r->acc_round) : "rtz|rne",
                r->kernel_calls, r->seconds, ok ? "" : "  MISMATCH");
        bad += !ok;
        free(r);
    }
    qf_test_tally("presets probed", (long)((n + qf_test_stride(5) - 1) / qf_test_stride(5)), (long)bad);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("probe/presets");
    TCase *tc = tcase_create("presets");
    int rc;
    if (qf_registry_create(&reg) != QF_OK || qf_registry_add_builtins(reg) != QF_OK)
        return 1;
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, every_preset);
    suite_add_tcase(s, tc);
    rc = qf_test_run(s);
    qf_registry_free(reg);
    return rc;
}
