/* bounds.c: conformance bounds derived from a kernel's arithmetic claim.
 *
 * Every bound here is a product of per-rounding factors (1 + eta_i) over
 * the longest chain of roundings, minus one: the form in which Higham's
 * gamma_n and the block-FMA bound of Blanchard, Higham, Lopez, Mary and
 * Pranesh (2020) are proved (docs/numerics.md#error-bounds), and which
 * is never larger than gamma_n since (1 + u)^n - 1 <= n u / (1 - n u).
 * The derivations are written out in docs/bounds.md.
 *
 * Evaluation: the closed forms are evaluated in binary64 (log1p, expm1,
 * a handful of products and sums).  Their relative evaluation error is a
 * few times 2^-53 per operation, far below the enlargement QF_BOUND_SAFETY
 * = 1 + 2^-20 applied to every result, so the returned numbers are upper
 * bounds of the mathematical bounds.
 */
#include <math.h>
#include <stddef.h>

#include <string.h>

#include "qf_bound.h"
#include "qf_ref.h"

qf_arith_claim qf_arith_claim_default(void)
{
    qf_arith_claim c;
    /* Every field, padding and any later one included, starts at zero. */
    memset(&c, 0, sizeof c);
    c.acc_format = QF_FLOAT32;
    c.acc_frac_bits = 0;
    c.block_fma = 1;
    c.acc_round = QF_ROUND_RNE;
    c.align_truncates = 0;
    c.guard_bits = 0;
    c.promote_interval = 0;
    c.promote_format = QF_FLOAT32;
    c.sum_order = QF_SUM_SEQUENTIAL;
    c.split_k = 1;
    c.out_round = QF_ROUND_RNE;
    c.max_ulp = 0;
    c.elem_ulp = 0;
    c.deterministic = 1;
    c.deterministic_threads = 0;
    c.attn_kv_tile = 0;
    c.attn_p_format = QF_FLOAT64;
    c.var_algo = QF_VAR_TWO_PASS;
    c.flush_subnormals = 0;
    /* ABI 3: fused, no blocked or varying order, exact products, float
     * accumulator, the op's activation formula, elem_ulp for the math
     * library, determinism from the two ints above. */
    c.fma = QF_FMA_FUSED;
    c.sum_block = 1;
    c.sum_inner = QF_SUM_SEQUENTIAL;
    c.n_varies = 0;
    c.product_frac_bits = 0;
    c.align_round = QF_ALIGN_TRUNCATE;
    c.acc_kind = QF_ACC_FLOAT;
    c.acc_overflow = QF_OVERFLOW_WRAP;
    c.act_formula = QF_ACT_FORMULA_OP;
    c.math_abs_err = 0;
    c.math_rel_err = 0;
    c.determinism = QF_DET_FROM_FLAGS;
    return c;
}

static int float_format_ok(qf_format_id id)
{
    const qf_format *f;
    if ((int)id < 0 || id >= QF_FORMAT_COUNT)
        return 0;
    f = qf_format_get(id);
    return f && f->kind == QF_KIND_FLOAT;
}

/* One order with its parameters: split(S >= 1), blocked(B >= 1, inner
 * sequential or pairwise), or a plain order; never varies (no nesting). */
static int spec_ok(qf_sum_order o, int param, qf_sum_order inner)
{
    switch (o) {
    case QF_SUM_SEQUENTIAL:
    case QF_SUM_PAIRWISE:
    case QF_SUM_ANY: return 1;
    case QF_SUM_SPLITK: return param >= 1;
    case QF_SUM_BLOCKED: return param >= 1 && (inner == QF_SUM_SEQUENTIAL || inner == QF_SUM_PAIRWISE);
    default: return 0;
    }
}

qf_determinism qf_arith_claim_determinism(const qf_arith_claim *c)
{
    if (!c)
        return QF_DET_NONE;
    if (c->determinism != QF_DET_FROM_FLAGS)
        return c->determinism;
    if (!c->deterministic)
        return QF_DET_NONE;
    return c->deterministic_threads ? QF_DET_THREAD_INVARIANT : QF_DET_RUN_TO_RUN;
}

void qf_arith_claim_set_determinism(qf_arith_claim *c, qf_determinism d)
{
    if (!c)
        return;
    c->determinism = d;
    if (d == QF_DET_FROM_FLAGS)
        return;
    c->deterministic = d != QF_DET_NONE;
    c->deterministic_threads = d == QF_DET_THREAD_INVARIANT;
}

qf_status qf_arith_claim_check(const qf_arith_claim *c)
{
    if (!c)
        return QF_EINVAL;
    if (!float_format_ok(c->acc_format))
        return QF_EFORMAT;
    if (c->promote_interval > 0 && !float_format_ok(c->promote_format))
        return QF_EFORMAT;
    if (c->acc_frac_bits < 0 || c->acc_frac_bits > 52 || c->block_fma < 1 || c->guard_bits < 0 ||
        c->promote_interval < 0 || c->max_ulp < 0 || !(c->max_ulp < INFINITY) || c->elem_ulp < 0 ||
        !(c->elem_ulp < INFINITY))
        return QF_EINVAL;
    if ((int)c->acc_round < 0 || c->acc_round > QF_ROUND_STOCHASTIC || (int)c->out_round < 0 ||
        c->out_round > QF_ROUND_STOCHASTIC)
        return QF_EINVAL;
    if ((int)c->sum_order < 0 || c->sum_order > QF_SUM_ANY)
        return QF_EINVAL;
    if (c->sum_order == QF_SUM_SPLITK && c->split_k < 1)
        return QF_EINVAL;
    if (c->sum_order == QF_SUM_BLOCKED && !spec_ok(QF_SUM_BLOCKED, c->sum_block, c->sum_inner))
        return QF_EINVAL;
    if (c->sum_order == QF_SUM_VARIES) {
        int i;
        if (c->n_varies < 1 || c->n_varies > QF_SUM_VARIES_MAX)
            return QF_EINVAL;
        for (i = 0; i < c->n_varies; i++)
            if (!spec_ok(c->sum_varies[i].order, c->sum_varies[i].param, c->sum_varies[i].inner))
                return QF_EINVAL;
    }
    if ((unsigned)c->fma > QF_FMA_UNFUSED || (unsigned)c->align_round > QF_ALIGN_NEAREST ||
        (unsigned)c->acc_kind > QF_ACC_INT64 || (unsigned)c->acc_overflow > QF_OVERFLOW_SATURATE ||
        (unsigned)c->act_formula >= QF_ACT_FORMULA_COUNT || (unsigned)c->determinism > QF_DET_THREAD_INVARIANT ||
        c->product_frac_bits < 0 || c->product_frac_bits > 52 || !(c->math_abs_err >= 0) ||
        !(c->math_abs_err < INFINITY) || !(c->math_rel_err >= 0) || !(c->math_rel_err < 1))
        return QF_EINVAL;
    if (c->determinism != QF_DET_FROM_FLAGS) {
        qf_arith_claim d = *c;
        qf_arith_claim_set_determinism(&d, c->determinism);
        if (d.deterministic != c->deterministic || d.deterministic_threads != c->deterministic_threads)
            return QF_EINVAL;
    }
    if (!float_format_ok(c->attn_p_format))
        return QF_EFORMAT;
    if (c->attn_kv_tile < 0 || ((int)c->var_algo != QF_VAR_TWO_PASS && (int)c->var_algo != QF_VAR_WELFORD) ||
        (c->flush_subnormals != 0 && c->flush_subnormals != 1))
        return QF_EINVAL;
    return QF_OK;
}

const qf_format *qf_arith_claim_p_format(const qf_arith_claim *c)
{
    const qf_format *a, *p;
    if (!c || !float_format_ok(c->attn_p_format) || !float_format_ok(c->acc_format))
        return NULL;
    a = qf_format_get(c->acc_format);
    p = qf_format_get(c->attn_p_format);
    if (p->man_bits >= (c->acc_frac_bits > 0 ? c->acc_frac_bits : a->man_bits) && p->emin <= a->emin &&
        p->emax >= a->emax)
        return NULL;
    return p;
}

