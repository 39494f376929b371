/* refute.c: refuting inputs designed against a GEMM claim (qf_refute.h;
 * the reasoning is in docs/refute.md).
 *
 * Every design is one large term M = 2^em followed by small terms t, all
 * exact products of powers of two (the small a values may carry a short
 * significand), so that what an accumulator keeps of t is decided by its
 * width, rounding and order alone.  The claimed arithmetic and its
 * alternatives are evaluated by the probe's exact node model
 * (qf_probe_replay_dot), the exact result by the qf_dot engine. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_dot.h"
#include "qf_probe.h"
#include "qf_refute.h"

static const char *const names[QF_REFUTE_COUNT] = {"stagnation", "cancel", "width", "ties"};

const char *qf_refute_family_name(qf_refute_family f)
{
    return (unsigned)f < QF_REFUTE_COUNT ? names[f] : NULL;
}

int qf_refute_family_lookup(const char *name)
{
    for (int i = 0; name && i < QF_REFUTE_COUNT; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

void qf_refute_family_list(char *buf, size_t size)
{
    size_t n = 0;
    if (!size)
        return;
    buf[0] = '\0';
    for (int i = 0; i < QF_REFUTE_COUNT && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", names[i]);
}

static void say(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    if (!why || !size)
        return;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

/* ---- The design ------------------------------------------------------------ */

typedef struct design {
    int f;          /* claimed kept fraction bits of the accumulator */
    int D;          /* t = sig 2^-D M on rung 0 */
    int ea0, eb0;   /* M = 2^ea0 2^eb0 */
    int ea1, eb1;   /* rung-0 t = sig 2^ea1 2^eb1 */
    double sig;     /* significand of the small a values, in [1, 2) */
    int ri, rj;     /* width rungs along rows and columns */
    size_t step;    /* small terms at l = step, 2 step, ... */
    size_t nsmall;  /* at most that many */
    int capx;       /* and at most 2^(capx - r) on rung r (the t sum stays below M / 4) */
    int cancel;     /* -M as the last term */
} design;

