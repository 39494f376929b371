/* gemm.c: exact GEMM / GEMV references on the exact dot engine.
 *
 * Each output element is one exact accumulator: sum_l a_il b_lj by the
 * fast path (qf_dot_acc_add_dot), scaled exactly by alpha, plus beta c_ij
 * as an exact product, rounded once.  Elements are independent, so the
 * OpenMP schedule cannot change a bit.
 *
 * Work is cut into tiles of IT rows x JT columns over every problem of the
 * batch (or group) at once.  A tile packs the rows of op(A) and the columns
 * of op(B) it needs into contiguous buffers when they are strided, sized so
 * that the A panel stays in L2 while one B column is reused from L1.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "_gemm.h"
#include "qf_dot.h"
#include "qf_ref.h"

typedef _qf_gemm_prob prob;

qf_gemm_desc qf_gemm_desc_default(void)
{
    qf_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.layout = QF_ROW_MAJOR;
    d.trans_a = d.trans_b = QF_NO_TRANS;
    d.alpha = 1.0;
    d.beta = 0.0;
    d.batch = 1;
    d.round = QF_ROUND_RNE;
    d.random_bits = 32;
    return d;
}

/* Strides of element (r, c) of a stored matrix. */
static void strides(qf_layout lay, size_t ld, ptrdiff_t *rs, ptrdiff_t *cs)
{
    if (lay == QF_ROW_MAJOR) {
        *rs = (ptrdiff_t)ld;
        *cs = 1;
    } else {
        *rs = 1;
        *cs = (ptrdiff_t)ld;
    }
}

/* Is ld valid for a stored rows x cols matrix? */
static int ld_ok(qf_layout lay, size_t ld, size_t rows, size_t cols)
{
    size_t need = lay == QF_ROW_MAJOR ? cols : rows;
    return ld >= (need ? need : 1);
}

static int wants_output(const qf_gemm_desc *d)
{
    return d->d_code || d->d_value || d->d_abs || d->d_err || d->d_status;
}

static qf_status check_rounding(const qf_gemm_desc *d)
{
    const qf_format *out = d->out ? d->out : qf_format_get(QF_FLOAT64);
    if ((unsigned)d->round >= QF_ROUND_COUNT || !qf_round_valid(out, d->round))
        return QF_EFORMAT;
    if (d->round == QF_ROUND_STOCHASTIC && (d->random_bits < 1 || d->random_bits > 32))
        return QF_EINVAL;
    if (d->d_err && !d->cand)
        return QF_EINVAL;
    return QF_OK;
}

/* ---- One element ------------------------------------------------------------ */

static void element_acc(const qf_gemm_desc *d, const prob *p, const double *x, ptrdiff_t incx,
                        const double *y, ptrdiff_t incy, size_t i, size_t j, qf_dot_acc *acc, qf_dot_acc *abs)
{
    qf_dot_acc_clear(acc);
    if (abs)
        qf_dot_acc_clear(abs);
    if (d->alpha != 0 && p->k > 0) {
        qf_dot_acc_add_dot(acc, abs, p->k, x, incx, y, incy, d->fa, d->fb);
        if (d->alpha != 1) {
            /* never out of range: alpha times a sum of two-double products */
            (void)qf_dot_acc_scale(acc, d->alpha);
            if (abs)
                (void)qf_dot_acc_scale(abs, fabs(d->alpha));
        }
    }
    if (d->beta != 0) {
        double c = p->c[(ptrdiff_t)i * p->rsc + (ptrdiff_t)j * p->csc];
        qf_dot_acc_add_product(acc, d->beta, c);
        if (abs)
            qf_dot_acc_add_product(abs, fabs(d->beta), fabs(c));
    }
}

/* The qf_ref_status of an element whose exact value is in acc and whose
 * rounded value is v (a binary64 decoding of its code, exact for every
 * format).  Exactness is the sign of acc - v, formed exactly: comparing
 * through the binary64 error would miss differences below 2^-1075.  acc
 * keeps its value (v is added back, exactly). */
qf_ref_status qf_dot_acc_status(qf_dot_acc *acc, double v)
{
    int sg, ex, sticky, diff;
    uint64_t sig;
    qf_dot_class cls = qf_dot_acc_parts(acc, &sg, &ex, &sig, &sticky);
    if (cls == QF_DOT_NAN)
        return QF_REF_UNDEFINED;
    if (cls == QF_DOT_POS_INF || cls == QF_DOT_NEG_INF)
        return isinf(v) && (v > 0) == (cls == QF_DOT_POS_INF) ? QF_REF_EXACT : QF_REF_ROUNDED;
    if (!isfinite(v))
        return QF_REF_ROUNDED; /* a finite value overflowed to Inf or NaN */
    qf_dot_acc_sub_d(acc, v);
    diff = qf_dot_acc_sign(acc);
    qf_dot_acc_add_d(acc, v);
    return diff == 0 ? QF_REF_EXACT : QF_REF_ROUNDED;
}

