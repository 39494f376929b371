/* mma.c: the arithmetic of one node of the revealed tree, by designed
 * inputs and elimination.
 *
 * The tests follow Fasi, Higham, Mikaitis and Pranesh ("Numerical behavior
 * of NVIDIA tensor cores", PeerJ CS 2021) and MMA-Sim (Xie et al. 2025):
 * every child of the node gets one nonzero term (on its smallest leaf;
 * all other leaves are zero, so the rest of the tree only adds zeros),
 * and the terms are powers of two and short significands placed at chosen
 * distances below the largest exponent E:
 *   [2^E, 2^(E-d)]           bits kept by the sum (accumulator width);
 *   [2^E, -2^E, +-2^(E-d)]   bits kept at alignment (cancellation leaves
 *                            only what alignment kept), and with 1.5 and
 *                            0.75 significands whether dropped bits are
 *                            truncated, floored or rounded to nearest;
 *   n copies of 2^E plus small terms: carries, the normalization rounding
 *                            (RTZ or RNE) of wider sums;
 *   random sparse vectors of the same kind.
 * Every candidate arithmetic (kept alignment bits F, alignment rounding,
 * accumulator fraction bits, RTZ/RNE) is evaluated on the same vectors by
 * an exact model of the node (_qf_arith_node: integers aligned to E, one
 * rounding), the result converted to the output format; the candidates
 * that reproduce every output remain.  A field on which the remaining
 * candidates disagree is one these inputs cannot reveal, and is reported
 * as a range.  Products: wide products a*b against -RN(a*b) in the input
 * format show the low product bits (exact, truncated to pf bits, or
 * rounded to the accumulator first: an unfused multiply-add).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_probe.h"

/* ---- The exact node model ------------------------------------------------ */

static double round_bits(double x, int frac, qf_round r)
{
    int e;
    double m, k;
    if (x == 0 || !isfinite(x))
        return x;
    frexp(x, &e);
    m = ldexp(x, frac + 1 - e);
    k = r == QF_ROUND_RTZ ? trunc(m) : nearbyint(m);
    return ldexp(k, e - frac - 1);
}

double _qf_arith_product(const _qf_arith *h, double a, double b)
{
    double t = a * b; /* exact: inputs of at most 24 significant bits each */
    return h->pf > 0 ? round_bits(t, h->pf, h->pround) : t;
}

double _qf_arith_node(const _qf_arith *h, const double *v, int n)
{
    int emax = INT32_MIN, e, shift, sign, top, drop = 0, spec = 0;
    double special = 0, out;
    __int128 s = 0;
    unsigned __int128 mag, keep;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            special = spec ? special + v[i] : v[i];
            spec = 1;
        } else if (v[i] != 0) {
            frexp(v[i], &e);
            if (e - 1 > emax)
                emax = e - 1;
        }
    }
    if (spec)
        return special;
    if (emax == INT32_MIN)
        return 0.0;
    shift = h->F - emax;
    for (int i = 0; i < n; i++) {
        double y;
        if (v[i] == 0)
            continue;
        y = ldexp(v[i], shift);
        switch (h->F >= _QF_F_EXACT ? QF_PROBE_ALIGN_TRUNCATE : h->align) {
        case QF_PROBE_ALIGN_FLOOR: y = (y == 0 && v[i] < 0) ? -1.0 : floor(y); break;
        case QF_PROBE_ALIGN_NEAREST: y = nearbyint(y); break;
        default: y = trunc(y); break;
        }
        s += (__int128)y;
    }
    if (s == 0)
        return 0.0;
    sign = s < 0;
    mag = sign ? (unsigned __int128)(-s) : (unsigned __int128)s;
    top = 127;
    while (!((mag >> top) & 1))
        top--;
    keep = mag;
    if (top > h->acc) {
        unsigned __int128 rest, half;
        drop = top - h->acc;
        rest = mag & (((unsigned __int128)1 << drop) - 1);
        half = (unsigned __int128)1 << (drop - 1);
        keep = mag >> drop;
        if (h->round == QF_ROUND_RNE && (rest > half || (rest == half && (keep & 1))))
            keep++;
    }
    out = ldexp((double)(uint64_t)keep, drop - shift);
    if (out > FLT_MAX)
        out = h->round == QF_ROUND_RTZ ? (double)FLT_MAX : INFINITY;
    if (h->flush_out && out < FLT_MIN)
        out = 0;
    return sign ? -out : out;
}

