/* gemm.c: the gemm op class (_ops.h): d = alpha op(a) op(b) + beta c,
 * batched, with the scaling recipes of _gemm_scaled.h.  The reference is
 * the exact dot-product engine (qf_gemm), the bound the chain bound of the
 * claimed accumulation (docs/bounds.md "GEMM"), and a NaN or Inf where the
 * claimed accumulator may overflow is judged by _gemm_range.h. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "_gemm_range.h"
#include "_gemm_refute.h"
#include "_ops.h"
#include "qf_block.h"
#include "qf_bound.h"
#include "qf_dot.h"
#include "qf_runner.h"

/* The case's recipe: no `scale:` is none; the suite admits only the
 * spellings of qf_scale_recipe_names, so COUNT (not driven) is a safeguard
 * for a case built without the parser. */
static qf_scale_recipe recipe_of(const qf_suite_case *c)
{
    qf_scale_recipe r = QF_SCALE_RECIPE_NONE;
    if (c->dtype->scale && qf_scale_recipe_lookup(c->dtype->scale, &r) != QF_OK)
        r = QF_SCALE_RECIPE_COUNT;
    return r;
}

static int build(_qf_case *p, qf_result *r)
{
    const qf_suite_case *c = p->c;
    qf_op_gemm *g = &p->op.u.gemm;
    p->op.op = QF_OP_GEMM;
    g->m = c->dims[0];
    g->n = c->dims[1];
    g->k = c->dims[2];
    g->batch = c->ndims > 3 && c->dims[3] ? c->dims[3] : 1;
    g->trans_a = _qf_param_real(c, "trans_a", 0) != 0;
    g->trans_b = _qf_param_real(c, "trans_b", 0) != 0;
    g->alpha = _qf_param_real(c, "alpha", 1);
    g->beta = _qf_param_real(c, "beta", 0);
    p->recipe = recipe_of(c);
    p->group = (size_t)_qf_param_real(c, "group_size", 128);
    if (p->recipe != QF_SCALE_RECIPE_NONE) {
        if (!_qf_rs_driven(p->recipe)) {
            _qf_say(r, QF_CAUSE_UNSUPPORTED,
                    "unsupported: the runner drives scaled GEMM with per_tensor, per_channel, mx, nvfp4 and "
                    "group scales, not %s",
                    c->dtype->scale);
            return -1;
        }
        if (g->beta != 0) {
            _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: scaled GEMM with beta != 0 is not driven yet");
            return -1;
        }
    }
    p->rows = g->batch * g->m;
    p->cols = g->n;
    return 0;
}

/* The case's scaling must be the tuple's (gemm_scaled.c), and a, b its
 * input formats. */
static int tuple_matches(const qf_suite_case *c, const qf_dtype_tuple *t)
{
    if (!_qf_rs_tuple_matches(recipe_of(c), (size_t)_qf_param_real(c, "group_size", 128), t))
        return 0;
    return _qf_fmt_eq(_qf_role(c, "a"), t->in[0]) && _qf_fmt_eq(_qf_role(c, "b"), t->in[1]);
}

/* A per-tensor scaled FP8 operand (Transformer Engine's recipe, docs/numerics.md#block-scaled-formats):
 * draw in binary64, S = fp8_max / amax as a float32 (qf_block_fp8), codes =
 * round(x * S) saturating; the kernel gets the codes and the float32
 * dequantization scale s = float32(1 / S) (value = decode(code) * s, the
 * qf_tensor convention), and the reference the exact products
 * decode(code) * s (at most 4 + 24 significant bits: exact in binary64). */
