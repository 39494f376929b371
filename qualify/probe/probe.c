/* probe.c: the probe's harness (the kernel called in a forked child with a
 * time limit, on tensors of codes, as the runner calls it) and
 * qf_probe_gemm, which runs the methods of tree.c and mma.c and the
 * determinism and validation checks (docs/probe.md).
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../_runner_device.h"
#include "../_sandbox.h"
#include "_probe.h"
#include "qf_backend.h"

#define SLACK     256u  /* bytes around each output (GPU guard mirroring, overruns) */
#define MAX_ROWS  2048u /* rows per call of a shared batch */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void _qf_pb_evidence(qf_probe_result *r, const char *fmt, ...)
{
    va_list ap;
    if (r->n_evidence >= QF_PROBE_MAX_EVIDENCE)
        return;
    va_start(ap, fmt);
    vsnprintf(r->evidence[r->n_evidence++], sizeof r->evidence[0], fmt, ap);
    va_end(ap);
}

static int perr(_qf_pb *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- Codes ------------------------------------------------------------------ */

static void put(void *base, size_t i, int bits, uint64_t c)
{
    switch (bits) {
    case 8: ((uint8_t *)base)[i] = (uint8_t)c; break;
    case 16: ((uint16_t *)base)[i] = (uint16_t)c; break;
    case 32: ((uint32_t *)base)[i] = (uint32_t)c; break;
    default: ((uint64_t *)base)[i] = c; break;
    }
}

static uint64_t get(const void *base, size_t i, int bits)
{
    switch (bits) {
    case 8: return ((const uint8_t *)base)[i];
    case 16: return ((const uint16_t *)base)[i];
    case 32: return ((const uint32_t *)base)[i];
    default: return ((const uint64_t *)base)[i];
    }
}

/* The code of an exact value x of f (NaN and Inf as the format has them). */
static int code_of(const qf_format *f, double x, uint64_t *c)
{
    *c = qf_format_encode(f, x, QF_ROUND_RNE, 0, 0, 0);
    if (isnan(x))
        return isnan(qf_format_decode(f, *c)) ? 0 : -1;
    return qf_format_decode(f, *c) == x && signbit(qf_format_decode(f, *c)) == signbit(x) ? 0 : -1;
}

int _qf_pb_split(const _qf_pb *p, double v, double *a, double *b)
{
    int e, eb;
    uint64_t c;
    if (v == 0 || !isfinite(v)) {
        *a = v;
        *b = 1;
        return code_of(p->fa, v, &c) == 0 ? 0 : -1;
    }
    frexp(v, &e);
    /* a = v * 2^-eb, b = 2^eb: try b near 1 first, then outward */
    for (int s = 0; s < 600; s++) {
        eb = (s & 1) ? -(s + 1) / 2 : s / 2;
        double x = ldexp(v, -eb), y = ldexp(1.0, eb);
        uint64_t cx, cy;
        if (code_of(p->fa, x, &cx) == 0 && code_of(p->fb, y, &cy) == 0) {
            *a = x;
            *b = y;
            return 0;
        }
    }
    (void)e;
    return -1;
}

/* ---- Shapes ----------------------------------------------------------------- */

static size_t fit(const qf_kernel *k, int d, size_t want)
{
    size_t v = want, mo = k->limits.multiple_of[d] > 0 ? (size_t)k->limits.multiple_of[d] : 1;
    if (k->limits.min[d] > 0 && v < (size_t)k->limits.min[d])
        v = (size_t)k->limits.min[d];
    return (v + mo - 1) / mo * mo;
}

typedef struct pcall {
    size_t m, n;         /* padded */
    size_t off_a, off_b, off_d; /* bytes from the start of the region */
} pcall;

typedef struct preport {
    int status;
    int done;
    char msg[256];
} preport;

static void child_calls(_qf_pb *p, unsigned char *reg, const pcall *pc, size_t nc, preport *rep, int threads)
{
    qf_device dev;
    void *ctx = p->k->user;
    qf_status s = QF_OK;
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    memset(&dev, 0, sizeof dev);
    dev.backend = qf_backend_cpu();
    /* confined as every kernel process (_sandbox.h) */
    if (_qf_sbx_enter(QF_SBX_CHILD, _qf_rdev_is_device(p->k), 0, rep->msg, sizeof rep->msg))
        _exit(_QF_SBX_EXIT);
    if (_qf_rdev_is_device(p->k) && (s = _qf_rdev_open(p->k, &dev, rep->msg, sizeof rep->msg)) != QF_OK)
        goto out;
    if (p->k->init && (s = p->k->init(p->k, &ctx)) != QF_OK)
        goto out;
    for (size_t c = 0; c < nc && s == QF_OK; c++) {
        qf_op_desc op;
        qf_tensor in[QF_KERNEL_MAX_IN], outt[QF_KERNEL_MAX_OUT];
        qf_kernel_call call;
        int64_t sa[2] = {(int64_t)pc[c].m, (int64_t)p->K}, sb[2] = {(int64_t)p->K, (int64_t)pc[c].n},
                sd[2] = {(int64_t)pc[c].m, (int64_t)pc[c].n};
        memset(&op, 0, sizeof op);
        memset(in, 0, sizeof in);
        memset(outt, 0, sizeof outt);
        op.op = QF_OP_GEMM;
        op.u.gemm.m = pc[c].m;
        op.u.gemm.n = pc[c].n;
        op.u.gemm.k = p->K;
        op.u.gemm.alpha = 1;
        op.u.gemm.batch = 1;
        qf_tensor_init(&in[0], p->t->in[0], 2, sa);
        qf_tensor_init(&in[1], p->t->in[1], 2, sb);
        qf_tensor_init(&in[2], p->t->in[2], 2, sd);
        qf_tensor_init(&outt[0], p->t->out[0], 2, sd);
        in[0].data = reg + pc[c].off_a;
        in[0].bytes = qf_tensor_dense_bytes(&in[0]);
        in[1].data = reg + pc[c].off_b;
        in[1].bytes = qf_tensor_dense_bytes(&in[1]);
        outt[0].data = reg + pc[c].off_d;
        outt[0].bytes = qf_tensor_dense_bytes(&outt[0]);
        memset(&call, 0, sizeof call);
        call.abi_version = QF_KERNEL_ABI_VERSION;
        call.kernel = p->k;
        call.dtype = p->t;
        call.op = &op;
        call.in = in;
        call.out = outt;
        call.device = &dev;
        call.seed = 1;
        call.threads = threads;
        call.msg = rep->msg;
        call.msg_size = sizeof rep->msg;
        s = dev.state ? _qf_rdev_run(&dev, ctx, &call, NULL) : p->k->run(ctx, &call);
    }
    if (p->k->fini)
        p->k->fini(ctx);
    if (dev.state)
        qf_device_close(&dev);
out:
    rep->status = s;
    rep->done = 1;
    _exit(0);
}

/* Fork, run the calls, wait with the time limit: 0 or -1 with p->err. */
static int run_child(_qf_pb *p, unsigned char *reg, const pcall *pc, size_t nc, preport *rep, int threads)
{
    pid_t pid;
    int st = 0;
    double t0 = now_s(), nap = 1e-4;
    memset(rep, 0, sizeof *rep);
    fflush(NULL);
    _qf_sbx_probe(NULL, 0); /* the scratch root, made here before the fork */
    pid = fork();
    if (pid < 0)
        return perr(p, "cannot fork the kernel child: %s", strerror(errno));
    if (pid == 0)
        child_calls(p, reg, pc, nc, rep, threads);
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return perr(p, "lost the kernel child: %s", strerror(errno));
        if (now_s() - t0 > p->timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            _qf_sbx_scratch_remove(pid);
            return perr(p, "timed out: the kernel ran past the %.3g s limit and was killed", p->timeout_s);
        }
        struct timespec ts = {0, (long)(nap * 1e9)};
        nanosleep(&ts, NULL);
        if (nap < 5e-3)
            nap *= 2;
    }
    _qf_sbx_scratch_remove(pid);
    p->calls += nc;
    if (WIFEXITED(st) && WEXITSTATUS(st) == _QF_SBX_EXIT)
        return perr(p, "cannot confine the kernel process: %s", rep->msg);
    if (WIFSIGNALED(st))
        return perr(p, "crashed: signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    if (!rep->done || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return perr(p, "crashed: the kernel process exited with status %d before finishing%s%s",
                    WIFEXITED(st) ? WEXITSTATUS(st) : -1, rep->msg[0] ? ": " : "", rep->msg);
    if (rep->status != QF_OK)
        return perr(p, "the kernel failed: %s%s%s", qf_status_str((qf_status)rep->status),
                    rep->msg[0] ? ": " : "", rep->msg);
    return 0;
}