static void element_out(const qf_gemm_desc *d, const prob *p, size_t i, size_t j, qf_dot_acc *acc,
                        qf_dot_acc *abs)
{
    const qf_format *out = d->out ? d->out : qf_format_get(QF_FLOAT64);
    ptrdiff_t o = p->off_d + (ptrdiff_t)i * p->rsd + (ptrdiff_t)j * p->csd;
    double v = 0;
    if (d->d_code || d->d_value || d->d_status) {
        uint64_t rw = d->round == QF_ROUND_STOCHASTIC ? qf_rng_u64(d->rnd_seed, p->lin0 + i * p->n + j) : 0;
        uint64_t code = qf_dot_acc_round(acc, out, d->round, d->saturate, d->random_bits, rw);
        v = qf_format_decode(out, code);
        if (d->d_code)
            d->d_code[o] = code;
        if (d->d_value)
            d->d_value[o] = v;
    }
    if (d->d_abs)
        d->d_abs[o] = qf_dot_acc_get_d(abs, QF_ROUND_UP);
    if (d->d_err)
        d->d_err[o] = qf_dot_acc_error(acc, d->cand[o]);
    if (d->d_status)
        d->d_status[o] = (uint8_t)qf_dot_acc_status(acc, v);
}

void _qf_gemm_exact_element(const qf_gemm_desc *d, const prob *p, size_t i, size_t j, qf_dot_acc *acc,
                            qf_dot_acc *abs)
{
    int use_a = d->alpha != 0 && p->k > 0;
    element_acc(d, p, use_a ? p->a + (ptrdiff_t)i * p->rsa : NULL, p->csa,
                use_a ? p->b + (ptrdiff_t)j * p->csb : NULL, p->rsb, i, j, acc, d->d_abs ? abs : NULL);
    element_out(d, p, i, j, acc, abs);
}

/* ---- The tiled engine ---------------------------------------------------------- */

static size_t tile_dim(size_t k)
{
    /* an IT x K panel of doubles near 256 KiB */
    size_t t = k ? 32768 / k : 256;
    return t < 4 ? 4 : t > 256 ? 256 : t;
}