static int gen_scaled(_qf_case *p, qf_result *r, int slot, const qf_dist *d, int ndim, const int64_t *shape,
                      size_t rows, size_t cols)
{
    const qf_format *f = qf_format_get(p->t->in[slot]), *f32 = qf_format_get(QF_FLOAT32);
    qf_block_fp8_params bp = qf_block_fp8_params_default();
    char err[256];
    size_t i, n = rows * cols;
    double amax = 0, S, sinv;
    uint8_t *codes;
    if (!(d = _qf_slot_dist(p, r, slot, d, ndim, shape)))
        return -1;
    if (!f || f->bits > 8 || f->kind != QF_KIND_FLOAT) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED,
                "unsupported: per_tensor scaling needs a float format of at most 8 bits");
        return -1;
    }
    p->inval[slot] = malloc((n ? n : 1) * sizeof(double));
    p->incode[slot] = codes = malloc(n + 8);
    if (!p->inval[slot] || !codes) {
        _qf_say(r, QF_CAUSE_HARNESS, "out of memory generating inputs");
        return -1;
    }
    if (qf_inputs_draw(d, p->seed, (uint64_t)slot, f, rows, cols, 0, rows, p->inval[slot], err, sizeof err) !=
        QF_OK) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: input %s: %s", qf_op_slot_name(p->op.op, 0, slot),
                err);
        return -1;
    }
    for (i = 0; i < n; i++)
        if (isfinite(p->inval[slot][i]) && fabs(p->inval[slot][i]) > amax)
            amax = fabs(p->inval[slot][i]);
    bp.elem = f->id;
    if (qf_block_fp8_scale_from_amax(&bp, amax, &p->in_scale[slot], &S) != QF_OK ||
        qf_block_fp8_scale_encode(&bp, p->inval[slot], rows, cols, &p->in_scale[slot], codes) != QF_OK) {
        _qf_say(r, QF_CAUSE_HARNESS, "cannot scale input %s", qf_op_slot_name(p->op.op, 0, slot));
        return -1;
    }
    /* The kernel's scale multiplies: the float32 reciprocal of S. */
    p->in_scale[slot] = qf_block_fp8_scale_inv(p->in_scale[slot]);
    sinv = qf_format_decode(f32, p->in_scale[slot]);
    for (i = 0; i < n; i++)
        p->inval[slot][i] = qf_format_decode(f, codes[i]) * sinv;
    qf_tensor_init(&p->in[slot], f->id, ndim, shape);
    p->in[slot].data = codes;
    p->in[slot].bytes = n;
    p->in[slot].scale.kind = QF_SCALE_TENSOR;
    p->in[slot].scale.format = QF_FLOAT32;
    p->in[slot].scale.data = &p->in_scale[slot];
    p->in[slot].scale.count = 1;
    return 0;
}

/* An operand scaled by a recipe beyond per_tensor (gemm_scaled.c):
 * rows x cols per batch entry. */
static int gen_recipe(_qf_case *p, qf_result *r, int slot, const qf_dist *d, int ndim, const int64_t *shape,
                      size_t rows, size_t cols)
{
    const qf_op_gemm *g = &p->op.u.gemm;
    _qf_rs_operand o = {NULL, NULL, NULL};
    char why[256];
    int mis = 0, rc;
    if (!(d = _qf_slot_dist(p, r, slot, d, ndim, shape)))
        return -1;
    rc =
        _qf_rs_gen(p->recipe, p->group, p->t->in[slot], slot, slot ? g->trans_b : g->trans_a, d, p->seed,
                   ndim, shape, g->batch ? g->batch : 1, rows, cols, &p->in[slot], &o, &mis, why, sizeof why);
    p->inval[slot] = o.val;
    p->incode[slot] = o.codes;
    p->inscale[slot] = o.scales;
    if (rc)
        _qf_say(r, mis ? QF_CAUSE_HARNESS : QF_CAUSE_UNSUPPORTED, "%s", why);
    return rc;
}