int _qf_pb_full(_qf_pb *p, size_t nc, const size_t *m, size_t n, const double *const *a, const double *const *b,
                int threads, double *const *res)
{
    int ba = p->fa->storage_bits, bb = p->fb->storage_bits, bo = p->fo->storage_bits;
    size_t total = 0, c, i, j, l, np = fit(p->k, 1, n);
    pcall *pc;
    unsigned char *reg;
    preport *rep;
    char why[256];
    int rc = 0;
    if (nc == 0)
        return 0;
    if (p->k->limits.max[1] > 0 && np > (size_t)p->k->limits.max[1])
        return perr(p, "the kernel takes at most N = %lld columns", (long long)p->k->limits.max[1]);
    pc = calloc(nc, sizeof *pc);
    if (!pc)
        return perr(p, "out of memory");
    total = (sizeof(preport) + 63) / 64 * 64;
    for (c = 0; c < nc; c++) {
        qf_op_desc op;
        pc[c].m = fit(p->k, 0, m[c]);
        pc[c].n = np;
        pc[c].off_a = total;
        total += (pc[c].m * p->K * (size_t)ba / 8 + 63) / 64 * 64;
        pc[c].off_b = total;
        total += (p->K * np * (size_t)bb / 8 + 63) / 64 * 64;
        pc[c].off_d = total + SLACK;
        total += (pc[c].m * np * (size_t)bo / 8 + 63) / 64 * 64 + 2 * SLACK;
        memset(&op, 0, sizeof op);
        op.op = QF_OP_GEMM;
        op.u.gemm.m = pc[c].m;
        op.u.gemm.n = np;
        op.u.gemm.k = p->K;
        op.u.gemm.alpha = 1;
        op.u.gemm.batch = 1;
        if (c == 0 || pc[c].m != pc[c - 1].m) {
            qf_status s = qf_kernel_check(p->k, &op, p->t, why, sizeof why);
            if (s != QF_OK) {
                size_t bad_m = pc[c].m; /* read before the free */
                free(pc);
                return perr(p, "the kernel refuses M = %zu, N = %zu, K = %zu: %s", bad_m, np, p->K, why);
            }
        }
    }
    reg = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (reg == MAP_FAILED) {
        free(pc);
        return perr(p, "cannot map %zu bytes: %s", total, strerror(errno));
    }
    rep = (preport *)reg;
    /* padding rows and columns are zeros (code 0) */
    for (c = 0; c < nc; c++) {
        for (i = 0; i < m[c]; i++)
            for (l = 0; l < p->K; l++) {
                uint64_t code = 0;
                if (code_of(p->fa, a[c][i * p->K + l], &code)) {
                    rc = perr(p, "probe bug: %.17g is not a %s value", a[c][i * p->K + l], p->fa->name);
                    goto done;
                }
                put(reg + pc[c].off_a, i * p->K + l, ba, code);
            }
        for (l = 0; l < p->K; l++)
            for (j = 0; j < n; j++) {
                uint64_t code;
                if (code_of(p->fb, b[c][l * n + j], &code)) {
                    rc = perr(p, "probe bug: %.17g is not a %s value", b[c][l * n + j], p->fb->name);
                    goto done;
                }
                put(reg + pc[c].off_b, l * np + j, bb, code);
            }
        memset(reg + pc[c].off_d, 0xff, pc[c].m * np * (size_t)bo / 8);
    }
    if ((rc = run_child(p, reg, pc, nc, rep, threads)) != 0)
        goto done;
    for (c = 0; c < nc; c++)
        for (i = 0; i < m[c]; i++)
            for (j = 0; j < n; j++)
                res[c][i * n + j] = qf_format_decode(p->fo, get(reg + pc[c].off_d, i * np + j, bo));
done:
    munmap(reg, total);
    free(pc);
    return rc;
}