static double eval_node(const _qf_arith *h, const _qf_arith *outer, const _qf_tree *t, int v, const double *a,
                        const double *b)
{
    double buf[64] = {0}, *w = buf, r;
    int n = t->nch[v];
    if (t->leaf[v] >= 0) {
        double x = _qf_arith_product(h, a[t->leaf[v]], b[t->leaf[v]]);
        return h->flush_out && fabs(x) < FLT_MIN ? 0.0 : x;
    }
    if (n > 64 && !(w = malloc((size_t)n * sizeof *w)))
        return NAN;
    for (int i = 0; i < n; i++)
        w[i] = eval_node(h, outer, t, t->ch[v][i], a, b);
    if (h->leaf_round && n == 2 && t->leaf[t->ch[v][0]] >= 0 && t->leaf[t->ch[v][1]] >= 0) {
        /* the first term of a chain (acc = 0 + x: one rounding of its own), or both */
        int first = t->leaf[t->ch[v][0]] < t->leaf[t->ch[v][1]] ? 0 : 1;
        for (int i = 0; i < 2; i++)
            if (h->leaf_round == 2 || i == first)
                w[i] = _qf_arith_node(h, &w[i], 1);
    }
    r = _qf_arith_node(outer && n == 2 ? outer : h, w, n);
    if (w != buf)
        free(w);
    return r;
}

double _qf_arith_tree(const _qf_arith *h, const _qf_arith *outer, const _qf_tree *t, const double *a,
                      const double *b)
{
    double one[1];
    if (t->root < 0)
        return NAN;
    if (t->leaf[t->root] >= 0) {
        one[0] = _qf_arith_product(h, a[t->root], b[t->root]);
        return _qf_arith_node(h, one, 1);
    }
    return eval_node(h, outer, t, t->root, a, b);
}

_qf_arith _qf_arith_of(const qf_probe_result *r)
{
    _qf_arith h;
    memset(&h, 0, sizeof h);
    h.F = r->align == QF_PROBE_ALIGN_EXACT ? _QF_F_EXACT : r->align_frac_bits;
    h.align = r->align;
    h.acc = r->acc_frac_bits;
    h.round = r->acc_round;
    h.flush_out = r->flush_out == 1;
    h.leaf_round = r->leaf_round;
    if (r->product_frac_bits > 0) {
        h.pf = r->product_frac_bits;
        h.pround = QF_ROUND_RTZ;
    } else if (r->fma == 0) {
        h.pf = r->acc_frac_bits;
        h.pround = r->acc_round;
    }
    return h;
}

/* ---- The experiments ------------------------------------------------------ */

typedef struct exps {
    int c;          /* values per vector (children of the node) */
    size_t n, cap;
    double *v;      /* n x c child values */
    double *a2, *b2;/* n x c: product operands when given (phase 2), else NULL */
    double *got;
} exps;

static int exp_add(exps *x, const double *v, const double *a, const double *b)
{
    if (x->n == x->cap) {
        size_t nc = x->cap ? 2 * x->cap : 256;
        double *nv = realloc(x->v, nc * (size_t)x->c * sizeof *nv), *na, *nb;
        if (!nv)
            return -1;
        x->v = nv;
        if (!(na = realloc(x->a2, nc * (size_t)x->c * sizeof *na)))
            return -1;
        x->a2 = na;
        if (!(nb = realloc(x->b2, nc * (size_t)x->c * sizeof *nb)))
            return -1;
        x->b2 = nb;
        x->cap = nc;
    }
    memcpy(x->v + x->n * (size_t)x->c, v, (size_t)x->c * sizeof *v);
    for (int i = 0; i < x->c; i++) {
        x->a2[x->n * (size_t)x->c + (size_t)i] = a ? a[i] : NAN;
        x->b2[x->n * (size_t)x->c + (size_t)i] = b ? b[i] : NAN;
    }
    x->n++;
    return 0;
}