static int inputs(_qf_case *p, qf_result *r, const qf_dist *d)
{
    const qf_op_gemm *g = &p->op.u.gemm;
    int nd = g->batch > 1 ? 3 : 2;
    int64_t sa[3], sb[3], sc[3];
    int64_t bt = (int64_t)g->batch, m = (int64_t)g->m, n = (int64_t)g->n, k = (int64_t)g->k;
    int64_t ar = g->trans_a ? k : m, ac = g->trans_a ? m : k, br = g->trans_b ? n : k,
            bc = g->trans_b ? k : n;
    if (nd == 3) {
        sa[0] = sb[0] = sc[0] = bt;
        sa[1] = ar, sa[2] = ac, sb[1] = br, sb[2] = bc, sc[1] = m, sc[2] = n;
    } else {
        sa[0] = ar, sa[1] = ac, sb[0] = br, sb[1] = bc, sc[0] = m, sc[1] = n;
    }
    if (d->kind == QF_DIST_REFUTE) { /* designed against the claim (gemm_refute.c) */
        if (_qf_gemm_refute_gen(p, r, nd, sa, sb))
            return -1;
    } else if (p->recipe == QF_SCALE_RECIPE_PER_TENSOR) {
        if (gen_scaled(p, r, 0, d, nd, sa, (size_t)(bt * ar), (size_t)ac) ||
            gen_scaled(p, r, 1, d, nd, sb, (size_t)(bt * br), (size_t)bc))
            return -1;
    } else if (p->recipe != QF_SCALE_RECIPE_NONE) {
        if ((p->recipe == QF_SCALE_RECIPE_GROUP
                 ? _qf_gen_input(p, r, 0, d, nd, sa, (size_t)(bt * ar), (size_t)ac)
                 : gen_recipe(p, r, 0, d, nd, sa, (size_t)ar, (size_t)ac)) ||
            gen_recipe(p, r, 1, d, nd, sb, (size_t)br, (size_t)bc))
            return -1;
    } else if (_qf_gen_input(p, r, 0, d, nd, sa, (size_t)(bt * ar), (size_t)ac) ||
               _qf_gen_input(p, r, 1, d, nd, sb, (size_t)(bt * br), (size_t)bc))
        return -1;
    if (g->beta != 0 && _qf_gen_input(p, r, 2, d, nd, sc, (size_t)(bt * m), (size_t)n))
        return -1;
    qf_tensor_init(&p->out[0], p->t->out[0], nd, sc);
    return 0;
}

/* Each batch entry is a matrix of its own: its first and last rows and
 * columns and tile edges are sampled, with an equal share of the target. */
static int sample_batched(const qf_op_gemm *g, uint64_t target, uint64_t tile, uint64_t seed, uint64_t **idx,
                          size_t *n)
{
    size_t b, total = 0, i;
    uint64_t *all = NULL;
    if (target == 0 || target >= (uint64_t)(g->batch * g->m * g->n) || g->batch <= 1)
        return qf_runner_sample(g->batch * g->m, g->n, target, tile, seed, idx, n) == QF_OK ? 0 : -1;
    for (b = 0; b < g->batch; b++) {
        uint64_t *one = NULL, *na;
        size_t k = 0;
        if (qf_runner_sample(g->m, g->n, (target + g->batch - 1) / g->batch, tile, seed + b, &one, &k) !=
            QF_OK)
            goto fail;
        na = realloc(all, (total + k + 1) * sizeof *na);
        if (!na) {
            free(one);
            goto fail;
        }
        all = na;
        for (i = 0; i < k; i++)
            all[total + i] = (uint64_t)(b * g->m * g->n) + one[i];
        total += k;
        free(one);
    }
    *idx = all;
    *n = total;
    return 0;
fail:
    free(all);
    return -1;
}

/* A claim that flushes subnormals (qf_arith_claim.flush_subnormals) computes
 * the claimed arithmetic on flushed inputs a', b', c': its result is within
 * the usual bound of the exact a'b' (sum |a'||b'| <= sum |a||b|), and
 * |a'b' - ab| <= F, the sum of |a_l b_l| over the products with a flushed
 * (nonzero subnormal) operand, plus |beta c| when c is flushed.  So each
 * checked element's bound grows by |alpha| F (1 + rel_out) (the output
 * rounding is relative to a result that moved by F too; docs/bounds.md
 * "Flushed subnormals").  F is summed in binary64 over at most K
 * non-negative terms, then enlarged by (K + 2) 2^-52 to cover that sum's
 * own rounding. */
