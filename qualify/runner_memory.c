/* runner_memory.c: a case's memory, estimated from its shape and formats
 * before the runner maps or allocates anything, the budget it is held to,
 * and the peak the pair actually reached (docs/runner.md "Memory"). */
#define _GNU_SOURCE
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "_runner.h"
#include "ops/_ops.h"
#include "qf_format.h"

/* Bytes of reference and verdict working memory per checked element: the
 * checked arrays (_qf_checked: index 8, exact, rounded, bound and |a||b|
 * 8 each, status 1 = 41 at most; a row op's are 25, 33 when its rows are
 * sampled, ops/rowref.c, whose per-block arrays are a fixed ~96 KiB; the
 * kernel's values are decoded from its codes as they are read), a GEMM
 * reference's binary64 product, its magnitude and a status byte
 * (refs/gemm_fast.c: 17) and the metrics' percentile selection (about
 * half a byte, metrics.c): 59 at most, rounded up with room.  A sum of
 * what may be alive, not of what is at once: the estimate stays above the
 * measured peak (docs/runner.md "Memory"). */
#define PER_CHECKED 72u

/* Guard pages around one output buffer (runner_proc.c: a page before,
 * the rest of the last page and one more after). */
#define GUARD_BYTES (3u * 4096u)

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Bytes of one element of format id as the runner stores it (unpacked
 * storage); 8 when the format is not known (index tensors are at most
 * 64-bit). */
static uint64_t elem_bytes(qf_format_id id)
{
    const qf_format *f = qf_format_get(id);
    return f && f->storage_bits >= 8 ? (uint64_t)f->storage_bits / 8 : 8;
}

/* An upper bound of qf_runner_edges(n, tile): 0, n - 1 and three indices
 * around every multiple of each tile size, without allocating them. */
static uint64_t edges_max(uint64_t n, uint64_t tile)
{
    static const uint64_t tiles[] = {16, 32, 64, 128};
    uint64_t e = 2;
    size_t i;
    for (i = 0; i < 5; i++) {
        uint64_t t = i < 4 ? tiles[i] : tile;
        if (t)
            e = add_sat(e, _qf_mul_sat(3, n / t + 1));
    }
    return e < n ? e : n;
}

/* Elements of output 0 the reference checks (docs/runner.md "Sampling"):
 * all of them without max_elements; whole rows for a row op; for a GEMM
 * the target, the first and last rows and columns and the edge pairs;
 * every element for the ops that do not sample. */
static uint64_t checked_max(const _qf_case *p, uint64_t n)
{
    uint64_t t = p->c->group->sampling.max_elements, tile = p->c->group->sampling.tile;
    uint64_t rows = p->rows, cols = p->cols, c;
    if (!t || t >= n || !rows || !cols)
        return n;
    if (p->cls->rows)
        c = _qf_mul_sat(add_sat(edges_max(rows, tile), t / cols + 1), cols);
    else if (p->cls->flags & _QF_OPC_DOT)
        c = add_sat(add_sat(t, _qf_mul_sat(2, add_sat(rows, cols))),
                    _qf_mul_sat(edges_max(rows, tile), edges_max(cols, tile)));
    else
        c = n;
    return c < n ? c : n;
}

int _qf_case_memory(const _qf_case *p, uint64_t *need, uint64_t *tensors)
{
    uint64_t in[QF_KERNEL_MAX_IN], out[QF_KERNEL_MAX_OUT], nb = 0, tb = 0, nchk;
    /* output copies: two runs, the shared-memory object, and two more for
     * a baseline kernel */
    uint64_t copies = 3 + (p->bk ? 2 : 0);
    int i;
    *need = *tensors = 0;
    if (_qf_op_elems(&p->op, in, out))
        return -1;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        uint64_t eb = elem_bytes(p->t->in[i]);
        if (!in[i])
            continue;
        /* binary64 values for the reference, the codes, their copy in the
         * shared-memory object (counted whatever --isolate says, so that
         * the verdict does not depend on it), a strided copy when laid
         * out */
        nb = add_sat(nb, _qf_mul_sat(in[i], 8 + eb * (2 + (_qf_layout_of(p) != NULL))));
        tb = add_sat(tb, _qf_mul_sat(in[i], eb));
    }
    for (i = 0; i < QF_KERNEL_MAX_OUT; i++) {
        uint64_t eb = elem_bytes(p->t->out[i]);
        if (!out[i])
            continue;
        /* output 0 sampled as the suite says, a second output checked
         * whole (attention lse, moe_router) */
        nchk = i == 0 ? checked_max(p, out[0]) : out[i];
        nb = add_sat(nb, add_sat(_qf_mul_sat(copies, add_sat(_qf_mul_sat(out[i], eb), GUARD_BYTES)),
                                 _qf_mul_sat(nchk, PER_CHECKED + (p->bk ? 8 : 0))));
        tb = add_sat(tb, add_sat(_qf_mul_sat(out[i], eb), _qf_mul_sat(nchk, 8)));
    }
    *need = nb;
    *tensors = tb;
    return 0;
}

