/* runner.c: the isolated runner: plan, worker processes, kernel child with
 * poison, canaries and a time limit, reference, metrics, bound, verdict,
 * journal (qf_runner.h, docs/runner.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "qf_suite.h"

#include "_isolate.h"
#include "_runner.h"
#include "_status.h"
#include "_runner_device.h"
#include "_runner_devices.h"
#include "_worker.h"
#include "qf_worker.h"
#include "ops/_ops.h"

#include "qf_backend.h"
#include "qf_block.h"
#include "qf_bound.h"
#include "qf_dot.h"
#include "qf_inputs.h"
#include "qf_kernel.h"
#include "qf_metrics.h"
#include "qf_ref.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_verdict.h"

/* Two runs into two differently poisoned buffers: an element that still
 * holds its run's poison in BOTH runs was never written (a kernel cannot
 * write 0xA5.. in one run and 0x5A.. in the other deterministically; a
 * nondeterministic one is caught by the bitwise comparison instead). */
static const unsigned char poison[2] = {0xA5, 0x5A};

/* A message into err[size] (when there is room). */
#define errf(err, size, ...) ((void)_qf_fail(err, size, QF_OK, NULL, __VA_ARGS__))

qf_runner_opts qf_runner_opts_default(void)
{
    qf_runner_opts o;
    memset(&o, 0, sizeof o);
    o.jobs = 1;
    o.timeout_s = 60;
    return o;
}

/* The sweep's records (about 17 KiB each, the evidence 2 KiB of it) in a
 * mapping that pair processes do not inherit (MADV_DONTFORK): a pair never
 * reads another's record, and forked from a parent holding 10^5 of them it
 * would start with a resident set of 1.7 GB, which its peak_rss_bytes would count
 * (COW pages are mapped in the child) and every fork would copy the page
 * tables of (docs/runner.md "Memory").  Zero-filled, as calloc's. */
static qf_result *results_alloc(size_t n, size_t *bytes)
{
    size_t b = (n ? n : 1) * sizeof(qf_result);
    void *p = mmap(NULL, b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, b, MADV_DONTFORK); /* a hint: without it pairs inherit them, as before */
    *bytes = b;
    return p;
}

void qf_runner_summary_free(qf_runner_summary *s)
{
    if (!s)
        return;
    if (s->results && s->results_bytes)
        munmap(s->results, s->results_bytes);
    else
        free(s->results);
    memset(s, 0, sizeof *s);
}



static void prep_free(_qf_case *p)
{
    int i;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        free(p->inval[i]);
        free(p->incode[i]);
        free(p->instrided[i]);
    }
    free(p->inscale[0]);
    free(p->inscale[1]);
    _qf_rp_guarded_free(&p->g[0]);
    _qf_rp_guarded_free(&p->g[1]);
    _qf_rp_guarded_free(&p->g1[0]);
    _qf_rp_guarded_free(&p->g1[1]);
    _qf_kio_free();
}

/* Does tuple t serve the case's dtype roles?  out and acc for every op,
 * the inputs as the op class says. */
static int tuple_matches(const _qf_case *p, const qf_dtype_tuple *t)
{
    return _qf_tuple_serves(p->c, p->cls, t);
}

static qf_status case_dist(const qf_suite_input *in, qf_dist *d, char *err, size_t err_size)
{
    size_t i;
    qf_status s = qf_dist_lookup(in->name, d, err, err_size);
    if (s != QF_OK)
        return s;
    for (i = 0; i < in->nparams; i++) {
        /* The suite's parameter names (docs/suites.md) where qf_dist's
         * differ (docs/inputs.md); near_saturation's level is the lower end
         * of |x| / max. */
        static const char *const alias[][2] = {
            {"low", "lo"}, {"high", "hi"}, {"max", "int_max"}, {"level", "lo"}};
        const char *key = in->keys[i];
        char v[64];
        size_t a;
        for (a = 0; a < sizeof alias / sizeof alias[0]; a++)
            if (!strcmp(key, alias[a][0]) && qf_dist_set(d, key, "0", NULL, 0) != QF_OK)
                key = alias[a][1];
        /* The text as written (a number in its shortest exact form, or a
         * word such as tail: lognormal) is what qf_dist_set() reads. */
        if (in->texts && in->texts[i])
            snprintf(v, sizeof v, "%s", in->texts[i]);
        else
            snprintf(v, sizeof v, "%.17g", in->values[i]);
        s = qf_dist_set(d, key, v, err, err_size);
        if (s != QF_OK)
            return s;
    }
    if (in->path)
        snprintf(d->path, sizeof d->path, "%s", in->path);
    if (in->tensor)
        snprintf(d->tensor, sizeof d->tensor, "%s", in->tensor);
    return QF_OK;
}

/* The inputs and output descriptors (the op class), then the _qf_guarded
 * output buffers of both runs. */
static int prepare_inputs(_qf_case *p, qf_result *r)
{
    qf_dist d;
    char err[256];
    if (case_dist(p->c->input, &d, err, sizeof err) != QF_OK) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: input distribution: %s", err);
        return -1;
    }
    p->nin = qf_op_slot_count(p->op.op, 0);
    p->nout = qf_op_slot_count(p->op.op, 1);
    for (size_t i = 0; i < p->c->input->nslots; i++) {
        const char *slot = p->c->input->slot_names[i];
        int k = 0;
        while (k < p->nin && strcmp(qf_op_slot_name(p->op.op, 0, k), slot))
            k++;
        if (k == p->nin || case_dist(&p->c->input->slots[i], &p->slot_dist[k], err, sizeof err) != QF_OK) {
            _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: input %s: %s", slot,
                    k == p->nin ? "not an input slot of the op" : err);
            return -1;
        }
        p->slot_own |= 1u << k;
    }
    if (p->cls->inputs(p, r, &d))
        return -1;
    if (p->slot_own & ~p->slot_drawn) {
        /* A slot the case names but does not draw (gemm's c when beta is
         * 0): its distribution would be ignored without a word. */
        int k = 0;
        while (!((p->slot_own & ~p->slot_drawn) & (1u << k)))
            k++;
        _qf_say(r, QF_CAUSE_UNSUPPORTED,
                "unsupported: input %s has its own distribution but this case does not draw it",
                qf_op_slot_name(p->op.op, 0, k));
        return -1;
    }
    p->outf = qf_format_get(p->t->out[0]);
    p->out_n = p->rows * p->cols;
    if (!p->outf || p->outf->storage_bits % 8) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED,
                "unsupported: packed output formats are not driven by the runner yet");
        return -1;
    }
    /* A strided layout: inputs copied out with poisoned gaps, output 0
     * allocated over its strided extent (runner_layout.c). */
    if (_qf_layout_inputs(p, r) || _qf_layout_output(p, r))
        return -1;
    if (_qf_rp_guarded_alloc(&p->g[0], p->out_bytes, poison[0]) ||
        _qf_rp_guarded_alloc(&p->g[1], p->out_bytes, poison[1])) {
        _qf_say(r, QF_CAUSE_HARNESS, "cannot map the output buffers: %s", strerror(errno));
        return -1;
    }
    p->out[0].bytes = p->g[0].bytes;
    if (p->out1_n) {
        if (_qf_rp_guarded_alloc(&p->g1[0], p->out1_n * (size_t)p->out1_eb, poison[0]) ||
            _qf_rp_guarded_alloc(&p->g1[1], p->out1_n * (size_t)p->out1_eb, poison[1])) {
            _qf_say(r, QF_CAUSE_HARNESS, "cannot map the output buffers: %s", strerror(errno));
            return -1;
        }
        if (!p->out1_is_scale)
            p->out[1].bytes = p->g1[0].bytes;
    }
    return 0;
}