static void flush_lost(const _qf_case *p, _qf_checked *ck, const qf_bound_coef *coef)
{
    const qf_op_gemm *g = &p->op.u.gemm;
    const qf_format *fa = qf_format_get(p->t->in[0]), *fb = qf_format_get(p->t->in[1]);
    const qf_format *fc = g->beta != 0 ? qf_format_get(p->t->in[2]) : NULL;
    const double *A = p->inval[0], *B = p->inval[1], *C = p->inval[2];
    size_t i, l, m = g->m, n = g->n, k = g->k;
    double grow = (1 + (double)(k + 2) * 0x1p-52) * (1 + coef->rel_out) * QF_BOUND_SAFETY;
    if (!fa || !fb)
        return;
    for (i = 0; i < ck->n; i++) {
        size_t e = _qf_ck_at(ck, i), pb = e / (m * n), rem = e % (m * n), row = rem / n, col = rem % n;
        double f = 0;
        for (l = 0; l < k; l++) {
            double a = A[pb * m * k + (g->trans_a ? l * m + row : row * k + l)];
            double b = B[pb * k * n + (g->trans_b ? col * k + l : l * n + col)];
            int sub_a = a != 0 && fabs(a) < fa->min_normal, sub_b = b != 0 && fabs(b) < fb->min_normal;
            if (sub_a || sub_b)
                f += fabs(a * b);
        }
        f *= fabs(g->alpha);
        if (fc && C) {
            double c = C[pb * m * n + row * n + col];
            if (c != 0 && fabs(c) < fc->min_normal)
                f += fabs(g->beta * c);
        }
        ck->bound[i] += f * grow;
    }
}

/* An integer accumulator (qf_arith_claim.acc_kind): the expected result
 * of an element whose exact sum leaves the accumulator's range is what the
 * claimed overflow behaviour gives (qf_bound_int_acc_expected): the wrapped
 * sum, or the saturated one; an element where the order decides
 * (saturation with products of both signs) is left unchecked (undefined,
 * counted in ref_undefined).  Only the plain product sum (alpha 1, beta 0,
 * no scales) is an integer sum. */
static void int_acc_expect(const _qf_case *p, _qf_checked *ck, uint8_t *rstat)
{
    size_t i;
    if (p->t->arith.acc_kind == QF_ACC_FLOAT || p->recipe != QF_SCALE_RECIPE_NONE ||
        p->op.u.gemm.alpha != 1 || p->op.u.gemm.beta != 0)
        return;
    for (i = 0; i < ck->n; i++) {
        double ex;
        if (!qf_bound_int_acc_expected(&p->t->arith, ck->exact[i], ck->absb[i], &ex)) {
            rstat[i] = QF_REF_UNDEFINED;
            ck->status[i] = QF_REF_UNDEFINED;
        } else if (ex != ck->exact[i]) {
            ck->exact[i] = ex;
            ck->rounded[i] = qf_format_decode(p->outf, qf_format_encode(p->outf, ex, QF_ROUND_RNE, 1, 0, 0));
            rstat[i] = QF_REF_EXACT;
        }
    }
}