/* Broadcast calls (p->bm > 0): query q is its own bm x bn call whose rows
 * of A are all the query's a and columns of B all its b, so that every
 * element answers it; res[q * cols + c] is element sel[c] (or c). */
static int eval_bcast(_qf_pb *p, size_t nq, const double *a, const double *b, int b_shared, int threads,
                      double *res)
{
    size_t m = p->bm, n = p->bn, K = p->K, q, i, l, c, chunk = 64;
    double *A = malloc(chunk * m * K * sizeof *A), *B = malloc(chunk * K * n * sizeof *B),
           *O = malloc(chunk * m * n * sizeof *O);
    const double **pa = malloc(chunk * sizeof *pa), **pb = malloc(chunk * sizeof *pb);
    double **po = malloc(chunk * sizeof *po);
    size_t *ms = malloc(chunk * sizeof *ms);
    int rc = 0;
    if (!A || !B || !O || !pa || !pb || !po || !ms)
        rc = perr(p, "out of memory");
    for (q = 0; q < nq && rc == 0; q += chunk) {
        size_t nc = nq - q < chunk ? nq - q : chunk;
        for (c = 0; c < nc; c++) {
            const double *av = a + (q + c) * K, *bv = b_shared ? b : b + (q + c) * K;
            for (i = 0; i < m; i++)
                memcpy(A + (c * m + i) * K, av, K * sizeof *A);
            for (l = 0; l < K; l++)
                for (i = 0; i < n; i++)
                    B[c * K * n + l * n + i] = bv[l];
            pa[c] = A + c * m * K;
            pb[c] = B + c * K * n;
            po[c] = O + c * m * n;
            ms[c] = m;
        }
        rc = _qf_pb_full(p, nc, ms, n, pa, pb, threads, po);
        for (c = 0; c < nc && rc == 0; c++)
            for (i = 0; i < p->cols; i++)
                res[(q + c) * p->cols + i] = po[c][p->sel ? p->sel[i] : i];
    }
    free(A), free(B), free(O), free(pa), free(pb), free(po), free(ms);
    return rc;
}

int _qf_pb_eval(_qf_pb *p, size_t nq, const double *a, const double *b, int b_shared, int threads, double *res)
{
    size_t n = p->cols, rows = b_shared ? MAX_ROWS : 1, maxm = p->k->limits.max[0] > 0 ? (size_t)p->k->limits.max[0] : 0;
    size_t nc = 0, q0, c, l, j, nb;
    size_t *ms;
    const double **pa, **pb;
    double **po, *B, *O;
    int rc;
    if (nq == 0)
        return 0;
    if (p->bm)
        return eval_bcast(p, nq, a, b, b_shared, threads, res);
    if (maxm && rows > maxm)
        rows = maxm;
    nc = (nq + rows - 1) / rows;
    nb = b_shared ? 1 : nc;
    ms = malloc(nc * sizeof *ms);
    pa = malloc(nc * sizeof *pa);
    pb = malloc(nc * sizeof *pb);
    po = malloc(nc * sizeof *po);
    B = malloc(nb * p->K * n * sizeof *B);
    O = malloc(nq * n * sizeof *O);
    rc = !ms || !pa || !pb || !po || !B || !O ? perr(p, "out of memory") : 0;
    for (c = 0, q0 = 0; c < nc && rc == 0; c++, q0 += rows) {
        ms[c] = nq - q0 < rows ? nq - q0 : rows;
        pa[c] = a + q0 * p->K;
        po[c] = O + q0 * n;
        pb[c] = B + (b_shared ? 0 : c) * p->K * n;
        if (c < nb)
            for (l = 0; l < p->K; l++)
                for (j = 0; j < n; j++)
                    B[c * p->K * n + l * n + j] = b_shared ? b[l] : b[q0 * p->K + l];
    }
    if (rc == 0 && (rc = _qf_pb_full(p, nc, ms, n, pa, pb, threads, po)) == 0)
        memcpy(res, O, nq * n * sizeof *res);
    free(ms), free(pa), free(pb), free(po), free(B), free(O);
    return rc;
}

static int pow2_exp_of(double x)
{
    int e;
    frexp(x, &e);
    return e - 1;
}

/* ---- Single-term tests: flushing and specials ------------------------------ */

/* Query: the products vals[i] = a[i] * b[i] on leaves 0..n-1, zeros elsewhere. */
static int eval_terms(_qf_pb *p, size_t nq, const double *a, const double *b, int n, double *out)
{
    size_t K = p->K;
    double *A = calloc(nq * K, sizeof *A), *B = malloc(nq * K * sizeof *B), *res = malloc(nq * p->cols * sizeof *res);
    int rc = -1;
    if (A && B && res) {
        for (size_t i = 0; i < nq * K; i++)
            B[i] = 1;
        for (size_t q = 0; q < nq; q++)
            for (int i = 0; i < n; i++) {
                A[q * K + (size_t)i] = a[q * (size_t)n + (size_t)i];
                B[q * K + (size_t)i] = b[q * (size_t)n + (size_t)i];
            }
        rc = _qf_pb_eval(p, nq, A, B, 0, p->threads, res);
        for (size_t q = 0; q < nq && rc == 0; q++)
            out[q] = res[q * p->cols];
    }
    free(A);
    free(B);
    free(res);
    return rc;
}