static int acc_frac(const qf_arith_claim *c)
{
    return c->acc_frac_bits > 0 ? c->acc_frac_bits : qf_format_get(c->acc_format)->man_bits;
}

double qf_bound_acc_u(const qf_arith_claim *c)
{
    return ldexp(1.0, -(acc_frac(c) + 1));
}

/* Relative error of one rounding: u for nearest, 2u (a full ulp, strict)
 * for directed and stochastic modes. */
static double mode_u(double u, qf_round r)
{
    return (r == QF_ROUND_RNE || r == QF_ROUND_RNA) ? u : 2 * u;
}

/* Subnormal step of a float format with f fraction bits and emin. */
static double sub_step(int emin, int frac)
{
    return ldexp(1.0, emin - frac);
}

/* Output rounding from an accumulator of acc_frac fraction bits into out:
 * none when every accumulator value is representable in out (out at least
 * as precise and as wide; float32 acc -> float32 out). */
static void out_rounding(const qf_arith_claim *c, int frac, int emin, int emax, const qf_format *out,
                         double *u_o, double *abs_o)
{
    if (!out ||
        (out->kind == QF_KIND_FLOAT && out->man_bits >= frac && out->emin <= emin && out->emax >= emax)) {
        *u_o = 0;
        *abs_o = 0;
        return;
    }
    if (out->kind != QF_KIND_FLOAT) {
        /* Integer outputs: an absolute half (or whole) unit. */
        *u_o = 0;
        *abs_o = mode_u(0.5, c->out_round);
        return;
    }
    *u_o = mode_u(ldexp(1.0, -(out->man_bits + 1)), c->out_round);
    /* Below the normal range the spacing is the subnormal step (or the
     * smallest normal when the format flushes): an absolute term. */
    *abs_o =
        out->has_subnormal ? mode_u(0.5, c->out_round) * sub_step(out->emin, out->man_bits) : out->min_normal;
}

/* ceil(a / b) for b >= 1 */
static double cdiv(double a, double b)
{
    return ceil(a / b);
}

/* The longest chain of roundings of a sum of k terms in order o, with
 * block-FMA steps of b terms whose rounding errs by eta and additions of
 * partial sums by ue: *lg = log prod (1 + eta_i) over it, *chain its
 * length (docs/bounds.md "Orders").  k >= 1. */
static void order_chain(const qf_sum_spec *o, double k, double b, double eta, double ue, double *lg,
                        double *chain)
{
    double nb = cdiv(k, b);
    switch (o->order) {
    case QF_SUM_PAIRWISE: {
        /* One block step, then a balanced tree over the nb block sums. */
        double depth = nb > 1 ? ceil(log2(nb)) : 0;
        *lg = log1p(eta) + depth * log1p(ue);
        *chain = 1 + depth;
        break;
    }
    case QF_SUM_SPLITK: {
        double s = (double)o->param, per = cdiv(cdiv(k, s), b);
        *lg = per * log1p(eta) + (s - 1) * log1p(ue);
        *chain = per + s - 1;
        break;
    }
    case QF_SUM_BLOCKED: {
        /* A partial of min(B, k) terms in the inner order, then the first
         * partial goes through the ceil(k / B) - 1 sequential additions of
         * the others (the outer sum starts from it, exactly). */
        double bl = (double)o->param, kb = k < bl ? k : bl, nin = cdiv(kb, b), outer = cdiv(k, bl) - 1;
        if (o->inner == QF_SUM_PAIRWISE) {
            double depth = nin > 1 ? ceil(log2(nin)) : 0;
            *lg = log1p(eta) + depth * log1p(ue);
            *chain = 1 + depth;
        } else {
            *lg = nin * log1p(eta);
            *chain = nin;
        }
        *lg += outer * log1p(ue);
        *chain += outer;
        break;
    }
    default:
        /* Sequential, and any order: in every summation tree over the nb
         * block steps a term passes at most nb roundings (Higham 2002,
         * sec. 4.2), each within eta (ue <= eta). */
        *lg = nb * log1p(eta);
        *chain = nb;
        break;
    }
}

/* Integer accumulator: the products of integer inputs and their sums are
 * exact (no rounding on any chain) as long as the sum stays in range;
 * overflow is not a rounding error and is judged against the expected
 * result (qf_bound_int_acc_expected).  What remains is the epilogue in
 * float32 and the output conversion. */
static qf_status int_acc_coef(const qf_arith_claim *claim, int epilogue, const qf_format *out,
                              qf_bound_coef *coef)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    int bits = claim->acc_kind == QF_ACC_INT64 ? 63 : 31;
    double u_o = 0, abs_o = 0, ue = ldexp(1.0, -(f32->man_bits + 1)), rel;
    if (epilogue > 0) {
        /* Scales applied in float32 to the integer sum. */
        rel = expm1(epilogue * log1p(ue));
        out_rounding(claim, f32->man_bits, f32->emin, f32->emax, out, &u_o, &abs_o);
    } else {
        rel = 0;
        /* An integer output at least as wide holds every accumulator
         * value; otherwise the conversion rounds (int outputs: half a
         * unit; float outputs: relative, as from an accumulator of `bits`
         * significant bits and a range that fits any float of 8 exponent
         * bits). */
        if (out && !(out->kind == QF_KIND_INT && out->storage_bits > bits))
            out_rounding(claim, bits - 1, -1, bits, out, &u_o, &abs_o);
    }
    coef->rel_abs = rel * (1 + u_o) * QF_BOUND_SAFETY;
    coef->rel_out = u_o * QF_BOUND_SAFETY;
    coef->abs_min = (abs_o + (epilogue > 0 ? 2 * epilogue * sub_step(f32->emin, f32->man_bits) : 0)) *
                    QF_BOUND_SAFETY;
    coef->chain = epilogue;
    coef->eta = epilogue > 0 ? ue : 0;
    coef->prob = NAN;
    return QF_OK;
}

int qf_bound_int_acc_expected(const qf_arith_claim *c, double exact, double abs_sum, double *expected)
{
    double lim, m;
    if (!c || !expected || c->acc_kind == QF_ACC_FLOAT || !isfinite(exact) || !(fabs(abs_sum) < 0x1p53))
        return 0;
    lim = c->acc_kind == QF_ACC_INT64 ? 0x1p63 : 0x1p31; /* range [-lim, lim - 1] */
    if (exact >= -lim && exact <= lim - 1) {
        if (c->acc_overflow == QF_OVERFLOW_WRAP || fabs(abs_sum) <= lim - 1 || fabs(exact) == fabs(abs_sum)) {
            *expected = exact;
            return 1;
        }
        return 0;
    }
    if (c->acc_overflow == QF_OVERFLOW_SATURATE) {
        if (fabs(exact) != fabs(abs_sum))
            return 0;
        *expected = exact > 0 ? lim - 1 : -lim;
        return 1;
    }
    /* Wrap: exact is an integer below 2^53 here, so fmod is exact. */
    m = fmod(exact, 2 * lim);
    if (m >= lim)
        m -= 2 * lim;
    else if (m < -lim)
        m += 2 * lim;
    *expected = m;
    return 1;
}