static void exps_free(exps *x)
{
    free(x->v);
    free(x->a2);
    free(x->b2);
    free(x->got);
    memset(x, 0, sizeof *x);
}

/* Run the experiments at node v of t: child i's value on its smallest leaf. */
static int exps_run(_qf_pb *p, const _qf_tree *t, int v, exps *x)
{
    size_t K = p->K, q;
    double *a = calloc(x->n * K, sizeof *a), *b = malloc(x->n * K * sizeof *b), *res;
    int rc = 0;
    res = malloc(x->n * p->cols * sizeof *res);
    x->got = malloc(x->n * sizeof *x->got);
    if (!a || !b || !res || !x->got) {
        rc = -1;
        goto out;
    }
    for (q = 0; q < x->n * K; q++)
        b[q] = 1;
    for (q = 0; q < x->n && rc == 0; q++)
        for (int i = 0; i < x->c; i++) {
            int leaf = _qf_tree_min_leaf(t, t->ch[v][i]);
            double va, vb, val = x->v[q * (size_t)x->c + (size_t)i];
            if (!isnan(x->a2[q * (size_t)x->c + (size_t)i])) {
                va = x->a2[q * (size_t)x->c + (size_t)i];
                vb = x->b2[q * (size_t)x->c + (size_t)i];
            } else if (_qf_pb_split(p, val, &va, &vb)) {
                rc = -1;
                snprintf(p->err, sizeof p->err, "probe bug: %g is no product of %s and %s values", val,
                         p->fa->name, p->fb->name);
                break;
            }
            a[q * K + (size_t)leaf] = va;
            b[q * K + (size_t)leaf] = vb;
        }
    if (rc == 0)
        rc = _qf_pb_eval(p, x->n, a, b, 0, p->threads, res);
    for (q = 0; q < x->n && rc == 0; q++)
        x->got[q] = res[q * p->cols];
out:
    free(a);
    free(b);
    free(res);
    return rc;
}

static double to_out(const _qf_pb *p, double v)
{
    return qf_format_decode(p->fo, qf_format_encode(p->fo, v, QF_ROUND_RNE, 0, 0, 0));
}

/* Does h reproduce every experiment (products from a2 * b2 when given)? */
static int fits(const _qf_pb *p, const _qf_arith *h, const exps *x, size_t *first_bad)
{
    double w[1100];
    for (size_t q = 0; q < x->n; q++) {
        double r;
        for (int i = 0; i < x->c; i++) {
            double a = x->a2[q * (size_t)x->c + (size_t)i];
            w[i] = isnan(a) ? x->v[q * (size_t)x->c + (size_t)i]
                            : _qf_arith_product(h, a, x->b2[q * (size_t)x->c + (size_t)i]);
        }
        r = to_out(p, _qf_arith_node(h, w, x->c));
        if (!(r == x->got[q] || (isnan(r) && isnan(x->got[q])))) {
            if (first_bad)
                *first_bad = q;
            return 0;
        }
    }
    return 1;
}

static int pow2_exp(double x)
{
    int e;
    frexp(x, &e);
    return e - 1;
}

/* Representable as a product of an A and a B value (and every value of v)? */
static int all_split(const _qf_pb *p, const double *v, int c)
{
    double a, b;
    for (int i = 0; i < c; i++)
        if (v[i] != 0 && _qf_pb_split(p, v[i], &a, &b))
            return 0;
    return 1;
}

static void vec_text(const double *v, int c, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = 0;
    for (int i = 0; i < c && pos < size; i++) {
        int w;
        if (v[i] == 0)
            continue;
        w = snprintf(buf + pos, size - pos, "%s%s2^%d*%g", pos ? ", " : "", v[i] < 0 ? "-" : "",
                     pow2_exp(fabs(v[i])), fabs(v[i]) / ldexp(1.0, pow2_exp(fabs(v[i]))));
        pos += w > 0 ? (size_t)w : 0;
    }
}