static int flush_tests(_qf_pb *p, qf_probe_result *r)
{
    double a[3], b[3], got[3];
    int e;
    r->flush_in = r->flush_out = QF_PROBE_UNOBSERVABLE;
    if (p->fa->has_subnormal && p->fb->has_subnormal) {
        double ba = ldexp(1.0, pow2_exp_of(p->fb->max)), aa = ldexp(1.0, pow2_exp_of(p->fa->max));
        a[0] = p->fa->min_subnormal;
        b[0] = ba;
        a[1] = aa;
        b[1] = p->fb->min_subnormal;
        if (eval_terms(p, 2, a, b, 1, got))
            return -1;
        r->flush_in = got[0] == 0 || got[1] == 0;
        _qf_pb_evidence(r, "flush of inputs: a = %g (subnormal %s) times b = %g -> %g; a = %g times b = %g -> %g",
                        a[0], p->fa->name, b[0], got[0], a[1], b[1], got[1]);
    }
    /* a product of two normal inputs below float32's smallest normal */
    for (e = -60; e >= -80; e--) {
        double x = ldexp(1.0, e), y = ldexp(1.0, -130 - e), dx, dy;
        if (_qf_pb_split(p, x, &dx, &dy) == 0 && x >= p->fa->min_normal && y >= p->fb->min_normal &&
            qf_format_decode(p->fb, qf_format_encode(p->fb, y, QF_ROUND_RNE, 0, 0, 0)) == y &&
            p->fo->min_subnormal <= 0x1p-130) {
            a[0] = x;
            b[0] = y;
            if (eval_terms(p, 1, a, b, 1, got))
                return -1;
            r->flush_out = got[0] == 0;
            _qf_pb_evidence(r, "flush of results: 2^%d * 2^%d (normal inputs, a float32 subnormal product) -> %g", e,
                            -130 - e, got[0]);
            break;
        }
    }
    if (r->flush_out == QF_PROBE_UNOBSERVABLE)
        _qf_pb_evidence(r, "flush of results: unobservable (no product of normal %s and %s values is a float32 "
                           "subnormal, or the output cannot hold one)",
                        p->fa->name, p->fb->name);
    return 0;
}