qf_status qf_bound_gemm_coef(const qf_arith_claim *claim, size_t k, int epilogue, const qf_format *out,
                             double lambda, qf_bound_coef *coef)
{
    const qf_format *af, *pf;
    int frac, emin;
    double u, ue, b, eta, steps_in, steps_out = 0, chain, lg, u_o, abs_o, up = 0, rel, up_prod, psub = 0;
    qf_status st = qf_arith_claim_check(claim);
    if (st != QF_OK)
        return st;
    if (!coef || epilogue < 0)
        return QF_EINVAL;
    if (claim->acc_kind != QF_ACC_FLOAT)
        return int_acc_coef(claim, epilogue, out, coef);
    af = qf_format_get(claim->acc_format);
    frac = acc_frac(claim);
    emin = af->emin;
    u = ldexp(1.0, -(frac + 1));
    ue = mode_u(u, claim->acc_round);
    b = (double)claim->block_fma;

    /* One block step: the block's products (exact: inputs of at most 26
     * significant bits each, docs/numerics.md#exact-references) plus the running sum are added and
     * rounded once (eta = ue).  With truncating alignment each of the b + 1
     * terms also loses less than 2^-(frac + guard) times the largest term
     * (docs/bounds.md "Block FMA"). */
    eta = ue;
    if (claim->block_fma > 1 && claim->align_truncates)
        eta = ue + (b + 1) * (claim->align_round == QF_ALIGN_NEAREST ? 0.5 : 1.0) *
                       ldexp(1.0, -(frac + claim->guard_bits)) * (1 + ue);
    /* Rounded products: unfused (to the accumulator, in its rounding
     * mode), or product_frac_bits (to nearest); both when both are said. */
    up_prod = 0;
    if (claim->fma == QF_FMA_UNFUSED)
        up_prod = ue;
    if (claim->product_frac_bits > 0) {
        double upf = ldexp(1.0, -(claim->product_frac_bits + 1));
        up_prod = up_prod > 0 ? (1 + up_prod) * (1 + upf) - 1 : upf;
        psub = sub_step(emin, claim->product_frac_bits);
    }
    if (claim->fma == QF_FMA_UNFUSED)
        psub += sub_step(emin, frac);

    /* Longest chain of roundings. */
    lg = 0; /* log of the product of (1 + eta_i) */
    if (claim->promote_interval > 0) {
        pf = qf_format_get(claim->promote_format);
        up = ldexp(1.0, -(pf->man_bits + 1)); /* promotion adds in nearest (CUDA cores) */
        steps_in = cdiv(k < (size_t)claim->promote_interval ? (double)k : (double)claim->promote_interval, b);
        steps_out = cdiv((double)k, (double)claim->promote_interval);
        lg = steps_in * log1p(eta) + steps_out * log1p(up);
        chain = steps_in + steps_out;
        /* The epilogue runs in the promoted format. */
        lg += epilogue * log1p(up);
    } else {
        double kk = (double)(k ? k : 1);
        if (claim->sum_order == QF_SUM_VARIES) {
            /* Each element (or tile) uses one order of the set: the largest
             * chain factor bounds them all. */
            int i;
            lg = -1;
            chain = 0;
            for (i = 0; i < claim->n_varies; i++) {
                double l, ch;
                order_chain(&claim->sum_varies[i], kk, b, eta, ue, &l, &ch);
                lg = l > lg ? l : lg;
                chain = ch > chain ? ch : chain;
            }
        } else {
            qf_sum_spec o;
            o.order = claim->sum_order;
            o.param = claim->sum_order == QF_SUM_SPLITK ? claim->split_k : claim->sum_block;
            o.inner = claim->sum_inner;
            order_chain(&o, kk, b, eta, ue, &lg, &chain);
        }
        lg += epilogue * log1p(ue);
    }
    chain += epilogue;
    /* Products rounded before they are summed (unfused multiply-add, or a
     * matrix unit's product_frac_bits): every term carries one more factor
     * (1 + u_p), off the chain of additions (docs/bounds.md "Rounded
     * products"). */
    if (up_prod > 0)
        lg += log1p(up_prod);
    rel = expm1(lg);
    out_rounding(claim, frac, emin, af->emax, out, &u_o, &abs_o);
    coef->rel_abs = rel * (1 + u_o) * QF_BOUND_SAFETY;
    coef->rel_out = u_o * QF_BOUND_SAFETY;
    /* Underflow in the accumulator: at most one subnormal step per rounding
     * on the chain, counted twice for the growth of later steps. */
    coef->abs_min = (abs_o + 2 * chain * sub_step(emin, frac) + (double)k * psub) * QF_BOUND_SAFETY;
    coef->chain = chain;
    coef->eta = eta;
    if (lambda > 0 && (claim->acc_round == QF_ROUND_RNE || claim->acc_round == QF_ROUND_RNA) &&
        !(claim->block_fma > 1 && claim->align_truncates)) {
        /* Higham-Mary 2019: exp(lambda sqrt(n) u + n u^2 / (1 - u)) - 1. */
        double pr = expm1(lambda * sqrt(chain) * u + chain * u * u / (1 - u));
        coef->prob = (pr * (1 + u_o) * QF_BOUND_SAFETY);
    } else {
        coef->prob = NAN;
    }
    return QF_OK;
}

void qf_bound_apply(const qf_bound_coef *coef, size_t n, const double *abs, const double *exact,
                    double *bound)
{
    size_t i;
    for (i = 0; i < n; i++) {
        double a = fabs(abs[i]), c = fabs(exact[i]);
        if (!isfinite(a) || !isfinite(c)) {
            bound[i] = INFINITY;
            continue;
        }
        bound[i] = (coef->rel_abs * a + coef->rel_out * c + coef->abs_min) * QF_BOUND_SAFETY;
    }
}

void qf_bound_ulp(const qf_format *out, double max_ulp, size_t n, const double *exact, double *bound)
{
    size_t i;
    for (i = 0; i < n; i++) {
        double w = qf_format_ulp(out, exact[i]);
        bound[i] = isnan(w) ? INFINITY : max_ulp * w;
    }
}

/* ---- Nonlinear ops ------------------------------------------------------- */

typedef struct nl_ctx {
    double u, ue;      /* compute unit roundoff; for the sums (acc_round) */
    double rho;        /* relative error of exp / rsqrt / reciprocal */
    double sub;        /* compute format's subnormal step */
    double u_o, abs_o; /* output rounding */
    double abs_m;      /* absolute error of exp / erfc (math_abs_err; activations) */
} nl_ctx;

static void nl_setup(const qf_arith_claim *c, const qf_format *out, nl_ctx *x)
{
    const qf_format *af = qf_format_get(c->acc_format);
    int frac = acc_frac(c);
    double eu = c->elem_ulp > 0 ? c->elem_ulp : 2.0;
    x->u = ldexp(1.0, -(frac + 1));
    x->ue = mode_u(x->u, c->acc_round);
    /* k ulps at y are at most k * 2u |y| for normal y (ulp(y) <= 2u|y|). */
    x->rho = eu * 2 * x->u;
    x->sub = sub_step(af->emin, frac);
    x->abs_m = 0;
    out_rounding(c, frac, af->emin, af->emax, out, &x->u_o, &x->abs_o);
}

/* Final bound of an element: compute error e, then output rounding. */
static double nl_finish(const nl_ctx *x, double e, double y)
{
    double r = e + x->u_o * (fabs(y) + e) + x->abs_o;
    return isnan(r) ? INFINITY : r * QF_BOUND_SAFETY;
}

static int bad_args(const qf_arith_claim *claim, size_t n, const void *a, const void *b, const void *c)
{
    return !claim || n == 0 || !a || !b || !c || qf_arith_claim_check(claim) != QF_OK;
}

/* Absolute error of an exp that underflows in the compute format. */
static double abs_t_of(const qf_arith_claim *claim, const nl_ctx *c)
{
    return (claim->elem_ulp > 0 ? claim->elem_ulp : 2.0) * c->sub + c->sub;
}

/* The start of a softmax or log-softmax row: the arguments, the compute
 * format's constants (c), the row's largest scaled
 * entry *m and its index *at.  A row whose maximum is not finite (all
 * masked, an infinite or NaN input) has no rounding error to bound: the
 * reference's special values decide (qf_ref.h).  Returns -1 for bad
 * arguments, 1 when bound[] is written, 0 to derive it. */
static int row_start(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                     double scale, const double *exact, double *bound, nl_ctx *c, double *m, size_t *at)
{
    size_t i;
    if (bad_args(claim, n, x, exact, bound))
        return -1;
    nl_setup(claim, out, c);
    *m = -INFINITY;
    *at = 0;
    for (i = 0; i < n; i++) /* NaN entries are passed over */
        if (scale * x[i] > *m) {
            *m = scale * x[i];
            *at = i;
        }
    if (isfinite(*m))
        return 0;
    for (i = 0; i < n; i++)
        bound[i] = isfinite(exact[i]) ? 0 : INFINITY;
    return 1;
}

