/* rowref.c: the reference of the row-wise ops (_ops.h _qf_rowops):
 * sample rows (edges, then seeded rows up to the suite's target), and for
 * each block of them: gather (or decode) their input, run the class's
 * reference, correctly rounded into the output format, with a binary64
 * approximation of each exact value and its error bound (qf_ref_out.approx,
 * approx_err: the exact values the metrics measure errors from), then the
 * claimed ulp or the class's derived bound, enlarged by the approximation's
 * error so that no kernel fails on it. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_ops.h"
#include "qf_bound.h"
#include "qf_inputs.h"
#include "qf_runner.h"

/* Rows of a row-wise op to check: edges, then seeded rows up to target
 * elements. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int pick_rows(_qf_case *p, uint64_t target, uint64_t tile, uint64_t **rows, size_t *n)
{
    uint64_t want = target && p->cols ? (target + p->cols - 1) / p->cols : 0, *v, draw = 0;
    size_t k, cap, i, w;
    if (want == 0 || want >= p->rows) {
        if (qf_runner_sample(p->rows, 1, 0, 0, 0, rows, n) != QF_OK)
            return -1;
        return 0;
    }
    k = qf_runner_edges(p->rows, tile, NULL, 0);
    cap = k + (size_t)want + 1;
    v = malloc(cap * sizeof *v);
    if (!v)
        return -1;
    k = qf_runner_edges(p->rows, tile, v, k);
    /* Seeded rows up to the target, then sort and drop repeats. */
    while (k < want && draw < 64 * want) {
        v[k++] = qf_rng_u64(p->seed ^ 0x524f5753ull, draw++) % p->rows;
        if (k == want || k == cap) {
            qsort(v, k, sizeof *v, cmp_u64);
            for (i = 0, w = 0; i < k; i++)
                if (w == 0 || v[w - 1] != v[i])
                    v[w++] = v[i];
            k = w;
        }
    }
    *rows = v;
    *n = k;
    return 0;
}

/* Rows are referenced in blocks of about this many elements, so that the
 * approximation's error and the saved approximation (16 bytes an element)
 * are a block's, not the case's (docs/runner.md "Memory").  Every row is
 * computed on its own (refs/: the result of a row does not depend on the
 * rows beside it), so the blocks give the same bits as one call. */
#define BLOCK_ELEMS ((size_t)1 << 12)

/* The output index of each checked element, when not every row is. */
static void fill_idx(_qf_checked *ck, const uint64_t *rows, size_t nr, size_t C)
{
    size_t i, j;
    if (!ck->idx)
        return;
    for (i = 0; i < nr; i++)
        for (j = 0; j < C; j++)
            ck->idx[i * C + j] = rows[i] * C + j;
}

/* Input 0 of rows[0 .. nr) into x, [nr][C]: copied from its binary64
 * values, or decoded from its codes by the function that made those
 * values (qf_format_decode_array: the same bits); NULL when a decoding
 * table cannot be allocated. */
static const double *gather(const _qf_case *p, const uint64_t *rows, size_t nr, size_t C, double *x)
{
    const qf_format *f = qf_format_get(p->t->in[0]);
    size_t i, eb = f ? (size_t)f->storage_bits / 8 : 0;
    for (i = 0; i < nr; i++) {
        if (p->inval[0])
            memcpy(x + i * C, p->inval[0] + rows[i] * C, C * sizeof *x);
        else if (qf_format_decode_array(f, (const unsigned char *)p->incode[0] + rows[i] * C * eb, C,
                                        x + i * C))
            return NULL;
    }
    return x;
}

/* Input 0's binary64 copy is freed before the checked arrays exist, and
 * the blocks decode its codes instead (8 bytes per element at the
 * reference's peak, docs/runner.md "Memory"): nothing after the reference
 * reads it (exact_zeros decodes too) unless a failed case's explanation
 * may (_qf_inval_release's rule).  Codes of whole bytes only. */
static void release_input(_qf_case *p)
{
    const qf_format *f = qf_format_get(p->t->in[0]);
    if (!p->incode[0] || !f || f->storage_bits % 8 || f->storage_bits > 64 ||
        (p->cls->explain && _qf_case_refute(p->c) >= 0))
        return;
    free(p->inval[0]);
    p->inval[0] = NULL;
}

/* ck's elements [off, off + n) as checked arrays of their own. */
static _qf_checked ck_part(const _qf_checked *ck, size_t off, size_t n)
{
    _qf_checked b = *ck;
    b.n = n;
    b.idx = ck->idx ? ck->idx + off : NULL;
    b.exact = ck->exact + off;
    b.rounded = ck->rounded + off;
    b.bound = ck->bound + off;
    b.absb = ck->absb ? ck->absb + off : NULL;
    b.status = ck->status + off;
    return b;
}

/* The bound of a block's elements: the derived one, else (an op that
 * derives none) a claimed max_ulp (docs/claims.md "max_ulp": it never
 * replaces a derived bound), computed at the approximation pushed away
 * from zero by its error (bounds grow with |exact|: at least the bound of
 * the exact value), then enlarged by that error; exact is the
 * approximation again for the metrics. */