static const char *vname(double v, char *buf, size_t n)
{
    if (isnan(v))
        return "NaN";
    if (isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    snprintf(buf, n, "%g", v);
    return buf;
}

static int special_tests(_qf_pb *p, qf_probe_result *r)
{
    double a[5][2], b[5][2], got[5];
    const char *what[5];
    size_t n = 0, pos = 0;
    char buf[32];
    if (p->fa->nan != QF_NAN_NONE) {
        a[n][0] = NAN, b[n][0] = 1, a[n][1] = 1, b[n][1] = 1, what[n++] = "NaN + 1";
    }
    if (p->fa->has_inf) {
        a[n][0] = INFINITY, b[n][0] = 1, a[n][1] = 1, b[n][1] = 1, what[n++] = "+Inf + 1";
        a[n][0] = INFINITY, b[n][0] = 1, a[n][1] = -INFINITY, b[n][1] = 1, what[n++] = "+Inf + -Inf";
        a[n][0] = INFINITY, b[n][0] = 0, a[n][1] = 1, b[n][1] = 1, what[n++] = "Inf * 0 + 1";
    }
    if (pow2_exp_of(p->fa->max) + pow2_exp_of(p->fb->max) >= 128) {
        a[n][0] = p->fa->max, b[n][0] = p->fb->max, a[n][1] = 0, b[n][1] = 1, what[n++] = "max * max";
    }
    r->specials[0] = 0;
    if (!n)
        return 0;
    if (eval_terms(p, n, &a[0][0], &b[0][0], 2, got))
        return -1;
    for (size_t i = 0; i < n && pos < sizeof r->specials; i++) {
        int w = snprintf(r->specials + pos, sizeof r->specials - pos, "%s%s -> %s", i ? "; " : "", what[i],
                         vname(got[i], buf, sizeof buf));
        pos += w > 0 ? (size_t)w : 0;
    }
    _qf_pb_evidence(r, "specials: %s", r->specials);
    return 0;
}

/* ---- Random inputs: determinism and validation ------------------------------ */

static double rnd_value(const qf_format *f, uint64_t u)
{
    /* normal(0, 1)-ish from two uniforms, rounded into f */
    double x = ((double)(u >> 11) * 0x1p-53) * 2 - 1, y = ((double)(u & 0x7ff) + 0.5) / 2048.0;
    double v = x * (1 + 3 * y);
    return qf_format_decode(f, qf_format_encode(f, v, QF_ROUND_RNE, 1, 0, 0));
}

static int random_batch(_qf_pb *p, uint64_t seed, size_t rows, double **a, double **b)
{
    *a = malloc(rows * p->K * sizeof **a);
    *b = malloc(p->K * sizeof **b);
    if (!*a || !*b)
        return -1;
    for (size_t i = 0; i < rows * p->K; i++)
        (*a)[i] = rnd_value(p->fa, qf_rng_u64(seed, i));
    for (size_t l = 0; l < p->K; l++)
        (*b)[l] = rnd_value(p->fb, qf_rng_u64(seed ^ 0xb, l));
    return 0;
}

static int same_bits(const double *x, const double *y, size_t n, size_t *where)
{
    for (size_t i = 0; i < n; i++)
        if (!(x[i] == y[i] && signbit(x[i]) == signbit(y[i])) && !(isnan(x[i]) && isnan(y[i]))) {
            *where = i;
            return 0;
        }
    return 1;
}

static int shape_outputs_t(_qf_pb *p, size_t sm, size_t sn, size_t sk, uint64_t seed, int threads, double **a,
                           double **b, double **res);

static int determinism(_qf_pb *p, qf_probe_result *r)
{
    size_t rows = 64, n = rows * p->cols, w = 0;
    double *a = NULL, *b = NULL, *r1 = malloc(n * sizeof *r1), *r2 = malloc(n * sizeof *r2),
           *r3 = malloc(n * sizeof *r3);
    int rc = -1;
    if (!r1 || !r2 || !r3 || random_batch(p, r->seed ^ 0xde7, rows, &a, &b))
        goto out;
    if (_qf_pb_eval(p, rows, a, b, 1, 1, r1) || _qf_pb_eval(p, rows, a, b, 1, 1, r2) ||
        _qf_pb_eval(p, rows, a, b, 1, 2, r3))
        goto out;
    r->deterministic = same_bits(r1, r2, n, &w);
    if (!r->deterministic)
        _qf_pb_evidence(r, "determinism: two runs (1 thread) of the same %zu x %zu x %zu call differ at (%zu, %zu): "
                           "%.9g vs %.9g",
                        rows, p->cols, p->K, w / p->cols, w % p->cols, r1[w], r2[w]);
    r->deterministic_threads = r->deterministic && same_bits(r1, r3, n, &w);
    if (r->deterministic && !r->deterministic_threads)
        _qf_pb_evidence(r, "determinism: 1 and 2 threads differ at (%zu, %zu): %.9g vs %.9g", w / p->cols,
                        w % p->cols, r1[w], r3[w]);
    /* Libraries split the work among threads only past some size, and by
     * shape (OpenBLAS at 129 x 33 x 129 differs at 2 threads where a 64 x
     * 8 x 256 call does not): thread invariance is claimed only when two
     * larger, odd shapes agree too. */
    if (r->deterministic_threads) {
        static const size_t big[1][3] = {{129, 33, 128}};
        for (int t = 0; t < 1 && r->deterministic_threads; t++) {
            double *ba = NULL, *bb = NULL, *o1 = NULL, *o2 = NULL, *o3 = NULL;
            size_t bn = big[t][0] * big[t][1];
            int bad = shape_outputs_t(p, big[t][0], big[t][1], big[t][2], r->seed ^ 0xd3, 1, &ba, &bb, &o1);
            free(ba), free(bb), ba = bb = NULL;
            bad = bad || shape_outputs_t(p, big[t][0], big[t][1], big[t][2], r->seed ^ 0xd3, 1, &ba, &bb, &o2);
            free(ba), free(bb), ba = bb = NULL;
            bad = bad || shape_outputs_t(p, big[t][0], big[t][1], big[t][2], r->seed ^ 0xd3, 2, &ba, &bb, &o3);
            free(ba), free(bb);
            if (bad) {
                /* a shape outside the kernel's claim: not checked there */
                free(o1), free(o2), free(o3);
                _qf_pb_evidence(r, "determinism: a %zu x %zu x %zu call could not be made (%s); thread "
                                   "invariance seen at the smaller call only",
                                big[t][0], big[t][1], big[t][2], p->err);
                p->err[0] = '\0';
                continue;
            }
            if (!same_bits(o1, o2, bn, &w)) {
                r->deterministic = r->deterministic_threads = 0;
                _qf_pb_evidence(r, "determinism: two runs (1 thread) of a %zu x %zu x %zu call differ at (%zu, %zu)",
                                big[t][0], big[t][1], big[t][2], w / big[t][1], w % big[t][1]);
            } else if (!same_bits(o1, o3, bn, &w)) {
                r->deterministic_threads = 0;
                _qf_pb_evidence(r, "determinism: a %zu x %zu x %zu call differs at 1 and 2 threads at (%zu, %zu): "
                                   "%.9g vs %.9g (run to run it repeats)",
                                big[t][0], big[t][1], big[t][2], w / big[t][1], w % big[t][1], o1[w], o3[w]);
            }
            free(o1), free(o2), free(o3);
        }
    }
    if (r->deterministic_threads)
        _qf_pb_evidence(r, "determinism: calls of %zu x %zu x %zu and 129 x 33 x 128 on random inputs (seed "
                           "%llu) gave the same bits twice and at 1 and 2 threads",
                        rows, p->cols, p->K, (unsigned long long)r->seed);
    rc = 0;
out:
    free(a);
    free(b);
    free(r1);
    free(r2);
    free(r3);
    return rc;
}

static double replay_order(const qf_probe_result *r, const qf_probe_order *o, size_t k, const double *a,
                           const double *b)
{
    _qf_tree t;
    _qf_arith h = _qf_arith_of(r), outer = {.F = _QF_F_EXACT, .acc = r->outer_acc, .round = r->outer_round};
    double v;
    if (o->kind == QF_PROBE_ORDER_UNKNOWN || _qf_tree_of_order(o, (int)k, &t)) {
        if (o->kind != QF_PROBE_ORDER_UNKNOWN)
            _qf_tree_free(&t);
        return NAN;
    }
    v = _qf_arith_tree(&h, r->outer ? &outer : NULL, &t, a, b);
    _qf_tree_free(&t);
    return v;
}

double qf_probe_replay_dot(const qf_probe_result *r, size_t col, const double *a, const double *b)
{
    return replay_order(r, col < 64 && r->n_orders ? &r->orders[r->col_order[col]] : &r->order, r->k, a, b);
}

const qf_probe_shape *qf_probe_find_shape(const qf_probe_result *r, size_t m, size_t n, size_t k)
{
    for (size_t i = 0; i < r->n_shapes; i++)
        if (r->shapes[i].m == m && r->shapes[i].n == n && r->shapes[i].k == k)
            return &r->shapes[i];
    return NULL;
}

double qf_probe_replay_elem(const qf_probe_result *r, size_t m, size_t n, size_t k, size_t i, size_t j,
                            const double *a, const double *b)
{
    const qf_probe_shape *s = qf_probe_find_shape(r, m, n, k);
    const qf_probe_order *o = s && i < m && j < n ? &r->orders[s->map[i * n + j]]
                              : r->n_orders       ? &r->orders[r->col_order[j < 64 ? j : 0]]
                                                  : &r->order;
    return replay_order(r, o, k, a, b);
}

/* One call at shape s on random inputs (seed): the kernel's outputs. */
static int shape_outputs(_qf_pb *p, const qf_probe_shape *s, uint64_t seed, double **a, double **b, double **res)
{
    return shape_outputs_t(p, s->m, s->n, s->k, seed, p->threads, a, b, res);
}

/* One call of shape sm x sn x sk on random inputs (seed) at `threads`. */
static int shape_outputs_t(_qf_pb *p, size_t sm, size_t sn, size_t sk, uint64_t seed, int threads, double **a,
                           double **b, double **res)
{
    qf_probe_shape sh, *s = &sh;
    sh.m = sm, sh.n = sn, sh.k = sk;
    _qf_pb q = *p;
    size_t m = s->m;
    int rc;
    q.K = s->k;
    q.bm = 0;
    *a = malloc(s->m * s->k * sizeof **a);
    *b = malloc(s->k * s->n * sizeof **b);
    *res = malloc(s->m * s->n * sizeof **res);
    if (!*a || !*b || !*res)
        return perr(p, "out of memory");
    for (size_t i = 0; i < s->m * s->k; i++)
        (*a)[i] = rnd_value(p->fa, qf_rng_u64(seed, i));
    for (size_t i = 0; i < s->k * s->n; i++)
        (*b)[i] = rnd_value(p->fb, qf_rng_u64(seed ^ 0xb, i));
    rc = _qf_pb_full(&q, 1, &m, s->n, (const double *const *)a, (const double *const *)b, threads, res);
    p->calls = q.calls;
    if (rc)
        snprintf(p->err, sizeof p->err, "%s", q.err);
    return rc;
}

void _qf_pb_flush_in(const qf_probe_result *r, const qf_format *f, double *v, size_t n)
{
    for (size_t i = 0; r->flush_in == 1 && i < n; i++)
        if (fabs(v[i]) < f->min_normal)
            v[i] = 0;
}

/* Elements of shape s that the replay (with r's current leaf_round) gets
 * wrong; the first in *first. */
static size_t shape_bad(const qf_probe_result *r, const qf_probe_shape *s, const _qf_pb *p, const double *a,
                        const double *b, const double *res, size_t *first)
{
    size_t bad = 0;
    double *col = malloc(s->k * sizeof *col);
    double *row = malloc(s->k * sizeof *row);
    if (!col || !row) {
        free(col), free(row);
        return s->m * s->n;
    }
    for (size_t j = 0; j < s->n; j++) {
        for (size_t l = 0; l < s->k; l++)
            col[l] = b[l * s->n + j];
        _qf_pb_flush_in(r, p->fb, col, s->k);
        for (size_t i = 0; i < s->m; i++) {
            double want;
            memcpy(row, a + i * s->k, s->k * sizeof *row);
            _qf_pb_flush_in(r, p->fa, row, s->k);
            want = qf_format_decode(
                p->fo, qf_format_encode(p->fo, qf_probe_replay_elem(r, s->m, s->n, s->k, i, j, row, col),
                                        QF_ROUND_RNE, 0, 0, 0));
            if (!(want == res[i * s->n + j]) && !(isnan(want) && isnan(res[i * s->n + j])) && !bad++)
                *first = i * s->n + j;
        }
    }
    free(col);
    free(row);
    return bad;
}

/* The replay at every probed shape, choosing leaf_round as validate() does. */
static int validate_shapes(_qf_pb *p, qf_probe_result *r)
{
    double *a[QF_PROBE_MAX_SHAPES] = {0}, *b[QF_PROBE_MAX_SHAPES] = {0}, *res[QF_PROBE_MAX_SHAPES] = {0};
    size_t bad = 0, first[QF_PROBE_MAX_SHAPES] = {0}, nb[QF_PROBE_MAX_SHAPES] = {0}, i;
    int rc = -1;
    for (i = 0; i < r->n_shapes; i++)
        if (shape_outputs(p, &r->shapes[i], r->seed ^ 0x7a1 ^ (i << 8), &a[i], &b[i], &res[i]))
            goto out;
    /* the variant that replays the most elements (an order the replay
     * cannot build, `any`, fails under each) */
    for (int lr = 0, best = -1, least = -1; lr < 3; lr++) {
        r->leaf_round = lr;
        bad = 0;
        for (i = 0; i < r->n_shapes; i++)
            bad += shape_bad(r, &r->shapes[i], p, a[i], b[i], res[i], &first[i]);
        if (best < 0 || bad < (size_t)least)
            best = lr, least = (int)bad;
        if (!bad)
            break;
        if (lr == 2)
            r->leaf_round = best;
    }
    if (bad) {
        for (i = 0, bad = 0; i < r->n_shapes; i++)
            bad += nb[i] = shape_bad(r, &r->shapes[i], p, a[i], b[i], res[i], &first[i]);
    }
    if (r->leaf_round)
        _qf_pb_evidence(r, "validation: the replay matches best when %s rounded alone first (acc = 0 + x)",
                        r->leaf_round == 1 ? "the first term of a two-term node is" : "both terms of a two-term node are");
    r->validated = r->validated_ok = 0;
    for (i = 0; i < r->n_shapes; i++) {
        qf_probe_shape *s = &r->shapes[i];
        s->validated = s->m * s->n;
        s->validated_ok = s->validated - nb[i];
        r->validated += s->validated;
        r->validated_ok += s->validated_ok;
        if (nb[i]) {
            size_t f = first[i], fi = f / s->n, fj = f % s->n;
            double *col = malloc(s->k * sizeof *col);
            for (size_t l = 0; col && l < s->k; l++)
                col[l] = b[i][l * s->n + fj];
            _qf_pb_evidence(r, "validation: %zu x %zu x %zu on random inputs (seed %llu): %zu of %zu elements differ "
                               "from the replay, first (%zu, %zu) (order %s): kernel %.9g, replay %.9g",
                            s->m, s->n, s->k, (unsigned long long)r->seed, nb[i], s->validated, fi, fj,
                            r->orders[s->map[f]].text, res[i][f],
                            col ? qf_probe_replay_elem(r, s->m, s->n, s->k, fi, fj, a[i] + fi * s->k, col) : NAN);
            free(col);
        }
    }
    if (!bad)
        _qf_pb_evidence(r, "validation: the element maps and arithmetic replayed on %zu random elements of %zu "
                           "shapes (seed %llu) reproduce every output bit for bit",
                        r->validated, r->n_shapes, (unsigned long long)r->seed);
    rc = 0;
out:
    for (i = 0; i < r->n_shapes; i++)
        free(a[i]), free(b[i]), free(res[i]);
    return rc;
}

static int validate(_qf_pb *p, qf_probe_result *r)
{
    size_t rows = 32, n = rows * p->cols, bad = 0, first = 0;
    double *a = NULL, *b = NULL, *res = malloc(n * sizeof *res);
    int rc = -1;
    if (!res || random_batch(p, r->seed ^ 0x7a1, rows, &a, &b))
        goto out;
    if (_qf_pb_eval(p, rows, a, b, 1, p->threads, res))
        goto out;
    /* a two-leaf node may round a term alone first (acc = 0 + x_0 in a
     * chain whose products are fused): the variant that replays every
     * output is kept */
    for (int lr = 0; lr < 3; lr++) {
        r->leaf_round = lr;
        bad = 0;
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < p->cols; j++) {
                double want = qf_format_decode(
                    p->fo, qf_format_encode(p->fo, qf_probe_replay_dot(r, j, a + i * p->K, b), QF_ROUND_RNE, 0, 0, 0));
                if (!(want == res[i * p->cols + j]) && !bad++)
                    first = i * p->cols + j;
            }
        if (!bad)
            break;
    }
    if (bad)
        r->leaf_round = 0;
    else if (r->leaf_round)
        _qf_pb_evidence(r, "validation: the replay matches when %s rounded alone first (acc = 0 + x)",
                        r->leaf_round == 1 ? "the first term of a two-term node is" : "both terms of a two-term node are");
    r->validated = n;
    r->validated_ok = n - bad;
    if (bad)
        _qf_pb_evidence(r, "validation: the revealed order and arithmetic replayed on %zu random dot products (seed "
                           "%llu) differ from the kernel on %zu, first (%zu, %zu): kernel %.9g, replay %.9g",
                        n, (unsigned long long)r->seed, bad, first / p->cols, first % p->cols, res[first],
                        qf_probe_replay_dot(r, first % p->cols, a + first / p->cols * p->K, b));
    else
        _qf_pb_evidence(r, "validation: the revealed order and arithmetic replayed on %zu random dot products (seed "
                           "%llu) reproduce every output bit for bit",
                        n, (unsigned long long)r->seed);
    rc = 0;
out:
    free(a);
    free(b);
    free(res);
    return rc;
}

