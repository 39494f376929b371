/* model.c: the block-FMA model of matrix-unit arithmetic (qf_model.h).
 *
 * Exactness.  Inputs have at most 11 significant bits (fp16, tf32) and
 * their products at most 22, so every product is exact in binary64.  At
 * alignment a term t with |t| < 2^(E+1) becomes t * 2^(F - E), whose
 * magnitude is below 2^(F+1) <= 2^33 (F <= 32 is checked): binary64 holds it
 * exactly, trunc / floor / nearbyint give the kept integer exactly, and a
 * block of at most 2^16 such integers sums exactly in int64.  The one
 * rounding of the block result goes through qf_format_encode_parts from
 * that integer, never through a binary64 intermediate.  float32 additions
 * (tree, promotion, epilogue) are float operations: IEEE single
 * arithmetic, correctly rounded to nearest even (the build uses
 * -ffp-contract=off and SSE arithmetic, FLT_EVAL_METHOD 0).
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qf_model.h"

#define MODEL_MAX_BLOCK 1024

qf_status qf_model_check(const qf_model_params *p)
{
    const qf_format *fa, *fb;
    if (!p)
        return QF_EINVAL;
    fa = qf_format_get(p->in_a);
    fb = qf_format_get(p->in_b);
    if (!fa || !fb || fa->kind != QF_KIND_FLOAT || fb->kind != QF_KIND_FLOAT)
        return QF_EFORMAT;
    /* Products exact in binary64 (and below 2^53 after alignment). */
    if (fa->man_bits + fb->man_bits + 2 > 53)
        return QF_EINVAL;
    if (p->block < 1 || p->block > MODEL_MAX_BLOCK || (p->sum == QF_MODEL_SUM_ODD_EVEN && p->block % 2))
        return QF_EINVAL;
    if (p->align_frac_bits < 1 || p->align_frac_bits > 32 || p->acc_frac_bits < 1 || p->acc_frac_bits > 23 ||
        p->product_frac_bits < 0 || p->product_frac_bits > 52)
        return QF_EINVAL;
    if ((int)p->align < 0 || p->align > QF_MODEL_ALIGN_RNE || (int)p->sum < 0 ||
        p->sum > QF_MODEL_SUM_ODD_EVEN)
        return QF_EINVAL;
    if ((p->acc_round != QF_ROUND_RTZ && p->acc_round != QF_ROUND_RNE) ||
        (p->out_round != QF_ROUND_RTZ && p->out_round != QF_ROUND_RNE))
        return QF_EINVAL;
    if (p->promote_interval < 0 || (p->promote_interval > 0 && p->promote_interval % p->block))
        return QF_EINVAL;
    return QF_OK;
}

qf_arith_claim qf_model_claim(const qf_model_params *p)
{
    qf_arith_claim c = qf_arith_claim_default();
    if (!p)
        return c;
    c.acc_format = QF_FLOAT32;
    c.acc_round = p->acc_round;
    c.out_round = p->out_round;
    c.deterministic = 1;
    c.deterministic_threads = 1; /* every element is computed alone, in a fixed order */
    c.flush_subnormals = p->flush_in || p->flush_out;
    if (p->promote_interval > 0) {
        c.promote_interval = p->promote_interval;
        c.promote_format = QF_FLOAT32;
    }
    if (p->sum == QF_MODEL_SUM_TREE) {
        /* A tree of float32 additions inside a group of b, then one more
         * addition into the accumulator: a product meets at most
         * ceil(log2 b) + ceil(K / b) roundings, never more than K (b = 4:
         * 2 + ceil(K/4) <= K for K >= 3; K <= 2 has at most one).  The
         * claim a sequential float32 sum makes is therefore an upper
         * bound; qf_arith_claim has no field for the tree inside a block
         * (docs/models.md).  Flushing is claimed (flush_subnormals). */
        c.block_fma = 1;
        c.align_truncates = 0;
        c.acc_frac_bits = p->acc_frac_bits == 23 ? 0 : p->acc_frac_bits;
        return c;
    }
    c.block_fma = p->sum == QF_MODEL_SUM_ODD_EVEN ? p->block / 2 : p->block;
    c.align_truncates = 1;
    if (p->align_frac_bits >= p->acc_frac_bits) {
        /* Accumulator of acc_frac_bits, alignment keeps guard bits more. */
        c.acc_frac_bits = p->acc_frac_bits == 23 ? 0 : p->acc_frac_bits;
        c.guard_bits = p->align_frac_bits - p->acc_frac_bits;
    } else {
        /* Alignment keeps fewer bits than the accumulator stores (H100
         * fp8: 13 kept, float32 registers).  The claim has one width for
         * both, so it states the narrower one: an upper bound of the
         * normalization rounding (2^-13 instead of 2^-23). */
        c.acc_frac_bits = p->align_frac_bits;
        c.guard_bits = 0;
    }
    return c;
}