static int reference_gemm(_qf_case *p, _qf_checked *ck, _qf_checked *ck1, qf_result *r, uint64_t target,
                          uint64_t tile)
{
    const qf_op_gemm *g = &p->op.u.gemm;
    qf_gemm_desc d = qf_gemm_desc_default();
    qf_bound_coef coef;
    uint8_t *rstat = NULL;
    size_t i;
    /* The dequantization scales are one more rounding in the epilogue. */
    int epilogue = (g->alpha != 1) + (g->beta != 0) + _qf_rs_epilogue(p->recipe);
    qf_status s;
    d.layout = QF_ROW_MAJOR;
    d.trans_a = g->trans_a ? QF_TRANS : QF_NO_TRANS;
    d.trans_b = g->trans_b ? QF_TRANS : QF_NO_TRANS;
    d.m = g->m;
    d.n = g->n;
    d.k = g->k;
    d.alpha = g->alpha;
    d.beta = g->beta;
    d.a = p->inval[0];
    d.lda = g->trans_a ? g->m : g->k;
    d.b = p->inval[1];
    d.ldb = g->trans_b ? g->k : g->n;
    d.c = g->beta != 0 ? p->inval[2] : NULL;
    d.ldc = g->n;
    d.batch = g->batch;
    d.stride_a = (ptrdiff_t)(g->m * g->k);
    d.stride_b = (ptrdiff_t)(g->k * g->n);
    d.stride_c = d.stride_d = (ptrdiff_t)(g->m * g->n);
    /* Scaled operands are decode(code) * scale, binary64 values. */
    d.fa = (p->recipe != QF_SCALE_RECIPE_NONE) ? NULL : qf_format_get(p->t->in[0]);
    d.fb = (p->recipe != QF_SCALE_RECIPE_NONE) ? NULL : qf_format_get(p->t->in[1]);
    d.ldd = g->n;
    d.threads = 1;
    if (sample_batched(g, target, tile, p->seed, &ck->idx, &ck->n) || _qf_checked_alloc(ck, ck->n) ||
        !(rstat = malloc(ck->n + 1))) {
        free(rstat);
        _qf_say(r, QF_CAUSE_HARNESS, "out of memory for the reference");
        return -1;
    }
    if (ck->n == p->out_n) {
        /* every element, in order: no index array */
        free(ck->idx);
        ck->idx = NULL;
        /* Every element: the GEMM engine, twice (binary64 and the output
         * format, each rounded once from the exact sum). */
        qf_gemm_desc d2 = d;
        qf_gemm_stats s1, s2;
        d.out = NULL;
        d.d_value = ck->exact;
        d.d_abs = ck->absb;
        d2.out = p->outf;
        d2.d_value = ck->rounded;
        d2.d_status = rstat;
        d.stats = &s1;
        d2.stats = &s2;
        if ((s = qf_gemm(&d)) != QF_OK || (s = qf_gemm(&d2)) != QF_OK) {
            _qf_say(r, QF_CAUSE_HARNESS, "reference failed: %s", qf_status_str(s));
            free(rstat);
            return -1;
        }
        /* evaluations the certified fast path left to the exact engine */
        r->ref_exact_engine += s1.n_exact + s2.n_exact;
    } else {
        r->ref_exact_engine += ck->n; /* qf_gemm_acc_element: the exact engine */
    }
    for (i = 0; i < ck->n && ck->n != p->out_n; i++) {
        /* The exact accumulator of each checked element, rounded twice from
         * it: to binary64 (the "exact" value metrics and bounds use, within
         * 2^-53) and once, directly, into the output format. */
        qf_dot_acc acc, abs;
        size_t e = _qf_ck_at(ck, i), pb = e / (g->m * g->n), rem = e % (g->m * g->n);
        qf_dot_acc_init(&acc);
        qf_dot_acc_init(&abs);
        s = qf_gemm_acc_element(&d, pb, rem / g->n, rem % g->n, &acc, &abs);
        if (s != QF_OK) {
            _qf_say(r, QF_CAUSE_HARNESS, "reference failed: %s", qf_status_str(s));
            free(rstat);
            return -1;
        }
        ck->exact[i] = qf_dot_acc_get_d(&acc, QF_ROUND_RNE);
        ck->rounded[i] = qf_format_decode(p->outf, qf_dot_acc_round(&acc, p->outf, QF_ROUND_RNE, 0, 0, 0));
        ck->absb[i] = qf_dot_acc_get_d(&abs, QF_ROUND_UP);
        rstat[i] = (uint8_t)qf_dot_acc_status(&acc, ck->rounded[i]);
    }
    int_acc_expect(p, ck, rstat);
    /* The reference's statuses as qf_gemm judges them (the sign of exact -
     * rounded, formed exactly): counted, while the metrics keep checking
     * every element (the exact engine leaves none undecided). */
    for (i = 0; i < ck->n; i++) {
        r->ref_exact += rstat[i] == QF_REF_EXACT;
        r->ref_rounded += rstat[i] == QF_REF_ROUNDED;
        r->ref_undefined += rstat[i] == QF_REF_UNDEFINED;
    }
    free(rstat);
    s = qf_bound_gemm_coef(&p->t->arith, g->k, epilogue, p->outf, 3.0, &coef);
    if (s != QF_OK) {
        _qf_say(r, QF_CAUSE_HARNESS, "cannot derive the bound from the claim: %s", qf_status_str(s));
        return -1;
    }
    if (p->recipe != QF_SCALE_RECIPE_NONE) /* underflow inside the scale epilogue (gemm_range.c) */
        _qf_rr_scaled_underflow(p->recipe, &p->in[0], &p->in[1], &coef);
    if (p->t->arith.flush_subnormals) {
        /* Flushed accumulator results: each of the at most K + chain + 2
         * additions and epilogue steps loses less than the accumulator's
         * smallest normal, which later roundings enlarge by at most
         * (1 + rel_abs). */
        const qf_format *af = qf_format_get(p->t->arith.acc_format);
        coef.abs_min +=
            ((double)g->k + coef.chain + 2) * af->min_normal * (1 + coef.rel_abs) * QF_BOUND_SAFETY;
    }
    /* the inputs are read no more unless flush_lost reads them: freed
     * before the bounds' array is touched (docs/runner.md "Memory") */
    int flush = p->t->arith.flush_subnormals && p->recipe == QF_SCALE_RECIPE_NONE && !g->groups;
    if (!flush)
        _qf_inval_release(p);
    qf_bound_apply(&coef, ck->n, ck->absb, ck->exact, ck->bound);
    if (flush)
        flush_lost(p, ck, &coef);
    snprintf(r->bound.kind, sizeof r->bound.kind, "gemm");
    r->bound.rel_abs = coef.rel_abs;
    r->bound.rel_out = coef.rel_out;
    r->bound.abs_min = coef.abs_min;
    r->bound.chain = coef.chain;
    r->bound.eta = coef.eta;
    r->bound.prob = coef.prob;
    return 0;
}