/* Steps 2 to 4 and 6 of docs/bounds.md "Softmax", shared by softmax and
 * log-softmax: the relative error eps_j of each computed term exp(fl(a_j
 * - m^)) into eps[] (0 for masked entries), and the returned bound eps_S
 * on the relative error of their sum S^ against S* = sum_j exp(a_j - m^),
 * in any order, with an online normalizer's rescales ("Online softmax")
 * and the underflow of terms.  w(j): the exact probability y_j, read from
 * exact[] as it is (softmax) or as exp(exact[j]) (log-softmax). */
static double softmax_terms(const qf_arith_claim *claim, const nl_ctx *c, size_t n, const double *x,
                            double scale, double m, const double *exact, int log_p, double *eps)
{
    size_t i;
    double g, eps_s = 0, f_on = 1, abs_on = 0, abs_t = abs_t_of(claim, c);
    /* Sum of n positive terms in any order: at most n - 1 roundings each. */
    g = expm1((double)(n - 1) * log1p(c->ue));
    if (claim->attn_kv_tile > 0) {
        /* Online normalizer (Milakov and Gimelshein 2018) over tiles of
         * attn_kv_tile elements: at most T = ceil(n / tile) - 1 rescales of
         * the running sum by a computed exp(m_old - m_new), each an exp
         * (rho), its argument's rounding and one product rounding; the
         * arguments add up to at most m - min_j scale x_j (docs/bounds.md
         * "Online softmax").  The numerators use the final max: only the
         * denominator's weights carry this factor. */
        double amin = m, tt;
        for (i = 0; i < n; i++)
            if (scale * x[i] < amin && scale * x[i] > -INFINITY)
                amin = scale * x[i];
        tt = ceil((double)n / (double)claim->attn_kv_tile) - 1;
        f_on = exp(tt * (log1p(c->rho) + log1p(c->u)) +
                   c->u * (1 + c->u) * ((m - amin) + 2 * c->u * (fabs(m) + fabs(amin))));
        /* A factor that underflows: l <= n (1 + g) before the product. */
        abs_on = tt * ((double)n * (1 + g) * abs_t + c->sub);
    }
    for (i = 0; i < n; i++) {
        double a = scale * x[i], eta, e;
        if (a == -INFINITY) {
            eps[i] = 0;
            continue;
        }
        /* Argument error: rounding of scale*x (and of a folded log2(e)),
         * the subtraction of the computed max, docs/bounds.md "Softmax". */
        eta = c->u * (fabs(a - m) + c->u * fabs(m)) * (1 + c->u) + 2 * c->u * fabs(a) * (1 + c->u);
        e = (1 + c->rho) * exp(eta) - 1;
        eps[i] = e;
        eps_s += (log_p ? exp(exact[i]) : fabs(exact[i])) * ((1 + e) * f_on * (1 + g) - 1);
    }
    return eps_s * QF_BOUND_SAFETY + (double)n * abs_t + abs_on;
}

qf_status qf_bound_softmax(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                           double scale, const double *exact, double *bound)
{
    nl_ctx c;
    size_t i, at;
    double m, eps_s, dd, abs_t;
    int st = row_start(claim, out, n, x, scale, exact, bound, &c, &m, &at);
    if (st)
        return st < 0 ? QF_EINVAL : QF_OK;
    /* Division, possibly as reciprocal then multiply. */
    dd = (1 + c.rho) * (1 + c.u) - 1;
    abs_t = abs_t_of(claim, &c);
    /* eps_j into bound[] (scratch), and eps_S. */
    eps_s = softmax_terms(claim, &c, n, x, scale, m, exact, 0, bound);
    for (i = 0; i < n; i++) {
        double y = fabs(exact[i]), k, e;
        if (scale * x[i] == -INFINITY) {
            bound[i] = 0; /* exp(-inf) = 0 exactly, in every format */
            continue;
        }
        if (!(eps_s < 1)) {
            bound[i] = INFINITY;
            continue;
        }
        k = (1 + bound[i]) * (1 + dd) / (1 - eps_s) - 1;
        /* + the quotient's own rounding when it is subnormal (the relative
         * dd does not cover it). */
        e = k * y + abs_t * (1 + dd) / (1 - eps_s) + c.sub;
        bound[i] = nl_finish(&c, e, y);
    }
    return QF_OK;
}

/* Is x a number of the compute format (frac fraction bits, exponents emin
 * .. emax, subnormals below)? */
static int fits(double x, int frac, int emin, int emax)
{
    int e;
    double q;
    if (x == 0 || !isfinite(x))
        return x == 0;
    e = ilogb(x);
    if (e > emax)
        return 0;
    q = ldexp(x, frac - (e < emin ? emin : e));
    return q == trunc(q);
}

/* Sterbenz's lemma (Higham 2002, ch. 2): a - b is exact when a and b are
 * numbers of one format with b/2 <= a <= 2b (same signs); also when
 * either is zero. */
static int sterbenz(double a, double b)
{
    if (a == 0 || b == 0)
        return 1;
    if ((a < 0) != (b < 0))
        return 0;
    a = fabs(a);
    b = fabs(b);
    return b / 2 <= a && a <= 2 * b;
}

qf_status qf_bound_log_softmax(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                               double scale, const double *exact, double *bound)
{
    const qf_format *af;
    nl_ctx c;
    size_t i, at;
    double m, eps_s, lam, l_hi, lse, e_l, u_s, rho_l;
    int exact_in = scale == 1, st = row_start(claim, out, n, x, scale, exact, bound, &c, &m, &at);
    if (st)
        return st < 0 ? QF_EINVAL : QF_OK;
    /* With scale 1 and every entry a number of the compute format, the
     * kernel's a_j and its maximum are exact (u_s = 0); otherwise each is
     * one rounding away (docs/bounds.md "Log-softmax", step 2). */
    af = qf_format_get(claim->acc_format);
    for (i = 0; i < n && exact_in; i++)
        exact_in = x[i] == -INFINITY || fits(x[i], acc_frac(claim), af->emin, af->emax);
    u_s = exact_in ? 0 : c.u;
    /* Step 3: the terms and their sum (softmax's), eps_j in bound[]. */
    eps_s = softmax_terms(claim, &c, n, x, scale, m, exact, 1, bound);
    if (!(eps_s < 1)) {
        for (i = 0; i < n; i++)
            bound[i] = scale * x[i] == -INFINITY ? 0 : INFINITY;
        return QF_OK;
    }
    /* Step 4, the log: |log S^ - log S*| <= lam; log within elem_ulp (rho),
     * possibly as log2 times a rounded ln 2 (two more roundings), plus an
     * absolute error at a subnormal result; |log S*| <= L_ref + u_s |m|,
     * L_ref = -y_jmax = log sum_k exp(a_k - m). */
    lam = -log1p(-eps_s);
    l_hi = fabs(exact[at]) + u_s * fabs(m);
    rho_l = (1 + c.rho) * (1 + c.u) * (1 + c.u) - 1;
    e_l = (lam + rho_l * (l_hi + lam)) * QF_BOUND_SAFETY + abs_t_of(claim, &c);
    /* |lse| = |m + L_ref|, of the exact scaled entries. */
    lse = fabs(m - exact[at]);
    for (i = 0; i < n; i++) {
        double a = scale * x[i], y = fabs(exact[i]), ds, ed, ea, eb;
        if (a == -INFINITY) {
            bound[i] = 0; /* -inf exactly, in every format */
            continue;
        }
        /* Step 2: d^_j = fl(a^_j - m^) against a_j - m^ (exact by Sterbenz
         * when a_j and m are numbers of the format within a factor 2). */
        ds = u_s * fabs(a);
        ed = ds + (exact_in && sterbenz(a, m) ? 0 : c.u * (fabs(a - m) + ds + u_s * fabs(m)));
        /* Step 5, form A: y^ = fl(d^_j - L^); form B: y^ = fl(a^_j - fl(m^ + L^)). */
        ea = (ed + e_l) * (1 + c.u) + c.u * y;
        eb = (ds + e_l + c.u * (lse + e_l)) * (1 + c.u) + c.u * y;
        bound[i] = nl_finish(&c, ea > eb ? ea : eb, y);
    }
    return QF_OK;
}