static qf_status run_tiles(const qf_gemm_desc *d, const prob *pr, size_t np)
{
    size_t *first, ntiles = 0, q, kmax = 0, T = 0;
    int nt = d->threads > 0 ? d->threads : omp_get_max_threads(), failed = 0;
    int want_abs = d->d_abs != NULL;

    for (q = 0; q < np; q++)
        if (pr[q].k > kmax)
            kmax = pr[q].k;
    T = tile_dim(kmax);
    first = malloc((np + 1) * sizeof *first);
    if (!first)
        return QF_ENOMEM;
    for (;;) { /* smaller tiles until every thread has several */
        ntiles = 0;
        for (q = 0; q < np; q++) {
            first[q] = ntiles;
            ntiles += ((pr[q].m + T - 1) / T) * ((pr[q].n + T - 1) / T);
        }
        if (ntiles >= 8 * (size_t)nt || T <= 4)
            break;
        T /= 2;
    }
    first[np] = ntiles;
    if ((size_t)nt > ntiles)
        nt = ntiles ? (int)ntiles : 1;

#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        double *pa = malloc(T * (kmax ? kmax : 1) * sizeof *pa);
        double *pb = malloc(T * (kmax ? kmax : 1) * sizeof *pb);
        qf_dot_acc *acc = malloc(2 * sizeof *acc);
        long t;
        if (!pa || !pb || !acc)
            failed = 1;
        else {
            qf_dot_acc_init(&acc[0]);
            qf_dot_acc_init(&acc[1]);
        }
#pragma omp for schedule(dynamic, 1)
        for (t = 0; t < (long)ntiles; t++) {
            size_t lo = 0, hi = np, i, j, l, i0, j0, ib, jb, ntj;
            const prob *p;
            int pack_a, pack_b, use_a;
            if (failed)
                continue;
            while (hi - lo > 1) { /* the problem holding tile t */
                size_t mid = (lo + hi) / 2;
                if (first[mid] <= (size_t)t)
                    lo = mid;
                else
                    hi = mid;
            }
            while (lo + 1 < np && first[lo + 1] <= (size_t)t)
                lo++;
            p = &pr[lo];
            ntj = (p->n + T - 1) / T;
            i0 = ((size_t)t - first[lo]) / ntj * T;
            j0 = ((size_t)t - first[lo]) % ntj * T;
            ib = p->m - i0 < T ? p->m - i0 : T;
            jb = p->n - j0 < T ? p->n - j0 : T;
            use_a = d->alpha != 0 && p->k > 0;
            pack_a = use_a && p->csa != 1 && ib > 1;
            pack_b = use_a && p->rsb != 1 && jb > 1;
            if (pack_a)
                for (i = 0; i < ib; i++)
                    for (l = 0; l < p->k; l++)
                        pa[i * p->k + l] = p->a[(ptrdiff_t)(i0 + i) * p->rsa + (ptrdiff_t)l * p->csa];
            if (pack_b)
                for (j = 0; j < jb; j++)
                    for (l = 0; l < p->k; l++)
                        pb[j * p->k + l] = p->b[(ptrdiff_t)l * p->rsb + (ptrdiff_t)(j0 + j) * p->csb];
            for (j = 0; j < jb; j++) {
                const double *y = NULL;
                ptrdiff_t incy = 1;
                if (use_a) {
                    y = pack_b ? pb + j * p->k : p->b + (ptrdiff_t)(j0 + j) * p->csb;
                    incy = pack_b ? 1 : p->rsb;
                }
                for (i = 0; i < ib; i++) {
                    const double *x = NULL;
                    ptrdiff_t incx = 1;
                    if (use_a) {
                        x = pack_a ? pa + i * p->k : p->a + (ptrdiff_t)(i0 + i) * p->rsa;
                        incx = pack_a ? 1 : p->csa;
                    }
                    element_acc(d, p, x, incx, y, incy, i0 + i, j0 + j, &acc[0], want_abs ? &acc[1] : NULL);
                    element_out(d, p, i0 + i, j0 + j, &acc[0], &acc[1]);
                }
            }
        }
        free(pa);
        free(pb);
        free(acc);
    }
    free(first);
    return failed ? QF_ENOMEM : QF_OK;
}

/* A large problem whose rows of op(A) or columns of op(B) are strided is
 * first copied into contiguous rows (columns) once, so the tiles do not
 * gather the same panel again for every tile beside it; small problems,
 * and those whose copies would pass QF_GEMM_PACK_LIMIT bytes (default
 * 512 MiB; a debugging knob), gather per tile. */
static qf_status run(const qf_gemm_desc *d, const prob *pr, size_t np)
{
    const char *env = getenv("QF_GEMM_PACK_LIMIT");
    double limit = env && *env ? strtod(env, NULL) : 512.0 * 1024 * 1024;
    int nt = d->threads > 0 ? d->threads : omp_get_max_threads();
    prob *rest = malloc((np ? np : 1) * sizeof *rest);
    size_t q, nrest = 0;
    qf_status st = QF_OK;

    if (!rest)
        return QF_ENOMEM;
    for (q = 0; q < np && st == QF_OK; q++) {
        prob p = pr[q];
        int use = d->alpha != 0 && p.k > 0;
        int need_a = use && p.csa != 1 && p.m > 1, need_b = use && p.rsb != 1 && p.n > 1;
        double bytes = 8.0 * p.k * ((need_a ? (double)p.m : 0) + (need_b ? (double)p.n : 0));
        double *pa = NULL, *pb = NULL;
        if (!(need_a || need_b) || (double)p.m * p.n * p.k < 1048576.0 || bytes > limit) {
            rest[nrest++] = p;
            continue;
        }
        if (need_a)
            pa = malloc(p.m * p.k * sizeof *pa);
        if (need_b)
            pb = malloc(p.n * p.k * sizeof *pb);
        if ((need_a && !pa) || (need_b && !pb)) {
            free(pa);
            free(pb);
            rest[nrest++] = p; /* per-tile gathering needs far less */
            continue;
        }
        {
            long r;
#pragma omp parallel for num_threads(nt) schedule(static)
            for (r = 0; r < (long)(p.m > p.n ? p.m : p.n); r++) {
                size_t l;
                if (need_a && (size_t)r < p.m)
                    for (l = 0; l < p.k; l++)
                        pa[(size_t)r * p.k + l] = p.a[(ptrdiff_t)r * p.rsa + (ptrdiff_t)l * p.csa];
                if (need_b && (size_t)r < p.n)
                    for (l = 0; l < p.k; l++)
                        pb[(size_t)r * p.k + l] = p.b[(ptrdiff_t)l * p.rsb + (ptrdiff_t)r * p.csb];
            }
        }
        if (need_a) {
            p.a = pa;
            p.rsa = (ptrdiff_t)p.k;
            p.csa = 1;
        }
        if (need_b) {
            p.b = pb;
            p.csb = (ptrdiff_t)p.k;
            p.rsb = 1;
        }
        st = run_tiles(d, &p, 1);
        free(pa);
        free(pb);
    }
    if (st == QF_OK && nrest)
        st = run_tiles(d, rest, nrest);
    free(rest);
    return st;
}

