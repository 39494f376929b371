/* t-bad.c: the known-bad kernels (kernels/bad) against shapes/detection.yaml,
 * through `qualify run` as a user runs it (QF_QUALIFY_BIN, the suite from
 * QF_SOURCE_DIR; without them: skipped, 77).  Detection power, read back
 * from the journal:
 *   - every registered known-bad kernel has a row in `expected` below (a
 *     new one must say how it is caught) and is FAILED, CRASHED or TIMEOUT
 *     in at least one case of a `*-shows` group, with a reason that names
 *     the mechanism that caught it (bound, canary, poison, determinism,
 *     NaN, codes);
 *   - it runs in at least one `*-hidden*` group, the region where its
 *     defect does not show, and QUALIFIES in every case there;
 *   - no kernel of another kind (the controls: reference and model
 *     kernels) has anything but QUALIFIED;
 *   - the sweep exits 1 (failures found) and reports every pair.
 * Every failure message prints the case, kernel, verdict and reason.
 *
 * Derivation (no binary needed): every row of kernels/bad/origin.c names a
 * registered known-bad kernel, every known-bad kernel has one row, and a
 * kernel derived from a good one runs the good kernel's code with one
 * defect: the same run function, the same configuration but for the
 * defect, and with the defect off the same bits as the good kernel on a
 * small input of every tuple it has (with it on, other bits). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bad/_bad.h"
#include "qf_format.h"
#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_test.h"

static const char *bin, *src;
static char dir[128];

/* How each known-bad kernel is caught: a piece of its reason. */
static const struct {
    const char *kernel;
    const char *reason;
} expected[] = {
    {"gemm.bad.f16acc",                "outside the bound derived from the claim"},
    {"gemm.bad.tile64",                "outside the bound derived from the claim"},
    {"gemm.bad.h100_fp8_as_f32",       "outside the bound derived from the claim"},
    {"gemm.bad.racy_order",            "determinism"},
    {"gemm.bad.overrun",               "canary: output d written out of bounds"},
    {"gemm.bad.unwritten",             "unwritten:"},
    {"gemm.bad.ignores_ld",            "NaN or Inf where the reference is finite"},
    {"gemm.bad.pad_store",             "padding: output d written into its padding"},
    {"softmax.bad.nomax",              "NaN or Inf where the reference is finite"},
    {"softmax.bad.bf16_sum",           "outside the bound derived from the claim"},
    {"layernorm.bad.onepass",          "outside the bound derived from the claim"},
    {"rmsnorm.bad.no_eps",             "outside the bound derived from the claim"},
    {"attention.bad.drop_tail",        "outside the bound derived from the claim"},
    {"quantize.bad.mx_scale_off",      "scales differ"},
    {"quantize.bad.e4m3_nan_overflow", "got 0x7f, expected 0x7e"},
    {"attention.bad.flash_norescale",  "outside the bound derived from the claim"},
    {"attention.bad.flash_bf16p_as_f32", "outside the bound derived from the claim"},
    {"rope.bad.f16_angle",             "outside the bound derived from the claim"},
    {"layernorm.bad.welford_sq",       "outside the bound derived from the claim"},
    {"l2norm.bad.f16_sumsq",           "outside the bound derived from the claim"},
};

static int failing(qf_verdict v)
{
    return v == QF_VERDICT_FAILED || v == QF_VERDICT_CRASHED || v == QF_VERDICT_TIMEOUT;
}

/* The group of a case: its id up to the first ':' ("tile64-shows"). */
static void group_of(const qf_result *r, char *g, size_t size)
{
    const char *c = strchr(r->case_id, ':');
    size_t n = c ? (size_t)(c - r->case_id) : 0;
    if (n >= size)
        n = size - 1;
    memcpy(g, r->case_id, n);
    g[n] = '\0';
}