/* Welford's update, k = 1 .. n (docs/bounds.md "LayerNorm with Welford's
 * algorithm"):  delta = x_k - M;  M += delta / k;  M2 += delta (x_k - M).
 * Propagates a_k >= |M^_k - M_k| and b_k >= |M2^_k - M2_k| along the exact
 * values (binary64; their own evaluation error, at most 2^-53 sum|x| in
 * the mean, is added to a_k).  Returns a_n and b_n, enlarged by the safety
 * factor. */
static void welford_errors(const nl_ctx *c, size_t n, const double *x, double *a_out, double *b_out)
{
    double sum = 0, sabs = 0, m_prev = 0, a = 0, b = 0, m2 = 0, dd = (1 + c->rho) * (1 + c->u) - 1;
    size_t k;
    for (k = 1; k <= n; k++) {
        double xk = x[k - 1], dk = (double)k, mk, delta, dl, r, an, e, ee, t;
        sum += xk;
        sabs += fabs(xk);
        mk = sum / dk;
        delta = xk - m_prev;
        /* delta^ = fl(x - M^): |delta^ - delta| <= dl. */
        dl = a + c->u * (fabs(delta) + a);
        /* M^_k = fl(M^ + fl(delta^ / k)): the old error shrinks by 1 - 1/k
         * (delta^ carries -alpha), plus the rounding terms r / k and the
         * addition's (accumulator) rounding. */
        r = (fabs(delta) + a) * ((1 + c->u) * (1 + dd) - 1) + c->sub; /* + underflow */
        an = (a * (1 - 1 / dk) + r / dk) * (1 + c->ue) + c->ue * fabs(mk) + 0x1p-52 * sabs;
        /* e^ = fl(x - M^_k), t^ = fl(delta^ e^), M2^ = fl(M2^ + t^). */
        e = xk - mk;
        ee = an + c->u * (fabs(e) + an);
        t = fabs(delta) * ee + fabs(e) * dl + dl * ee + c->u * (fabs(delta) + dl) * (fabs(e) + ee) + c->sub;
        m2 += fabs(delta * e); /* M2_k (delta e >= 0 exactly) */
        b = b + t + c->ue * (m2 + b + t);
        a = an;
        m_prev = mk;
    }
    *a_out = a * QF_BOUND_SAFETY;
    *b_out = b * QF_BOUND_SAFETY;
}

qf_status qf_bound_norm(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                        const double *w, const double *b, double eps, int center, const double *exact,
                        double *bound)
{
    return qf_bound_norm_offset(claim, out, n, x, w, 0, b, eps, center, exact, bound);
}

qf_status qf_bound_norm_offset(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                               const double *w, double weight_offset, const double *b, double eps, int center,
                               const double *exact, double *bound)
{
    nl_ctx c;
    size_t i;
    double mu = 0, mabs = 0, e_mu = 0, d2 = 0, e2 = 0, g, dn = (double)n, v, v_hi, v_lo, r, r_hi, r_lo, lo;
    /* a scale offset + w not exact in the compute format: one more rounding */
    int off = w && weight_offset != 0;
    if (bad_args(claim, n, x, exact, bound) || !(eps >= 0) || !isfinite(weight_offset))
        return QF_EINVAL;
    nl_setup(claim, out, &c);
    g = expm1(dn * log1p(c.ue)); /* n roundings on a chain: square + n-1 adds */
    for (i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            for (i = 0; i < n; i++)
                bound[i] = isfinite(exact[i]) ? 0 : INFINITY;
            return QF_OK;
        }
        mu += x[i];
        mabs += fabs(x[i]);
    }
    if (center) {
        mu /= dn;
        /* Computed mean: n - 1 additions and a division (docs/bounds.md). */
        e_mu = expm1(dn * log1p(c.ue)) * (mabs / dn) * QF_BOUND_SAFETY;
    } else {
        mu = 0;
    }
    /* d_j = x_j - mu and e_j = bound on |d^_j - d_j|; ||d||_2, ||e||_2. */
    for (i = 0; i < n; i++) {
        double d = x[i] - mu, e = center ? e_mu * (1 + c.u) + c.u * fabs(d) : 0;
        d2 += d * d;
        e2 += e * e;
    }
    v = d2 / dn + eps;
    if (center && claim->var_algo == QF_VAR_WELFORD) {
        /* Welford: the mean's and M2's errors from the update recurrence
         * (docs/bounds.md "LayerNorm with Welford's algorithm"). */
        double b_m2, dd = (1 + c.rho) * (1 + c.u) - 1;
        welford_errors(&c, n, x, &e_mu, &b_m2);
        lo = d2 > b_m2 ? d2 - b_m2 : 0;
        v_hi = ((d2 + b_m2) * (1 + dd) / dn + c.sub + eps) * (1 + c.ue);
        v_lo = (fmax(lo * (1 - dd) / dn - c.sub, 0) + eps) * (1 - c.ue);
    } else {
        d2 = sqrt(d2);
        e2 = sqrt(e2) * QF_BOUND_SAFETY;
        /* + c.sub: squares and the division that underflow lose up to
         * half a subnormal step each, n of them divided by n. */
        v_hi = ((d2 + e2) * (d2 + e2) * (1 + g) * (1 + c.ue) / dn + c.sub + eps) * (1 + c.ue);
        lo = d2 > e2 ? d2 - e2 : 0;
        v_lo = (fmax(lo * lo * (1 - g) * (1 - c.ue) / dn - c.sub, 0) + eps) * (1 - c.ue);
    }
    if (!(v_lo > 0) || !(v > 0)) {
        for (i = 0; i < n; i++)
            bound[i] = INFINITY;
        return QF_OK;
    }
    r = 1 / sqrt(v);
    r_hi = (1 + c.rho) / sqrt(v_lo) * QF_BOUND_SAFETY;
    r_lo = (1 - c.rho) / sqrt(v_hi) / QF_BOUND_SAFETY;
    for (i = 0; i < n; i++) {
        double d = fabs(x[i] - mu), e = center ? e_mu * (1 + c.u) + c.u * d : 0;
        double wi = w ? fabs(weight_offset + w[i]) : 1, bi = b ? b[i] : 0, y = exact[i], dev, lo_d, err;
        double f_hi = (1 + c.u) * (1 + c.u), f_lo = (1 - c.u) * (1 - c.u);
        if (off) { /* fl(offset + w): the scale itself one rounding off */
            f_hi *= 1 + c.u;
            f_lo *= 1 - c.u;
        }
        /* d^ r^ (two roundings: * r, * w) against d r: the extreme corners. */
        lo_d = d > e ? d - e : 0;
        dev = fmax((d + e) * r_hi * f_hi - d * r, d * r - lo_d * r_lo * f_lo);
        /* Either product may land below the smallest normal, where its
         * rounding is absolute: half a subnormal step each (the first
         * then scaled by |w|). */
        err = wi * dev + 0.5 * c.sub * (wi + 1);
        if (b && bi != 0)
            err = err * (1 + c.u) + c.u * fabs(y); /* + b, rounded */
        bound[i] = nl_finish(&c, err, y);
    }
    return QF_OK;
}

/* The longest chain of roundings a square goes through in the claimed sum
 * of n squares: its own rounding, then the additions on its path (n - 1
 * in any order; ceil(log2 n) in a balanced tree). */
static double _l2_chain(const qf_arith_claim *claim, size_t n)
{
    double dn = (double)n;
    if (claim->sum_order == QF_SUM_PAIRWISE && n > 1)
        return fmin(dn, 1 + ceil(log2(dn)));
    return dn;
}