typedef struct node_fit_t {
    int F, accmin, accmax, round_known;
    qf_probe_align align;
    qf_round round;
} node_fit_t;

/* Design the vectors for node v, run them, and keep the candidates that fit. */
static int node_fit(_qf_pb *p, qf_probe_result *r, const _qf_tree *t, int v, node_fit_t *res, int say)
{
    exps x;
    int c, E, D, emin, rc = 0;
    int Fok[_QF_F_EXACT + 1][3], nfit = 0, Fmax = -1, accmin = 99, accmax = -1, round_ok[2] = {0, 0};
    double vec[1100];
    uint64_t rs = r->seed ^ 0x6d6d61ull;
    const int aligns[3] = {QF_PROBE_ALIGN_TRUNCATE, QF_PROBE_ALIGN_FLOOR, QF_PROBE_ALIGN_NEAREST};
    memset(&x, 0, sizeof x);
    memset(Fok, 0, sizeof Fok);
    if (v < 0 || t->leaf[v] >= 0) {
        snprintf(p->err, sizeof p->err, "no internal node to test (K = 1)");
        return -1;
    }
    c = t->nch[v];
    if (c > 1024)
        c = 1024;
    x.c = c;
    /* E: two binades below the largest product of powers of two, at most 2^60 */
    E = pow2_exp(p->fa->max) + pow2_exp(p->fb->max) - 1;
    if (E > 60)
        E = 60;
    /* sums up to 2^(E+6) must fit the output format, 2^(E-D) be normal there */
    if (E > pow2_exp(p->fo->max) - 6)
        E = pow2_exp(p->fo->max) - 6;
    emin = pow2_exp(r->flush_in == 1 || !p->fa->has_subnormal ? p->fa->min_normal : p->fa->min_subnormal) +
           pow2_exp(r->flush_in == 1 || !p->fb->has_subnormal ? p->fb->min_normal : p->fb->min_subnormal);
    if (emin < -120)
        emin = -120;
    if (emin < pow2_exp(p->fo->min_normal))
        emin = pow2_exp(p->fo->min_normal);
    D = E - emin;
    if (D > 44)
        D = 44;
    /* the designed vectors */
    for (int d = 1; d <= D; d++) {
        static const double ms[] = {1, -1, 1.5, -1.5, 0.75, -0.75, -0.25, 1.25};
        for (size_t m = 0; m < sizeof ms / sizeof ms[0]; m++) {
            memset(vec, 0, sizeof vec);
            vec[0] = ldexp(1.0, E);
            vec[1] = ms[m] * ldexp(1.0, E - d);
            if (all_split(p, vec, c) && exp_add(&x, vec, NULL, NULL))
                goto oom;
            if (c >= 3) {
                vec[1] = -ldexp(1.0, E);
                vec[2] = ms[m] * ldexp(1.0, E - d);
                if (all_split(p, vec, c) && exp_add(&x, vec, NULL, NULL))
                    goto oom;
            }
        }
        /* carries: g copies of 2^E and two small terms */
        for (int g = 2; g < c && g <= 33; g++) {
            memset(vec, 0, sizeof vec);
            for (int i = 0; i < g; i++)
                vec[i] = ldexp(1.0, E);
            vec[g] = ldexp(1.0, E - d);
            if (g + 1 < c)
                vec[g + 1] = ldexp(1.0, E - d - 1);
            if (all_split(p, vec, c) && exp_add(&x, vec, NULL, NULL))
                goto oom;
            vec[g] = -vec[g];
            if (all_split(p, vec, c) && exp_add(&x, vec, NULL, NULL))
                goto oom;
        }
    }
    for (int q = 0; q < 300; q++) {
        static const double ms[] = {1, 1.5, 1.25, 1.75};
        int span = D < 30 ? D : 30;
        for (int i = 0; i < c; i++) {
            uint64_t u = qf_rng_u64(rs, (uint64_t)q * 1024 + (uint64_t)i);
            vec[i] = (u & 7) < 2 ? 0.0
                                 : ((u >> 3) & 1 ? -1 : 1) * ms[(u >> 4) & 3] * ldexp(1.0, E - (int)((u >> 8) % (uint64_t)(span + 1)));
        }
        if (all_split(p, vec, c) && exp_add(&x, vec, NULL, NULL))
            goto oom;
    }
    if ((rc = exps_run(p, t, v, &x)))
        goto out;
    /* eliminate */
    for (int F = 1; F <= _QF_F_EXACT; F++) {
        if (F > D + 2 && F < _QF_F_EXACT)
            continue;
        for (int al = 0; al < (F == _QF_F_EXACT ? 1 : 3); al++)
            for (int acc = 1; acc <= 23; acc++)
                for (int rd = 0; rd < 2; rd++) {
                    _qf_arith h = {.F = F, .align = aligns[al], .acc = acc,
                                   .round = rd ? QF_ROUND_RNE : QF_ROUND_RTZ, .flush_out = r->flush_out == 1};
                    if (!fits(p, &h, &x, NULL))
                        continue;
                    nfit++;
                    Fok[F][al] = 1;
                    if (F > Fmax)
                        Fmax = F;
                }
    }
    if (!nfit) {
        rc = -1;
        snprintf(p->err, sizeof p->err,
                 "node %d: no candidate arithmetic (alignment 1..%d bits or exact, truncate/floor/nearest, accumulator "
                 "1..23 bits, RTZ/RNE) reproduces the %zu node experiments",
                 v, D + 2, x.n);
        goto out;
    }
    if (Fok[_QF_F_EXACT][0]) {
        res->align = QF_PROBE_ALIGN_EXACT;
        Fmax = _QF_F_EXACT;
    } else
        res->align = Fok[Fmax][0] ? QF_PROBE_ALIGN_TRUNCATE : Fok[Fmax][1] ? QF_PROBE_ALIGN_FLOOR : QF_PROBE_ALIGN_NEAREST;
    res->F = Fmax;
    for (int acc = 1; acc <= 23; acc++)
        for (int rd = 0; rd < 2; rd++) {
            int al = res->align == QF_PROBE_ALIGN_FLOOR ? 1 : res->align == QF_PROBE_ALIGN_NEAREST ? 2 : 0;
            _qf_arith h = {.F = Fmax, .align = aligns[al], .acc = acc, .round = rd ? QF_ROUND_RNE : QF_ROUND_RTZ,
                           .flush_out = r->flush_out == 1};
            if (fits(p, &h, &x, NULL)) {
                if (acc < accmin)
                    accmin = acc;
                if (acc > accmax)
                    accmax = acc;
            }
        }
    for (int rd = 0; rd < 2; rd++) {
        int al = res->align == QF_PROBE_ALIGN_FLOOR ? 1 : res->align == QF_PROBE_ALIGN_NEAREST ? 2 : 0;
        _qf_arith h = {.F = Fmax, .align = aligns[al], .acc = accmax, .round = rd ? QF_ROUND_RNE : QF_ROUND_RTZ,
                       .flush_out = r->flush_out == 1};
        round_ok[rd] = fits(p, &h, &x, NULL);
    }
    res->accmax = accmax;
    res->accmin = accmin;
    res->round_known = !(round_ok[0] && round_ok[1]);
    res->round = round_ok[0] ? QF_ROUND_RTZ : QF_ROUND_RNE;
    if (say) {
        /* evidence: the decisive vectors for F and the rounding */
        char vt[200];
        size_t bad;
        _qf_arith h = {.F = Fmax, .align = res->align, .acc = accmax, .round = res->round,
                       .flush_out = r->flush_out == 1};
        if (Fmax != _QF_F_EXACT) {
            _qf_arith h2 = h;
            h2.F = Fmax + 1;
            if (!fits(p, &h2, &x, &bad)) {
                vec_text(x.v + bad * (size_t)c, c, vt, sizeof vt);
                _qf_pb_evidence(r, "alignment: [%s] -> %.17g (keeping %d bits would give %.17g)", vt, x.got[bad], Fmax + 1,
                                to_out(p, _qf_arith_node(&h2, x.v + bad * (size_t)c, c)));
            }
        }
        if (res->round_known) {
            _qf_arith h2 = h;
            h2.round = h.round == QF_ROUND_RTZ ? QF_ROUND_RNE : QF_ROUND_RTZ;
            if (!fits(p, &h2, &x, &bad)) {
                vec_text(x.v + bad * (size_t)c, c, vt, sizeof vt);
                _qf_pb_evidence(r, "accumulator rounding: [%s] -> %.17g (%s would give %.17g)", vt, x.got[bad],
                                qf_round_name(h2.round), to_out(p, _qf_arith_node(&h2, x.v + bad * (size_t)c, c)));
            }
        }
        if (accmax < 23) {
            _qf_arith h2 = h;
            h2.acc = accmax + 1;
            if (!fits(p, &h2, &x, &bad)) {
                vec_text(x.v + bad * (size_t)c, c, vt, sizeof vt);
                _qf_pb_evidence(r, "accumulator width: [%s] -> %.17g (%d fraction bits would give %.17g)", vt, x.got[bad],
                                accmax + 1, to_out(p, _qf_arith_node(&h2, x.v + bad * (size_t)c, c)));
            }
        }
        _qf_pb_evidence(r, "node arithmetic: %zu experiments at a node of %d children (terms 2^%d down to 2^%d); %d "
                           "candidate arithmetics fit",
                        x.n, c, E, E - D, nfit);
    }
out:
    exps_free(&x);
    return rc;
oom:
    exps_free(&x);
    snprintf(p->err, sizeof p->err, "out of memory");
    return -1;
}

