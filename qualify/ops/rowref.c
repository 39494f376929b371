/* rowref.c: the reference of the row-wise ops (_ops.h _qf_rowops):
 * sample rows (edges, then seeded rows up to the suite's target), gather
 * them, run the class's reference once, correctly rounded into the output
 * format, with a binary64 approximation of each exact value and its error
 * bound (qf_ref_out.approx, approx_err: the exact values the metrics
 * measure errors from), then the claimed ulp or the class's derived bound,
 * enlarged by the approximation's error so that no kernel fails on it. */
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

int _qf_reference_rows(_qf_case *p, const _qf_rowops *ops, _qf_checked *ck, qf_result *r, uint64_t target,
                       uint64_t tile)
{
    uint64_t *rows = NULL;
    size_t nr = 0, i, j, C = p->cols;
    double *x = NULL;
    _qf_rowref rr;
    qf_ref_out ro;
    qf_ref_opts oo = qf_ref_opts_default();
    double *err = NULL, *approx = NULL;
    qf_status s = QF_OK;
    int rc = -1;
    memset(&ro, 0, sizeof ro);
    memset(&rr, 0, sizeof rr);
    /* Every row checked (rows are sorted and distinct): the input itself,
     * no gathered copy (docs/runner.md "Memory"). */
    int all = pick_rows(p, target, tile, &rows, &nr) == 0 && nr == p->rows;
    if (!rows || _qf_checked_alloc(ck, nr * C) || (!all && !(ck->idx = malloc((nr * C + 1) * sizeof *ck->idx))) ||
        (!all && !(x = malloc((nr * C + 1) * sizeof *x))) || !(err = malloc((nr * C + 1) * sizeof *err)) ||
        !(approx = malloc((nr * C + 1) * sizeof *approx))) {
        _qf_say(r, QF_VERDICT_MISTRUSTED, "out of memory for the reference");
        goto done;
    }
    for (i = 0; i < nr && !all; i++)
        for (j = 0; j < C; j++) {
            ck->idx[i * C + j] = rows[i] * C + j;
            x[i * C + j] = p->inval[0][rows[i] * C + j];
        }
    rr.rows = rows;
    rr.nr = nr;
    rr.cols = C;
    rr.x = all ? p->inval[0] : x;
    /* The reference writes its values and statuses straight into ck (no
     * codes: the runner reads the kernel's), not into copies of them. */
    ro.value = ck->rounded;
    ro.status = ck->status;
    oo.threads = 1;
    oo.format = p->outf;
    ro.approx = ck->exact;
    ro.approx_err = err;
    s = ops->ref(p, &rr, ck, &oo, &ro);
    if (s == QF_ENOMEM) {
        _qf_say(r, QF_VERDICT_MISTRUSTED, "out of memory for the reference");
        goto done;
    }
    if (s != QF_OK) {
        _qf_say(r, QF_VERDICT_MISTRUSTED, "reference failed: %s", qf_status_str(s));
        goto done;
    }
    r->ref_exact = ro.n_exact;
    r->ref_rounded = ro.n_rounded;
    r->ref_undecided = ro.n_undecided;
    r->ref_undefined = ro.n_undefined;
    /* Bounds per element: a claimed max_ulp first, else the derived one,
     * computed at the approximation pushed away from zero by its error
     * (bounds grow with |exact|: at least the bound of the exact value),
     * then enlarged by that error; exact is the approximation again for
     * the metrics. */
    memcpy(approx, ck->exact, nr * C * sizeof *approx);
    for (i = 0; i < nr * C; i++) {
        ck->bound[i] = NAN;
        if (err[i] > 0 && isfinite(ck->exact[i]))
            ck->exact[i] += ck->exact[i] < 0 ? -err[i] : err[i];
    }
    if (p->t->arith.max_ulp > 0) {
        qf_bound_ulp(p->outf, p->t->arith.max_ulp, nr * C, ck->exact, ck->bound);
        snprintf(r->bound.kind, sizeof r->bound.kind, "ulp");
        r->bound.claimed_ulp = p->t->arith.max_ulp;
    } else if (ops->bound) {
        s = ops->bound(p, &rr, ck);
        snprintf(r->bound.kind, sizeof r->bound.kind, "%s", p->cls->bound);
    }
    if (s != QF_OK) {
        _qf_say(r, QF_VERDICT_MISTRUSTED, "cannot derive the bound from the claim: %s", qf_status_str(s));
        goto done;
    }
    memcpy(ck->exact, approx, nr * C * sizeof *approx);
    for (i = 0; i < nr * C; i++)
        if (err[i] > 0 && !isnan(ck->bound[i]))
            ck->bound[i] = (ck->bound[i] + err[i]) * (1 + 0x1p-51); /* the sum rounded up */
    rc = 0;
done:
    free(rows);
    free(x);
    free(rr.up);
    free(rr.pos);
    free(err);
    free(approx);
    ro.approx = ro.approx_err = NULL; /* ck's and ours, not the output's */
    ro.value = NULL;
    ro.status = NULL;
    qf_ref_out_free(&ro);
    return rc;
}