/* ---- Reading outputs ----------------------------------------------------- */

static void where_rc(const _qf_case *p, size_t i, char *buf, size_t size)
{
    if (p->cols)
        snprintf(buf, size, "(%zu, %zu)", i / p->cols, i % p->cols);
    else
        snprintf(buf, size, "[%zu]", i);
}

/* Canaries and poison of one output slot; 0 when clean, else FAILED. */
static int check_slot(_qf_case *p, qf_result *r, int sl, _qf_guarded *g, size_t n, int eb)
{
    int run;
    size_t i, unwritten = 0, first = 0;
    const char *slot = qf_op_slot_name(p->op.op, 1, sl);
    char at[64];
    for (run = 0; run < 2; run++) {
        long off = _qf_rp_guarded_check(&g[run]);
        if (off)
            return _qf_say(r, QF_CAUSE_BAD_WRITE,
                           "canary: output %s written out of bounds, %ld byte(s) %s the buffer (run %d)",
                           slot, off < 0 ? -off : off, off < 0 ? "before" : "past the end of", run + 1),
                   -1;
    }
    /* A strided output: its gaps must still hold the run's poison; then
     * its elements are gathered densely for the checks below. */
    for (run = 0; sl == 0 && run < 2; run++) {
        char why[QF_RESULT_TEXT_MAX - 16];
        if (_qf_layout_gather(p, &g[run], poison[run], why, sizeof why))
            return _qf_say(r, QF_CAUSE_BAD_WRITE, "%s (run %d)", why, run + 1), -1;
    }
    for (i = 0; i < n; i++) {
        int b, clean = 1;
        for (run = 0; run < 2 && clean; run++)
            for (b = 0; b < eb; b++)
                if (g[run].data[i * (size_t)eb + (size_t)b] != poison[run]) {
                    clean = 0;
                    break;
                }
        if (clean && unwritten++ == 0)
            first = i;
    }
    if (unwritten) {
        if (sl == 0)
            where_rc(p, first, at, sizeof at);
        else
            snprintf(at, sizeof at, "[%zu]", first);
        _qf_say(r, QF_CAUSE_BAD_WRITE,
                "unwritten: %zu of %zu elements of output %s never written (first at %s)", unwritten, n, slot,
                at);
        return -1;
    }
    return 0;
}

static int check_outputs(_qf_case *p, qf_result *r)
{
    if (check_slot(p, r, 0, p->g, p->out_n, p->outf->storage_bits / 8))
        return -1;
    return p->out1_n ? check_slot(p, r, 1, p->g1, p->out1_n, p->out1_eb) : 0;
}

/* ---- Reference, metrics, bound ------------------------------------------- */

static void bound_summary(_qf_case *p, _qf_checked *ck, qf_result *r)
{
    size_t i, at = 0;
    double mx = -1;
    for (i = 0; i < ck->n; i++)
        if (ck->bound[i] > mx) {
            mx = ck->bound[i];
            at = i;
        }
    if (mx >= 0) {
        double u = qf_format_ulp(p->outf, ck->exact[at]);
        r->bound.max_bound = mx;
        r->bound.max_bound_ulp = u > 0 ? mx / u : NAN;
    }
}

static void remap(size_t *at, const _qf_checked *ck)
{
    if (*at < ck->n)
        *at = _qf_ck_at(ck, *at);
}

/* The element indices of metrics over a sample, from checked-list
 * positions back to output positions. */
static void remap_metrics(qf_metrics *m, const _qf_checked *ck, size_t cols)
{
    remap(&m->at_ulp, ck);
    remap(&m->at_abs, ck);
    remap(&m->at_rel, ck);
    remap(&m->at_util, ck);
    remap(&m->at_nonfinite_bad, ck);
    remap(&m->at_finite_bad, ck);
    remap(&m->at_violation, ck);
    m->cols = cols;
}

static qf_policy case_policy(const _qf_case *p)
{
    const qf_suite_policy *sp = &p->c->group->policy;
    qf_policy pol = qf_policy_default((p->cls->flags & _QF_OPC_DOT) != 0);
    if (sp->set & QF_POLICY_MAX_ULP)
        pol.max_ulp = sp->max_ulp;
    if (sp->set & QF_POLICY_MAX_NORMWISE)
        pol.max_normwise = sp->max_normwise;
    if (sp->set & QF_POLICY_MIN_SQNR_DB)
        pol.min_sqnr_db = sp->min_sqnr_db;
    if (sp->set & QF_POLICY_BASELINE) {
        pol.baseline_factor = sp->baseline_factor;
        pol.baseline_metric = sp->baseline_rms ? QF_BASELINE_RMS : QF_BASELINE_MAX_ABS;
        pol.baseline_tol = sp->baseline_tol;
    }
    /* quantize compares codes with an exact expectation: zero codes are
     * not weak evidence there, so they never make the check doubtful. */
    if (p->cls->flags & _QF_OPC_EXACT_CODES)
        pol.max_zero_frac = 1;
    /* The suite's own figure comes last: whoever wrote it knows whether
     * zeros in their data are degenerate (docs/suites.md#policy). */
    if (sp->set & QF_POLICY_MAX_ZERO_FRAC)
        pol.max_zero_frac = sp->max_zero_frac;
    if (sp->set & QF_POLICY_MAX_COMPONENTWISE)
        pol.max_componentwise = sp->max_componentwise;
    /* Refuting inputs check the claim, not fitness: they are built to push
     * the error to the claimed bound (docs/refute.md). */
    if (_qf_case_refute(p->c) >= 0) {
        pol.max_ulp = pol.max_normwise = pol.min_sqnr_db = pol.baseline_factor = pol.max_componentwise = NAN;
        pol.max_zero_frac = 1;
    }
    return pol;
}