/* ---- Describing the problems ------------------------------------------------------ */

/* Validate d and fill the problem list (*pr, *np; caller frees). */
static qf_status build(const qf_gemm_desc *d, prob **pr_out, size_t *np_out)
{
    size_t nb = d->batch ? d->batch : 1, g, mtot, r0;
    ptrdiff_t rsa, csa, rsb, csb, rsc = 0, csc = 0, rsd = 0, csd = 0;
    int read_ab = d->alpha != 0 && d->k > 0, read_c = d->beta != 0;
    size_t ar, ac, br, bc;
    prob *pr;
    qf_status st;

    *pr_out = NULL;
    *np_out = 0;
    if ((d->layout != QF_ROW_MAJOR && d->layout != QF_COL_MAJOR) ||
        (d->trans_a != QF_NO_TRANS && d->trans_a != QF_TRANS) ||
        (d->trans_b != QF_NO_TRANS && d->trans_b != QF_TRANS))
        return QF_EINVAL;
    if ((st = check_rounding(d)) != QF_OK)
        return st;
    mtot = d->m;
    if (d->group_m) {
        mtot = 0;
        for (g = 0; g < nb; g++)
            mtot += d->group_m[g];
    }
    /* stored shapes (all rows when grouped) */
    ar = d->trans_a ? d->k : mtot;
    ac = d->trans_a ? mtot : d->k;
    br = d->trans_b ? d->n : d->k;
    bc = d->trans_b ? d->k : d->n;
    if (mtot == 0 || d->n == 0 || !wants_output(d))
        return QF_OK;
    if (read_ab && (!d->a || !d->b || !ld_ok(d->layout, d->lda, ar, ac) || !ld_ok(d->layout, d->ldb, br, bc)))
        return QF_EINVAL;
    if (read_c && (!d->c || !ld_ok(d->layout, d->ldc, mtot, d->n)))
        return QF_EINVAL;
    if (!ld_ok(d->layout, d->ldd, mtot, d->n))
        return QF_EINVAL;

    strides(d->layout, d->lda, &rsa, &csa);
    if (d->trans_a) { /* op(A)(i, l) = A(l, i) */
        ptrdiff_t t = rsa;
        rsa = csa;
        csa = t;
    }
    strides(d->layout, d->ldb, &rsb, &csb);
    if (d->trans_b) {
        ptrdiff_t t = rsb;
        rsb = csb;
        csb = t;
    }
    if (read_c)
        strides(d->layout, d->ldc, &rsc, &csc);
    strides(d->layout, d->ldd, &rsd, &csd);

    pr = calloc(nb, sizeof *pr);
    if (!pr)
        return QF_ENOMEM;
    r0 = 0;
    for (g = 0; g < nb; g++) {
        prob *p = &pr[g];
        p->m = d->group_m ? d->group_m[g] : d->m;
        p->n = d->n;
        p->k = d->k;
        p->rsa = rsa;
        p->csa = csa;
        p->rsb = rsb;
        p->csb = csb;
        p->rsc = rsc;
        p->csc = csc;
        p->rsd = rsd;
        p->csd = csd;
        if (d->group_m) {
            p->a = read_ab ? d->a + (ptrdiff_t)r0 * rsa : NULL;
            p->c = read_c ? d->c + (ptrdiff_t)r0 * rsc : NULL;
            p->off_d = (ptrdiff_t)r0 * rsd;
            p->lin0 = (uint64_t)r0 * d->n;
        } else {
            p->a = read_ab ? d->a + (ptrdiff_t)g * d->stride_a : NULL;
            p->c = read_c ? d->c + (ptrdiff_t)g * d->stride_c : NULL;
            p->off_d = (ptrdiff_t)g * d->stride_d;
            p->lin0 = (uint64_t)g * d->m * d->n;
        }
        p->b = read_ab ? d->b + (ptrdiff_t)g * d->stride_b : NULL;
        r0 += p->m;
    }
    *pr_out = pr;
    *np_out = nb;
    return QF_OK;
}