static int exp_of(double v)
{
    int e;
    frexp(v, &e);
    return e - 1;
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

static int imax(int a, int b)
{
    return a > b ? a : b;
}

/* Split 2^e into 2^x 2^y with x in [xlo, xhi], y = e - x in [ylo, yhi],
 * as balanced as allowed: both factors far from the ends of their formats
 * (kernels that flush subnormal inputs, as XLA on CPU does, would
 * otherwise see zeros the claim does not speak of). */
static int split_exp(int e, int xlo, int xhi, int ylo, int yhi, int *x, int *y)
{
    int lo = imax(xlo, e - yhi), hi = imin(xhi, e - ylo), m = e >= 0 ? e / 2 : -((1 - e) / 2);
    if (lo > hi)
        return -1;
    *x = imin(imax(m, lo), hi);
    *y = e - *x;
    return 0;
}

static int claim_frac(const qf_arith_claim *c)
{
    return -ilogb(qf_bound_acc_u(c)) - 1;
}

static int rne_claim(const qf_arith_claim *c)
{
    return c->acc_round == QF_ROUND_RNE || c->acc_round == QF_ROUND_RNA;
}

static int plan(const qf_refute_spec *s, size_t m, size_t n, design *d, char *why, size_t ws)
{
    const qf_arith_claim *c = s->claim;
    const qf_format *af, *fa = s->fa, *fb = s->fb, *fo = s->fo;
    int rmax = 0, lo_a, lo_a0, lo_b, hi_a, hi_a1, hi_b, em_hi, floor_lo, p;
    memset(d, 0, sizeof *d);
    if (!c || !fa || !fb || !fo || (unsigned)s->family >= QF_REFUTE_COUNT) {
        say(why, ws, "no claim, formats or family");
        return -1;
    }
    if (c->acc_kind != QF_ACC_FLOAT) {
        say(why, ws, "an integer accumulator sums exactly in every order: nothing to refute");
        return -1;
    }
    if (fa->kind != QF_KIND_FLOAT || fb->kind != QF_KIND_FLOAT || fo->kind != QF_KIND_FLOAT) {
        say(why, ws, "the designs need floating-point a, b and output formats");
        return -1;
    }
    if (s->k < 2) {
        say(why, ws, "K = %zu: one product has no accumulation to refute", s->k);
        return -1;
    }
    af = qf_format_get(c->acc_format);
    d->f = claim_frac(c);
    if (!af || d->f > 40) {
        say(why, ws, "the claimed accumulator (%d fraction bits) is wider than these designs reach", d->f);
        return -1;
    }
    d->sig = 1;
    d->step = 1;
    d->nsmall = s->k - 1;
    d->capx = 1000;
    p = imin(fa->man_bits, 10); /* significand bits the small a values may carry */
    switch (s->family) {
    case QF_REFUTE_STAGNATION:
    case QF_REFUTE_CANCEL:
        /* t = u M: a tie of the claimed width (lost by nearest-even, as M
         * is even), or just under 2u M for a truncating claim (lost too). */
        d->D = d->f + 1;
        if (!rne_claim(c) && p > 0)
            d->sig = 2 - ldexp(1.0, -p);
        if (s->family == QF_REFUTE_CANCEL) {
            if (s->k < 3) {
                say(why, ws, "K = %zu: cancel needs M, one small term and -M", s->k);
                return -1;
            }
            d->cancel = 1;
            d->nsmall = s->k - 2;
        }
        break;
    case QF_REFUTE_WIDTH:
        /* Rung r: t = 2^-(f - 2 - r) M, half an ulp of a unit with
         * f - 3 - r kept fraction bits (dropped by truncation and by
         * nearest-even), kept exactly by the claimed f bits while the t sum
         * stays below M / 4. */
        d->D = d->f - 2;
        if (d->D < 3) {
            say(why, ws, "the claimed accumulator keeps %d fraction bits: no narrower unit to tell apart", d->f);
            return -1;
        }
        rmax = imin(d->f - 5, 15);
        d->capx = d->D - 2;
        break;
    case QF_REFUTE_TIES:
        if (!rne_claim(c)) {
            say(why, ws, "the claim's accumulator rounds %s, not to nearest: no ties to refute",
                c->acc_round == QF_ROUND_RTZ ? "toward zero" : "directed");
            return -1;
        }
        if (p < 1) {
            say(why, ws, "%s has no fraction bits for a term just under one ulp", fa->name);
            return -1;
        }
        /* t = (1 - 2^-(p+1)) ulp of M at the claimed width, one per block
         * step (a block of several would carry into a whole ulp). */
        d->D = d->f + 1;
        d->sig = 2 - ldexp(1.0, -p);
        d->step = (size_t)(c->block_fma > 1 ? c->block_fma : 1);
        d->nsmall = (s->k - 1) / d->step;
        if (d->nsmall == 0) {
            say(why, ws, "K = %zu: no block step after the first (block %d)", s->k, c->block_fma);
            return -1;
        }
        d->capx = d->f - 3;
        break;
    default: break;
    }
    lo_a0 = exp_of(fa->min_subnormal);
    lo_a = d->sig != 1 ? fa->emin : lo_a0; /* a significand needs a normal */
    lo_b = exp_of(fb->min_subnormal);
    hi_a = exp_of(fa->max);
    hi_a1 = d->sig != 1 ? hi_a - 1 : hi_a;
    hi_b = exp_of(fb->max);
    /* M, the sums and the exact result stay inside the accumulator's and
     * the output's normal range. */
    em_hi = imin(hi_a + hi_b, imin(af->emax, fo->emax) - 2);
    floor_lo = imax(af->emin, fo->emin);
    d->rj = imin(rmax, (int)(n > 0 ? n - 1 : 0));
    d->ri = imin(rmax - d->rj, (int)(m > 0 ? m - 1 : 0));
    for (;;) {
        /* Rung 0 holds the smallest t; rung r is 2^r larger. */
        int em = imax(0, imax(floor_lo, lo_a + lo_b) + d->D);
        if (em > em_hi)
            em = em_hi;
        /* normal factors first, subnormal ones only when the range needs them */
        for (int sub = 0; sub < 2; sub++) {
            int la0 = sub ? lo_a0 : fa->emin, la = sub ? lo_a : fa->emin, lb = sub ? lo_b : fb->emin;
            if (em - d->D >= floor_lo && split_exp(em, la0, hi_a, lb, hi_b, &d->ea0, &d->eb0) == 0 &&
                split_exp(em - d->D, la, hi_a1 - d->ri, lb, hi_b - d->rj, &d->ea1, &d->eb1) == 0)
                return 0;
        }
        if (d->ri > 0)
            d->ri--;
        else if (d->rj > 0)
            d->rj--;
        else
            break;
    }
    say(why, ws, "the exponent ranges of %s x %s (and the %s accumulator, %s output) cannot hold M and M 2^-%d",
        fa->name, fb->name, af->name, fo->name, d->D);
    return -1;
}

/* Term l of element (i, j): a and b values. */
static void term(const design *d, size_t k, size_t i, size_t j, size_t l, double *a, double *b)
{
    *a = *b = 0;
    if (l == 0 || (d->cancel && l == k - 1)) {
        *a = ldexp(l == 0 ? 1.0 : -1.0, d->ea0);
        *b = ldexp(1.0, d->eb0);
    } else if (l % d->step == 0) {
        int ri = (int)(i < (size_t)d->ri ? i : (size_t)d->ri), rj = (int)(j < (size_t)d->rj ? j : (size_t)d->rj);
        /* rung r's terms are 2^r larger: fewer of them keep the sum below M / 4 */
        if ((double)(l / d->step) > fmin((double)d->nsmall, ldexp(1.0, d->capx - (ri + rj))))
            return;
        *a = ldexp(d->sig, d->ea1 + ri);
        *b = ldexp(1.0, d->eb1 + rj);
    }
}

qf_status qf_refute_gemm(const qf_refute_spec *s, size_t m, size_t n, double *a, double *b, char *why,
                         size_t why_size)
{
    design d;
    size_t i, j, l, k = s ? s->k : 0;
    double tb;
    if (!s || !a || !b)
        return QF_EINVAL;
    if (plan(s, m, n, &d, why, why_size))
        return QF_EUNSUPPORTED;
    for (i = 0; i < m; i++)
        for (l = 0; l < k; l++)
            term(&d, k, i, 0, l, &a[i * k + l], &tb);
    for (l = 0; l < k; l++)
        for (j = 0; j < n; j++)
            term(&d, k, 0, j, l, &tb, &b[l * n + j]);
    return QF_OK;
}

/* ---- Replays ---------------------------------------------------------------- */

/* The claim as the probe's replay describes an arithmetic. */
static void claim_replay(const qf_arith_claim *c, size_t k, qf_probe_result *r)
{
    qf_sum_order o = c->sum_order;
    int param = c->sum_order == QF_SUM_SPLITK ? c->split_k : c->sum_block;
    qf_sum_order inner = c->sum_inner;
    memset(r, 0, sizeof *r);
    r->k = k;
    r->cols = 1;
    if (o == QF_SUM_VARIES && c->n_varies > 0) {
        o = c->sum_varies[0].order;
        param = c->sum_varies[0].param;
        inner = c->sum_varies[0].inner;
    }
    r->order.fused = c->block_fma > 1 ? c->block_fma : 1;
    r->order.kind = QF_PROBE_ORDER_SEQUENTIAL;
    if (c->promote_interval > 0) {
        const qf_format *pf = qf_format_get(c->promote_format);
        r->order.kind = QF_PROBE_ORDER_BLOCKED;
        r->order.block = c->promote_interval;
        r->order.inner = QF_PROBE_ORDER_SEQUENTIAL;
        r->outer = 1;
        r->outer_acc = pf ? pf->man_bits : 23;
        r->outer_round = QF_ROUND_RNE;
    } else if (o == QF_SUM_PAIRWISE) {
        r->order.kind = QF_PROBE_ORDER_PAIRWISE;
    } else if (o == QF_SUM_SPLITK && param > 1) {
        r->order.kind = QF_PROBE_ORDER_SPLIT;
        r->order.split = param;
    } else if (o == QF_SUM_BLOCKED && param >= 1) {
        r->order.kind = QF_PROBE_ORDER_BLOCKED;
        r->order.block = param;
        r->order.inner = inner == QF_SUM_PAIRWISE ? QF_PROBE_ORDER_PAIRWISE : QF_PROBE_ORDER_SEQUENTIAL;
    }
    r->acc_frac_bits = claim_frac(c);
    r->acc_round = rne_claim(c) ? QF_ROUND_RNE : QF_ROUND_RTZ;
    r->align = QF_PROBE_ALIGN_EXACT;
    if (c->block_fma > 1 && c->align_truncates) {
        r->align = c->align_round == QF_ALIGN_FLOOR     ? QF_PROBE_ALIGN_FLOOR
                   : c->align_round == QF_ALIGN_NEAREST ? QF_PROBE_ALIGN_NEAREST
                                                        : QF_PROBE_ALIGN_TRUNCATE;
        r->align_frac_bits = r->acc_frac_bits + c->guard_bits;
    }
    r->fma = c->fma == QF_FMA_UNFUSED ? 0 : 1;
    r->product_frac_bits = c->product_frac_bits;
}

/* A replayed accumulator converted to the output as the claim says. */
static double to_out(const qf_refute_spec *s, double v)
{
    if (!isfinite(v))
        return v;
    return qf_format_decode(s->fo, qf_format_encode(s->fo, v, s->claim->out_round, 0, 0, 0));
}

static void set_width(qf_probe_result *r, const qf_arith_claim *c, int f, qf_round rnd)
{
    r->acc_frac_bits = f;
    r->acc_round = rnd;
    if (r->align != QF_PROBE_ALIGN_EXACT)
        r->align_frac_bits = f + c->guard_bits;
}

/* The exact result and sum |x y| of one dot product. */
static int exact_dot(size_t k, const double *x, const double *y, double *c, double *abs)
{
    qf_dot_acc *acc = malloc(2 * sizeof *acc);
    size_t l;
    if (!acc)
        return -1;
    qf_dot_acc_init(&acc[0]);
    qf_dot_acc_init(&acc[1]);
    for (l = 0; l < k; l++) {
        qf_dot_acc_add_product(&acc[0], x[l], y[l]);
        qf_dot_acc_add_product(&acc[1], fabs(x[l]), fabs(y[l]));
    }
    *c = qf_dot_acc_get_d(&acc[0], QF_ROUND_RNE);
    *abs = qf_dot_acc_get_d(&acc[1], QF_ROUND_UP);
    free(acc);
    return 0;
}

double qf_refute_power(const qf_refute_spec *s, char *why, size_t why_size)
{
    design d;
    qf_probe_result *r = NULL;
    qf_bound_coef coef;
    double *x = NULL, *y, c, A, bound, got, power = 0;
    const char *alt = "";
    size_t l;
    if (!s || plan(s, 1, 1, &d, why, why_size))
        return 0;
    if (qf_bound_gemm_coef(s->claim, s->k, 0, s->fo, 0, &coef) != QF_OK) {
        say(why, why_size, "no bound derives from the claim");
        return 0;
    }
    x = malloc(2 * s->k * sizeof *x);
    r = malloc(sizeof *r);
    if (!x || !r) {
        say(why, why_size, "out of memory");
        goto out;
    }
    y = x + s->k;
    for (l = 0; l < s->k; l++)
        term(&d, s->k, 0, 0, l, &x[l], &y[l]);
    if (exact_dot(s->k, x, y, &c, &A)) {
        say(why, why_size, "out of memory");
        goto out;
    }
    bound = (coef.rel_abs * A + coef.rel_out * fabs(c) + coef.abs_min) * QF_BOUND_SAFETY;
    claim_replay(s->claim, s->k, r);
    switch (s->family) {
    case QF_REFUTE_STAGNATION:
    case QF_REFUTE_CANCEL:
        memset(&r->order, 0, sizeof r->order);
        r->order.kind = QF_PROBE_ORDER_SEQUENTIAL;
        r->order.fused = 1;
        r->outer = 0;
        alt = "one FMA chain over K";
        break;
    case QF_REFUTE_WIDTH:
        set_width(r, s->claim, d.f - 3, QF_ROUND_RTZ);
        alt = "3 fewer kept fraction bits, truncating";
        break;
    case QF_REFUTE_TIES:
        set_width(r, s->claim, d.f, QF_ROUND_RTZ);
        alt = "truncation instead of rounding to nearest";
        break;
    default: break;
    }
    got = to_out(s, qf_probe_replay_dot(r, 0, x, y));
    power = isfinite(got) && bound > 0 ? fabs(got - c) / bound : 0;
    if (power < QF_REFUTE_MIN_POWER) {
        say(why, why_size,
            "refutes nothing here: the alternative (%s) stays at %.2f of the claim's bound (below %.1f)", alt,
            power, QF_REFUTE_MIN_POWER);
        power = 0;
    }
out:
    free(x);
    free(r);
    return power;
}

/* ---- Diagnosis ---------------------------------------------------------------- */

void qf_refute_order_text(const qf_arith_claim *c, char *buf, size_t size)
{
    const char *in = c->sum_inner == QF_SUM_PAIRWISE ? "pairwise" : "sequential";
    if (c->promote_interval > 0) {
        snprintf(buf, size, "promotion every %d", c->promote_interval);
        return;
    }
    switch (c->sum_order) {
    case QF_SUM_PAIRWISE: snprintf(buf, size, "pairwise"); break;
    case QF_SUM_SPLITK: snprintf(buf, size, "split(%d)", c->split_k); break;
    case QF_SUM_BLOCKED: snprintf(buf, size, "blocked(%d, %s)", c->sum_block, in); break;
    case QF_SUM_VARIES: snprintf(buf, size, "varies(%d orders)", c->n_varies); break;
    case QF_SUM_ANY: snprintf(buf, size, "any"); break;
    default: snprintf(buf, size, "sequential"); break;
    }
    if (c->block_fma > 1) {
        size_t n = strlen(buf);
        snprintf(buf + n, size > n ? size - n : 0, " over %d-term block FMAs", c->block_fma);
    }
}

/* Does r reproduce every output? */
static int replays(const qf_refute_spec *s, const qf_probe_result *r, size_t ne, const double *x,
                   const double *y, const double *got)
{
    for (size_t e = 0; e < ne; e++) {
        double v = to_out(s, qf_probe_replay_dot(r, 0, x + e * s->k, y + e * s->k));
        if (!(v == got[e] || (isnan(v) && isnan(got[e]))))
            return 0;
    }
    return 1;
}

static const char *rnd_word(qf_round r)
{
    return r == QF_ROUND_RNE ? "rounding to nearest" : "truncation";
}

int qf_refute_diagnose(const qf_refute_spec *s, size_t ne, const double *x, const double *y, const double *got,
                       char *out, size_t size)
{
    static const int splits[] = {2, 4, 8, 16, 32, 64}, blocks[] = {4, 8, 16, 32, 64, 128, 256, 512, 1024};
    qf_probe_result *base = malloc(sizeof *base), *r = malloc(sizeof *r);
    char claimed[96], what[160], range[48];
    int f, found = 0, b, lo;
    size_t i;
    if (!s || !s->claim || !base || !r || ne == 0) {
        say(out, size, "no diagnosis (nothing to replay)");
        free(base);
        free(r);
        return 0;
    }
    f = claim_frac(s->claim);
    b = s->claim->block_fma > 1 ? s->claim->block_fma : 1;
    qf_refute_order_text(s->claim, claimed, sizeof claimed);
    claim_replay(s->claim, s->k, base);
    if (replays(s, base, ne, x, y, got)) {
        say(out, size,
            "the claimed arithmetic (%s, %d kept fraction bits, %s), replayed, reproduces the kernel's outputs: "
            "the bound, not the kernel, is at fault (docs/bounds.md)",
            claimed, f, rnd_word(base->acc_round));
        found = 1;
        goto out;
    }
    /* Orders, with the claimed node arithmetic. */
    for (i = 0; i < 2 + sizeof splits / sizeof *splits + sizeof blocks / sizeof *blocks + 1 && !found; i++) {
        *r = *base;
        memset(&r->order, 0, sizeof r->order);
        r->outer = 0;
        r->order.fused = 1;
        if (i == 0) {
            r->order.kind = QF_PROBE_ORDER_SEQUENTIAL;
            snprintf(what, sizeof what, "one FMA chain over K");
        } else if (i == 1) {
            if (b == 1)
                continue;
            r->order.kind = QF_PROBE_ORDER_SEQUENTIAL;
            r->order.fused = b;
            snprintf(what, sizeof what, "one running chain of %d-term block FMAs over K", b);
        } else if (i < 2 + sizeof splits / sizeof *splits) {
            int S = splits[i - 2];
            if ((size_t)S >= s->k)
                continue;
            r->order.kind = QF_PROBE_ORDER_SPLIT;
            r->order.split = S;
            snprintf(what, sizeof what, "split(%d): %d strided lanes, each one chain, then added", S, S);
        } else if (i < 2 + sizeof splits / sizeof *splits + sizeof blocks / sizeof *blocks) {
            int B = blocks[i - 2 - sizeof splits / sizeof *splits];
            if ((size_t)B >= s->k)
                continue;
            r->order.kind = QF_PROBE_ORDER_BLOCKED;
            r->order.block = B;
            r->order.inner = QF_PROBE_ORDER_SEQUENTIAL;
            snprintf(what, sizeof what, "blocked(%d, sequential)", B);
        } else {
            r->order.kind = QF_PROBE_ORDER_PAIRWISE;
            snprintf(what, sizeof what, "pairwise");
        }
        if (replays(s, r, ne, x, y, got)) {
            say(out, size, "claims %s order; behaves as %s (replayed bit for bit on %zu refuting dot products)",
                claimed, what, ne);
            found = 1;
        }
    }
    /* Widths and roundings, in the claimed order, then in one chain. */
    for (int chain = 0; chain < 2 && !found; chain++)
        for (int fw = f; fw >= 7 && !found; fw--)
            for (int rn = 0; rn < 2 && !found; rn++) {
                qf_round rnd = rn ? QF_ROUND_RNE : QF_ROUND_RTZ;
                *r = *base;
                if (chain) {
                    memset(&r->order, 0, sizeof r->order);
                    r->order.kind = QF_PROBE_ORDER_SEQUENTIAL;
                    r->order.fused = 1;
                    r->outer = 0;
                }
                if (fw == f && rnd == base->acc_round && !chain)
                    continue;
                set_width(r, s->claim, fw, rnd);
                if (!replays(s, r, ne, x, y, got))
                    continue;
                found = 1;
                /* the narrower widths these inputs cannot tell apart */
                lo = fw;
                while (lo > 7) {
                    set_width(r, s->claim, lo - 1, rnd);
                    if (!replays(s, r, ne, x, y, got))
                        break;
                    lo--;
                }
                if (lo < fw)
                    snprintf(range, sizeof range, "%d to %d", lo, fw);
                else
                    snprintf(range, sizeof range, "%d", fw);
                if (fw == f)
                    say(out, size, "claims %s accumulation at %d kept fraction bits; behaves as %s%s", rnd_word(base->acc_round),
                        f, rnd_word(rnd), chain ? " in one FMA chain over K" : "");
                else
                    say(out, size,
                        "claims %d kept fraction bits (%s); behaves as %s with %s%s (replayed bit for bit on %zu "
                        "refuting dot products)",
                        f, rnd_word(base->acc_round), range, rnd_word(rnd), chain ? ", one FMA chain over K" : "",
                        ne);
            }
    if (!found)
        say(out, size,
            "no candidate arithmetic reproduces the kernel's outputs (orders: the claimed %s, one chain, split(2..64), "
            "blocked(4..1024), pairwise; %d..7 kept fraction bits with rounding to nearest or truncation)",
            claimed, f);
out:
    free(base);
    free(r);
    return found;
}