/* Evidence for the suite's max_componentwise policy (docs/suites.md): the
 * largest |c^_i - c_i| / (|A||B|)_i for gemm (the magnitude term of the
 * exact engine, rounded up), / |c_i| for the other ops, over the checked,
 * decided elements (qf_evidence.cw_worst; rule 8 of docs/verdicts.md). */
static void componentwise_evidence(const _qf_case *p, const _qf_checked *ck, qf_evidence *e)
{
    double worst = 0;
    size_t i, at = 0;
    for (i = 0; i < ck->n; i++) {
        double err, den, cw, got;
        if (!(p->cls->flags & _QF_OPC_DOT) && ck->status &&
            (ck->status[i] == QF_REF_UNDECIDED || ck->status[i] == QF_REF_UNDEFINED))
            continue;
        got = _qf_ck_got(p, ck, i);
        if (!isfinite(got) || !isfinite(ck->exact[i]))
            continue;
        err = fabs(got - ck->exact[i]);
        den = p->cls->flags & _QF_OPC_DOT ? ck->absb[i] : fabs(ck->exact[i]);
        cw = err == 0 ? 0 : den > 0 ? err / den : INFINITY;
        if (cw > worst) {
            worst = cw;
            at = i;
        }
    }
    e->cw_checked = 1;
    e->cw_worst = worst;
    e->cw_at = at;
}

/* The policy's baseline kernel on the same inputs, with the same isolation
 * (own child process, poisoned and _qf_guarded outputs, time limit), compared
 * with the same reference on the same checked elements.  0 with *bm
 * filled; -1 with *bv (MISTRUSTED or UNSUPPORTED) and a reason in why:
 * a baseline that crashes or misbehaves makes the comparison doubtful, it
 * says nothing about the kernel under test. */
static int run_baseline(_qf_case *p, const _qf_checked *ck, const qf_metrics_input *mi0, _qf_child_report *rep,
                        double timeout_s, qf_metrics *bm, qf_verdict *bv, char *why, size_t why_size)
{
    _qf_case b = *p; /* shares the inputs; only the outputs are its own */
    qf_result *tr = malloc(sizeof *tr);
    qf_metrics_input mi = *mi0;
    size_t bytes = p->out_bytes;
    int rc = -1;
    qf_status s;
    *bv = QF_VERDICT_MISTRUSTED;
    memset(b.g, 0, sizeof b.g);
    memset(b.g1, 0, sizeof b.g1);
    b.k = p->bk;
    b.t = p->bt;
    if (!tr || _qf_rp_guarded_alloc(&b.g[0], bytes, poison[0]) ||
        _qf_rp_guarded_alloc(&b.g[1], bytes, poison[1]) ||
        (p->out1_n && (_qf_rp_guarded_alloc(&b.g1[0], p->out1_n * (size_t)p->out1_eb, poison[0]) ||
                       _qf_rp_guarded_alloc(&b.g1[1], p->out1_n * (size_t)p->out1_eb, poison[1])))) {
        errf(why, why_size, "baseline %s: out of memory for its outputs", p->bk->name);
        goto done;
    }
    b.out[0].bytes = b.g[0].bytes;
    qf_result_init(tr);
    if (_qf_kio_run(&b, rep, tr, timeout_s, 0, 0, 0)) {
        errf(why, why_size, "baseline %s did not run: %s", p->bk->name, tr->reason);
        goto done;
    }
    if (rep->status == QF_EUNSUPPORTED) {
        *bv = QF_VERDICT_UNSUPPORTED;
        errf(why, why_size, "unsupported: the baseline %s declined: %s", p->bk->name,
             rep->msg[0] ? rep->msg : "(no reason)");
        goto done;
    }
    if (rep->status != QF_OK) {
        errf(why, why_size, "baseline %s returned %s: %s", p->bk->name, qf_status_str((qf_status)rep->status),
             rep->msg[0] ? rep->msg : "(no message)");
        goto done;
    }
    if (check_outputs(&b, tr)) {
        errf(why, why_size, "baseline %s: %s", p->bk->name, tr->reason);
        goto done;
    }
    /* Its error only: conformance is the baseline's own qualification. */
    mi.got = NULL;
    mi.got_codes = b.g[0].data;
    mi.bound = NULL;
    s = qf_metrics_compute(&mi, bm, NULL);
    if (s != QF_OK) {
        errf(why, why_size, "baseline %s: metrics failed: %s", p->bk->name, qf_status_str(s));
        goto done;
    }
    rc = 0;
done:
    free(tr);
    _qf_rp_guarded_free(&b.g[0]);
    _qf_rp_guarded_free(&b.g[1]);
    _qf_rp_guarded_free(&b.g1[0]);
    _qf_rp_guarded_free(&b.g1[1]);
    return rc;
}

/* Metrics of the second output (attention's lse) of run `run` into m:
 * 0, or -1 (QF_CAUSE_HARNESS said). */
static int second_output(_qf_case *p, _qf_checked *ck1, int run, qf_metrics *m, qf_result *r)
{
    qf_metrics_input mi;
    qf_status s;
    memset(&mi, 0, sizeof mi);
    mi.out = p->outf1;
    mi.n = ck1->n;
    mi.got_codes = p->g1[run].data; /* codes of outf1 (p->out1_eb bytes) */
    mi.got_idx = ck1->idx;
    mi.exact = ck1->exact;
    mi.rounded = ck1->rounded;
    mi.bound = ck1->has_bound ? ck1->bound : NULL;
    mi.status = ck1->status;
    s = qf_metrics_compute(&mi, m, NULL);
    if (s != QF_OK)
        return _qf_say(r, QF_CAUSE_HARNESS, "%smetrics of output %s failed: %s", run ? "run 2: " : "",
                       qf_op_slot_name(p->op.op, 1, 1), qf_status_str(s)),
               -1;
    return 0;
}

/* Run 2's outputs against the same reference and bound as run 1's (the
 * runs differ, so run 1's metrics say nothing of run 2): its metrics into
 * the evidence (rule 5 of docs/verdicts.md).  0, or -1 (said). */
static int run2_evidence(_qf_case *p, const _qf_checked *ck, const qf_metrics_input *mi0, qf_result *r)
{
    qf_metrics_input mi = *mi0;
    qf_status s;
    mi.got_codes = p->g[1].data;
    s = qf_metrics_compute(&mi, &r->ev.run2_metrics, NULL);
    if (s != QF_OK)
        return _qf_say(r, QF_CAUSE_HARNESS, "run 2: metrics failed: %s", qf_status_str(s)), -1;
    if (r->sampled)
        remap_metrics(&r->ev.run2_metrics, ck, p->cols);
    r->ev.run2 = 1;
    return 0;
}

