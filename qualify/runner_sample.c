/* runner_sample.c: which output elements a sampled case checks
 * (qf_runner.h, docs/runner.md "Sampling"). */
#include <stdlib.h>
#include <string.h>

#include "qf_format.h"
#include "qf_runner.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sort and drop duplicates; returns the new length. */
static size_t uniq(uint64_t *v, size_t n)
{
    size_t i, w = 0;
    qsort(v, n, sizeof *v, cmp_u64);
    for (i = 0; i < n; i++)
        if (w == 0 || v[w - 1] != v[i])
            v[w++] = v[i];
    return w;
}

size_t qf_runner_edges(uint64_t n, uint64_t tile, uint64_t *out, size_t max)
{
    /* Tile sizes of the matrix units and blocked kernels we know of; an
     * off-by-one at a tile boundary is the classic indexing bug. */
    static const uint64_t tiles[] = {16, 32, 64, 128};
    uint64_t *tmp;
    size_t cap, k = 0, i, m;
    if (n == 0)
        return 0;
    cap = 2;
    for (i = 0; i < 5; i++) {
        uint64_t t = i < 4 ? tiles[i] : tile;
        if (t)
            cap += 3 * (size_t)(n / t + 1);
    }
    tmp = malloc(cap * sizeof *tmp);
    if (!tmp)
        return 0;
    tmp[k++] = 0;
    tmp[k++] = n - 1;
    for (i = 0; i < 5; i++) {
        uint64_t t = i < 4 ? tiles[i] : tile, x;
        if (!t)
            continue;
        for (x = t; x < n; x += t) {
            tmp[k++] = x - 1;
            tmp[k++] = x;
            if (x + 1 < n)
                tmp[k++] = x + 1;
        }
    }
    k = uniq(tmp, k);
    m = k < max ? k : max;
    if (out)
        memcpy(out, tmp, m * sizeof *out);
    free(tmp);
    return k;
}

qf_status qf_runner_sample(uint64_t rows, uint64_t cols, uint64_t target, uint64_t tile, uint64_t seed,
                           uint64_t **idx, size_t *n)
{
    uint64_t total, *re = NULL, *ce = NULL, *v = NULL;
    size_t nre, nce, cap, k = 0, i, j;
    uint64_t draw = 0;
    if (!idx || !n)
        return QF_EINVAL;
    *idx = NULL;
    *n = 0;
    total = rows * cols;
    if (rows && total / rows != cols)
        return QF_EINVAL;
    if (target == 0 || target >= total) {
        v = malloc((total ? total : 1) * sizeof *v);
        if (!v)
            return QF_ENOMEM;
        for (i = 0; i < total; i++)
            v[i] = i;
        *idx = v;
        *n = total;
        return QF_OK;
    }
    nre = qf_runner_edges(rows, tile, NULL, 0);
    nce = qf_runner_edges(cols, tile, NULL, 0);
    re = malloc((nre + 1) * sizeof *re);
    ce = malloc((nce + 1) * sizeof *ce);
    cap = 2 * (size_t)rows + 2 * (size_t)cols + nre * nce + (size_t)target;
    v = malloc(cap * sizeof *v);
    if (!re || !ce || !v) {
        free(re);
        free(ce);
        free(v);
        return QF_ENOMEM;
    }
    qf_runner_edges(rows, tile, re, nre);
    qf_runner_edges(cols, tile, ce, nce);
    for (j = 0; j < cols; j++) {
        v[k++] = j;
        v[k++] = (rows - 1) * cols + j;
    }
    for (i = 0; i < rows; i++) {
        v[k++] = i * cols;
        v[k++] = i * cols + cols - 1;
    }
    for (i = 0; i < nre; i++)
        for (j = 0; j < nce; j++)
            v[k++] = re[i] * cols + ce[j];
    k = uniq(v, k);
    /* Fill up to the target with seeded uniform draws (counter-based, so
     * the sample is a function of the seed only). */
    while (k < target) {
        size_t before = k, want = (size_t)target - k;
        for (i = 0; i < want && k < cap; i++)
            v[k++] = qf_rng_u64(seed ^ 0x53414d504c45ull, draw++) % total;
        k = uniq(v, k);
        if (k == before && draw > 64 * target)
            break;
    }
    free(re);
    free(ce);
    *idx = v;
    *n = k;
    return QF_OK;
}