/* ---- The probe ----------------------------------------------------------------- */

/* Set p's message and copy it to the caller's err. */
#define FAIL(ST, ...)                                                                                        \
    do {                                                                                                     \
        perr(&p, __VA_ARGS__);                                                                               \
        if (err && err_size)                                                                                 \
            snprintf(err, err_size, "%s", p.err);                                                            \
        return ST;                                                                                           \
    } while (0)

/* varies(...) over every order found, or the one order. */
static void set_order_claim(qf_probe_result *r)
{
    r->varies = r->n_orders > 1;
    if (r->varies) {
        size_t pos = (size_t)snprintf(r->order_claim, sizeof r->order_claim, "varies(");
        for (size_t i = 0; i < r->n_orders && pos < sizeof r->order_claim; i++)
            pos += (size_t)snprintf(r->order_claim + pos, sizeof r->order_claim - pos, "%s%s", i ? ", " : "",
                                    r->orders[i].text);
        if (pos < sizeof r->order_claim)
            snprintf(r->order_claim + pos, sizeof r->order_claim - pos, ")");
    } else
        snprintf(r->order_claim, sizeof r->order_claim, "%s", r->order.text);
}

/* Set the error and return it (the kernel and tuple checks of the harness). */
#define PFAIL(ST, ...)                                                                                       \
    do {                                                                                                     \
        perr(p, __VA_ARGS__);                                                                                \
        return ST;                                                                                           \
    } while (0)

