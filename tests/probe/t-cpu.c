/* t-cpu.c: the probe on the built-in CPU GEMM kernels (kernels/cpu/gemm.c,
 * gemm_fast.c) recovers their documented orders (docs/kernels.md):
 * gemm.cpu.naive.f32 and bf16_f32acc sequential; blocked.f32, f16_f32acc
 * and tf32 sixteen strided lanes (split(16)); splitk4.f32 four contiguous
 * slices (blocked(K/4, sequential) at two K); f16acc sequential in a
 * 10-bit accumulator.  The replay: the reported order and arithmetic,
 * evaluated in C (qf_probe_replay_dot), reproduce the kernel's outputs on
 * fresh random inputs, called here in-process, for every element.  The
 * CLI runs once (text, --json and -o claim.yaml).  OpenBLAS's sgemm is
 * probed by t-openblas.c, natively and pinned to AVX2.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <unistd.h>

#include "qf_backend.h"
#include "qf_cli_test.h"
#include "qf_probe.h"
#include "qf_test.h"

static qf_registry *reg;

static qf_probe_result *probe(const char *name, size_t k)
{
    qf_probe_opts o = {.k = k, .cols = 4, .seed = qf_test_seed()};
    qf_probe_result *r = malloc(sizeof *r);
    char err[512];
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(qf_probe_gemm(reg, name, &o, r, err, sizeof err) == QF_OK, "%s: %s", name, err);
    fprintf(stderr, "%-24s K = %4zu: %-24s acc %d %s fma %d, %zu/%zu replayed, %zu calls, %.2f s\n", name, k,
            r->order_claim, r->acc_frac_bits, qf_round_name(r->acc_round), r->fma, r->validated_ok, r->validated,
            r->kernel_calls, r->seconds);
    return r;
}

START_TEST(documented_orders)
{
    static const struct {
        const char *kernel;
        size_t k;
        const char *order;
        int acc;
    } want[] = {
        {"gemm.cpu.naive.f32", 256, "sequential", 23},     {"gemm.cpu.bf16_f32acc", 128, "sequential", 23},
        {"gemm.cpu.blocked.f32", 256, "split(16)", 23},    {"gemm.cpu.f16_f32acc", 256, "split(16)", 23},
        {"gemm.cpu.tf32", 256, "split(16)", 23},           {"gemm.cpu.splitk4.f32", 256, "blocked(64, sequential)", 23},
        {"gemm.cpu.splitk4.f32", 128, "blocked(32, sequential)", 23}, {"gemm.cpu.f16acc", 256, "sequential", 10},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        qf_probe_result *r = probe(want[i].kernel, want[i].k);
        /* the order at the probed K; the shape pass also probes 2K, where
         * a split-K's slices double (blocked(K/4)): the order changes with K */
        ck_assert_msg(!strcmp(r->order.text, want[i].order), "%s: %s, documented %s", want[i].kernel,
                      r->order.text, want[i].order);
        if (!strcmp(want[i].kernel, "gemm.cpu.splitk4.f32"))
            ck_assert_msg(r->shape_varies && r->varies, "%s: blocked(K/4) must change with K: %s", want[i].kernel,
                          r->order_claim);
        else
            ck_assert_msg(!r->varies && !r->tile_varies, "%s: one order at every shape: %s", want[i].kernel,
                          r->order_claim);
        ck_assert_int_eq(r->acc_frac_bits, want[i].acc);
        ck_assert_int_eq(r->acc_round, QF_ROUND_RNE);
        ck_assert_int_eq(r->align, QF_PROBE_ALIGN_EXACT);
        ck_assert_msg(r->deterministic_threads, "%s: documented bitwise deterministic across threads", want[i].kernel);
        ck_assert_msg(r->validated && r->validated_ok == r->validated, "%s: replay %zu of %zu", want[i].kernel,
                      r->validated_ok, r->validated);
        if (!strcmp(want[i].kernel, "gemm.cpu.naive.f32"))
            ck_assert_msg(r->fma == 0, "gemm.c is built with -ffp-contract=off: products rounded");
        free(r);
    }
}
END_TEST

/* The kernel called in-process on fresh random float32 inputs, compared
 * with the replay of what the probe reported. */