qf_status qf_gemm(const qf_gemm_desc *d)
{
    prob *pr;
    size_t np, q, total = 0, n_exact = 0;
    qf_status st;
    if (!d)
        return QF_EINVAL;
    st = build(d, &pr, &np);
    if (st == QF_OK && d->stats)
        memset(d->stats, 0, sizeof *d->stats);
    if (st != QF_OK || !pr)
        return st;
    for (q = 0; q < np; q++)
        total += pr[q].m * pr[q].n;
    if (_qf_gemm_fast_usable(d)) {
        /* one problem at a time: the binary64 product is m x n doubles */
        for (q = 0; q < np && st == QF_OK; q++)
            st = _qf_gemm_fast(d, &pr[q], &n_exact);
    } else {
        st = run(d, pr, np);
        n_exact = total;
    }
    if (st == QF_OK && d->stats) {
        d->stats->n_elements = total;
        d->stats->n_exact = n_exact;
        d->stats->n_fast = total - n_exact;
    }
    free(pr);
    return st;
}

qf_status qf_gemm_acc_element(const qf_gemm_desc *d, size_t p, size_t i, size_t j, qf_dot_acc *acc,
                              qf_dot_acc *abs)
{
    prob *pr;
    size_t np;
    qf_gemm_desc e;
    qf_status st;
    if (!d || !acc)
        return QF_EINVAL;
    /* validate as if one output were asked for */
    e = *d;
    if (!wants_output(&e)) {
        e.d_value = (double *)acc; /* only tested for NULL, never written */
        e.ldd = (size_t)PTRDIFF_MAX; /* and D's layout does not matter */
    }
    e.d_err = NULL;
    st = build(&e, &pr, &np);
    if (st != QF_OK)
        return st;
    if (!pr || p >= np || i >= pr[p].m || j >= pr[p].n) {
        free(pr);
        return QF_EINVAL;
    }
    {
        const prob *q = &pr[p];
        int use_a = d->alpha != 0 && q->k > 0;
        element_acc(d, q, use_a ? q->a + (ptrdiff_t)i * q->rsa : NULL, q->csa,
                    use_a ? q->b + (ptrdiff_t)j * q->csb : NULL, q->rsb, i, j, acc, abs);
    }
    free(pr);
    return QF_OK;
}

qf_status qf_gemv(const qf_gemm_desc *d, const double *x, ptrdiff_t incx, const double *y0, ptrdiff_t incy)
{
    prob p;
    int read_a, read_c;
    qf_status st;
    size_t ar, ac;

    if (!d)
        return QF_EINVAL;
    if ((d->layout != QF_ROW_MAJOR && d->layout != QF_COL_MAJOR) ||
        (d->trans_a != QF_NO_TRANS && d->trans_a != QF_TRANS))
        return QF_EINVAL;
    if ((st = check_rounding(d)) != QF_OK)
        return st;
    if (d->stats)
        memset(d->stats, 0, sizeof *d->stats);
    if (d->m == 0 || !wants_output(d))
        return QF_OK;
    read_a = d->alpha != 0 && d->k > 0;
    read_c = d->beta != 0;
    ar = d->trans_a ? d->k : d->m;
    ac = d->trans_a ? d->m : d->k;
    if (read_a && (!d->a || !x || incx == 0 || !ld_ok(d->layout, d->lda, ar, ac)))
        return QF_EINVAL;
    if (read_c && (!y0 || incy == 0))
        return QF_EINVAL;
    if (d->ldd < 1)
        return QF_EINVAL;
    memset(&p, 0, sizeof p);
    p.m = d->m;
    p.n = 1;
    p.k = d->k;
    strides(d->layout, d->lda, &p.rsa, &p.csa);
    if (d->trans_a) {
        ptrdiff_t t = p.rsa;
        p.rsa = p.csa;
        p.csa = t;
    }
    p.a = read_a ? d->a : NULL;
    p.b = read_a ? x : NULL;
    p.rsb = incx;
    p.csb = 0;
    p.c = read_c ? y0 : NULL;
    p.rsc = incy;
    p.csc = 0;
    p.rsd = (ptrdiff_t)d->ldd;
    p.csd = 0;
    st = run(d, &p, 1);
    if (st == QF_OK && d->stats) {
        d->stats->n_elements = d->stats->n_exact = d->m;
        d->stats->n_fast = 0;
    }
    return st;
}
