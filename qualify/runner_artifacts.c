/* runner_artifacts.c: qualify run --save-failing: the tensors of a FAILED,
 * MARGINAL or MISTRUSTED pair as .npy files under DIR/failing/, a suite
 * beside them that reruns the pair from those files, and the command that
 * does (docs/runner.md "Failing pairs' tensors"; _runner.h).
 *
 * Nothing under DIR/failing is ever reached through a link: each
 * directory is opened relative to its parent with O_NOFOLLOW, each file is
 * written as a new file into a private temporary directory beside its name
 * and renamed over it (_files.h), and a name that is taken by anything but
 * a regular file (a link planted there, a directory, a FIFO) is refused,
 * not replaced.
 * The bytes written under DIR/failing are counted in its marker file
 * under an flock(2), so concurrent pairs share one total. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "_files.h"
#include "_runner.h"
#include "_status.h"
#include "qf_npy.h"
#include "qf_sha256.h"

/* In DIR/failing: what --save-failing wrote there in all (decimal bytes),
 * the lock of that count, and the mark that the directory is qualify's. */
#define MARKER ".qualify-failing"

/* One file of a pair: a tensor (or, for "suite", text of len bytes). */
typedef struct art {
    char key[QF_RESULT_ARTIFACT_KEY];
    qf_npy_dtype t;
    int ndim;
    size_t shape[QF_TENSOR_MAX_DIMS];
    const void *data;
    void *owned;          /* data, when it was made here (the suite's text) */
    const qf_format *enc; /* data are binary64 values to be written as codes of enc */
    size_t bytes;
} art;

typedef struct plan {
    art a[QF_RESULT_MAX_ARTIFACTS];
    size_t n;
    uint64_t bytes;     /* the data of every file */
    char left[256];     /* what was left out and why ("" when nothing) */
    int no_repro;       /* a drawn input was left out: no suite from the files */
    char why_norepro[160];
} plan;