START_TEST(replay_fresh_inputs)
{
    static const char *const ks[] = {"gemm.cpu.naive.f32", "gemm.cpu.blocked.f32", "gemm.cpu.splitk4.f32"};
    const size_t M = 16, N = 4, K = 256;
    for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
        qf_probe_result *r = probe(ks[t], K);
        const qf_kernel *k = qf_registry_find(reg, ks[t]);
        uint32_t *A = malloc(M * K * 4), *B = malloc(K * N * 4), *D = malloc(M * N * 4);
        double *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b), col[256];
        qf_tensor in[4], out[2];
        qf_op_desc op = {.op = QF_OP_GEMM};
        qf_kernel_call call = {.abi_version = QF_KERNEL_ABI_VERSION, .kernel = k, .dtype = &k->dtypes[0], .op = &op,
                               .in = in, .out = out, .threads = 1};
        int64_t sa[2] = {(int64_t)M, (int64_t)K}, sb[2] = {(int64_t)K, (int64_t)N}, sd[2] = {(int64_t)M, (int64_t)N};
        size_t bad = 0;
        qf_device dev;
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        for (size_t i = 0; i < M * K; i++) {
            float f = (float)((double)(qf_rng_u64(qf_test_seed() + 77, i) >> 11) * 0x1p-53 * 4 - 2);
            memcpy(&A[i], &f, 4);
            a[i] = f;
        }
        for (size_t i = 0; i < K * N; i++) {
            float f = (float)((double)(qf_rng_u64(qf_test_seed() + 78, i) >> 11) * 0x1p-53 * 4 - 2);
            memcpy(&B[i], &f, 4);
            b[i] = f;
        }
        op.u.gemm = (qf_op_gemm){.m = M, .n = N, .k = K, .alpha = 1, .batch = 1};
        qf_tensor_init(&in[0], QF_FLOAT32, 2, sa);
        qf_tensor_init(&in[1], QF_FLOAT32, 2, sb);
        qf_tensor_init(&in[2], QF_FLOAT32, 2, sd);
        qf_tensor_init(&out[0], QF_FLOAT32, 2, sd);
        in[0].data = A;
        in[1].data = B;
        out[0].data = D;
        memset(&dev, 0, sizeof dev);
        dev.backend = qf_backend_cpu();
        call.device = &dev;
        ck_assert_int_eq(k->run(k->user, &call), QF_OK);
        for (size_t j = 0; j < N; j++) {
            for (size_t l = 0; l < K; l++)
                col[l] = b[l * N + j];
            for (size_t i = 0; i < M; i++) {
                float got, want = (float)qf_probe_replay_dot(r, j, a + i * K, col);
                memcpy(&got, &D[i * N + j], 4);
                bad += got != want;
            }
        }
        fprintf(stderr, "%s: replay of %s on %zu fresh elements: %zu differ\n", ks[t], r->order_claim, M * N, bad);
        ck_assert_msg(bad == 0, "%s: %zu of %zu elements differ from the replay of %s", ks[t], bad, M * N,
                      r->order_claim);
        free(A), free(B), free(D), free(a), free(b), free(r);
    }
}
END_TEST

START_TEST(cli_once)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    char dir[] = "/tmp/qf-probe-XXXXXX", args[700], path[600], *y;
    qf_cli_result res;
    if (!bin || !*bin)
        return;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/claim.yaml", dir);
    snprintf(args, sizeof args, "gemm.cpu.blocked.f32 --k 128 -o %s --json", path);
    res = qf_cli_expect(bin, "probe", args, 0, NULL);
    ck_assert_msg(strstr(res.out, "\"order\": \"split(16)\""), "%s", res.out);
    qf_cli_result_free(&res);
    y = qf_cli_slurp(path);
    ck_assert_ptr_nonnull(y);
    ck_assert_msg(strstr(y, "claim_version: 1") && strstr(y, "order: split(16)") && strstr(y, "sum_order: splitk") &&
                      strstr(y, "split_k: 16") && strstr(y, "determinism: thread-count-invariant") &&
                      strstr(y, "fma: unfused") && strstr(y, "evidence:"),
                  "%s", y);
    free(y);
    unlink(path);
    rmdir(dir);
    res = qf_cli_expect(bin, "probe", "gemm.no.such.kernel", 2, "no kernel named");
    qf_cli_result_free(&res);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("probe/cpu");
    TCase *tc = tcase_create("cpu");
    int rc;
    if (qf_registry_create(&reg) != QF_OK || qf_registry_add_builtins(reg) != QF_OK)
        return 1;
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, documented_orders);
    tcase_add_test(tc, replay_fresh_inputs);
    tcase_add_test(tc, cli_once);
    suite_add_tcase(s, tc);
    rc = qf_test_run(s);
    qf_registry_free(reg);
    return rc;
}