/* Correctness first: only a kernel that computes the right thing is
 * worth timing.  The timing run gets its own limit per run. */
static void time_kernel(_qf_case *p, _qf_child_report *rep, qf_result *r, double timeout_s, size_t warmup,
                        size_t reps)
{
    qf_result *tr = malloc(sizeof *tr);
    double limit = timeout_s * (double)(warmup + reps + 1);
    if (!tr)
        return;
    *tr = *r;
    if (_qf_kio_run(p, rep, tr, limit, 1, warmup, reps) == 0 && rep->status == QF_OK && rep->ntimes) {
        double *t = rep->times;
        size_t n = rep->ntimes, a, b;
        for (a = 1; a < n; a++) /* insertion sort: n is small */
            for (b = a; b > 0 && t[b - 1] > t[b]; b--) {
                double x = t[b];
                t[b] = t[b - 1];
                t[b - 1] = x;
            }
        r->timing.measured = 1;
        r->timing.warmup = warmup;
        r->timing.reps = n;
        r->timing.min_s = t[0];
        r->timing.max_s = t[n - 1];
        r->timing.median_s = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
        r->timing.spread = r->timing.median_s > 0 ? (t[n - 1] - t[0]) / r->timing.median_s : NAN;
    }
    free(tr);
}

/* Run the kernel and gather the evidence of its first output: 0, or -1
 * when the pair ended first (its outcome said in r).  ck: the checked
 * elements and the reference; mi: the metrics' input, reused for run 2. */
static int first_output(_qf_case *p, _qf_child_report *rep, qf_result *r, double timeout_s, _qf_checked *ck,
                        _qf_checked *ck1, qf_metrics_input *mi)
{
    const qf_suite_group *gr = p->c->group;
    uint64_t target = gr->sampling.max_elements, tile = gr->sampling.tile;
    size_t ndiff = 0, first = 0;
    qf_status s;
    int eb, ran;
    if (_qf_kio_setup(p))
        return _qf_say(r, QF_CAUSE_HARNESS, "cannot map the kernel's inputs: %s", strerror(errno)), -1;
    ran = _qf_kio_run(p, rep, r, timeout_s, 0, 0, 0);
    _qf_kio_take_output(p, r); /* what it printed: the record's, never qualify's output */
    if (ran || _qf_kio_check(p, r, "the kernel"))
        return -1;
    _qf_kio_release_inputs();
    if (rep->status == QF_EUNSUPPORTED)
        return _qf_say(r, QF_CAUSE_DECLINED, "unsupported: the kernel declined: %s",
                       rep->msg[0] ? rep->msg : "(no reason)"),
               -1;
    if (rep->status != QF_OK) { /* the status, not its message, says the device is gone */
        const char *msg = rep->msg[0] ? rep->msg : "(no message)";
        if (rep->status == QF_EDEVICE)
            return _qf_say(r, QF_CAUSE_DEVICE_LOST, "the kernel returned %s: %s", qf_status_str(QF_EDEVICE), msg), -1;
        /* a worker's "error" done: its own words (a Python exception) */
        if (qf_worker_kernel_is(p->k) && _qf_worker_routed(p->k) == p->k)
            return _qf_say(r, QF_CAUSE_KERNEL_ERROR, "the kernel reported an error: %s", msg), -1;
        _qf_say(r, QF_CAUSE_KERNEL_ERROR, "the kernel returned %s: %s", qf_status_str((qf_status)rep->status), msg);
        /* the memory limit is blamed only where an allocation failed */
        if (rep->status == QF_ENOMEM)
            _qf_iso_limit_note(r->reason, sizeof r->reason, _qf_rdev_is_device(p->k));
        return -1;
    }
    if (check_outputs(p, r))
        return -1;
    p->global_code[0] = rep->global_code[0];
    p->global_code[1] = rep->global_code[1];
    eb = p->outf->storage_bits / 8;
    qf_metrics_bitwise(p->g[0].data, p->g[1].data, p->out_n, (size_t)eb, &ndiff, &first);
    if (!ndiff && p->out1_n) {
        qf_metrics_bitwise(p->g1[0].data, p->g1[1].data, p->out1_n, (size_t)p->out1_eb, &ndiff, &first);
        first += p->out_n; /* past the first output */
    }
    r->det_checked = 1;
    r->det_equal = ndiff == 0;
    r->det_first_diff = ndiff ? first : 0;
    if (r->det_equal) { /* run 2 equals run 1: nothing more reads it (the timing run writes run 1's) */
        _qf_rp_guarded_free(&p->g[1]);
        _qf_rp_guarded_free(&p->g1[1]);
    }
    if (p->cls->rows ? _qf_reference_rows(p, p->cls->rows, ck, r, target, tile)
                     : p->cls->reference(p, ck, ck1, r, target, tile))
        return -1;
    r->n_checked = ck->n;
    r->sampled = ck->n < p->out_n;
    memset(mi, 0, sizeof *mi);
    mi->out = p->outf;
    mi->n = ck->n;
    mi->got_codes = p->g[0].data; /* decoded as read: no array of the values */
    mi->got_idx = ck->idx;
    mi->exact = ck->exact;
    mi->rounded = ck->rounded;
    mi->bound = r->bound.kind[0] ? ck->bound : NULL;
    /* NaN / Inf where the claimed accumulator may overflow: unchecked, and
     * the case MISTRUSTED (rule 6; docs/bounds.md, runner_range.c). */
    if (p->cls->mark_overflow && r->bound.kind[0]) {
        r->ev.n_ovf = p->cls->mark_overflow(p, ck, r, &r->ev.ovf_reach, &r->ev.n_ovf_failed);
        if (r->ev.n_ovf || r->ev.n_ovf_failed) {
            r->ev.acc_max = p->cls->acc_max(p);
            snprintf(r->ev.acc_name, sizeof r->ev.acc_name, "%s", qf_format_get(p->t->arith.acc_format)->name);
        }
    }
    mi->status = (p->cls->flags & _QF_OPC_DOT) && !r->ev.n_ovf ? NULL : ck->status;
    mi->cols = r->sampled ? 0 : p->cols;
    if (p->cls->exact_zeros)
        r->ev.n_zero_exact = p->cls->exact_zeros(p, ck);
    _qf_inval_release(p); /* before the metrics' arrays (a reference may have done it) */
    s = qf_metrics_compute(mi, &r->metrics, NULL);
    if (s != QF_OK)
        return _qf_say(r, QF_CAUSE_HARNESS, "metrics failed: %s", qf_status_str(s)), -1;
    if (r->sampled)
        remap_metrics(&r->metrics, ck, p->cols);
    r->has_metrics = 1;
    if (r->bound.kind[0])
        bound_summary(p, ck, r);
    return 0;
}