static qf_status block_bound(_qf_case *p, const _qf_rowops *ops, const _qf_rowref *rr, _qf_checked *b,
                             const double *err, double *approx, qf_result *r)
{
    size_t i, n = b->n;
    qf_status s = QF_OK;
    memcpy(approx, b->exact, n * sizeof *approx);
    for (i = 0; i < n; i++) {
        b->bound[i] = NAN;
        if (err[i] > 0 && isfinite(b->exact[i]))
            b->exact[i] += b->exact[i] < 0 ? -err[i] : err[i];
    }
    if (ops->bound) {
        s = ops->bound(p, rr, b);
        snprintf(r->bound.kind, sizeof r->bound.kind, "%s", p->cls->bound);
    } else {
        _qf_claimed_ulp(p, p->outf, n, b->exact, b->bound, r);
    }
    memcpy(b->exact, approx, n * sizeof *approx);
    for (i = 0; i < n && s == QF_OK; i++)
        if (err[i] > 0 && !isnan(b->bound[i]))
            b->bound[i] = (b->bound[i] + err[i]) * (1 + 0x1p-51); /* the sum rounded up */
    return s;
}

/* The reference of one block of rows (rr) into ck's elements from off on,
 * its counts added to r (not QF_OK: said in r), then their bounds unless
 * an earlier block's failed (*sb: every block's reference still counts,
 * as when the bounds came after one call for every row). */
static qf_status block_ref(_qf_case *p, const _qf_rowops *ops, _qf_checked *ck, _qf_rowref *rr, size_t off,
                           double *err, double *approx, qf_result *r, qf_status *sb)
{
    _qf_checked b = ck_part(ck, off, rr->nr * rr->cols);
    qf_ref_opts oo = qf_ref_opts_default();
    qf_ref_out ro;
    qf_status s;
    memset(&ro, 0, sizeof ro);
    /* The reference writes its values and statuses straight into ck (no
     * codes: the runner reads the kernel's), not into copies of them. */
    ro.value = b.rounded;
    ro.status = b.status;
    ro.approx = b.exact;
    ro.approx_err = err;
    oo.threads = 1;
    oo.format = p->outf;
    /* the hooks' per-row arrays (GLU's up, rope's positions) are a block's */
    free(rr->up), free(rr->pos);
    rr->up = NULL;
    rr->pos = NULL;
    s = ops->ref(p, rr, &b, &oo, &ro);
    if (s == QF_ENOMEM)
        return _qf_say(r, QF_CAUSE_HARNESS, "out of memory for the reference"), s;
    if (s != QF_OK)
        return _qf_say(r, QF_CAUSE_HARNESS, "reference failed: %s", qf_status_str(s)), s;
    r->ref_exact += ro.n_exact;
    r->ref_rounded += ro.n_rounded;
    r->ref_undecided += ro.n_undecided;
    r->ref_undefined += ro.n_undefined;
    if (*sb == QF_OK)
        *sb = block_bound(p, ops, rr, &b, err, approx, r);
    return QF_OK;
}

int _qf_reference_rows(_qf_case *p, const _qf_rowops *ops, _qf_checked *ck, qf_result *r, uint64_t target,
                       uint64_t tile)
{
    uint64_t *rows = NULL;
    size_t nr = 0, C = p->cols, per, b0, bn;
    double *x = NULL, *err = NULL, *approx = NULL;
    _qf_rowref rr;
    qf_status s = QF_OK, sb = QF_OK;
    /* Every row checked (rows are sorted and distinct): the input itself,
     * no gathered copy (docs/runner.md "Memory"). */
    int all = pick_rows(p, target, tile, &rows, &nr) == 0 && nr == p->rows, rc = -1;
    memset(&rr, 0, sizeof rr);
    release_input(p);
    all = all && p->inval[0]; /* else every block is decoded */
    per = C && C < BLOCK_ELEMS ? BLOCK_ELEMS / C : 1;
    if (per > nr)
        per = nr ? nr : 1;
    if (!rows || _qf_checked_alloc(ck, nr * C) ||
        (nr < p->rows && !(ck->idx = malloc((nr * C + 1) * sizeof *ck->idx))) ||
        (!all && !(x = malloc((per * C + 1) * sizeof *x))) || !(err = malloc((per * C + 1) * sizeof *err)) ||
        !(approx = malloc((per * C + 1) * sizeof *approx))) {
        _qf_say(r, QF_CAUSE_HARNESS, "out of memory for the reference");
        goto done;
    }
    fill_idx(ck, rows, nr, C);
    r->ref_exact = r->ref_rounded = r->ref_undecided = r->ref_undefined = 0;
    b0 = 0;
    do { /* once at least: an empty case still names its bound */
        bn = nr - b0 < per ? nr - b0 : per;
        rr.rows = rows + b0;
        rr.nr = bn;
        rr.cols = C;
        rr.x = all ? p->inval[0] + b0 * C : gather(p, rows + b0, bn, C, x);
        if (!rr.x) {
            _qf_say(r, QF_CAUSE_HARNESS, "out of memory for the reference");
            goto done;
        }
        s = block_ref(p, ops, ck, &rr, b0 * C, err, approx, r, &sb);
        b0 += bn;
    } while (b0 < nr && s == QF_OK);
    if (s == QF_OK && sb != QF_OK)
        _qf_say(r, QF_CAUSE_HARNESS, "cannot derive the bound from the claim: %s", qf_status_str(sb));
    if (s == QF_OK && sb == QF_OK)
        rc = 0;
done:
    free(rows);
    free(x);
    free(rr.up);
    free(rr.pos);
    free(err);
    free(approx);
    return rc;
}