/* Accumulator width and rounding over the whole tree: one node's output
 * reaches the output format in one rounding, so an accumulator as narrow as
 * the output hides there; chains of roundings (sparse random terms on
 * random leaves) show it.  Narrows [accmin, accmax] and the rounding. */
static int tree_refine(_qf_pb *p, qf_probe_result *r, const _qf_tree *t, node_fit_t *nf)
{
    size_t K = p->K, nq = 200, q;
    double *a = calloc(nq * K, sizeof *a), *b = malloc(nq * K * sizeof *b), *res = malloc(nq * p->cols * sizeof *res);
    uint64_t rs = r->seed ^ 0x7265ull;
    int rc = -1, best = -1, lo = 99;
    int okr[2] = {0, 0};
    if (!a || !b || !res)
        goto out;
    for (q = 0; q < nq * K; q++)
        b[q] = 1;
    for (q = 0; q < nq; q++)
        for (int s = 0; s < 6; s++) {
            /* short significands; every other vector ends with the
             * negation of its first term, so that what the accumulator
             * rounded away shows through a narrower output */
            uint64_t u = qf_rng_u64(rs, q * 8 + (uint64_t)s), u0 = qf_rng_u64(rs, q * 8);
            static const double ms[] = {1, 1.5, 1.25, 1.75};
            /* even vectors: terms 2^0 .. 2^-13; odd ones: a first term near
             * 1, terms 2^-18 .. 2^-29, then the first term negated */
            int ex = q % 2 == 0 ? (int)((u >> 4) % 14) : s == 0 ? (int)((u >> 4) % 3) : 18 + (int)((u >> 4) % 12);
            double v = ((u >> 1) & 1 ? -1 : 1) * ms[(u >> 2) & 3] * ldexp(1.0, -ex);
            size_t leaf = (size_t)((u >> 20) % K);
            if (s == 5 && q % 2) {
                v = -(((u0 >> 1) & 1 ? -1 : 1) * ms[(u0 >> 2) & 3] * ldexp(1.0, -(int)((u0 >> 4) % 3)));
                leaf = K - 1 - (size_t)((u >> 20) % (K / 4 + 1));
            }
            double va, vb;
            if (_qf_pb_split(p, v, &va, &vb) == 0) {
                a[q * K + leaf] = va;
                b[q * K + leaf] = vb;
            }
        }
    if (_qf_pb_eval(p, nq, a, b, 0, p->threads, res))
        goto out;
    for (int acc = nf->accmin; acc <= nf->accmax; acc++)
        for (int rd = 0; rd < 2; rd++) {
            _qf_arith h = {.F = nf->F, .align = nf->align, .acc = acc, .round = rd ? QF_ROUND_RNE : QF_ROUND_RTZ,
                           .flush_out = r->flush_out == 1};
            int fit = 1;
            if (nf->round_known && h.round != nf->round)
                continue;
            for (q = 0; q < nq && fit; q++) {
                double w = to_out(p, _qf_arith_tree(&h, NULL, t, a + q * K, b + q * K));
                fit = w == res[q * p->cols] || (isnan(w) && isnan(res[q * p->cols]));
            }
            if (fit) {
                if (acc > best)
                    best = acc;
                if (acc < lo)
                    lo = acc;
                okr[rd] = 1;
            }
        }
    if (best >= 0) {
        if (best != nf->accmax || lo != nf->accmin)
            _qf_pb_evidence(r, "accumulator over the whole tree: %zu sparse random vectors (seed %llu) leave %d..%d "
                               "fraction bits (one node alone: %d..%d)",
                            nq, (unsigned long long)r->seed, lo, best, nf->accmin, nf->accmax);
        nf->accmax = best;
        nf->accmin = lo;
        if (!nf->round_known && okr[0] != okr[1]) {
            nf->round_known = 1;
            nf->round = okr[0] ? QF_ROUND_RTZ : QF_ROUND_RNE;
        }
    }
    rc = 0;
out:
    free(a);
    free(b);
    free(res);
    return rc;
}