qf_status _qf_pb_open(_qf_pb *p, const qf_registry *reg, const char *name, const char *dtype)
{
    const qf_kernel *k = reg && name ? qf_registry_find(reg, name) : NULL;
    size_t i;
    if (!k)
        PFAIL(QF_EINVAL, "no kernel named '%s' (qualify list kernels)", name ? name : "");
    if (k->op != QF_OP_GEMM)
        PFAIL(QF_EUNSUPPORTED, "%s is a %s kernel; the probe reveals GEMM kernels", name, qf_op_name(k->op));
    p->k = k;
    if (dtype) {
        p->t = qf_kernel_dtype(k, dtype);
        if (!p->t)
            PFAIL(QF_EINVAL, "%s has no dtype tuple '%s'", name, dtype);
    } else
        for (i = 0; i < k->n_dtypes; i++) {
            const qf_dtype_tuple *t = &k->dtypes[i];
            const qf_format *f = qf_format_get(t->out[0]);
            if (t->in_scale[0] || t->in_scale[1])
                continue;
            if (!p->t || (f && f->man_bits > qf_format_get(p->t->out[0])->man_bits))
                p->t = t;
        }
    if (!p->t)
        PFAIL(QF_EUNSUPPORTED, "%s has no dtype tuple without input scales", name);
    if (p->t->in_scale[0] || p->t->in_scale[1])
        PFAIL(QF_EUNSUPPORTED, "tuple %s has scaled inputs, which the probe does not drive", p->t->name);
    p->fa = qf_format_get(p->t->in[0]);
    p->fb = qf_format_get(p->t->in[1]);
    p->fo = qf_format_get(p->t->out[0]);
    if (!p->fa || !p->fb || !p->fo || p->fa->kind != QF_KIND_FLOAT || p->fb->kind != QF_KIND_FLOAT ||
        p->fo->kind != QF_KIND_FLOAT || p->fa->man_bits > 23 || p->fb->man_bits > 23 || p->fa->storage_bits % 8 ||
        p->fb->storage_bits % 8 || p->fo->storage_bits % 8)
        PFAIL(QF_EUNSUPPORTED,
             "tuple %s: the probe needs unpacked floating-point inputs of at most 24 significant bits "
             "(products exact in binary64) and a floating-point output",
             p->t->name);
    return QF_OK;
}
#undef PFAIL