/* ---- Pieces ---------------------------------------------------------------- */

static const qf_format *f32(void)
{
    return qf_format_get(QF_FLOAT32);
}

/* Round the exact value S * 2^e2 once to prec significant bits and
 * float32's exponent range, in mode r (RTZ or RNE), then to float32 (exact
 * when prec <= 24 and the value is normal). */
static double round_acc(int64_t s, int e2, int frac, qf_round r, int flush)
{
    uint64_t mag, sig;
    int lz, sign, exp, prec = frac + 1;
    double v;
    if (s == 0)
        return 0.0;
    sign = s < 0;
    mag = sign ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    lz = __builtin_clzll(mag);
    sig = mag << lz;
    exp = e2 - lz + 63;
    if (prec < 24) {
        /* Narrow accumulator: keep prec bits of sig (in the normal range;
         * below it float32's own subnormal rounding follows, a second
         * rounding documented in docs/models.md). */
        uint64_t keep = sig >> (64 - prec), rest = sig << prec;
        if (r == QF_ROUND_RNE && (rest > (1ull << 63) || (rest == (1ull << 63) && (keep & 1))))
            keep++;
        if (keep >> prec) {
            keep >>= 1;
            exp++;
        }
        sig = keep << (64 - prec);
    }
    v = qf_format_decode(f32(), qf_format_encode_parts(f32(), sign, exp, sig, 0, r, 0, 0, 0));
    if (flush && fabs(v) < FLT_MIN)
        v = copysign(0.0, v);
    return v;
}

/* float32 addition (nearest even), with flushing. */
static double add32(double x, double y, int flush)
{
    float r = (float)x + (float)y;
    if (flush && fabsf(r) < FLT_MIN)
        r = copysignf(0.0f, r);
    return (double)r;
}

/* One aligned block step: acc and t[0..n) (finite) -> the new accumulator. */
static double block_step(const qf_model_params *p, double acc, const double *t, size_t n, ptrdiff_t inc)
{
    int emax = INT_MIN, e, shift;
    size_t i;
    int64_t s = 0;
    if (acc != 0) {
        frexp(acc, &e);
        emax = e - 1;
    }
    for (i = 0; i < n; i++) {
        double x = t[(ptrdiff_t)i * inc];
        if (x != 0) {
            frexp(x, &e);
            if (e - 1 > emax)
                emax = e - 1;
        }
    }
    if (emax == INT_MIN)
        return 0.0; /* every term zero: +0 */
    shift = p->align_frac_bits - emax;
    for (i = 0; i <= n; i++) {
        double x = i < n ? t[(ptrdiff_t)i * inc] : acc, y;
        if (x == 0)
            continue;
        y = ldexp(x, shift);
        switch (p->align) {
        case QF_MODEL_ALIGN_RTZ: y = trunc(y); break;
        case QF_MODEL_ALIGN_FLOOR:
            /* ldexp may underflow to -0 for a term 2^1000 below the
             * largest: floor of a tiny negative is still -1. */
            y = (y == 0 && x < 0) ? -1.0 : floor(y);
            break;
        default: y = nearbyint(y); break;
        }
        s += (int64_t)y;
    }
    return round_acc(s, -shift, p->acc_frac_bits, p->acc_round, p->flush_out);
}

/* A group of n products summed by a balanced float32 tree (n <= block). */
static double tree_sum(const double *t, size_t n, int flush)
{
    double w[MODEL_MAX_BLOCK];
    size_t i, m = n;
    for (i = 0; i < n; i++)
        w[i] = add32(t[i], 0.0, flush);
    while (m > 1) {
        for (i = 0; i < m / 2; i++)
            w[i] = add32(w[2 * i], w[2 * i + 1], flush);
        if (m % 2)
            w[m / 2] = w[m - 1];
        m = (m + 1) / 2;
    }
    return m ? w[0] : 0.0;
}

/* Truncate a product to pf fraction bits (MI300: 24). */
static double trunc_bits(double x, int pf)
{
    int e;
    if (x == 0 || !isfinite(x))
        return x;
    frexp(x, &e);
    return ldexp(trunc(ldexp(x, pf + 1 - e)), e - pf - 1);
}