/* One pair in its worker process: run, gather the evidence (first output,
 * run 2, baseline, componentwise, second output), then one decision
 * (qf_result_decide: qf_verdict_decide applies every rule), then the
 * explanation of a refuted claim and the timing. */
static void evaluate(_qf_case *p, qf_result *r, double timeout_s, int timing, size_t warmup, size_t reps,
                     const qf_suite *suite, const qf_runner_opts *o)
{
    _qf_child_report *rep = _qf_rp_shm_alloc(sizeof *rep);
    _qf_checked ck, ck1;
    qf_metrics_input mi;
    qf_metrics bmet;
    qf_verdict bverdict = QF_VERDICT_MISTRUSTED;
    char bwhy[QF_RESULT_TEXT_MAX] = "";
    memset(&ck, 0, sizeof ck);
    memset(&ck1, 0, sizeof ck1);
    r->policy = case_policy(p);
    r->ev.det_claimed = p->t->arith.deterministic;
    r->ev.det_threads_claimed = p->t->arith.deterministic_threads;
    r->ev.exact_codes = (p->cls->flags & _QF_OPC_EXACT_CODES) != 0;
    if (!rep) {
        _qf_say(r, QF_CAUSE_HARNESS, "cannot map shared memory: %s", strerror(errno));
        return;
    }
    if (first_output(p, rep, r, timeout_s, &ck, &ck1, &mi))
        goto done;
    r->ev.outcome = QF_CAUSE_NONE;
    if ((!r->det_equal && !r->ev.exact_codes && run2_evidence(p, &ck, &mi, r)) || _qf_kio_recheck(p, r))
        goto done;
    if (p->bk) {
        if (run_baseline(p, &ck, &mi, rep, timeout_s, &bmet, &bverdict, bwhy, sizeof bwhy) == 0) {
            r->ev.baseline = 1;
            r->ev.baseline_max_abs = bmet.max_abs;
            r->ev.baseline_rms = bmet.rms;
        } else {
            r->ev.baseline = -1;
            r->ev.baseline_verdict = bverdict;
            snprintf(r->ev.baseline_why, sizeof r->ev.baseline_why, "%.*s", (int)sizeof r->ev.baseline_why - 1,
                     bwhy);
        }
    }
    if (!isnan(r->policy.max_componentwise))
        componentwise_evidence(p, &ck, &r->ev);
    if (p->fail1[0]) /* the root cause: the weights of a wrong expert are wrong too */
        snprintf(r->ev.exact_fail, sizeof r->ev.exact_fail, "%s", p->fail1);
    if (ck1.n) {
        snprintf(r->ev.out2_name, sizeof r->ev.out2_name, "%s", qf_op_slot_name(p->op.op, 1, 1));
        if (second_output(p, &ck1, 0, &r->ev.out2_metrics, r) ||
            (!r->det_equal && second_output(p, &ck1, 1, &r->ev.out2_run2_metrics, r)))
            goto done;
        r->ev.out2 = r->det_equal ? 1 : 2;
    }
    if (qf_result_decide(r) != QF_OK) {
        _qf_say(r, QF_CAUSE_HARNESS, "the verdict could not be decided from the evidence");
        goto done;
    }
    if (r->verdict == QF_VERDICT_FAILED && p->cls->explain && _qf_case_refute(p->c) >= 0)
        p->cls->explain(p, &ck, r);
    /* Only a pair whose outputs were checked is timed (an UNCHECKED one
     * was checked against nothing). */
    if (timing && (r->verdict == QF_VERDICT_QUALIFIED || r->verdict == QF_VERDICT_MARGINAL))
        time_kernel(p, rep, r, timeout_s, warmup, reps);
done:
    /* The verdict is final: --save-failing (runner_artifacts.c). */
    _qf_artifacts_save(p, &ck, &ck1, suite, o, r);
    _qf_checked_free(&ck);
    _qf_checked_free(&ck1);
    munmap(rep, sizeof *rep);
}

/* ---- One (case, kernel) pair, in the worker process ----------------------- */

typedef _qf_plan_pair pair;

/* Does kernel k take the case's operand layout?  0, or -1 with the reason
 * in why: a kernel is never handed strides it did not declare. */
static int layout_ok(const _qf_case *p, const qf_kernel *k, char *why, size_t size)
{
    const qf_suite_layout *L = _qf_layout_of(p);
    char have[64];
    if (!L || !(L->needs & ~k->layouts))
        return 0;
    if (!k->layouts)
        snprintf(why, size, "%s takes dense row-major operands only (layout %s)", k->name, L->label);
    else
        snprintf(why, size, "%s does not take layout %s (it declares %s)", k->name, L->label,
                 qf_layout_text(k->layouts, have, sizeof have));
    return -1;
}

/* The policy's baseline kernel: registered, on this back end, claiming a
 * tuple for the case's dtypes and the case's shape.  0, or -1 with
 * UNSUPPORTED and the reason in r (nothing to compare with is not a
 * verdict on the kernel). */
static int find_baseline(_qf_case *p, const qf_registry *reg, qf_result *r)
{
    const char *name = p->c->group->policy.baseline;
    char why[256];
    size_t i;
    p->bk = name ? qf_registry_find(reg, name) : NULL;
    if (!p->bk) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: the policy's baseline kernel '%s' is not registered",
                name ? name : "(none)");
        return -1;
    }
    if (p->bk->op != p->k->op || (p->bk->backend && strcmp(p->bk->backend, "cpu"))) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: the baseline %s is not a cpu kernel of op %s", name,
                qf_op_name(p->k->op));
        return -1;
    }
    for (i = 0; i < p->bk->n_dtypes && !p->bt; i++)
        if (tuple_matches(p, &p->bk->dtypes[i]))
            p->bt = &p->bk->dtypes[i];
    if (!p->bt) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: the baseline %s claims no dtype tuple for %s", name,
                p->c->dtype->label);
        return -1;
    }
    if (qf_kernel_check(p->bk, &p->op, p->bt, why, sizeof why) != QF_OK || layout_ok(p, p->bk, why, sizeof why)) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: the baseline %s: %s", name, why);
        return -1;
    }
    return 0;
}

/* A GPU kernel that cannot run is filed under the device's architecture
 * when there is a device (another one than the kernel claims), else under
 * the architectures the kernel claims, space-separated as in its archs
 * (cut at a whole word): `qualify enable` files such a record under each
 * (docs/enable.md "Kernels without a device"), so the AMD and NVIDIA
 * sections name the kernel, disabled with the reason, even on a machine
 * with no GPU. */