qf_status qf_probe_gemm(const qf_registry *reg, const char *name, const qf_probe_opts *o, qf_probe_result *r,
                        char *err, size_t err_size)
{
    _qf_pb p;
    _qf_tree *trees = NULL;
    const qf_kernel *k;
    qf_probe_opts d = {0};
    double t0 = now_s();
    qf_status st = QF_EINVAL;
    size_t j;
    if (!o)
        o = &d;
    memset(r, 0, sizeof *r);
    memset(&p, 0, sizeof p);
    if ((st = _qf_pb_open(&p, reg, name, o->dtype)) != QF_OK) {
        if (err && err_size)
            snprintf(err, err_size, "%s", p.err);
        return st;
    }
    k = p.k;
    p.K = fit(k, 2, o->k ? o->k : 256);
    p.cols = o->cols ? o->cols : 8;
    if (p.cols > 64)
        p.cols = 64;
    if (p.K < 2 || p.K > 4096)
        FAIL(QF_EINVAL, "K = %zu: the probe takes 2 <= K <= 4096", p.K);
    p.timeout_s = o->timeout_s > 0 ? o->timeout_s : 60;
    p.threads = o->threads > 0 ? o->threads : 1;
    snprintf(r->kernel, sizeof r->kernel, "%s", k->name);
    snprintf(r->dtype, sizeof r->dtype, "%s", p.t->name);
    r->k = p.K;
    r->cols = p.cols;
    r->seed = o->seed ? o->seed : 20261129ull;
    trees = calloc(p.cols, sizeof *trees);
    if (!trees)
        FAIL(QF_ENOMEM, "out of memory");
    if (flush_tests(&p, r) || _qf_tree_reveal(&p, r, trees))
        goto bad;
    /* name each column's tree; distinct orders */
    for (j = 0; j < p.cols; j++) {
        qf_probe_order ord;
        size_t m;
        _qf_tree_classify(&trees[j], &ord);
        for (m = 0; m < r->n_orders; m++)
            if (!memcmp(&r->orders[m], &ord, sizeof ord))
                break;
        if (m == r->n_orders && m < QF_PROBE_MAX_ORDERS)
            r->orders[r->n_orders++] = ord;
        if (m >= QF_PROBE_MAX_ORDERS)
            m = QF_PROBE_MAX_ORDERS - 1;
        r->col_order[j] = (unsigned char)m;
        {
            size_t len = strlen(r->order_cols[m]);
            snprintf(r->order_cols[m] + len, sizeof r->order_cols[m] - len, "%s%zu", len ? " " : "", j);
        }
    }
    r->order = r->orders[0];
    set_order_claim(r);
    _qf_tree_text(&trees[0], r->tree, sizeof r->tree);
    if (_qf_mma_probe(&p, r, &trees[0]))
        goto bad;
    if (!o->no_shapes && r->order.kind != QF_PROBE_ORDER_UNKNOWN) {
        if (_qf_tiles_probe(&p, r, o, trees))
            goto bad;
        set_order_claim(r);
    }
    r->sum_tree = r->order.kind == QF_PROBE_ORDER_BLOCKED && r->order.inner == QF_PROBE_ORDER_PAIRWISE;
    r->promote_interval = r->order.kind == QF_PROBE_ORDER_BLOCKED && r->order.inner == QF_PROBE_ORDER_SEQUENTIAL &&
                                  r->order.fused > 1
                              ? r->order.block
                              : 0;
    if (r->order.fused > 1)
        r->block = r->order.odd_even ? 2 * r->order.fused : r->order.fused;
    if (special_tests(&p, r) || determinism(&p, r))
        goto bad;
    if (r->order.kind != QF_PROBE_ORDER_UNKNOWN && (r->n_shapes ? validate_shapes(&p, r) : validate(&p, r)))
        goto bad;
    st = QF_OK;
    goto done;
bad:
    if (err && err_size)
        snprintf(err, err_size, "%s", p.err[0] ? p.err : "out of memory");
    st = QF_EINVAL;
done:
    for (j = 0; j < p.cols; j++)
        _qf_tree_free(&trees[j]);
    free(trees);
    r->kernel_calls = p.calls;
    r->seconds = now_s() - t0;
    return st;
}