static double flush_in(const qf_format *f, double x)
{
    return fabs(x) < f->min_normal ? copysign(0.0, x) : x;
}

/* ---- The dot product ------------------------------------------------------- */

qf_status qf_model_dot(const qf_model_params *p, size_t n, const double *a, ptrdiff_t inca, const double *b,
                       ptrdiff_t incb, double *result)
{
    double prod[MODEL_MAX_BLOCK];
    double acc = 0.0, outer = 0.0, special = 0.0;
    int have_special = 0;
    size_t l = 0, seg = p && p->promote_interval > 0 ? (size_t)p->promote_interval : n;
    const qf_format *fa, *fb;
    qf_status st = qf_model_check(p);
    if (st != QF_OK)
        return st;
    if (!result || (n && (!a || !b)))
        return QF_EINVAL;
    fa = qf_format_get(p->in_a);
    fb = qf_format_get(p->in_b);
    if (seg == 0)
        seg = 1;
    while (l < n) {
        /* One promotion segment [l, end): blocks start at its first element. */
        size_t end = n - l < seg ? n : l + seg;
        acc = 0.0;
        while (l < end) {
            size_t m = end - l < (size_t)p->block ? end - l : (size_t)p->block, i;
            for (i = 0; i < m; i++) {
                double x = a[(ptrdiff_t)(l + i) * inca], y = b[(ptrdiff_t)(l + i) * incb], t;
                if (p->flush_in) {
                    x = flush_in(fa, x);
                    y = flush_in(fb, y);
                }
                t = x * y; /* exact: at most 53 significant bits (qf_model_check) */
                if (p->product_frac_bits > 0)
                    t = trunc_bits(t, p->product_frac_bits);
                if (!isfinite(t)) {
                    /* NaN / Inf: IEEE addition of the specials decides. */
                    special = have_special ? special + t : t;
                    have_special = 1;
                    t = 0.0;
                }
                prod[i] = t;
            }
            switch (p->sum) {
            case QF_MODEL_SUM_TREE: acc = add32(acc, tree_sum(prod, m, p->flush_out), p->flush_out); break;
            case QF_MODEL_SUM_ODD_EVEN:
                acc = block_step(p, acc, prod, (m + 1) / 2, 2);
                if (m > 1)
                    acc = block_step(p, acc, prod + 1, m / 2, 2);
                break;
            default: acc = block_step(p, acc, prod, m, 1); break;
            }
            l += m;
        }
        if (p->promote_interval > 0)
            outer = add32(outer, acc, 0);
    }
    if (have_special)
        *result = special;
    else
        *result = p->promote_interval > 0 ? outer : acc;
    return QF_OK;
}

qf_status qf_model_gemm(const qf_model_params *p, const qf_model_gemm_desc *d)
{
    double *col;
    size_t i, j, l;
    qf_status st = qf_model_check(p);
    const qf_format *out;
    if (st != QF_OK)
        return st;
    if (!d || (d->k && (!d->a || !d->b)) || d->lda < d->k || d->ldb < d->n || d->ldd < d->n ||
        (d->beta != 0 && (!d->c || d->ldc < d->n)))
        return QF_EINVAL;
    if ((double)(float)d->alpha != d->alpha || (double)(float)d->beta != d->beta)
        return QF_EUNSUPPORTED;
    out = d->out ? d->out : f32();
    col = malloc((d->k ? d->k : 1) * sizeof *col);
    if (!col)
        return QF_ENOMEM;
    for (j = 0; j < d->n; j++) {
        for (l = 0; l < d->k; l++)
            col[l] = d->b[l * d->ldb + j];
        for (i = 0; i < d->m; i++) {
            double v;
            float r;
            uint64_t code;
            qf_model_dot(p, d->k, d->a + i * d->lda, 1, col, 1, &v);
            r = (float)v;
            if (d->alpha != 1)
                r = (float)d->alpha * r;
            if (d->beta != 0) {
                float bc = (float)d->beta * (float)d->c[i * d->ldc + j];
                r = r + bc;
            }
            code = qf_format_encode(out, (double)r, p->out_round, 0, 0, 0);
            if (d->d_code)
                d->d_code[i * d->ldd + j] = code;
            if (d->d_value)
                d->d_value[i * d->ldd + j] = qf_format_decode(out, code);
        }
    }
    free(col);
    return QF_OK;
}