int _qf_mma_probe(_qf_pb *p, qf_probe_result *r, const _qf_tree *t)
{
    exps x;
    int v = _qf_tree_top_node(t, 3), rc = 0;
    double vec[1100];
    uint64_t rs = r->seed ^ 0x6d6d61ull;
    node_fit_t nf;
    memset(&x, 0, sizeof x);
    if (v < 0)
        v = t->root;
    if ((rc = node_fit(p, r, t, v, &nf, 1)))
        return rc;
    if ((nf.accmin != nf.accmax || !nf.round_known) && (rc = tree_refine(p, r, t, &nf)))
        return rc;
    r->block = 0;
    for (int i = 0; i < t->nch[v]; i++)
        r->block += t->leaf[t->ch[v][i]] >= 0;
    if (t->nch[v] <= 2 && r->block <= 2)
        r->block = 1; /* two-term additions; a fused node's leaf children are its block */
    r->align = nf.align;
    r->align_frac_bits = nf.align == QF_PROBE_ALIGN_EXACT ? 0 : nf.F;
    r->acc_frac_bits = nf.accmax;
    r->acc_frac_min = nf.accmin;
    r->acc_round_known = nf.round_known;
    r->acc_round = nf.round;
    r->outer = 0;
    if (v != t->root && t->nch[t->root] == 2) {
        /* the two-term additions above the fused nodes (promotion) */
        node_fit_t of;
        if ((rc = node_fit(p, r, t, t->root, &of, 0)))
            return rc;
        if (of.align != nf.align || of.accmax != nf.accmax || of.round != nf.round) {
            r->outer = 1;
            r->outer_acc = of.accmax;
            r->outer_round = of.round;
            _qf_pb_evidence(r, "the two-term additions above the fused nodes: exact alignment, %d fraction bits, %s", of.accmax,
                            of.round_known ? qf_round_name(of.round) : "RTZ and RNE both fit");
        }
    }

    /* ---- products: a leaf child of a node against -RN_A(a b) ---------------- */
    {
        int v2 = _qf_tree_leafy_node(t), li = -1, oi = -1, pbits = p->fa->man_bits + p->fb->man_bits + 1;
        _qf_arith base = _qf_arith_of(r);
        int exact_ok, best_pf = 0, unfused_ok;
        base.pf = 0;
        if (v2 < 0) {
            r->fma = QF_PROBE_UNOBSERVABLE;
            goto out;
        }
        for (int i = 0; i < t->nch[v2]; i++) {
            if (t->leaf[t->ch[v2][i]] >= 0 && li < 0)
                li = i;
            else if (oi < 0)
                oi = i;
        }
        x.c = t->nch[v2] > 1024 ? 1024 : t->nch[v2];
        for (int q = 0; q < 200; q++) {
            double av[1100], bv[1100], a, b, pr;
            uint64_t u = qf_rng_u64(rs, 1000000u + (uint64_t)q);
            int ea = (int)(u % 3) - 1, eb = (int)((u >> 2) % 3) - 1;
            /* a, b with random full significands */
            a = ldexp(1.0 + ldexp((double)((u >> 8) & ((1ull << p->fa->man_bits) - 1)), -p->fa->man_bits), ea);
            b = ldexp(1.0 + ldexp((double)((u >> 32) & ((1ull << p->fb->man_bits) - 1)), -p->fb->man_bits), eb);
            if (q & 1)
                a = -a;
            pr = a * b;
            for (int i = 0; i < x.c; i++) {
                av[i] = bv[i] = NAN;
                vec[i] = 0;
            }
            av[li] = a;
            bv[li] = b;
            vec[li] = pr;
            if (oi >= 0 && q % 4 != 3) {
                /* cancel the top bits with a value of format A (b = 1) */
                /* a value the accumulator holds exactly (it may pass through a subtree first) */
                int cb = p->fa->man_bits < r->acc_frac_bits ? p->fa->man_bits : r->acc_frac_bits;
                double cv = -round_bits(pr, cb, q % 4 == 2 ? QF_ROUND_RTZ : QF_ROUND_RNE);
                if (isfinite(cv) && qf_format_decode(p->fa, qf_format_encode(p->fa, cv, QF_ROUND_RNE, 0, 0, 0)) == cv) {
                    av[oi] = cv;
                    bv[oi] = 1;
                    vec[oi] = cv;
                }
            }
            for (int i = 0; i < x.c; i++)
                if (isnan(av[i])) {
                    av[i] = 0;
                    bv[i] = 1;
                }
            if (exp_add(&x, vec, av, bv))
                goto oom;
        }
        if ((rc = exps_run(p, t, v2, &x)))
            goto out;
        exact_ok = fits(p, &base, &x, NULL);
        {
            _qf_arith h = base;
            h.pf = r->acc_frac_bits;
            h.pround = r->acc_round;
            unfused_ok = fits(p, &h, &x, NULL);
        }
        if (!exact_ok)
            for (int pf = pbits; pf >= 1; pf--) {
                _qf_arith h = base;
                h.pf = pf;
                h.pround = QF_ROUND_RTZ;
                if (fits(p, &h, &x, NULL)) {
                    best_pf = pf;
                    break;
                }
            }
        if (exact_ok) {
            r->product_frac_bits = 0;
            r->fma = unfused_ok ? QF_PROBE_UNOBSERVABLE : 1;
            _qf_pb_evidence(r, "products: %zu wide products a*b against -RN(a*b): exact (%s)", x.n,
                            unfused_ok ? "rounding them to the accumulator first changes nothing here"
                                       : "rounded to the accumulator first they would differ: fused");
        } else if (unfused_ok && r->block <= 1) {
            r->product_frac_bits = 0;
            r->fma = 0;
            _qf_pb_evidence(r, "products: rounded to the accumulator (%d bits, %s) before the addition: unfused "
                               "multiply-add",
                            r->acc_frac_bits, qf_round_name(r->acc_round));
        } else if (best_pf) {
            r->product_frac_bits = best_pf;
            r->fma = 0;
            _qf_pb_evidence(r, "products: truncated to %d fraction bits", best_pf);
        } else {
            r->product_frac_bits = 0;
            r->fma = QF_PROBE_UNOBSERVABLE;
            _qf_pb_evidence(r, "products: no candidate (exact, truncated, rounded to the accumulator) fits");
        }
    }
out:
    exps_free(&x);
    return rc;
oom:
    exps_free(&x);
    snprintf(p->err, sizeof p->err, "out of memory");
    return -1;
}