/* NaN / Inf where the claimed accumulator may overflow: unchecked, and
 * the case MISTRUSTED (docs/bounds.md, gemm_range.c). */
static size_t mark_overflow(const _qf_case *p, _qf_checked *ck, const qf_result *r, double *reach,
                            size_t *n_failed)
{
    /* In blocks of the kernel's values, decoded from its codes (no array
     * of them all): the same marks, the largest reach and the sums. */
    double got[1024], f = _qf_rr_unscale_factor(&p->in[0], &p->in[1], p->op.u.gemm.alpha), w;
    double amax = _qf_rr_acc_max(&p->t->arith);
    size_t at, i, nb, marked = 0, nf;
    *reach = 0;
    *n_failed = 0;
    for (at = 0; at < ck->n; at += nb) {
        nb = ck->n - at < 1024 ? ck->n - at : 1024;
        for (i = 0; i < nb; i++)
            got[i] = _qf_ck_got(p, ck, at + i);
        marked += _qf_rr_gemm_mark_overflow(r->bound.rel_abs, f, amax, nb, ck->absb + at, ck->exact + at,
                                            ck->rounded + at, got, ck->status + at, &w, &nf);
        *n_failed += nf;
        if (w > *reach)
            *reach = w;
    }
    return marked;
}

static double acc_max(const _qf_case *p)
{
    return _qf_rr_acc_max(&p->t->arith);
}

/* clang-format off */
static const pspec params[] = {
    {"trans_a",    PT_BOOL, 0, 0, 0, 0,        NULL, 0, 0, NULL},
    {"trans_b",    PT_BOOL, 0, 0, 0, 0,        NULL, 0, 0, NULL},
    {"alpha",      PT_REAL, QF_SCHEMA_REAL_ANY,   NULL, 0, 1, NULL},
    {"beta",       PT_REAL, QF_SCHEMA_REAL_ANY,   NULL, 0, 0, NULL},
    {"group_size", PT_INT,  1, 65536, 0, 0,    NULL, 0, 128, NULL}, /* scale: group (W4A16) */
    QF_SCHEMA_END};
/* a, b and out may be integer formats (int8 GEMM, int32 out). */
static const op_schema schema = {
    "gemm", 4, {"M", "N", "K", "batch"}, {{1, 0, -1}, {1, 0, -1}, {1, 0, -1}, {0, 1, -1}}, "M, N, K",
    4, {"a", "b", "acc", "out"}, {ROLE_IN, ROLE_IN, ROLE_ACC, ROLE_OUT}, 11u, qf_scale_recipe_names, params, NULL, QF_LAYOUT_ALL};
/* clang-format on */

/* A grouped GEMM's M is the sum of its groups' rows. */
static void dims_of(const qf_op_desc *d, int64_t *dims)
{
    const qf_op_gemm *g = &d->u.gemm;
    size_t m = g->m;
    if (g->groups && g->group_m) {
        m = 0;
        for (size_t i = 0; i < g->groups; i++)
            m += g->group_m[i];
    }
    dims[0] = _qf_abi_dim(m);
    dims[1] = _qf_abi_dim(g->n);
    dims[2] = _qf_abi_dim(g->k);
    dims[3] = _qf_abi_dim(g->batch ? g->batch : 1);
    dims[4] = _qf_abi_dim(g->groups);
}