qf_status qf_bound_l2norm(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                          double eps, const double *exact, double *bound)
{
    nl_ctx c;
    size_t i;
    double q = 0, g, eta, q_hi, q_lo, e_lo, e_hi, d_lo, d_hi, f_hi, f_lo;
    if (bad_args(claim, n, x, exact, bound) || !(eps >= 0) || !isfinite(eps))
        return QF_EINVAL;
    /* A block whose terms are aligned and truncated loses bits that no
     * relative error per step describes: not derived for a sum of squares. */
    if (claim->block_fma > 1 && claim->align_truncates)
        return QF_EUNSUPPORTED;
    nl_setup(claim, out, &c);
    for (i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            /* The reference's special values decide (qf_ref.h). */
            for (i = 0; i < n; i++)
                bound[i] = isfinite(exact[i]) ? 0 : INFINITY;
            return QF_OK;
        }
        q += x[i] * x[i];
    }
    /* Sum of squares: relative g on every term, plus the absolute loss of
     * each square that falls below the normal range (half a subnormal
     * step, a whole one when the accumulator rounds directed), carried
     * through the later additions (docs/bounds.md "L2 normalization"). */
    g = expm1(_l2_chain(claim, n) * log1p(c.ue));
    eta = 0.5 * c.sub * (c.ue / c.u);
    q_hi = q * (1 + g) + (double)n * eta * (1 + g);
    q_lo = fmax(q * (1 - g) - (double)n * eta * (1 + g), 0);
    /* eps rounded into the compute format, sqrt rounded once, then the
     * clamp (max is monotone: the ends clamp separately). */
    e_lo = eps * (1 - c.u) - 0.5 * c.sub;
    e_hi = eps * (1 + c.u) + 0.5 * c.sub;
    d_lo = fmax(sqrt(q_lo) * (1 - c.u), e_lo) / QF_BOUND_SAFETY;
    d_hi = fmax(sqrt(q_hi) * (1 + c.u), e_hi) * QF_BOUND_SAFETY;
    if (!(d_lo > 0)) {
        /* A zero row with eps below the compute format: 0 / 0 is possible. */
        for (i = 0; i < n; i++)
            bound[i] = INFINITY;
        return QF_OK;
    }
    /* x / d rounded once, or x times a reciprocal within elem_ulp (rho),
     * rounded: the wider of the two. */
    f_hi = (1 + c.rho) * (1 + c.u);
    f_lo = (1 - c.rho) * (1 - c.u);
    for (i = 0; i < n; i++) {
        double ax = fabs(x[i]), y = fabs(exact[i]);
        double dev = fmax(ax / d_lo * f_hi - y, y - ax / d_hi * f_lo);
        /* The quotient (or product) may be subnormal: half a step. */
        bound[i] = nl_finish(&c, fmax(dev, 0) + 0.5 * c.sub, exact[i]);
    }
    return QF_OK;
}

/* One attention row's softmax (docs/bounds.md "Attention", steps 1 to 3,
 * 5 and 7): the score bounds, the max, the online rescale factor and the
 * denominator's relative error eps_S.  set returns -1 for a row with a
 * NaN or +inf score (no finite bound), 1 for a row whose keys are all
 * masked, 0 otherwise. */
typedef struct attn_row {
    nl_ctx c;
    qf_bound_coef qk, pv;
    double m, smin, sum, e_max, g, f_resc, tiles, abs_e, eps_s;
} attn_row;

/* The relative error bound of key j's computed weight (steps 2 and 3). */
static double attn_key_eps(const attn_row *a, double sj, double s_abs)
{
    const nl_ctx *c = &a->c;
    double ej = a->qk.rel_abs * fabs(s_abs) + a->qk.abs_min;
    double eta =
        ej + c->u * (fabs(sj - a->m) + ej + a->e_max) * (1 + c->u) + 2 * c->u * (fabs(sj) + ej) * (1 + c->u);
    return (1 + c->rho) * exp(eta) * a->f_resc - 1;
}

static int attn_row_set(attn_row *a, const qf_arith_claim *claim, const qf_format *out, size_t n_kv,
                        size_t d_qk, const double *s, const double *s_abs, size_t kv_tile, qf_status *st)
{
    size_t j;
    nl_setup(claim, out, &a->c);
    /* Scores: a GEMM with K = d_qk and one epilogue rounding (the scale),
     * kept in the compute format (no output rounding). */
    *st = qf_bound_gemm_coef(claim, d_qk, 1, qf_format_get(claim->acc_format), 0, &a->qk);
    if (*st == QF_OK)
        *st = qf_bound_gemm_coef(claim, n_kv, 0, qf_format_get(claim->acc_format), 0, &a->pv);
    if (*st != QF_OK)
        return -1;
    a->m = -INFINITY;
    a->smin = INFINITY;
    a->sum = a->e_max = a->eps_s = 0;
    for (j = 0; j < n_kv; j++) {
        double e = a->qk.rel_abs * fabs(s_abs[j]) + a->qk.abs_min;
        if (isnan(s[j]) || s[j] == INFINITY)
            return -1;
        if (s[j] == -INFINITY)
            continue;
        a->m = s[j] > a->m ? s[j] : a->m;
        a->smin = s[j] < a->smin ? s[j] : a->smin;
        a->e_max = e > a->e_max ? e : a->e_max;
    }
    if (a->m == -INFINITY)
        return 1;
    for (j = 0; j < n_kv; j++)
        if (s[j] != -INFINITY)
            a->sum += exp(s[j] - a->m);
    a->g = expm1((double)(n_kv - 1) * log1p(a->c.ue));
    /* Online softmax: each rescale multiplies the earlier weights by a
     * computed exp(m_old - m_new) and rounds O and l once each; the
     * arguments' total is at most m - smin (docs/bounds.md "Attention"). */
    a->tiles = kv_tile ? ceil((double)n_kv / (double)kv_tile) - 1 : 0;
    /* An exp (a weight or a rescale factor) that underflows in the compute
     * format errs absolutely: elem_ulp + 1 subnormal steps. */
    a->abs_e = abs_t_of(claim, &a->c);
    a->f_resc = a->tiles > 0 ? exp(a->tiles * (log1p(a->c.rho) + 2 * log1p(a->c.u)) +
                                   2 * a->c.u * (a->m - a->smin + 2 * a->e_max))
                             : 1;
    for (j = 0; j < n_kv; j++)
        if (s[j] != -INFINITY)
            a->eps_s += exp(s[j] - a->m) / a->sum * ((1 + attn_key_eps(a, s[j], s_abs[j])) * (1 + a->g) - 1);
    a->eps_s = a->eps_s * QF_BOUND_SAFETY + (double)n_kv * a->abs_e;
    /* A rescale factor that underflows: its absolute error times the
     * running l (at most n (1 + rho)(1 + g): weights <= 1 + rho), plus the
     * product's own absolute rounding, once per rescale. */
    if (a->tiles > 0)
        a->eps_s += a->tiles * ((double)n_kv * (1 + a->c.rho) * (1 + a->g) * a->abs_e + a->c.sub);
    return 0;
}