START_TEST(detection)
{
    char cmd[4096], path[512], err[512], g[128];
    qf_result *r = NULL;
    qf_registry *reg = NULL;
    size_t n = 0, i, j, nk, controls = 0;
    struct timespec t0, t1;
    int st;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(cmd, sizeof cmd, "'%s' run '%s/shapes/detection.yaml' -o '%s/out' --jobs 2 --timeout 30 -q 2>'%s/stderr.txt'",
             bin, src, dir, dir);
    st = system(cmd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "qualify run shapes/detection.yaml: %.2f s\n",
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    /* Failures found: exit code 1 (2 would be a suite or usage error). */
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "qualify run exited %d (see %s/stderr.txt)",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1, dir);
    snprintf(path, sizeof path, "%s/out/journal.jsonl", dir);
    ck_assert_msg(qf_journal_read(path, &r, &n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_gt(n, 0);

    ck_assert_int_eq(qf_registry_create(&reg), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(reg), QF_OK);
    nk = 0;
    for (i = 0; i < qf_registry_count(reg); i++) {
        const qf_kernel *k = qf_registry_get(reg, i);
        const char *want = NULL;
        size_t caught = 0, hidden = 0;
        if (k->kind != QF_KERNEL_KNOWN_BAD)
            continue;
        nk++;
        for (j = 0; j < sizeof expected / sizeof expected[0]; j++)
            if (!strcmp(expected[j].kernel, k->name))
                want = expected[j].reason;
        ck_assert_msg(want != NULL, "known-bad kernel %s has no row in t-bad.c's table", k->name);
        for (j = 0; j < n; j++) {
            if (strcmp(r[j].kernel, k->name))
                continue;
            ck_assert_str_eq(r[j].kernel_kind, "known-bad");
            group_of(&r[j], g, sizeof g);
            if (strstr(g, "-shows")) {
                if (failing(r[j].verdict) && r[j].reason[0] && strstr(r[j].reason, want))
                    caught++;
            } else if (!strncmp(r[j].input, "refute:", 7)) {
                /* refuting inputs are built to expose a wrong claim, also where
                 * the group's own inputs hide it (docs/refute.md) */
                continue;
            } else {
                ck_assert_msg(strstr(g, "-hidden") != NULL, "%s: group '%s' is neither -shows nor -hidden",
                              r[j].case_id, g);
                ck_assert_msg(r[j].verdict == QF_VERDICT_QUALIFIED,
                              "%s %s, where its defect does not show: %s (%s)", k->name, r[j].case_id,
                              qf_verdict_name(r[j].verdict), r[j].reason);
                hidden++;
            }
        }
        ck_assert_msg(caught > 0, "%s is never caught in its region with a reason containing '%s'", k->name,
                      want);
        ck_assert_msg(hidden > 0, "%s has no case where its defect does not show", k->name);
        fprintf(stderr, "%-32s caught in %zu case(s), qualified in %zu\n", k->name, caught, hidden);
    }
    ck_assert_uint_eq(nk, sizeof expected / sizeof expected[0]);

    /* Controls: good kernels beside the bad ones never fail. */
    for (j = 0; j < n; j++) {
        if (!strcmp(r[j].kernel_kind, "known-bad"))
            continue;
        ck_assert_msg(r[j].verdict == QF_VERDICT_QUALIFIED, "%s (%s) %s: %s (%s)", r[j].kernel,
                      r[j].kernel_kind, r[j].case_id, qf_verdict_name(r[j].verdict), r[j].reason);
        controls++;
    }
    ck_assert_uint_gt(controls, 0);
    qf_registry_free(reg);
    free(r);
}
END_TEST

/* ---- Derivation ---------------------------------------------------------- */

/* One small call of an op: up to 4 inputs and 2 outputs, their codes in
 * malloc'd buffers (outputs with one element of slack, for a stray store). */
typedef struct small_call {
    qf_op_desc op;
    qf_tensor in[4], out[2];
    size_t out_bytes[2];
} small_call;

static size_t bytes_of(const qf_tensor *t, int slack)
{
    size_t n = 1;
    int d;
    for (d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return (n + (size_t)slack) * (size_t)((qf_format_get(t->format)->storage_bits + 7) / 8);
}

/* Slot t of format f and the given shape; inputs hold codes of values in
 * [-2, 2) drawn from seed (a format's nearest even code), outputs 0xA5. */
static void slot(qf_tensor *t, qf_format_id f, int ndim, const int64_t *shape, int out, uint64_t seed)
{
    const qf_format *fm = qf_format_get(f);
    size_t i, n, nb;
    ck_assert_int_eq(qf_tensor_init(t, f, ndim, shape), QF_OK);
    nb = bytes_of(t, 1);
    n = nb / (size_t)((fm->storage_bits + 7) / 8) - 1;
    t->data = malloc(nb);
    ck_assert(t->data != NULL);
    memset(t->data, 0xA5, nb);
    for (i = 0; !out && i < n; i++) {
        double v = (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53 * 4 - 2;
        uint64_t c = qf_format_encode(fm, v, QF_ROUND_RNE, 1, 0, 0);
        switch (fm->storage_bits) {
        case 8: ((uint8_t *)t->data)[i] = (uint8_t)c; break;
        case 16: ((uint16_t *)t->data)[i] = (uint16_t)c; break;
        default: ((uint32_t *)t->data)[i] = (uint32_t)c; break;
        }
    }
}

/* A small call of op k->op with tuple t (shapes chosen so that every
 * defect of the table has something to act on: M % 64 != 0, odd N,
 * N % 8 != 0, K >= 3, several KV tiles of 16, positions > 0). */
static void small_call_make(small_call *c, const qf_kernel *k, const qf_dtype_tuple *t)
{
    memset(c, 0, sizeof *c);
    c->op.op = k->op;
    switch (k->op) {
    case QF_OP_GEMM: {
        int64_t a[2] = {3, 7}, b[2] = {7, 5}, d[2] = {3, 5};
        c->op.u.gemm.m = 3, c->op.u.gemm.n = 5, c->op.u.gemm.k = 7, c->op.u.gemm.alpha = 1;
        slot(&c->in[0], t->in[0], 2, a, 0, 1);
        slot(&c->in[1], t->in[1], 2, b, 0, 2);
        slot(&c->out[0], t->out[0], 2, d, 1, 0);
        break;
    }
    case QF_OP_SOFTMAX:
    case QF_OP_LAYERNORM:
    case QF_OP_RMSNORM: {
        int64_t x[2] = {2, 37}, v[1] = {37};
        if (k->op == QF_OP_SOFTMAX) {
            c->op.u.softmax.rows = 2, c->op.u.softmax.cols = 37, c->op.u.softmax.scale = 1;
        } else {
            c->op.u.norm.rows = 2, c->op.u.norm.cols = 37, c->op.u.norm.eps = 1e-2;
            slot(&c->in[1], t->in[1], 1, v, 0, 2);
            slot(&c->in[2], t->in[2], 1, v, 0, 3);
        }
        slot(&c->in[0], t->in[0], 2, x, 0, 1);
        slot(&c->out[0], t->out[0], 2, x, 1, 0);
        break;
    }
    case QF_OP_ATTENTION: {
        int64_t q[4] = {1, 2, 3, 4}, kv[4] = {1, 1, 40, 4}, lse[3] = {1, 2, 3};
        qf_op_attention *a = &c->op.u.attention;
        a->batch = 1, a->heads = 2, a->kv_heads = 1, a->seq_q = 3, a->seq_k = 40, a->head_dim = 4;
        a->head_dim_v = 4, a->mask = QF_MASK_NONE;
        slot(&c->in[0], t->in[0], 4, q, 0, 1);
        slot(&c->in[1], t->in[1], 4, kv, 0, 2);
        slot(&c->in[2], t->in[2], 4, kv, 0, 3);
        slot(&c->out[0], t->out[0], 4, q, 1, 0);
        slot(&c->out[1], t->out[1], 3, lse, 1, 0);
        break;
    }
    case QF_OP_L2NORM: {
        int64_t x[2] = {2, 37};
        c->op.u.norm.rows = 2, c->op.u.norm.cols = 37, c->op.u.norm.eps = 1e-12;
        slot(&c->in[0], t->in[0], 2, x, 0, 1);
        slot(&c->out[0], t->out[0], 2, x, 1, 0);
        break;
    }
    case QF_OP_ROPE: {
        int64_t x[3] = {3, 2, 8};
        c->op.u.rope.tokens = 3, c->op.u.rope.heads = 2, c->op.u.rope.head_dim = 8;
        c->op.u.rope.theta = 10000, c->op.u.rope.pos_offset = 5, c->op.u.rope.layout = QF_REF_ROPE_HALF;
        slot(&c->in[0], t->in[0], 3, x, 0, 1);
        slot(&c->out[0], t->out[0], 3, x, 1, 0);
        break;
    }
    default: ck_abort_msg("%s: no small call for its op in t-bad.c", k->name);
    }
    c->out_bytes[0] = bytes_of(&c->out[0], 1);
    c->out_bytes[1] = c->out[1].data ? bytes_of(&c->out[1], 1) : 0;
}

static void small_call_free(small_call *c)
{
    int i;
    for (i = 0; i < 4; i++)
        free(c->in[i].data);
    for (i = 0; i < 2; i++)
        free(c->out[i].data);
}

/* Run k (its run function, user as ctx) on c with tuple t; the outputs'
 * bytes go to o0 and o1. */
static void run_small(const qf_kernel *k, const qf_dtype_tuple *t, small_call *c, unsigned char *o0,
                      unsigned char *o1)
{
    qf_kernel_call call;
    char msg[256] = "";
    int i;
    for (i = 0; i < 2; i++)
        if (c->out[i].data)
            memset(c->out[i].data, 0xA5, c->out_bytes[i]);
    memset(&call, 0, sizeof call);
    call.abi_version = QF_KERNEL_ABI_VERSION;
    call.kernel = k;
    call.dtype = t;
    call.op = &c->op;
    call.in = c->in;
    call.out = c->out;
    call.threads = 1;
    call.msg = msg;
    call.msg_size = sizeof msg;
    ck_assert_msg(k->run(k->user, &call) == QF_OK, "%s on tuple %s: %s", k->name, t->name, msg);
    memcpy(o0, c->out[0].data, c->out_bytes[0]);
    if (c->out_bytes[1])
        memcpy(o1, c->out[1].data, c->out_bytes[1]);
}

START_TEST(derivation)
{
    qf_registry *reg = NULL;
    size_t no = 0, i, j, nk = 0, derived = 0;
    const _qf_bad_origin *o = _qf_bad_origins(&no);

    ck_assert_int_eq(qf_registry_create(&reg), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(reg), QF_OK);
    /* Every known-bad kernel has exactly one row. */
    for (i = 0; i < qf_registry_count(reg); i++) {
        const qf_kernel *k = qf_registry_get(reg, i);
        size_t rows = 0;
        if (k->kind != QF_KERNEL_KNOWN_BAD)
            continue;
        nk++;
        for (j = 0; j < no; j++)
            rows += !strcmp(o[j].bad, k->name);
        ck_assert_msg(rows == 1, "%s has %zu rows in kernels/bad/origin.c", k->name, rows);
    }
    ck_assert_uint_eq(nk, no);

    for (i = 0; i < no; i++) {
        const qf_kernel *bad = qf_registry_find(reg, o[i].bad), *good;
        qf_kernel off;
        _qf_cpu_flash_cfg flash_off;
        size_t t;
        ck_assert_msg(bad && bad->kind == QF_KERNEL_KNOWN_BAD, "%s is not a registered known-bad kernel",
                      o[i].bad);
        ck_assert_msg(o[i].what && *o[i].what, "%s: the defect is not named", o[i].bad);
        if (!o[i].good) {
            ck_assert_msg(o[i].defect == _QF_DEFECT_NONE && o[i].why_alone && *o[i].why_alone,
                          "%s: no good kernel and no reason why", o[i].bad);
            continue;
        }
        good = qf_registry_find(reg, o[i].good);
        ck_assert_msg(good && good->kind != QF_KERNEL_KNOWN_BAD && good->op == bad->op,
                      "%s: its good kernel %s is not a registered correct kernel of its op", o[i].bad,
                      o[i].good);
        /* The kernel with its defect off: a copy of the record whose user
         * has the defect cleared (a configuration is copied whole). */
        off = *bad;
        if (bad->run == _qf_cpu_attention_flash_run) {
            ck_assert(bad->user != NULL && good->user != NULL);
            memcpy(&flash_off, bad->user, sizeof flash_off);
            ck_assert_int_eq(flash_off.defect, o[i].defect);
            flash_off.defect = _QF_DEFECT_NONE;
            ck_assert_msg(!memcmp(&flash_off, good->user, sizeof flash_off),
                          "%s: its configuration differs from %s's beyond the defect", o[i].bad, o[i].good);
            off.user = &flash_off;
        } else if (o[i].defect != _QF_DEFECT_NONE) {
            /* A bare _qf_defect: the good kernel runs with NULL. */
            ck_assert_msg(good->user == NULL, "%s: %s has a configuration", o[i].bad, o[i].good);
            ck_assert_int_eq(_qf_cpu_defect(bad->user), o[i].defect);
            off.user = NULL;
        } else {
            ck_assert_msg(bad->run != good->run || bad->user == good->user,
                          "%s: the claim is its only defect, but its user differs from %s's", o[i].bad,
                          o[i].good);
        }
        if (o[i].defect != _QF_DEFECT_NONE) {
            ck_assert_msg(bad->run == good->run, "%s does not run %s's code", o[i].bad, o[i].good);
            ck_assert_int_eq(_qf_cpu_defect(bad->user), o[i].defect);
        }
        /* With the defect off, the good kernel's bits on every tuple. */
        for (t = 0; t < bad->n_dtypes; t++) {
            small_call c;
            unsigned char *g0, *g1, *b0, *b1;
            small_call_make(&c, bad, &bad->dtypes[t]);
            g0 = malloc(c.out_bytes[0]), b0 = malloc(c.out_bytes[0]);
            g1 = malloc(c.out_bytes[1] + 1), b1 = malloc(c.out_bytes[1] + 1);
            ck_assert(g0 && b0 && g1 && b1);
            run_small(good, &bad->dtypes[t], &c, g0, g1);
            run_small(&off, &bad->dtypes[t], &c, b0, b1);
            ck_assert_msg(!memcmp(g0, b0, c.out_bytes[0]) && !memcmp(g1, b1, c.out_bytes[1]),
                          "%s with its defect off differs from %s (tuple %s)", o[i].bad, o[i].good,
                          bad->dtypes[t].name);
            /* And the defect is live: on, it changes the bits (not checked
             * for the racy order, whose rotation may start a call at 0,
             * nor for the layout defects, which act only on strided
             * operands: the small call is dense, and their detection.yaml
             * groups sweep `layout`). */
            if (o[i].defect != _QF_DEFECT_NONE && o[i].defect != _QF_DEFECT_GEMM_RACY_ORDER &&
                o[i].defect != _QF_DEFECT_GEMM_IGNORES_LD && o[i].defect != _QF_DEFECT_GEMM_PAD_STORE) {
                run_small(bad, &bad->dtypes[t], &c, b0, b1);
                ck_assert_msg(memcmp(g0, b0, c.out_bytes[0]) || memcmp(g1, b1, c.out_bytes[1]),
                              "%s gives %s's bits with its defect on (tuple %s)", o[i].bad, o[i].good,
                              bad->dtypes[t].name);
            }
            free(g0), free(g1), free(b0), free(b1);
            small_call_free(&c);
        }
        derived++;
        fprintf(stderr, "%-34s = %s + %s\n", o[i].bad, o[i].good, o[i].what);
    }
    ck_assert_uint_gt(derived, 0);
    qf_registry_free(reg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels/bad");
    TCase *tc = tcase_create("detection"), *td = tcase_create("derivation");
    tcase_add_test(td, derivation);
    suite_add_tcase(s, td);
    bin = getenv("QF_QUALIFY_BIN");
    src = getenv("QF_SOURCE_DIR");
    if (!bin || !*bin || !src || !*src)
        fprintf(stderr, "QF_QUALIFY_BIN or QF_SOURCE_DIR is not set: detection skipped\n");
    else {
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, detection);
        suite_add_tcase(s, tc);
    }
    snprintf(dir, sizeof dir, "/tmp/qf-t-bad-%d", (int)getpid());
    return qf_test_run_in_dir(s, dir);
}