/* a [batch][m][k], b [batch][k][n] (grouped: [groups][k][n]), c (only
 * when beta != 0) and d [batch][m][n]. */
static void elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    const qf_op_gemm *g = &d->u.gemm;
    int64_t dm[QF_OP_MAX_DIMS];
    uint64_t nb, m;
    dims_of(d, dm);
    m = (uint64_t)dm[0];
    nb = g->groups ? 1 : (uint64_t)dm[3];
    in[0] = _qf_mul_sat(_qf_mul_sat(nb, m), g->k);
    in[1] = _qf_mul_sat(_qf_mul_sat(g->groups ? g->groups : nb, g->k), g->n);
    out[0] = _qf_mul_sat(_qf_mul_sat(nb, m), g->n);
    in[2] = g->beta != 0 ? out[0] : 0;
}

static void fields_json(const qf_op_desc *d, json_t *o)
{
    const qf_op_gemm *g = &d->u.gemm;
    json_object_set_new(o, "trans_a", json_boolean(g->trans_a));
    json_object_set_new(o, "trans_b", json_boolean(g->trans_b));
    json_object_set_new(o, "alpha", json_real(g->alpha));
    json_object_set_new(o, "beta", json_real(g->beta));
    if (g->groups && g->group_m) {
        json_t *a = json_array();
        for (size_t i = 0; i < g->groups; i++)
            json_array_append_new(a, json_integer((json_int_t)g->group_m[i]));
        json_object_set_new(o, "group_m", a);
    }
}

static int from_json(qf_op_desc *d, const int64_t *dims, json_t *o, void **owned, char *err, size_t es)
{
    qf_op_gemm *g = &d->u.gemm;
    json_t *gm = json_object_get(o, "group_m");
    g->m = (size_t)dims[0];
    g->n = (size_t)dims[1];
    g->k = (size_t)dims[2];
    g->batch = (size_t)dims[3];
    g->groups = (size_t)dims[4];
    if (_qf_jbool(o, "trans_a", &g->trans_a, err, es) || _qf_jbool(o, "trans_b", &g->trans_b, err, es) ||
        _qf_jreal(o, "alpha", &g->alpha, err, es) || _qf_jreal(o, "beta", &g->beta, err, es))
        return -1;
    if (g->groups && gm) {
        size_t *rows, i;
        if (!json_is_array(gm) || json_array_size(gm) != g->groups) {
            snprintf(err, es, "op: \"group_m\" must list %zu row counts", g->groups);
            return -1;
        }
        if (!(rows = malloc(g->groups * sizeof *rows)))
            return snprintf(err, es, "out of memory"), -1;
        *owned = rows;
        for (i = 0; i < g->groups; i++) {
            json_t *v = json_array_get(gm, i);
            if (!json_is_integer(v) || json_integer_value(v) < 0) {
                snprintf(err, es, "op: group_m[%zu] is not a row count", i);
                return -1;
            }
            rows[i] = (size_t)json_integer_value(v);
        }
        g->group_m = rows;
    }
    return 0;
}

static const _qf_abi abi = {"d = alpha op(a) op(b) + beta c; batched, grouped (MoE)",
                            {"a", "b", "c", NULL},
                            {"d", NULL},
                            {"M", "N", "K", "batch", "groups", NULL},
                            dims_of,
                            fields_json,
                            from_json,
                            elems};

const _qf_opclass _qf_op_gemm = {
    .abi_info = &abi,
    .schema = &schema,
    .name = "gemm",
    .abi = QF_OP_GEMM,
    .flags = _QF_OPC_DOT,
    .bound = "gemm",
    .build = build,
    .tuple_matches = tuple_matches,
    .inputs = inputs,
    .layout_in = 0x7u, /* a, b, c (and the output d) */
    .reference = reference_gemm,
    .mark_overflow = mark_overflow,
    .acc_max = acc_max,
    .refute_inputs = _qf_gemm_refute_inputs,
    .n_refute = QF_REFUTE_COUNT,
    .refute_applies = _qf_gemm_refute_applies,
    .explain = _qf_gemm_refute_explain,
};