qf_status qf_bound_attention(const qf_arith_claim *claim, const qf_format *out, size_t n_kv, size_t d_qk,
                             size_t d_v, const double *s, const double *s_abs, const double *v,
                             const qf_format *p_format, size_t kv_tile, const double *exact, double *bound)
{
    attn_row a;
    qf_status st;
    size_t j, t;
    double dd, u_p = 0, abs_p = 0;
    int row;
    if (bad_args(claim, n_kv, s, s_abs, v) || !exact || !bound || d_v == 0)
        return QF_EINVAL;
    row = attn_row_set(&a, claim, out, n_kv, d_qk, s, s_abs, kv_tile, &st);
    if (st != QF_OK)
        return st;
    if (row) {
        for (t = 0; t < d_v; t++)
            bound[t] = row < 0 ? INFINITY : 0;
        return QF_OK;
    }
    dd = (1 + a.c.rho) * (1 + a.c.u) - 1;
    if (p_format && p_format->kind == QF_KIND_FLOAT) {
        u_p = ldexp(1.0, -(p_format->man_bits + 1));
        abs_p = 0.5 * p_format->min_subnormal;
    }
    /* The numerator's sum_j y_j |v_jt| kappa_j, column by column (step 4). */
    for (t = 0; t < d_v; t++)
        bound[t] = 0;
    for (j = 0; j < n_kv; j++) {
        double y, e;
        if (s[j] == -INFINITY)
            continue;
        y = exp(s[j] - a.m) / a.sum;
        e = attn_key_eps(&a, s[j], s_abs[j]);
        for (t = 0; t < d_v; t++) {
            double vt = fabs(v[j * d_v + t]);
            bound[t] += y * vt * ((1 + e) * (1 + u_p) * (1 + a.pv.rel_abs) - 1) + abs_p * vt +
                        a.abs_e * (1 + u_p) * (1 + a.pv.rel_abs) * vt;
        }
    }
    if (a.tiles > 0) {
        /* A rescale factor that underflows, times the running O (at most
         * (1 + rho)(1 + u_p)(1 + rel_PV) sum_j |v_j|), plus the product's
         * own absolute rounding, once per rescale. */
        for (t = 0; t < d_v; t++) {
            double sv = 0;
            for (j = 0; j < n_kv; j++)
                if (s[j] != -INFINITY)
                    sv += fabs(v[j * d_v + t]);
            bound[t] += a.tiles * (sv * (1 + a.c.rho) * (1 + u_p) * (1 + a.pv.rel_abs) * a.abs_e + a.c.sub);
        }
    }
    for (t = 0; t < d_v; t++) {
        double o = fabs(exact[t]), b = bound[t] * QF_BOUND_SAFETY + a.pv.abs_min, err;
        if (!(a.eps_s < 1)) {
            bound[t] = INFINITY;
            continue;
        }
        err = (b + o * a.eps_s) / (1 - a.eps_s) * (1 + dd) + dd * o;
        bound[t] = nl_finish(&a.c, err, exact[t]);
    }
    return QF_OK;
}

qf_status qf_bound_attention_lse(const qf_arith_claim *claim, const qf_format *out, size_t n_kv, size_t d_qk,
                                 const double *s, const double *s_abs, size_t kv_tile, double exact,
                                 double *bound)
{
    attn_row a;
    qf_status st;
    double lam, l_hi, e_l;
    int row;
    if (bad_args(claim, n_kv, s, s_abs, bound))
        return QF_EINVAL;
    row = attn_row_set(&a, claim, out, n_kv, d_qk, s, s_abs, kv_tile, &st);
    if (st != QF_OK)
        return st;
    if (row) {
        *bound = row < 0 || !isfinite(exact) ? INFINITY : 0;
        return QF_OK;
    }
    if (!(a.eps_s < 1)) {
        *bound = INFINITY;
        return QF_OK;
    }
    /* docs/bounds.md "Attention", step 8: the denominator's relative error
     * an absolute one of its log (as log-softmax's step 4), |log S**| <=
     * (lse - m) + E_max; the kernel's max m^ within E_max, added once more
     * rounded (a max kept unscaled and multiplied by the scale: u |m^|),
     * then fl(m^ + L^). */
    lam = -log1p(-a.eps_s);
    l_hi = fabs(exact - a.m) + a.e_max;
    e_l = lam + ((1 + a.c.rho) * (1 + a.c.u) * (1 + a.c.u) - 1) * (l_hi + lam) + a.abs_e;
    e_l += a.c.u * (fabs(a.m) + a.e_max);
    *bound = nl_finish(&a.c, e_l * QF_BOUND_SAFETY * (1 + a.c.u) + a.c.u * fabs(exact), exact);
    return QF_OK;
}

/* Error of one computed cos or sin against the exact value at the exact
 * angle: the angle's error da (|f'| <= 1, and never more than 2), plus the
 * function's own elem_ulp ulps at the computed angle. */
static double trig_err(const nl_ctx *c, double eu, double exact_val, double da)
{
    double d = da < 2 ? da : 2, mag = fabs(exact_val) + d;
    return d + c->rho * (mag < 1 ? mag : 1) + eu * c->sub;
}

qf_status qf_bound_rope(const qf_arith_claim *claim, const qf_format *out, size_t head_dim, size_t rotary_dim,
                        int half_layout, double theta, double pos, const double *x, const double *exact,
                        double *bound)
{
    nl_ctx c;
    size_t rd = rotary_dim ? rotary_dim : head_dim, half, i;
    const qf_format *cf;
    double eu, u_th, u_pos, lt, dd;
    if (bad_args(claim, head_dim, x, exact, bound) || rd % 2 || rd > head_dim || !isfinite(theta) ||
        !(theta > 0) || !isfinite(pos))
        return QF_EINVAL;
    nl_setup(claim, out, &c);
    cf = qf_format_get(claim->acc_format);
    eu = claim->elem_ulp > 0 ? claim->elem_ulp : 2.0;
    half = rd / 2;
    /* theta and pos rounded into the compute format (0 when exact). */
    u_th = qf_format_decode(cf, qf_format_encode(cf, theta, QF_ROUND_RNE, 0, 0, 0)) == theta ? 0 : c.u;
    u_pos = qf_format_decode(cf, qf_format_encode(cf, pos, QF_ROUND_RNE, 0, 0, 0)) == pos ? 0 : c.u;
    lt = fabs(log(theta));
    dd = (1 + c.rho) * (1 + c.u) - 1; /* a reciprocal (or a division) */
    for (i = rd; i < head_dim; i++)
        bound[i] = isfinite(exact[i]) ? nl_finish(&c, 0, exact[i]) : INFINITY;
    for (i = 0; i < half; i++) {
        size_t ia = half_layout ? i : 2 * i, ib = half_layout ? i + half : 2 * i + 1;
        double e = 2.0 * (double)i / (double)rd, xa = fabs(x[ia]), xb = fabs(x[ib]);
        double ep, ef, ea, ang, da, cs, sn, ec, es, ra, rb;
        if (!isfinite(x[ia]) || !isfinite(x[ib]) || !isfinite(exact[ia]) || !isfinite(exact[ib])) {
            bound[ia] = bound[ib] = isfinite(exact[ia]) && isfinite(exact[ib]) ? 0 : INFINITY;
            continue;
        }
        /* theta^e: the exponent's rounding (u e, times |ln theta|), theta's
         * rounding ((1 + u_th)^e), the power's elem_ulp. */
        ep = i == 0 ? 0 : (1 + c.rho) * exp(c.u * e * lt + e * (1 + c.u) * log1p(u_th)) - 1;
        /* inv_freq = 1 / theta^e (or theta^-e directly: covered). */
        ef = (1 + ep / (1 - ep)) * (1 + (i == 0 ? 0 : dd)) - 1;
        /* angle = pos * inv_freq, one rounding, pos possibly rounded. */
        ea = (1 + ef) * (1 + u_pos) * (1 + c.u) - 1;
        ang = pos * pow(theta, -e);
        da = fabs(ang) * ea;
        cs = cos(ang);
        sn = sin(ang);
        ec = trig_err(&c, eu, cs, da);
        es = trig_err(&c, eu, sn, da);
        /* y_a = x_a c - x_b s, y_b = x_a s + x_b c: two products and the
         * sum, each rounded (an FMA only removes roundings). */
        ra = xa * ec + xb * es + c.u * (xa * (fabs(cs) + ec) + xb * (fabs(sn) + es));
        rb = xa * es + xb * ec + c.u * (xa * (fabs(sn) + es) + xb * (fabs(cs) + ec));
        /* A product below the smallest normal rounds absolutely: half a
         * subnormal step each, two per output (the sum of two subnormals
         * is exact). */
        ra = ra + c.sub;
        rb = rb + c.sub;
        ra = ra + c.u * (fabs(exact[ia]) + ra);
        rb = rb + c.u * (fabs(exact[ib]) + rb);
        bound[ia] = nl_finish(&c, ra * QF_BOUND_SAFETY, exact[ia]);
        bound[ib] = nl_finish(&c, rb * QF_BOUND_SAFETY, exact[ib]);
    }
    return QF_OK;
}

/* Relative error of a constant rounded into the compute format. */
static double const_u(const nl_ctx *c, double k)
{
    const qf_format *f = qf_format_get(QF_FLOAT32);
    (void)c;
    return fabs(qf_format_decode(f, qf_format_encode(f, k, QF_ROUND_RNE, 0, 0, 0)) - k) / fabs(k);
}