static void file_unrun_device(qf_result *r, const qf_kernel *k, const char *devarch)
{
    const char *a = devarch[0] ? devarch : k->archs && k->archs[0] ? k->archs : NULL;
    size_t n;
    if (!a)
        return;
    while (*a == ' ')
        a++;
    n = strlen(a);
    while (n >= sizeof r->arch) { /* the last whole word that fits */
        const char *sp = memrchr(a, ' ', n);
        n = sp ? (size_t)(sp - a) : 0;
    }
    while (n && a[n - 1] == ' ')
        n--;
    if (n)
        snprintf(r->arch, sizeof r->arch, "%.*s", (int)n, a);
}

static void run_pair(const qf_suite *suite, const qf_suite_cases *cases, const pair *pr,
                     const qf_registry *reg, const qf_runner_opts *o, qf_result *r)
{
    const qf_suite_case *c = &cases->cases[pr->ci];
    const char *arch = o->arch ? o->arch : "cpu";
    _qf_case p;
    size_t i;
    char why[256], devarch[64];
    double t0 = _qf_rp_now_s();
    int ok = 0;
    _qf_runner_identity(r, suite, c, pr->k, pr->kidx, reg, o);
    _qf_case_malloc_policy();
    memset(&p, 0, sizeof p);
    p.c = c;
    p.k = pr->k;
    p.cls = _qf_opclass_get(c->op);
    p.seed = c->seed;
    /* GPU kernels run on the device found (runner_device.c): its absence or
     * another architecture is UNSUPPORTED with the reason. */
    if (_qf_rdev_is_device(pr->k)) {
        devarch[0] = '\0';
        if (_qf_rdev_probe(pr->k, devarch, sizeof devarch, why, sizeof why)) {
            file_unrun_device(r, pr->k, devarch);
            _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: %s", why);
            goto out;
        }
        arch = devarch;
        snprintf(r->arch, sizeof r->arch, "%s", arch);
    }
    if (c->group->narch) {
        for (i = 0; i < c->group->narch && !ok; i++)
            ok = qf_suite_glob_match(c->group->arch[i], arch);
        if (!ok) {
            _qf_say(r, QF_CAUSE_UNSUPPORTED,
                    "unsupported: the suite group is limited to other architectures "
                    "than %s",
                    arch);
            goto out;
        }
    }
    if (!qf_kernel_arch_ok(pr->k, arch)) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: %s runs on '%s', not on %s", pr->k->name,
                pr->k->archs ? pr->k->archs : "?", arch);
        goto out;
    }
    memset(&p.op, 0, sizeof p.op);
    if (p.cls->build(&p, r))
        goto out;
    for (i = 0; i < pr->k->n_dtypes; i++)
        if (tuple_matches(&p, &pr->k->dtypes[i])) {
            p.t = &pr->k->dtypes[i];
            break;
        }
    if (!p.t) {
        _qf_say(r, QF_CAUSE_NO_TUPLE, "unsupported: %s claims no dtype tuple for %s", pr->k->name,
                c->dtype->label);
        goto out;
    }
    snprintf(r->dtype_tuple, sizeof r->dtype_tuple, "%s", p.t->name ? p.t->name : "");
    if (qf_kernel_check(pr->k, &p.op, p.t, why, sizeof why) != QF_OK || layout_ok(&p, pr->k, why, sizeof why)) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: %s", why);
        goto out;
    }
    if ((c->group->policy.set & QF_POLICY_BASELINE) && find_baseline(&p, reg, r))
        goto out;
    /* The budget before anything is mapped (runner_memory.c). */
    if (_qf_case_memory_check(&p, o, r))
        goto out;
    if (prepare_inputs(&p, r))
        goto out;
    r->n_elements = p.out_n;
    evaluate(&p, r, o->timeout_s > 0 ? o->timeout_s : 60, o->time, o->warmup ? o->warmup : 3,
             o->reps ? o->reps : 10, suite, o);
out:
    prep_free(&p);
    _qf_case_peak_rss(r);
    r->wall_s = _qf_rp_now_s() - t0;
}

/* ---- The sweep --------------------------------------------------------------- */

typedef struct slot {
    pid_t pid;
    size_t item; /* the pair it runs (index into pairs) */
    int fd;      /* child_fd of pid, or -1 */
} slot;

typedef struct shared_slot {
    volatile int done;
    qf_result r;
} shared_slot;

/* Kill and reap every child of this process that is neither a running
 * pair's process nor a worker's or kernel server's (an orphan a kernel
 * server left, reparented here). */
static void reap_strays(const slot *slots, size_t jobs)
{
    static pid_t keep[8192];
    size_t max = sizeof keep / sizeof keep[0] - 1024, n = _qf_worker_pids(keep, max), i;
    if (n > max)
        return; /* more than fit: kill nothing rather than a live worker */
    for (i = 0; i < jobs && i < 1024; i++)
        if (slots[i].pid)
            keep[n++] = slots[i].pid;
    _qf_iso_reap_strays(keep, n);
}

/* A journal record's "KERNEL CASE_ID" key and its place in the journal,
 * sorted by key then place, so that resuming finds a pair's record by
 * binary search (a linear scan per pair was n x m string compares: 10^10
 * for a 10^5-pair sweep) and the last record of a key still wins. */
typedef struct prev_key {
    const char *key;
    size_t idx;
} prev_key;