size_t qf_runner_default_case_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psz > 0 ? _qf_mul_sat((uint64_t)pages, (uint64_t)psz) : 0;
    FILE *f;
    /* A cgroup v2 limit below the machine's memory is the memory there is. */
    if ((f = fopen("/sys/fs/cgroup/memory.max", "r"))) {
        unsigned long long lim;
        if (fscanf(f, "%llu", &lim) == 1 && lim > 0 && (!ram || lim < ram))
            ram = lim;
        fclose(f);
    }
    if (!ram)
        return (size_t)4 << 30; /* unknown: 4 GiB */
    ram /= 4;
    return ram > SIZE_MAX ? SIZE_MAX : (size_t)ram;
}

int qf_runner_parse_bytes(const char *s, size_t *out)
{
    static const char units[] = "KMGT";
    char *end;
    double v, mul = 1;
    const char *u;
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || !(v > 0))
        return -1;
    if (*end) {
        u = end[0] >= 'A' && end[0] <= 'z' ? strchr(units, end[0] & ~0x20) : NULL;
        if (!u)
            return -1;
        mul = ldexp(1, 10 * (int)(u - units + 1));
        end++;
        /* 4G, 4GB, 4GiB, 4g all mean 4 x 2^30 */
        if (!strcmp(end, "i") || !strcmp(end, "iB") || !strcmp(end, "B") || !strcmp(end, "b"))
            end += strlen(end);
        if (*end)
            return -1;
    } else if (v != floor(v)) {
        return -1; /* a plain count of bytes is an integer */
    }
    v *= mul;
    if (v < 1 || v >= 18446744073709551616.0 || v > (double)SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

void qf_runner_format_bytes(uint64_t b, char *buf, size_t size)
{
    if (b == UINT64_MAX)
        snprintf(buf, size, "more than 16 EiB");
    else if (b >= (uint64_t)1 << 30)
        snprintf(buf, size, "%.1f GiB", (double)b / (double)(1u << 30));
    else if (b >= (uint64_t)1 << 20)
        snprintf(buf, size, "%.1f MiB", (double)b / (double)(1u << 20));
    else if (b >= 1024)
        snprintf(buf, size, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, size, "%llu bytes", (unsigned long long)b);
}

int _qf_case_memory_check(const _qf_case *p, const qf_runner_opts *o, qf_result *r)
{
    uint64_t need, tens;
    size_t budget = o->max_case_bytes ? o->max_case_bytes : qf_runner_default_case_memory();
    char a[32], b[32];
    if (_qf_case_memory(p, &need, &tens))
        return 0; /* an op without an estimate is not held to the budget */
    r->case_bytes = need > SIZE_MAX ? SIZE_MAX : (size_t)need;
    r->tensor_bytes = tens > SIZE_MAX ? SIZE_MAX : (size_t)tens;
    if (need <= budget)
        return 0;
    qf_runner_format_bytes(need, a, sizeof a);
    qf_runner_format_bytes(budget, b, sizeof b);
    if (o->max_case_bytes)
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: case needs %s of buffers, over --max-case-memory %s", a,
                b);
    else
        _qf_say(r, QF_CAUSE_UNSUPPORTED,
                "unsupported: case needs %s of buffers, over the default case budget %s (a quarter of "
                "physical memory; --max-case-memory sets it)",
                a, b);
    return -1;
}

/* The pair's process allocates and frees arrays of megabytes one after
 * another (inputs, the reference's working arrays, the metrics'): glibc
 * would raise its mmap threshold to the size of the first one freed and
 * serve the next ones from a heap it does not give back, so that freed
 * arrays stay resident beside the live ones (about 20 MiB of a 1024^3
 * GEMM's peak).  A fixed threshold (which turns the adjustment off)
 * returns every large array to the system when it is freed. */
void _qf_case_malloc_policy(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
#endif
}

void _qf_case_peak_rss(qf_result *r)
{
    struct rusage self, kids;
    uint64_t kb = 0;
    if (getrusage(RUSAGE_SELF, &self) == 0)
        kb = (uint64_t)self.ru_maxrss;
    /* the largest of the reaped children: the kernel child, the timing
     * child, the baseline's */
    if (getrusage(RUSAGE_CHILDREN, &kids) == 0 && (uint64_t)kids.ru_maxrss > kb)
        kb = (uint64_t)kids.ru_maxrss;
    r->peak_rss_bytes = (size_t)(kb * 1024); /* Linux reports kilobytes */
}