/* sigmoid(a^) computed from expf(-|a^|): error against sigmoid(a), with
 * |a^ - a| <= da.  (ln sigmoid)' = 1 - sigmoid in (0, 1), so the argument
 * moves it by a factor within exp(+-da); the evaluation: expf (rho, or an
 * absolute elem_ulp subnormal steps), 1 + e (u, relative error of the sum
 * at most rho / 2 from e <= 1), the division (delta_d), and the result's
 * own underflow (one subnormal step). */
static double sigmoid_err(const nl_ctx *c, double eu, double a, double da)
{
    double s = 1 / (1 + exp(-a)), dd = (1 + c->rho) * (1 + c->u) - 1;
    double k = (1 + c->rho) * (1 + c->rho) * (1 + c->u) * (1 + dd) / ((1 - c->rho) * (1 - c->u)) - 1;
    /* An absolute error of expf moves 1 / (1 + e) by at most as much (the
     * derivative is below 1), then the sum and division enlarge it (< 2). */
    return s * (exp(da) * (1 + k) - 1) + (eu + 1) * c->sub + 2 * c->abs_m;
}

/* The activation a formula evaluates, or -1 when the formula does not
 * compute (an approximation of) the op's function act. */
static int formula_act(qf_act_formula f, int act)
{
    switch (f) {
    case QF_ACT_FORMULA_OP: return act;
    case QF_ACT_FORMULA_GELU_ERF:
    case QF_ACT_FORMULA_GELU_TANH:
        if (act != QF_REF_ACT_GELU_ERF && act != QF_REF_ACT_GELU_TANH)
            return -1;
        return f == QF_ACT_FORMULA_GELU_ERF ? QF_REF_ACT_GELU_ERF : QF_REF_ACT_GELU_TANH;
    case QF_ACT_FORMULA_SILU_EXP:
    case QF_ACT_FORMULA_SILU_SIGMOID: return act == QF_REF_ACT_SILU ? act : -1;
    default: return -1;
    }
}

/* The exact value of a gelu form at x (binary64, within a few ulps). */
static double gelu_value(int act, double x)
{
    if (act == QF_REF_ACT_GELU_ERF)
        return 0.5 * x * erfc(-x * 0.70710678118654752440);
    return x / (1 + exp(-2 * 0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

qf_status qf_bound_activation(const qf_arith_claim *claim, const qf_format *out, int act, int glu, size_t n,
                              const double *x, const double *up, const double *exact, double *bound)
{
    nl_ctx c;
    size_t i;
    double eu, u2, k_isq2, k_c1, k_c2;
    int op_act = act;
    if (bad_args(claim, n, x, exact, bound) || (glu && !up) || act < 0 || act >= (int)QF_REF_ACT_COUNT)
        return QF_EINVAL;
    /* The formula evaluated (docs/bounds.md "Activation formulas"). */
    if ((act = formula_act(claim->act_formula, op_act)) < 0)
        return QF_EINVAL;
    nl_setup(claim, out, &c);
    eu = claim->elem_ulp > 0 ? claim->elem_ulp : 2.0;
    if (claim->math_rel_err > 0 || claim->math_abs_err > 0) {
        /* The math library's stated accuracy replaces elem_ulp's. */
        c.rho = claim->math_rel_err;
        c.abs_m = claim->math_abs_err;
    }
    u2 = (1 + c.u) * (1 + c.u) - 1;
    /* The kernel's constants, rounded to float32. */
    k_isq2 = const_u(&c, 0.70710678118654752440);
    k_c1 = const_u(&c, 0.79788456080286535588); /* sqrt(2 / pi) */
    k_c2 = const_u(&c, 0.044715);
    for (i = 0; i < n; i++) {
        double xi = x[i], ax = fabs(xi), v, e; /* v: exact act(x), e: its error bound */
        if (!isfinite(xi) || !isfinite(exact[i]) || (glu && !isfinite(up[i]))) {
            bound[i] = isfinite(exact[i]) ? 0 : INFINITY;
            continue;
        }
        switch (act) {
        case QF_REF_ACT_RELU:
            v = xi > 0 ? xi : 0;
            e = 0;
            break;
        case QF_REF_ACT_SIGMOID:
            v = 1 / (1 + exp(-xi));
            e = sigmoid_err(&c, eu, xi, 0);
            break;
        case QF_REF_ACT_SILU: {
            double s = 1 / (1 + exp(-xi)), es;
            v = xi * s;
            if (claim->act_formula == QF_ACT_FORMULA_SILU_EXP) {
                /* y = fl(x / fl(1 + expf(-x))): the denominator is within
                 * (1 +- rho)(1 +- u) relatively (e rho / (1 + e) <= rho),
                 * plus expf's absolute error over 1 + e >= 1; then the
                 * division.  expf underflowing (x large) errs by elem_ulp
                 * + 1 subnormal steps, the quotient by one more. */
                double kq = (1 + c.u) / ((1 - c.rho) * (1 - c.u)) - 1;
                e = fabs(v) * (kq + 2 * c.abs_m) + ax * (eu + 1) * c.sub + c.sub;
                /* expf(-x) near or past the compute format's overflow:
                 * the quotient lies between 0 and y. */
                if (-xi * 1.4426950408889634 >= qf_format_get(claim->acc_format)->emax - 1)
                    e = fabs(v) * (1 + kq) + c.sub;
                break;
            }
            es = sigmoid_err(&c, eu, xi, 0);
            e = ax * es + c.u * (fabs(v) + ax * es) + c.sub;
            break;
        }
        case QF_REF_ACT_GELU_ERF: {
            /* t = fl(-x fl(1/sqrt 2)), h = 0.5 x (exact but for underflow),
             * y = fl(h erfcf(t)). */
            double t = -xi * 0.70710678118654752440, dt = fabs(t) * ((1 + k_isq2) * (1 + c.u) - 1);
            double s0 = fabs(t) > dt ? fabs(t) - dt : 0, ec, r = erfc(t), h = 0.5 * ax;
            ec = dt * 1.1283791670955126 * exp(-s0 * s0); /* |erfc'| = 2/sqrt(pi) exp(-s^2) */
            ec = ec + c.rho * (r + ec) + eu * c.sub + c.abs_m;
            v = 0.5 * xi * r;
            e = h * ec + c.u * (fabs(v) + h * ec) + 2 * c.sub; /* + h's own underflow */
            break;
        }
        case QF_REF_ACT_GELU_TANH: {
            /* x3 = fl(fl(x x) x), in = fl(x + fl(c2 x3)), a = 2 fl(c1 in),
             * y = fl(x sigmoid(a)); x and c2 x^3 have the same sign. */
            double x3 = ax * ax * ax, c2x3 = 0.044715 * x3, in = ax + c2x3;
            double e1 = (1 + u2) * (1 + k_c2) * (1 + c.u) - 1, ein = c2x3 * e1 * (1 + c.u) + c.u * in;
            double a = 2 * 0.79788456080286535588 * (xi + 0.044715 * xi * xi * xi), da, s, es;
            da = 2 * 0.79788456080286535588 *
                 (ein * (1 + k_c1) * (1 + c.u) + in * ((1 + k_c1) * (1 + c.u) - 1));
            da += 8 * c.sub; /* underflow in x^3 and the products */
            s = 1 / (1 + exp(-a));
            es = sigmoid_err(&c, eu, a, da);
            v = xi * s;
            e = ax * es + c.u * (fabs(v) + ax * es) + c.sub;
            break;
        }
        default: return QF_EINVAL;
        }
        if (act != op_act) {
            /* Another formula than the op's function: their exact
             * difference, both evaluated in binary64 (a few ulps each,
             * covered by 2^-48 of their magnitudes). */
            double w = gelu_value(op_act, xi);
            e += fabs(v - w) + 0x1p-48 * (fabs(v) + fabs(w));
            v = w;
        }
        if (glu) {
            double au = fabs(up[i]);
            e = au * e + c.u * (fabs(v) * au + au * e) + c.sub;
        }
        bound[i] = nl_finish(&c, e * QF_BOUND_SAFETY, exact[i]);
    }
    return QF_OK;
}