static int prev_key_cmp(const void *a, const void *b)
{
    const prev_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The journal's last record of key, or (size_t)-1. */
static size_t prev_find(const prev_key *pk, size_t n, const char *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first entry above key (all of key's before it) */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(pk[mid].key, key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && !strcmp(pk[lo - 1].key, key) ? pk[lo - 1].idx : (size_t)-1;
}

qf_status qf_runner_run(const qf_suite *suite, const qf_registry *reg, const qf_runner_opts *opts,
                        qf_runner_summary *sum, char *err, size_t err_size)
{
    qf_runner_opts o = opts ? *opts : qf_runner_opts_default();
    qf_suite_cases cases;
    pair *pairs = NULL;
    size_t npairs = 0, cap = 0, ci, gi, ki, i;
    size_t *pending = NULL, npending = 0, done_count = 0;
    qf_result *prev = NULL;
    size_t nprev = 0;
    char **keys = NULL;
    prev_key *pk = NULL;
    qf_journal *jr = NULL;
    slot *slots = NULL;
    int *slot_fds = NULL; /* slots[i].fd, contiguous for wait_children */
    shared_slot **shm = NULL; /* one mapping per job slot: a pair's process unmaps the others */
    qf_status st = QF_OK;
    json_t *shard_hdr = NULL, *old_hdr = NULL;
    int jobs, torn = 0;
    struct stat jst; /* the journal a resume reads, not followed */
    _qf_rdevs devs; /* --devices (runner_devices.c) */
    memset(&devs, 0, sizeof devs);
    if (!suite || !reg || !sum)
        return QF_EINVAL;
    memset(sum, 0, sizeof *sum);
    memset(&cases, 0, sizeof cases);
    jobs = o.jobs < 1 ? 1 : o.jobs;
    st = qf_suite_expand(suite, &cases, err, err_size);
    if (st != QF_OK)
        return st;
    if (o.case_id && !qf_suite_cases_find(&cases, o.case_id)) {
        errf(err, err_size, "%s: no case with id '%s' (qualify run SUITE --list shows them)",
             suite->path ? suite->path : "suite", o.case_id);
        st = QF_EPARSE;
        goto out;
    }
    /* The plan: each case with every kernel matching one of its group's
     * globs (each kernel once), in registration order. */
    for (ci = 0; ci < cases.n; ci++) {
        const qf_suite_case *c = &cases.cases[ci];
        if (o.case_id && strcmp(c->id, o.case_id))
            continue;
        for (ki = 0; ki < qf_registry_count(reg); ki++) {
            const qf_kernel *k = qf_registry_get(reg, ki);
            int match = 0;
            if (o.kernel_glob && !qf_kernel_glob(o.kernel_glob, k->name))
                continue;
            for (gi = 0; gi < c->group->nkernels && !match; gi++)
                match = qf_kernel_glob(c->group->kernels[gi], k->name);
            /* A refuting input runs only against a claim it can refute (docs/refute.md). */
            if (!match || !_qf_pair_planned(c, k, o.no_refute))
                continue;
            if (npairs == cap) {
                size_t nc = cap ? 2 * cap : 64;
                pair *np = realloc(pairs, nc * sizeof *np);
                if (!np) {
                    st = QF_ENOMEM;
                    goto out;
                }
                pairs = np;
                cap = nc;
            }
            pairs[npairs].ci = ci;
            pairs[npairs].k = k;
            pairs[npairs].kidx = ki;
            npairs++;
        }
    }
    if (npairs == 0) {
        errf(err, err_size,
             "no (case, kernel) pair selected: no registered kernel matches the suite's kernel "
             "globs%s%s",
             o.kernel_glob ? " and --kernel " : "", o.kernel_glob ? o.kernel_glob : "");
        st = QF_EINVAL;
        goto out;
    }
    /* The whole plan, so that every shard of a sweep says the same. */
    if ((st = _qf_plan_check(&cases, pairs, npairs, reg, &o, err, err_size)) != QF_OK)
        goto out;
    sum->plan_pairs = npairs;
    if (o.shard_count) {
        if ((st = _qf_shard_select(&cases, pairs, &npairs, &o, &shard_hdr)) != QF_OK)
            goto out;
        o.header = shard_hdr;
    }
    /* A shard may get no pair at all (more shards than pairs). */
    sum->results = results_alloc(npairs, &sum->results_bytes);
    pending = malloc((npairs ? npairs : 1) * sizeof *pending);
    if (!sum->results || !pending) {
        st = QF_ENOMEM;
        goto out;
    }
    sum->n = npairs;
    if (o.list_only) {
        for (i = 0; i < npairs; i++)
            _qf_runner_identity(&sum->results[i], suite, &cases.cases[pairs[i].ci], pairs[i].k, pairs[i].kidx,
                                reg, &o);
        goto out;
    }
    /* Resume: finished pairs come from the journal, the rest run. */
    if (o.resume && o.journal_path && lstat(o.journal_path, &jst) == 0) {
        st = _qf_journal_read_own(o.journal_path, &prev, &nprev, &torn, &old_hdr, err, err_size);
        if (st != QF_OK)
            goto out;
        if (old_hdr && _qf_shard_resume_ok(old_hdr, o.header, o.journal_path, err, err_size)) {
            st = QF_EINVAL;
            goto out;
        }
        keys = malloc((nprev + 1) * sizeof *keys);
        if (!keys) {
            st = QF_ENOMEM;
            goto out;
        }
        for (i = 0; i < nprev; i++) {
            keys[i] = malloc(QF_RESULT_NAME_MAX + QF_RESULT_ID_MAX + 2);
            if (!keys[i]) {
                nprev = i;
                st = QF_ENOMEM;
                goto out;
            }
            qf_result_key(&prev[i], keys[i], QF_RESULT_NAME_MAX + QF_RESULT_ID_MAX + 2);
        }
    }
    if (nprev) {
        pk = malloc(nprev * sizeof *pk);
        if (!pk) {
            st = QF_ENOMEM;
            goto out;
        }
        for (i = 0; i < nprev; i++)
            pk[i] = (prev_key){keys[i], i};
        qsort(pk, nprev, sizeof *pk, prev_key_cmp);
    }
    for (i = 0; i < npairs; i++) {
        const qf_suite_case *c = &cases.cases[pairs[i].ci];
        char key[QF_RESULT_NAME_MAX + QF_RESULT_ID_MAX + 2];
        size_t found;
        snprintf(key, sizeof key, "%s %s", pairs[i].k->name, c->id);
        found = nprev ? prev_find(pk, nprev, key) : (size_t)-1;
        if (found != (size_t)-1) {
            sum->results[i] = prev[found];
            sum->resumed++;
            done_count++;
            if (o.progress)
                o.progress(o.progress_user, &sum->results[i], done_count, npairs, 1);
        } else {
            pending[npending++] = i;
        }
    }
    /* The journal's records are in sum->results now: freed before the
     * pairs fork, which would inherit them. */
    for (i = 0; keys && i < nprev; i++)
        free(keys[i]);
    free(keys);
    free(pk);
    free(prev);
    keys = NULL, pk = NULL, prev = NULL, nprev = 0;
    /* GPU back ends: probed once here, before the workers fork (every
     * device named with --devices); then the slots are bound to them;
     * a bad --devices is refused before the journal is touched. */
    _qf_rdev_enumerate(o.devices != NULL);
    for (i = 0; i < npending; i++)
        _qf_rdev_prepare(pairs[pending[i]].k);
    if ((st = _qf_rdevs_init(&devs, o.devices, &jobs, npairs, err, err_size)) != QF_OK)
        goto out;
    if (o.journal_path) {
        st = qf_journal_open(o.journal_path, o.resume, o.header, &jr, &torn, err, err_size);
        if (st != QF_OK)
            goto out;
        sum->journal_torn = torn;
    }
    slots = calloc((size_t)jobs, sizeof *slots);
    slot_fds = malloc((size_t)jobs * sizeof *slot_fds);
    shm = calloc((size_t)jobs, sizeof *shm);
    for (i = 0; shm && i < (size_t)jobs; i++)
        if (!(shm[i] = _qf_rp_shm_alloc(sizeof **shm))) {
            st = QF_ENOMEM;
            goto out;
        }
    if (!slots || !slot_fds || !shm) {
        st = QF_ENOMEM;
        goto out;
    }
    /* No process of the same user may read or write this one's memory
     * (/proc/PID/mem, ptrace) unless Yama or a capability says otherwise
     * (docs/security.md); pair processes inherit it.  Orphans of every
     * process started from here come back here to be killed. */
#ifdef PR_SET_DUMPABLE
    prctl(PR_SET_DUMPABLE, 0);
#endif
    _qf_iso_note_children();
    _qf_iso_subreaper();
    {
        size_t next = 0, running = 0;
        double nap = 0.0005;
        for (i = 0; i < (size_t)jobs; i++) {
            slots[i].pid = 0;
            slots[i].fd = slot_fds[i] = -1;
        }
        while (next < npending || running || _qf_rdevs_waiting(&devs)) {
            int progressed = 0;
            for (i = 0; i < (size_t)jobs && (next < npending || _qf_rdevs_waiting(&devs)); i++) {
                pid_t pid;
                size_t it;
                if (slots[i].pid || (it = _qf_rdevs_pick(&devs, i, pending, &next, npending)) == (size_t)-1)
                    continue;
                shm[i]->done = 0;
                _qf_rdevs_bind(&devs, i);
                /* Worker kernels: the slot's worker instance (worker.c). */
                _qf_worker_before_pair(pairs[it].k, (int)i);
                fflush(NULL);
                pid = fork();
                if (pid < 0) {
                    errf(err, err_size, "cannot fork a worker: %s", strerror(errno));
                    st = QF_EIO;
                    break;
                }
                if (pid == 0) {
                    /* The worker: one pair, result into its shared slot;
                     * _exit skips the caller's atexit handlers.  The
                     * siblings' descriptors are of no use here. */
                    size_t j;
                    for (j = 0; j < (size_t)jobs; j++) {
                        if (slots[j].fd >= 0)
                            close(slots[j].fd);
                        if (j != i)
                            munmap(shm[j], sizeof **shm); /* other pairs' records */
                    }
                    _qf_worker_pair_child((int)i); /* other slots' worker pipes, memfds */
                    _qf_iso_subreaper();
                    run_pair(suite, &cases, &pairs[it], reg, &o, &shm[i]->r);
                    _qf_iso_reap_strays(NULL, 0); /* before the record is read */
                    shm[i]->done = 1;
                    _exit(0);
                }
                slots[i].pid = pid;
                slots[i].fd = slot_fds[i] = _qf_rp_child_fd(pid);
                slots[i].item = it;
                running++;
            }
            if (st != QF_OK && running == 0)
                break;
            for (i = 0; i < (size_t)jobs; i++) {
                int ws = 0;
                pid_t w;
                size_t it;
                qf_result *r;
                if (!slots[i].pid)
                    continue;
                w = waitpid(slots[i].pid, &ws, WNOHANG);
                if (w == 0 || (w < 0 && errno == EINTR))
                    continue;
                it = slots[i].item;
                r = &sum->results[it];
                if (w > 0 && shm[i]->done && WIFEXITED(ws) && WEXITSTATUS(ws) == 0) {
                    *r = shm[i]->r;
                } else {
                    /* The worker itself died: the runner or the reference,
                     * not the kernel (which runs in its own child). */
                    pair *pr = &pairs[it];
                    _qf_runner_identity(r, suite, &cases.cases[pr->ci], pr->k, pr->kidx, reg, &o);
                    r->signal = w > 0 && WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
                    _qf_say(r, QF_CAUSE_WORKER_DIED,
                            "crashed: the worker process (runner and reference, not the kernel) died%s%s",
                            r->signal ? ": " : "", r->signal ? strsignal(r->signal) : "");
                }
                _qf_worker_after_pair(pairs[it].k, (int)i, r);
                /* a kernel error's hint is first_output's, which knows its status */
                if (r->cause == QF_CAUSE_CRASH || r->cause == QF_CAUSE_DEVICE_LOST)
                    _qf_iso_limit_note(r->reason, sizeof r->reason, _qf_rdev_is_device(pairs[it].k));
                if (slots[i].fd >= 0)
                    close(slots[i].fd);
                slots[i].pid = 0;
                slots[i].fd = slot_fds[i] = -1;
                reap_strays(slots, (size_t)jobs);
                running--;
                progressed = 1;
                /* A device's fault: the pair runs again on another one. */
                if (_qf_rdevs_after(&devs, i, it, _qf_rdev_is_device(pairs[it].k) ? pairs[it].k->backend : NULL, r))
                    continue;
                done_count++;
                if (jr && qf_journal_append(jr, r) != QF_OK && st == QF_OK) {
                    errf(err, err_size, "%s: cannot append to the journal: %s", o.journal_path,
                         strerror(errno));
                    st = QF_EIO;
                }
                if (o.progress)
                    o.progress(o.progress_user, r, done_count, npairs, 0);
            }
            if (!progressed && running) {
                /* A slot without a descriptor (fork raced a full fd table)
                 * must not wait the whole second: nap as before. */
                int all = 1;
                for (i = 0; i < (size_t)jobs; i++)
                    all &= !slots[i].pid || slots[i].fd >= 0;
                _qf_rp_wait_children(slot_fds, all ? (size_t)jobs : 0, 1.0, &nap, 0.005);
            } else {
                nap = 0.0005;
            }
            if (st != QF_OK && next < npending)
                npending = next; /* stop starting new work after an error */
            if (st != QF_OK)
                devs.nqueue = 0;
        }
    }
    for (i = 0; i < npairs; i++)
        if ((unsigned)sum->results[i].verdict < QF_VERDICT_COUNT)
            sum->count[sum->results[i].verdict]++;
    _qf_rdevs_summary(&devs, sum);
out:
    _qf_rdevs_free(&devs);
    if (jr && qf_journal_close(jr) != QF_OK && st == QF_OK) {
        errf(err, err_size, "%s: cannot close the journal", o.journal_path);
        st = QF_EIO;
    }
    if (slots)
        reap_strays(slots, (size_t)jobs);
    if (shm)
        for (i = 0; i < (size_t)jobs; i++)
            if (shm[i])
                munmap(shm[i], sizeof **shm);
    free(shm);
    if (slots)
        for (i = 0; i < (size_t)jobs; i++)
            if (slots[i].pid && slots[i].fd >= 0)
                close(slots[i].fd);
    free(slots);
    free(slot_fds);
    if (keys)
        for (i = 0; i < nprev; i++)
            free(keys[i]);
    free(keys);
    free(pk);
    free(prev);
    free(pending);
    free(pairs);
    json_decref(shard_hdr);
    json_decref(old_hdr);
    qf_suite_cases_free(&cases);
    if (st != QF_OK)
        qf_runner_summary_free(sum);
    return st;
}