/* Append "; TEXT" (or TEXT to an empty buf). */
static void note(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(char *buf, size_t size, const char *fmt, ...)
{
    size_t n = strlen(buf);
    va_list ap;
    if (n + 3 >= size)
        return;
    if (n)
        n += (size_t)snprintf(buf + n, size - n, "; ");
    va_start(ap, fmt);
    vsnprintf(buf + n, size - n, fmt, ap);
    va_end(ap);
}

/* The .npy element type that holds a format's codes so that a file input
 * (docs/inputs.md "file") reads them back as the same codes: float64,
 * float32 (tf32 in its container) and float16 as numpy's floats, integer
 * formats of whole bytes as integers, any other format's codes as raw
 * elements of its storage width (ml_dtypes' convention).  -1 when none. */
static int npy_of(const qf_format *f, qf_npy_dtype *t)
{
    static const qf_npy_dtype ints[2][4] = {{QF_NPY_UINT8, QF_NPY_UINT16, QF_NPY_UINT32, QF_NPY_UINT64},
                                            {QF_NPY_INT8, QF_NPY_INT16, QF_NPY_INT32, QF_NPY_INT64}};
    static const qf_npy_dtype raw[4] = {QF_NPY_RAW8, QF_NPY_RAW16, QF_NPY_RAW32, QF_NPY_RAW64};
    int w;
    if (!f)
        return -1;
    if (f->id == QF_FLOAT64 || f->id == QF_FLOAT32 || f->id == QF_TF32 || f->id == QF_FLOAT16) {
        *t = f->id == QF_FLOAT64 ? QF_NPY_FLOAT64 : f->id == QF_FLOAT16 ? QF_NPY_FLOAT16 : QF_NPY_FLOAT32;
        return 0;
    }
    switch (f->storage_bits) {
    case 8: w = 0; break;
    case 16: w = 1; break;
    case 32: w = 2; break;
    case 64: w = 3; break;
    default: return -1;
    }
    *t = f->kind == QF_KIND_INT && f->bits == f->storage_bits ? ints[f->is_signed != 0][w] : raw[w];
    return 0;
}

/* Add a file of count elements; its shape is (ndim, shape) when that
 * holds count elements, else 1-D.  The file, or NULL when there is no
 * room or no data. */
static art *add(plan *pl, const char *key, const char *slot, qf_npy_dtype t, int ndim, const int64_t *shape,
                size_t count, const void *data)
{
    art *a;
    size_t i, prod = 1;
    if (pl->n == QF_RESULT_MAX_ARTIFACTS || !data)
        return NULL;
    a = &pl->a[pl->n++];
    memset(a, 0, sizeof *a);
    snprintf(a->key, sizeof a->key, key, slot);
    a->t = t;
    for (i = 0; shape && ndim > 0 && i < (size_t)ndim && i < QF_TENSOR_MAX_DIMS; i++)
        prod *= (size_t)shape[i];
    if (shape && ndim > 0 && ndim <= QF_TENSOR_MAX_DIMS && prod == count) {
        a->ndim = ndim;
        for (i = 0; i < (size_t)ndim; i++)
            a->shape[i] = (size_t)shape[i];
    } else {
        a->ndim = 1;
        a->shape[0] = count;
    }
    a->data = data;
    a->bytes = count * qf_npy_dtype_size(t);
    pl->bytes += a->bytes;
    return a;
}

static void add_fmt(plan *pl, const char *key, const char *slot, const qf_format *f, int ndim,
                    const int64_t *shape, size_t count, const void *data)
{
    qf_npy_dtype t;
    if (npy_of(f, &t))
        note(pl->left, sizeof pl->left, "%s: codes of %s have no .npy type", slot, f ? f->name : "?");
    else
        add(pl, key, slot, t, ndim, shape, count, data);
}

static void plan_free(plan *pl)
{
    size_t i;
    for (i = 0; i < pl->n; i++)
        free(pl->a[i].owned);
    pl->n = 0;
}

/* The reference of the checked elements of one output: its correctly
 * rounded values as codes of the output format, the binary64 values the
 * metrics read, the bound and, when sampled, the elements' indices.
 * Arrays of the output's shape when every element was checked, else 1-D
 * over the checked elements in the order of checked:<slot>. */
static void add_ref(plan *pl, const _qf_checked *ck, const char *slot, const qf_format *f, const qf_tensor *out,
                    size_t n_out, int has_bound)
{
    int nd = ck->idx || ck->n != n_out ? 0 : out->ndim;
    qf_npy_dtype t;
    art *a;
    if (!ck->n || !ck->exact)
        return;
    /* encoded as it is written (put): nothing allocated for a pair over the limits */
    if (ck->rounded && !npy_of(f, &t) && (a = add(pl, "ref:%s", slot, t, nd, out->shape, ck->n, ck->rounded)))
        a->enc = f;
    add(pl, "exact:%s", slot, QF_NPY_FLOAT64, nd, out->shape, ck->n, ck->exact);
    if (has_bound && ck->bound)
        add(pl, "bound:%s", slot, QF_NPY_FLOAT64, nd, out->shape, ck->n, ck->bound);
    if (ck->idx)
        add(pl, "checked:%s", slot, QF_NPY_UINT64, 1, NULL, ck->n, ck->idx);
}

/* Every tensor the pair has to show, planned (nothing written yet). */
static void plan_tensors(plan *pl, const _qf_case *p, const _qf_checked *ck, const _qf_checked *ck1,
                         const qf_result *r)
{
    const char *s0 = qf_op_slot_name(p->op.op, 1, 0), *s1 = qf_op_slot_name(p->op.op, 1, 1);
    int i;
    for (i = 0; i < p->nin && i < QF_KERNEL_MAX_IN; i++) {
        const qf_tensor *in = &p->in[i];
        const char *slot = qf_op_slot_name(p->op.op, 0, i);
        size_t before = pl->n;
        if (!p->incode[i])
            continue;
        add_fmt(pl, "%s", slot, qf_format_get(in->format), in->ndim, in->shape, qf_tensor_numel(in),
                p->incode[i]);
        if (pl->n == before) {
            pl->no_repro = 1;
            snprintf(pl->why_norepro, sizeof pl->why_norepro, "input %s was not saved", slot);
        }
        if (in->scale.kind != QF_SCALE_NONE && in->scale.data && in->scale.count)
            add_fmt(pl, "scale:%s", slot, qf_format_get(in->scale.format), 1, NULL, in->scale.count,
                    in->scale.data);
    }
    /* The kernel's outputs, once they passed the buffer checks (canaries,
     * padding gathered, every element written): before that they may be
     * laid out strided or hold poison.  --time's calls write into run 1's
     * buffer after the verdict. */
    if (!r->det_checked)
        note(pl->left, sizeof pl->left, "outputs not saved: the pair ended before they passed the buffer checks");
    else if (r->timing.measured)
        note(pl->left, sizeof pl->left, "outputs not saved: the timed calls of --time wrote over them");
    else {
        add_fmt(pl, "%s", s0, p->outf, p->out[0].ndim, p->out[0].shape, p->out_n, p->g[0].data);
        if (!r->det_equal && p->g[1].data) /* the runs differ: run 2's too, which may be the one judged */
            add_fmt(pl, "run2:%s", s0, p->outf, p->out[0].ndim, p->out[0].shape, p->out_n, p->g[1].data);
        if (p->out1_n && p->out1_is_scale)
            add_fmt(pl, "scale:%s", s0, qf_format_get(p->out[0].scale.format), 1, NULL, p->out1_n,
                    p->g1[0].data);
        else if (p->out1_n && p->outf1)
            add_fmt(pl, "%s", s1, p->outf1, p->out[1].ndim, p->out[1].shape, p->out1_n, p->g1[0].data);
        else if (p->out1_n && (p->out1_eb == 4 || p->out1_eb == 8)) /* index tensors */
            add(pl, "%s", s1, p->out1_eb == 4 ? QF_NPY_INT32 : QF_NPY_INT64, p->out[1].ndim, p->out[1].shape,
                p->out1_n, p->g1[0].data);
    }
    add_ref(pl, ck, s0, p->outf, &p->out[0], p->out_n, r->bound.kind[0] != '\0');
    if (ck1 && p->outf1)
        add_ref(pl, ck1, s1, p->outf1, &p->out[1], p->out1_n, ck1->has_bound);
}

/* ---- The suite that reruns the pair from the files ------------------------ */

/* s as a YAML double-quoted scalar (control characters as \xNN). */
static void yaml_dq(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Letters, digits and _ . - only: a kernel name that is its own glob. */
static int plain_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", *s))
            return 0;
    return 1;
}

/* One line for a comment: control characters as '?'. */
static void comment_text(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

static void policy_real(FILE *f, int *first, const char *key, double v)
{
    fprintf(f, "%s%s: %.17g", *first ? "" : ", ", key, v);
    *first = 0;
}

/* The case's group with its one case: the same op, kernel, dtype roles,
 * shape, parameters, threads, layout, seed (which also seeds the sample),
 * sampling and policy, every drawn input slot read from its file, no
 * refuting inputs.  The suite's workers and claim files (made absolute)
 * come along.  0 with the text in *out (malloc'ed), or -1 with the reason
 * in why. */
static int repro_suite(const _qf_case *p, const qf_suite *suite, const qf_result *r, char **out, size_t *len,
                       char *why, size_t why_size)
{
    const qf_suite_case *c = p->c;
    const qf_suite_group *g = c->group;
    const qf_suite_policy *po = &g->policy;
    const char *const *names;
    size_t i, n;
    int first, refute = _qf_case_refute(c) >= 0;
    FILE *f;
    if (p->recipe != QF_SCALE_RECIPE_NONE || (c->dtype->scale && strcmp(c->dtype->scale, "none"))) {
        snprintf(why, why_size, "scaled operands are drawn from the seed, not read from files (the pair's own "
                                "reproducer redraws them)");
        return -1;
    }
    if (!plain_name(p->k->name) || ((po->set & QF_POLICY_BASELINE) && !refute && !plain_name(po->baseline))) {
        snprintf(why, why_size, "a kernel name that is not a plain name");
        return -1;
    }
    if (!(f = open_memstream(out, len))) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    fputs("# Reruns one pair from the tensors beside this file (qualify run --save-failing,\n"
          "# docs/runner.md \"Failing pairs' tensors\"): its inputs are read from the .npy files.\n# case: ",
          f);
    comment_text(f, c->id);
    fputs("\n# kernel: ", f);
    comment_text(f, p->k->name);
    fprintf(f, "\n# verdict: %s\nsuite: repro\n", qf_verdict_name(r->verdict));
    if (suite && suite->nworkers) {
        fputs("workers: [", f);
        for (i = 0; i < suite->nworkers; i++) {
            fputs(i ? ", " : "", f);
            yaml_dq(f, suite->workers[i]);
        }
        fputs("]\n", f);
    }
    if (suite && suite->nclaims) {
        fputs("claims: [", f);
        for (i = 0; i < suite->nclaims; i++) {
            char abs[PATH_MAX];
            if (!realpath(suite->claims[i], abs)) {
                fclose(f);
                free(*out);
                snprintf(why, why_size, "claim file %.100s: %s", suite->claims[i], strerror(errno));
                return -1;
            }
            fputs(i ? ", " : "", f);
            yaml_dq(f, abs);
        }
        fputs("]\n", f);
    }
    fprintf(f, "op: %s\nkernels: [%s]\ndtypes: [{", qf_suite_op_name(c->op), p->k->name);
    n = qf_suite_op_roles(c->op, &names);
    for (i = 0, first = 1; i < n && i < QF_SUITE_MAX_ROLES; i++)
        if (c->dtype->role[i]) {
            fprintf(f, "%s%s: %s", first ? "" : ", ", names[i], c->dtype->role[i]->name);
            first = 0;
        }
    fputs("}]\nshapes: {", f);
    n = qf_suite_op_dims(c->op, &names);
    for (i = 0; i < n && i < c->ndims; i++)
        fprintf(f, "%s%s: [%llu]", i ? ", " : "", names[i], (unsigned long long)c->dims[i]);
    fputs("}\n", f);
    if (g->nparams) {
        fputs("params: {", f);
        for (i = 0; i < g->nparams; i++) {
            const qf_suite_value *v = &g->params[i].values[c->param_choice[i]];
            fprintf(f, "%s%s: ", i ? ", " : "", g->params[i].key);
            switch (v->type) {
            case QF_PARAM_BOOL: fputs(v->i ? "true" : "false", f); break;
            case QF_PARAM_INT: fprintf(f, "%lld", (long long)v->i); break;
            case QF_PARAM_REAL: fprintf(f, "%.17g", v->r); break;
            default: yaml_dq(f, v->s ? v->s : ""); break;
            }
        }
        fputs("}\n", f);
    }
    if (c->threads != 1)
        fprintf(f, "threads: [%u]\n", c->threads);
    if (c->layout && c->layout->needs) {
        fputs("layout: [", f);
        yaml_dq(f, c->layout->label);
        fputs("]\n", f);
    }
    fputs("inputs: [{", f);
    for (i = 0, first = 1; i < (size_t)p->nin && i < QF_KERNEL_MAX_IN; i++)
        if (p->incode[i]) {
            const char *slot = qf_op_slot_name(p->op.op, 0, (int)i);
            fprintf(f, "%s%s: {name: file, path: %s.npy}", first ? "" : ", ", slot, slot);
            first = 0;
        }
    fprintf(f, "}]\nseeds: [%llu]\n", (unsigned long long)c->seed);
    if (g->sampling.max_elements) {
        fprintf(f, "sampling: {max_elements: %llu, edges: %s", (unsigned long long)g->sampling.max_elements,
                g->sampling.edges ? "true" : "false");
        if (g->sampling.tile)
            fprintf(f, ", tile: %llu", (unsigned long long)g->sampling.tile);
        fputs("}\n", f);
    }
    /* A refuting input is judged for conformance alone, with zeros never
     * doubtful (runner.c case_policy); from files it is an ordinary input. */
    first = 1;
    fputs("policy: {", f);
    if (refute) {
        policy_real(f, &first, "max_zero_frac", 1);
    } else {
        if (po->set & QF_POLICY_MAX_ULP)
            policy_real(f, &first, "max_ulp", po->max_ulp);
        if (po->set & QF_POLICY_MAX_NORMWISE)
            policy_real(f, &first, "max_normwise", po->max_normwise);
        if (po->set & QF_POLICY_MAX_COMPONENTWISE)
            policy_real(f, &first, "max_componentwise", po->max_componentwise);
        if (po->set & QF_POLICY_MIN_SQNR_DB)
            policy_real(f, &first, "min_sqnr_db", po->min_sqnr_db);
        if (po->set & QF_POLICY_BASELINE) {
            fprintf(f, "%sbaseline: %s, baseline_metric: %s", first ? "" : ", ", po->baseline,
                    po->baseline_rms ? "rms" : "max_abs");
            first = 0;
            policy_real(f, &first, "baseline_factor", po->baseline_factor);
            if (po->baseline_rms)
                policy_real(f, &first, "baseline_tol", po->baseline_tol);
        }
        if (po->set & QF_POLICY_FALSE_FAILURE)
            policy_real(f, &first, "false_failure", po->false_failure);
        if (po->set & QF_POLICY_MAX_ZERO_FRAC)
            policy_real(f, &first, "max_zero_frac", po->max_zero_frac);
    }
    fputs("}\nrefute: false\n", f);
    if (fclose(f)) {
        free(*out);
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    return 0;
}

/* a then b onto dst[size]; dst is left full (so that it shows as too long)
 * when they do not fit. */
static void cat(char *dst, size_t size, const char *a, const char *b)
{
    size_t n = strlen(dst);
    if (n + strlen(a) + strlen(b) + 1 > size) {
        memset(dst + n, 'x', size - 1 - n);
        dst[size - 1] = '\0';
        return;
    }
    snprintf(dst + n, size - n, "%s%s", a, b);
}

/* ---- Writing without following links ------------------------------------- */

/* DIR/failing/<name>'s directory, made when missing and opened relative to
 * its parent without following a link; -1 with the reason in why. */
static int open_sub(int dfd, const char *name, const char *shown, char *why, size_t why_size)
{
    int fd;
    if (mkdirat(dfd, name, 0755) && errno != EEXIST) {
        snprintf(why, why_size, "cannot create %s: %s", shown, strerror(errno));
        return -1;
    }
    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        struct stat st;
        int e = errno;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
            snprintf(why, why_size, "%s is %s, not a directory: not followed", shown, _qf_file_kind(st.st_mode));
        else
            snprintf(why, why_size, "cannot open %s: %s", shown, strerror(e));
    }
    return fd;
}

/* Count need more bytes under DIR/failing (ffd) unless they would pass
 * total (0: no limit): 0, or -1 with the reason in why. */
static int reserve(int ffd, uint64_t need, uint64_t total, char *why, size_t why_size)
{
    int fd = openat(ffd, MARKER, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644), rc = -1;
    struct stat st = {0};
    char buf[32], t[32], u[32];
    ssize_t n;
    unsigned long long used = 0;
    if (fd < 0) {
        snprintf(why, why_size, "failing/%s: %s", MARKER,
                 errno == ELOOP ? "a symbolic link, not followed" : strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || flock(fd, LOCK_EX)) {
        snprintf(why, why_size, "failing/%s: %s", MARKER,
                 S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
        close(fd);
        return -1;
    }
    n = pread(fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    used = strtoull(buf, NULL, 10);
    if (total && used + need > total) {
        qf_runner_format_bytes(total, t, sizeof t);
        qf_runner_format_bytes(used, u, sizeof u);
        snprintf(why, why_size,
                 "%s are saved under failing/ already, and this pair's %llu bytes would pass the total of %s "
                 "(--save-failing=SIZE,TOTAL raises it)",
                 u, (unsigned long long)need, t);
    } else {
        n = snprintf(buf, sizeof buf, "%llu\n", used + (unsigned long long)need);
        rc = pwrite(fd, buf, (size_t)n, 0) == n && ftruncate(fd, n) == 0 ? 0 : -1;
        if (rc)
            snprintf(why, why_size, "failing/%s: %s", MARKER, strerror(errno));
    }
    close(fd); /* and its lock */
    return rc;
}

/* Write one file into dfd: a new file in a private temporary directory
 * renamed over file (_files.h), unless file is something other than a
 * regular file (then refused).  0, or -1 with the reason in why. */
static int put(int dfd, const char *shown, const char *file, const art *a, const char *text, size_t len, char *why,
               size_t why_size)
{
    char path[QF_RESULT_ARTIFACT_DIR + QF_RESULT_ARTIFACT_KEY + 32],
        err[QF_RESULT_TEXT_MAX - 16]; /* why's size */
    _qf_out o;
    FILE *fp;
    int ok;
    snprintf(path, sizeof path, "%s/%s", shown, file);
    if (!(fp = _qf_out_openat(&o, dfd, file, path, _QF_OUT_REFUSE, err, sizeof err))) {
        snprintf(why, why_size, "%s", err);
        return -1;
    }
    if (text) {
        ok = fwrite(text, 1, len, fp) == len;
        if (!ok)
            snprintf(err, sizeof err, "%s", strerror(errno));
    } else if (a->enc) {
        /* the correctly rounded values are codes of the format, exactly */
        size_t i, n = a->bytes / qf_npy_dtype_size(a->t), eb = qf_npy_dtype_size(a->t);
        unsigned char *codes = malloc(n ? a->bytes : 1);
        for (i = 0; codes && i < n; i++) {
            uint64_t c = qf_format_encode(a->enc, ((const double *)a->data)[i], QF_ROUND_RNE, 0, 0, 0);
            uint8_t u8 = (uint8_t)c;
            uint16_t u16 = (uint16_t)c;
            uint32_t u32 = (uint32_t)c;
            memcpy(codes + i * eb, eb == 1 ? (void *)&u8 : eb == 2 ? (void *)&u16 : eb == 4 ? (void *)&u32 : (void *)&c,
                   eb);
        }
        ok = codes && qf_npy_write_file(fp, file, a->t, a->ndim, a->shape, codes, err, sizeof err) == QF_OK;
        if (!codes)
            snprintf(err, sizeof err, "out of memory");
        free(codes);
    } else {
        ok = qf_npy_write_file(fp, file, a->t, a->ndim, a->shape, a->data, err, sizeof err) == QF_OK;
    }
    if (!ok) {
        _qf_out_abort(&o);
        snprintf(why, why_size, "cannot write %s: %.120s", path, err);
        return -1;
    }
    if (_qf_out_commit(&o, err, sizeof err) != QF_OK) {
        snprintf(why, why_size, "%s", err);
        return -1;
    }
    return 0;
}

/* The pair's directory under failing/: "<case id>--<kernel>-<hash>", each
 * name cut and sanitized (letters, digits and . _ - = , + kept, anything
 * else '_', no leading '.'), the hash (8 hex digits of the SHA-256 of
 * "KERNEL CASE_ID") telling apart pairs the cutting or sanitizing made
 * alike. */
void qf_runner_artifacts_dir(const qf_result *r, char *buf, size_t size)
{
    uint8_t d[QF_SHA256_BYTES];
    char key[QF_RESULT_NAME_MAX + QF_RESULT_ID_MAX + 2], hex[QF_SHA256_HEX];
    const char *part[2] = {r->case_id, r->kernel};
    size_t cut[2] = {96, 64}, n = 0, i, k;
    qf_result_key(r, key, sizeof key);
    qf_sha256(key, strlen(key), d);
    qf_sha256_hex(d, hex);
    for (k = 0; k < 2; k++) {
        if (k)
            n += (size_t)snprintf(buf + n, size - n, "--");
        for (i = 0; part[k][i] && i < cut[k] && n + 1 < size; i++) {
            char c = part[k][i];
            int keep = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-=,+", c) && c;
            buf[n++] = keep && !(c == '.' && i == 0) ? c : '_';
        }
        buf[n] = '\0';
    }
    snprintf(buf + n, size - n, "-%.8s", hex);
}

void _qf_artifacts_save(const _qf_case *p, const _qf_checked *ck, const _qf_checked *ck1, const qf_suite *suite,
                        const qf_runner_opts *o, qf_result *r)
{
    plan pl;
    char dir[QF_RESULT_ARTIFACT_DIR - 16], shown[QF_RESULT_ARTIFACT_DIR], why[QF_RESULT_TEXT_MAX - 16] = "";
    char nb[32], cb[32], q[1024], file[QF_RESULT_ARTIFACT_KEY + 16];
    char *text = NULL;
    size_t len = 0, i, written = 0;
    int out = -1, ffd = -1, pfd = -1, repro;
    if (!o || !o->save_dir || (r->verdict != QF_VERDICT_FAILED && r->verdict != QF_VERDICT_MARGINAL &&
                               r->verdict != QF_VERDICT_MISTRUSTED))
        return;
    memset(&pl, 0, sizeof pl);
    plan_tensors(&pl, p, ck, ck1, r);
    repro = !pl.no_repro && !repro_suite(p, suite, r, &text, &len, pl.why_norepro, sizeof pl.why_norepro);
    if (repro && pl.n < QF_RESULT_MAX_ARTIFACTS) {
        snprintf(pl.a[pl.n].key, sizeof pl.a[0].key, "suite");
        pl.a[pl.n].owned = text;
        pl.a[pl.n++].bytes = len;
        pl.bytes += len;
    } else {
        free(text);
        repro = 0;
    }
    if (o->save_pair_max && pl.bytes > o->save_pair_max) {
        qf_runner_format_bytes(pl.bytes, nb, sizeof nb);
        qf_runner_format_bytes(o->save_pair_max, cb, sizeof cb);
        snprintf(why, sizeof why,
                 "the pair's tensors take %s, over --save-failing's %s per pair (--save-failing=all or a "
                 "larger SIZE saves them)",
                 nb, cb);
        goto done;
    }
    qf_runner_artifacts_dir(r, dir, sizeof dir);
    snprintf(shown, sizeof shown, "failing/%s", dir);
    if ((out = open(o->save_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(why, sizeof why, "cannot open the output directory: %s", strerror(errno));
        goto done;
    }
    if ((ffd = open_sub(out, "failing", "failing", why, sizeof why)) < 0 ||
        reserve(ffd, pl.bytes, o->save_total_max, why, sizeof why) ||
        (pfd = open_sub(ffd, dir, shown, why, sizeof why)) < 0)
        goto done;
    for (i = 0; i < pl.n; i++, written++) {
        const art *a = &pl.a[i];
        int is_suite = !strcmp(a->key, "suite");
        qf_result_artifact_file(a->key, file, sizeof file);
        if (put(pfd, shown, file, a, is_suite ? a->owned : NULL, a->bytes, why, sizeof why))
            break;
    }
    if (written < pl.n) {
        /* All or nothing: a pair's files without the rest would mislead. */
        for (i = 0; i < written; i++) {
            qf_result_artifact_file(pl.a[i].key, file, sizeof file);
            unlinkat(pfd, file, 0);
        }
        unlinkat(ffd, dir, AT_REMOVEDIR); /* when empty: no directory of a pair that has no files */
        goto done;
    }
    snprintf(r->artifacts_dir, sizeof r->artifacts_dir, "%s", shown);
    for (i = 0; i < pl.n; i++)
        snprintf(r->artifacts[i], sizeof r->artifacts[i], "%s", pl.a[i].key);
    r->nartifacts = pl.n;
    if (repro) {
        /* qualify run DIR/failing/X/repro.yaml --kernel K [sources] --save-failing=off
         * -o DIR/failing/X/rerun, run from where this sweep ran (plugins,
         * workers and DIR as given); a command cut short would be another
         * one: none then. */
        char c[2 * QF_RESULT_CMD_MAX] = "", path[PATH_MAX + QF_RESULT_ARTIFACT_DIR + 32];
        size_t k;
        snprintf(path, sizeof path, "%s/%s/repro.yaml", o->save_dir, shown);
        _qf_shell_quote(q, sizeof q, path);
        cat(c, sizeof c, "qualify run ", q);
        _qf_shell_quote(q, sizeof q, p->k->name);
        cat(c, sizeof c, " --kernel ", q);
        for (k = 0; k < o->nplugins; k++) {
            _qf_shell_quote(q, sizeof q, o->plugins[k]);
            cat(c, sizeof c, " --plugin ", q);
        }
        cat(c, sizeof c, o->reproducer_args ? o->reproducer_args : "", "");
        /* its own tensors would be these again */
        snprintf(path, sizeof path, "%s/%s/rerun", o->save_dir, shown);
        _qf_shell_quote(q, sizeof q, path);
        cat(c, sizeof c, " --save-failing=off -o ", q);
        if (strlen(c) + 1 < sizeof r->artifacts_reproducer) {
            memcpy(r->artifacts_reproducer, c, strlen(c) + 1); /* it fits: checked above */
            if (!strncmp(r->kernel_origin, "worker:", 7))
                _qf_repro_env_prefix(r->artifacts_reproducer, sizeof r->artifacts_reproducer);
        } else {
            note(pl.left, sizeof pl.left, "no artifacts_reproducer: the command is longer than a record holds "
                                          "(repro.yaml is there)");
        }
    }
done:
    /* Why nothing was saved; else what was left out. */
    if (why[0]) {
        snprintf(r->artifacts_note, sizeof r->artifacts_note, "not saved: %s", why);
    } else {
        if (!repro && pl.why_norepro[0])
            note(pl.left, sizeof pl.left, "no suite from the files: %s", pl.why_norepro);
        snprintf(r->artifacts_note, sizeof r->artifacts_note, "%s", pl.left);
    }
    plan_free(&pl);
    if (pfd >= 0)
        close(pfd);
    if (ffd >= 0)
        close(ffd);
    if (out >= 0)
        close(out);
}

/* ---- Clearing an earlier sweep's files ------------------------------------ */

/* Remove name in dfd and, for a directory, everything under it, never
 * through a link (a link is removed itself). */
static int rm_tree(int dfd, const char *name, int depth)
{
    struct stat st;
    struct dirent *e;
    DIR *d;
    int fd, rc = 0;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dfd, name, 0);
    if (depth > 64) {
        errno = ELOOP;
        return -1;
    }
    if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return -1;
    if (!(d = fdopendir(fd))) {
        close(fd);
        return -1;
    }
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && rm_tree(fd, e->d_name, depth + 1))
            rc = -1;
    closedir(d);
    return rc ? -1 : unlinkat(dfd, name, AT_REMOVEDIR);
}

qf_status qf_runner_artifacts_clear(const char *dir, int *kept, char *err, size_t err_size)
{
    struct stat st;
    int dfd, ffd, rc = 0;
    if (kept)
        *kept = 0;
    if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return errno == ENOENT ? QF_OK : _qf_fail(err, err_size, QF_EIO, dir, "%s", strerror(errno));
    if (fstatat(dfd, "failing", &st, AT_SYMLINK_NOFOLLOW)) {
        close(dfd);
        return QF_OK;
    }
    ffd = S_ISDIR(st.st_mode) ? openat(dfd, "failing", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (ffd < 0 || fstatat(ffd, MARKER, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) {
        if (kept)
            *kept = 1;
    } else {
        rc = rm_tree(dfd, "failing", 0);
    }
    if (ffd >= 0)
        close(ffd);
    close(dfd);
    if (rc)
        return _qf_fail(err, err_size, QF_EIO, dir, "cannot remove failing/: %s", strerror(errno));
    return QF_OK;
}
