/* t-ref.c: 'qualify ref OP' end to end: the CLI (QF_QUALIFY_BIN) runs on
 * .npy files written here with the library's writer; its outputs are
 * compared with the library references bit for bit, with hand-checked
 * exact values, and its rejections (exit 2, a message naming the file or
 * option, nothing on stdout, no output file) are checked. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_dot.h"
#include "qf_format.h"
#include "qf_npy.h"
#include "qf_ref.h"
#include "qf_test.h"

static char tmpdir[256];
static char out_buf[1 << 16], err_buf[1 << 16];

static void make_tmpdir(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/qf-ref-XXXXXX", t && *t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    qf_test_rmtree(tmpdir);
}

static const char *tpath(const char *name)
{
    static char buf[8][400];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static int exists(const char *name)
{
    struct stat sb;
    return stat(tpath(name), &sb) == 0;
}

static void slurp(const char *path, char *buf, size_t size)
{
    FILE *fp = fopen(path, "rb");
    size_t n = 0;
    if (fp) {
        n = fread(buf, 1, size - 1, fp);
        fclose(fp);
    }
    buf[n] = '\0';
}

/* Run "qualify ARGS" (split on spaces) in tmpdir; stdout and stderr land in
 * out_buf and err_buf.  Returns the exit status. */
static int run(const char *fmt, ...)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    char line[4096], *argv[128], *tok, *save = NULL;
    int argc = 0, status;
    pid_t pid;
    va_list ap;
    ck_assert_msg(bin && *bin, "QF_QUALIFY_BIN is not set (run through ctest)");
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    argv[argc++] = (char *)bin;
    for (tok = strtok_r(line, " ", &save); tok && argc < 127; tok = strtok_r(NULL, " ", &save))
        argv[argc++] = tok;
    argv[argc] = NULL;
    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fo = open(tpath("stdout.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(tpath("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0 || chdir(tmpdir) != 0)
            _exit(127);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(bin, argv);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    slurp(tpath("stdout.txt"), out_buf, sizeof out_buf);
    slurp(tpath("stderr.txt"), err_buf, sizeof err_buf);
    ck_assert_msg(WIFEXITED(status), "qualify %s: killed by signal %d", line, WTERMSIG(status));
    return WEXITSTATUS(status);
}

/* Expect exit 2, stderr holding every needle, nothing on stdout. */
static void expect_usage(const char *what, int rc, ...)
{
    va_list ap;
    const char *needle;
    ck_assert_msg(rc == 2, "%s: exit %d, want 2; stderr: %s", what, rc, err_buf);
    ck_assert_msg(out_buf[0] == '\0', "%s: stdout not empty: %s", what, out_buf);
    va_start(ap, rc);
    while ((needle = va_arg(ap, const char *)) != NULL)
        ck_assert_msg(strstr(err_buf, needle) != NULL, "%s: stderr '%s' lacks '%s'", what, err_buf, needle);
    va_end(ap);
}

static void save(const char *name, int ndim, const size_t *shape, const double *v)
{
    char err[512];
    ck_assert_msg(qf_npy_write_data(tpath(name), QF_NPY_FLOAT64, ndim, shape, v, err, sizeof err) == QF_OK,
                  "%s", err);
}

static void save_t(const char *name, qf_npy_dtype t, int ndim, const size_t *shape, const void *v)
{
    char err[512];
    ck_assert_msg(qf_npy_write_data(tpath(name), t, ndim, shape, v, err, sizeof err) == QF_OK, "%s", err);
}

/* Load a float64 output; returns its element count. */
static size_t load(const char *name, double *v, size_t max, int *ndim, size_t *shape)
{
    qf_npy a;
    char err[512];
    size_t n;
    ck_assert_msg(qf_npy_read(tpath(name), &a, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_msg(a.dtype == QF_NPY_FLOAT64, "%s is %s, want float64", name, qf_npy_dtype_name(a.dtype));
    ck_assert_uint_le(a.count, max);
    memcpy(v, a.data, a.count * sizeof *v);
    if (ndim)
        *ndim = a.ndim;
    if (shape)
        memcpy(shape, a.shape, (size_t)a.ndim * sizeof *shape);
    n = a.count;
    qf_npy_free(&a);
    return n;
}

static size_t load_u8(const char *name, uint8_t *v, size_t max)
{
    qf_npy a;
    char err[512];
    size_t n;
    ck_assert_msg(qf_npy_read(tpath(name), &a, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq(a.dtype, QF_NPY_UINT8);
    ck_assert_uint_le(a.count, max);
    memcpy(v, a.data, a.count);
    n = a.count;
    qf_npy_free(&a);
    return n;
}

static int same_bits(double a, double b)
{
    return !memcmp(&a, &b, sizeof a);
}

/* Small random values of a format: integers in [-r, r] scaled by 2^e. */
static double draw(uint64_t seed, uint64_t i, const qf_format *f)
{
    uint64_t w = qf_rng_u64(seed, i);
    double x = ldexp((double)(w >> 11), -53) * 8.0 - 4.0; /* [-4, 4) */
    return qf_format_decode(f, qf_format_encode(f, x, QF_ROUND_RNE, 1, 32, 0));
}

/* ---- gemm ----------------------------------------------------------------------- */

static void gemm_case(uint64_t seed, const char *in, const char *out, const char *round, int ta, int tb,
                      int with_c, size_t batch)
{
    const qf_format *fi = qf_format_lookup(in), *fo = qf_format_lookup(out);
    size_t M = 5, K = 7, N = 3, i, n;
    size_t sa[3], sb[3], sc[2] = {M, N}, sd[3];
    double A[4 * 5 * 7], B[7 * 3], C[5 * 3], got[4 * 5 * 3];
    uint64_t codes[4 * 5 * 3];
    double vals[4 * 5 * 3];
    uint8_t st[4 * 5 * 3];
    qf_gemm_desc d = qf_gemm_desc_default();
    qf_round r;
    int rc, nd;
    ck_assert_int_eq(qf_round_lookup(round, &r), QF_OK);
    for (i = 0; i < batch * M * K; i++)
        A[i] = draw(seed, i, fi);
    for (i = 0; i < K * N; i++)
        B[i] = draw(seed + 1, i, fi);
    for (i = 0; i < M * N; i++)
        C[i] = draw(seed + 2, i, qf_format_get(QF_FLOAT32));
    nd = batch > 1 ? 3 : 2;
    sa[0] = batch;
    sa[nd - 2] = ta ? K : M;
    sa[nd - 1] = ta ? M : K;
    sb[0] = tb ? N : K;
    sb[1] = tb ? K : N;
    save("A.npy", nd, sa, A);
    save("B.npy", 2, sb, B);
    save("C.npy", 2, sc, C);
    rc = run("ref gemm --a A.npy --b B.npy %s %s %s --in-dtype %s --out-dtype %s --round %s -o D.npy "
             "--status S.npy --codes K.npy",
             with_c ? "--c C.npy --alpha -1.5 --beta 0x1.8p-3" : "", ta ? "--trans-a" : "",
             tb ? "--trans-b" : "", in, out, round);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err_buf);
    ck_assert_msg(strstr(out_buf, "ref gemm: ") && strstr(out_buf, " 0 undecided"), "summary: %s", out_buf);
    n = load("D.npy", got, 60, &nd, sd);
    ck_assert_uint_eq(n, batch * M * N);
    ck_assert_uint_eq(sd[nd - 2], M);
    ck_assert_uint_eq(sd[nd - 1], N);

    d.trans_a = ta ? QF_TRANS : QF_NO_TRANS;
    d.trans_b = tb ? QF_TRANS : QF_NO_TRANS;
    d.m = M;
    d.n = N;
    d.k = K;
    d.a = A;
    d.lda = ta ? M : K;
    d.b = B;
    d.ldb = tb ? K : N;
    d.alpha = with_c ? -1.5 : 1.0;
    d.beta = with_c ? 0.1875 : 0.0;
    d.c = with_c ? C : NULL;
    d.ldc = N;
    d.batch = batch;
    d.stride_a = (ptrdiff_t)(M * K);
    d.stride_b = 0;
    d.stride_c = 0;
    d.out = fo;
    d.round = r;
    d.ldd = N;
    d.stride_d = (ptrdiff_t)(M * N);
    d.d_code = codes;
    d.d_value = vals;
    ck_assert_int_eq(qf_gemm(&d), QF_OK);
    for (i = 0; i < n; i++)
        ck_assert_msg(same_bits(got[i], vals[i]), "gemm %s->%s %s element %zu: cli %a, library %a", in, out,
                      round, i, got[i], vals[i]);
    ck_assert_uint_eq(load_u8("S.npy", st, 60), n);
    for (i = 0; i < n; i++) {
        /* exact iff the exact sum equals the value */
        qf_dot_acc acc;
        qf_dot_acc_init(&acc);
        ck_assert_int_eq(qf_gemm_acc_element(&d, i / (M * N), i / N % M, i % N, &acc, NULL), QF_OK);
        qf_dot_acc_sub_d(&acc, vals[i]);
        ck_assert_int_eq(st[i], qf_dot_acc_sign(&acc) == 0 ? QF_REF_EXACT : QF_REF_ROUNDED);
    }
    {
        qf_npy k;
        char err[512];
        ck_assert(qf_npy_read(tpath("K.npy"), &k, err, sizeof err) == QF_OK);
        ck_assert_uint_eq(qf_npy_dtype_size(k.dtype) * 8, (size_t)fo->storage_bits);
        for (i = 0; i < n; i++) {
            uint64_t c = fo->storage_bits == 8    ? ((uint8_t *)k.data)[i]
                         : fo->storage_bits == 16 ? ((uint16_t *)k.data)[i]
                         : fo->storage_bits == 32 ? ((uint32_t *)k.data)[i]
                                                  : ((uint64_t *)k.data)[i];
            ck_assert_uint_eq(c, codes[i]);
        }
        qf_npy_free(&k);
    }
}

START_TEST(test_gemm_matches_library)
{
    uint64_t seed = qf_test_seed();
    long it, n = qf_test_iters(2);
    make_tmpdir();
    for (it = 0; it < n; it++) {
        uint64_t s = seed + (uint64_t)it * 1000;
        gemm_case(s, "e4m3", "bf16", "rne", 0, 0, 0, 1);
        gemm_case(s, "bf16", "float32", "rtz", 1, 0, 1, 1);
        gemm_case(s, "float16", "e5m2", "up", 0, 1, 1, 1);
        gemm_case(s, "float32", "float64", "rne", 1, 1, 1, 3);
        gemm_case(s, "e2m1", "float16", "down", 0, 0, 1, 2);
    }
    remove_tmpdir();
}
END_TEST

START_TEST(test_gemm_small_integers_exact)
{
    /* [[1 2 3] [4 5 6]] [[1 0] [0 1] [1 1]] = [[4 5] [10 11]], + 2 C */
    double A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[4] = {1, -1, 0.5, 0}, D[4];
    size_t sa[2] = {2, 3}, sb[2] = {3, 2}, sc[2] = {2, 2}, sd[2];
    uint8_t st[4];
    int nd;
    make_tmpdir();
    save("A.npy", 2, sa, A);
    save("B.npy", 2, sb, B);
    save("C.npy", 2, sc, C);
    ck_assert_msg(run("ref gemm --a A.npy --b B.npy -o D.npy --status S.npy") == 0, "%s", err_buf);
    ck_assert_uint_eq(load("D.npy", D, 4, &nd, sd), 4);
    ck_assert_int_eq(nd, 2);
    ck_assert(sd[0] == 2 && sd[1] == 2);
    ck_assert(D[0] == 4 && D[1] == 5 && D[2] == 10 && D[3] == 11);
    load_u8("S.npy", st, 4);
    ck_assert(st[0] == 0 && st[1] == 0 && st[2] == 0 && st[3] == 0);
    ck_assert_msg(strstr(out_buf, "4 elements: 4 exact, 0 rounded, 0 undecided, 0 undefined"), "%s", out_buf);
    /* options after values, -o in the middle, beta as a hex float */
    ck_assert_msg(run("ref -o D.npy gemm --c C.npy --beta 0x1p+1 --a A.npy --b B.npy --quiet") == 0, "%s",
                  err_buf);
    ck_assert_str_eq(out_buf, "");
    load("D.npy", D, 4, NULL, NULL);
    ck_assert(D[0] == 6 && D[1] == 3 && D[2] == 11 && D[3] == 11);
    /* trans-a: A stored [K, M] */
    ck_assert_msg(run("ref gemm --a B.npy --b A.npy --trans-a --trans-b -o D.npy") == 0, "%s", err_buf);
    /* B^T A^T = (A B)^T */
    load("D.npy", D, 4, NULL, NULL);
    ck_assert(D[0] == 4 && D[1] == 10 && D[2] == 5 && D[3] == 11);
    /* specials and tiny terms: 2^30 + 2^-1200 is not 2^30 (the error of
     * 2^30 is below binary64's range); Inf is exact, NaN undefined, 2^1030
     * overflows (rounded), in e4m3 to NaN (still rounded) */
    {
        double ta[8] = {0x1p-600, 1, INFINITY, 0, NAN, 1, 0, 0x1p1000};
        double tb[2] = {0x1p-600, 0x1p30};
        size_t s_a[2] = {4, 2}, s_b[2] = {2, 1};
        save("tA.npy", 2, s_a, ta);
        save("tB.npy", 2, s_b, tb);
        ck_assert_msg(run("ref gemm --a tA.npy --b tB.npy -o D.npy --status S.npy") == 0, "%s", err_buf);
        load("D.npy", D, 4, NULL, NULL);
        load_u8("S.npy", st, 4);
        ck_assert(D[0] == 0x1p30 && st[0] == QF_REF_ROUNDED);
        ck_assert(D[1] == INFINITY && st[1] == QF_REF_EXACT);
        ck_assert(isnan(D[2]) && st[2] == QF_REF_UNDEFINED);
        ck_assert(D[3] == INFINITY && st[3] == QF_REF_ROUNDED);
        ck_assert_msg(strstr(out_buf, "1 exact, 2 rounded, 0 undecided, 1 undefined"), "%s", out_buf);
        ck_assert_msg(run("ref gemm --a tA.npy --b tB.npy --out-dtype e4m3 -o D.npy --status S.npy") == 0,
                      "%s", err_buf);
        load("D.npy", D, 4, NULL, NULL);
        load_u8("S.npy", st, 4);
        ck_assert(isnan(D[3]) && st[3] == QF_REF_ROUNDED && isnan(D[1]));
        ck_assert_msg(
            run("ref gemm --a tA.npy --b tB.npy --out-dtype e4m3 --saturate -o D.npy --status S.npy") == 0,
            "%s", err_buf);
        load("D.npy", D, 4, NULL, NULL);
        load_u8("S.npy", st, 4);
        ck_assert(D[3] == 448 && st[3] == QF_REF_ROUNDED);
    }
    /* shape mismatch names the option, the shapes and K */
    expect_usage("K mismatch", run("ref gemm --a A.npy --b A.npy -o X.npy"),
                 "--b: shape (2, 3) does not match K=3", NULL);
    expect_usage("C mismatch", run("ref gemm --a A.npy --b B.npy --c A.npy -o X.npy"), "--c: shape (2, 3)",
                 NULL);
    expect_usage("beta without c", run("ref gemm --a A.npy --b B.npy --beta 2 -o X.npy"), "--beta needs --c",
                 NULL);
    expect_usage("bad alpha", run("ref gemm --a A.npy --b B.npy --alpha x1 -o X.npy"), "--alpha: 'x1'", NULL);
    ck_assert(!exists("X.npy"));
    remove_tmpdir();
}
END_TEST

START_TEST(test_in_dtype)
{
    double A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, D[4];
    uint16_t codes[6];
    size_t sa[2] = {2, 3}, sb[2] = {3, 2}, i;
    const qf_format *bf = qf_format_lookup("bf16");
    make_tmpdir();
    save("B.npy", 2, sb, B);
    /* bf16 codes in a uint16 file give the same result as the values */
    for (i = 0; i < 6; i++)
        codes[i] = (uint16_t)qf_format_encode(bf, A[i], QF_ROUND_RNE, 0, 32, 0);
    save_t("Ac.npy", QF_NPY_UINT16, 2, sa, codes);
    ck_assert_msg(run("ref gemm --a Ac.npy --b B.npy --in-dtype bf16 -o D.npy") == 0, "%s", err_buf);
    load("D.npy", D, 4, NULL, NULL);
    ck_assert(D[0] == 4 && D[1] == 5 && D[2] == 10 && D[3] == 11);
    /* ml_dtypes' np.save of bfloat16 writes raw '|V2' elements */
    save_t("Av.npy", QF_NPY_RAW16, 2, sa, codes);
    ck_assert_msg(run("ref gemm --a Av.npy --b B.npy --in-dtype bfloat16 -o D.npy") == 0, "%s", err_buf);
    expect_usage("raw without in-dtype", run("ref gemm --a Av.npy --b B.npy -o X.npy"), "Av.npy",
                 "give --in-dtype NAME", NULL);
    /* codes of the wrong width */
    expect_usage("code width", run("ref gemm --a Ac.npy --b B.npy --in-dtype e4m3 -o X.npy"),
                 "uint16 elements cannot hold float8_e4m3fn codes", NULL);
    /* a code with bits outside the format */
    {
        uint8_t c4[6] = {0x2, 0x4, 0x5, 0x6, 0x17, 0x7};
        save_t("A4.npy", QF_NPY_UINT8, 2, sa, c4);
        expect_usage("code range", run("ref gemm --a A4.npy --b B.npy --in-dtype e2m1 -o X.npy"),
                     "element 4 (index (1, 1)) = 0x17 is not a float4_e2m1fn code", NULL);
    }
    /* a float value that bf16 does not hold: exit 2 with its index */
    A[5] = 1.0 + ldexp(1, -10);
    save("A.npy", 2, sa, A);
    expect_usage("bf16 value", run("ref gemm --a A.npy --b B.npy --in-dtype bf16 -o X.npy"), "--a: A.npy",
                 "element 5 (index (1, 2))", "not exactly representable in bfloat16", NULL);
    ck_assert_msg(run("ref gemm --a A.npy --b B.npy --in-dtype float32 -o D.npy") == 0, "%s", err_buf);
    expect_usage("unknown format", run("ref gemm --a A.npy --b B.npy --in-dtype bf17 -o X.npy"),
                 "unknown format 'bf17'", "bfloat16", NULL);
    /* --aux-dtype checks C */
    {
        double C[4] = {0.1, 0, 0, 0};
        size_t sc[2] = {2, 2};
        save("C.npy", 2, sc, C);
        expect_usage("aux",
                     run("ref gemm --a Ac.npy --b B.npy --in-dtype bf16 --c C.npy --aux-dtype bf16 -o X.npy"),
                     "--c: C.npy: element 0 (index (0, 0))", NULL);
    }
    ck_assert(!exists("X.npy"));
    remove_tmpdir();
}
END_TEST

/* ---- other ops ---------------------------------------------------------------------- */

START_TEST(test_softmax_family)
{
    double x[8] = {3, 3, 3, 3, 0, -INFINITY, 0, -INFINITY}, y[8];
    double z[6] = {1, 2, NAN, 1, 1, 1};
    size_t s[2] = {2, 4}, s3[2] = {2, 3}, i;
    uint8_t st[8];
    make_tmpdir();
    save("x.npy", 2, s, x);
    ck_assert_msg(run("ref softmax --x x.npy -o y.npy --status s.npy") == 0, "%s", err_buf);
    load("y.npy", y, 8, NULL, NULL);
    load_u8("s.npy", st, 8);
    for (i = 0; i < 4; i++)
        ck_assert(y[i] == 0.25 && st[i] == QF_REF_EXACT);
    ck_assert(y[4] == 0.5 && y[5] == 0 && y[6] == 0.5 && y[7] == 0);
    ck_assert(st[4] == QF_REF_EXACT && st[5] == QF_REF_EXACT);
    ck_assert_msg(strstr(out_buf, "8 exact, 0 rounded"), "%s", out_buf);
    /* bf16 output codes of 0.25 = 0x3E80 */
    ck_assert_msg(run("ref softmax --x x.npy -o y.npy --out-dtype bf16 --codes c.npy") == 0, "%s", err_buf);
    {
        qf_npy c;
        char err[512];
        ck_assert(qf_npy_read(tpath("c.npy"), &c, err, sizeof err) == QF_OK);
        ck_assert_int_eq(c.dtype, QF_NPY_UINT16);
        ck_assert_uint_eq(((uint16_t *)c.data)[0], 0x3E80);
        qf_npy_free(&c);
    }
    /* The op table's spelling names the same reference. */
    ck_assert_msg(run("ref log_softmax --x x.npy -o y.npy --status s.npy") == 0, "%s", err_buf);
    ck_assert_msg(run("ref log-softmax --x x.npy -o y.npy --status s.npy") == 0, "%s", err_buf);
    load("y.npy", y, 8, NULL, NULL);
    load_u8("s.npy", st, 8);
    ck_assert(fabs(y[0] + log(4.0)) <= 1e-15 && st[0] == QF_REF_ROUNDED);
    ck_assert(y[5] == -INFINITY);
    /* a NaN row is undefined */
    save("z.npy", 2, s3, z);
    ck_assert_msg(run("ref softmax --x z.npy -o y.npy --status s.npy") == 0, "%s", err_buf);
    load("y.npy", y, 6, NULL, NULL);
    load_u8("s.npy", st, 6);
    ck_assert(isnan(y[0]) && st[0] == QF_REF_UNDEFINED && st[2] == QF_REF_UNDEFINED);
    ck_assert(st[3] == QF_REF_ROUNDED && fabs(y[3] - 1.0 / 3) <= 1e-16);
    ck_assert_msg(strstr(out_buf, "3 undefined"), "%s", out_buf);
    /* sum, amax drop the last axis */
    {
        double v[6] = {1, 2, 3, -5, 3, 0.5}, r[2];
        size_t sd[2];
        int nd;
        save("v.npy", 2, s3, v);
        ck_assert_msg(run("ref sum --x v.npy -o r.npy") == 0, "%s", err_buf);
        ck_assert_uint_eq(load("r.npy", r, 2, &nd, sd), 2);
        ck_assert(nd == 1 && sd[0] == 2 && r[0] == 6 && r[1] == -1.5);
        ck_assert_msg(run("ref amax --x v.npy -o r.npy") == 0, "%s", err_buf);
        load("r.npy", r, 2, NULL, NULL);
        ck_assert(r[0] == 3 && r[1] == 5);
    }
    remove_tmpdir();
}
END_TEST

START_TEST(test_attention)
{
    /* One head, seq 3, d 4.  With --causal, row 0 sees key 0 only: out = v0. */
    double q[12] = {1, 0, 0, 1, 0.5, 0.5, 1, 0, 0, 0, 0, 0}, k[12] = {1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1};
    double v[6] = {1, 2, 3, 4, 5, 6}, o[6], lse[3];
    size_t sq[4] = {1, 1, 3, 4}, sv[4] = {1, 1, 3, 2}, so[4];
    uint8_t st[6];
    int nd;
    make_tmpdir();
    save("q.npy", 4, sq, q);
    save("k.npy", 4, sq, k);
    save("v.npy", 4, sv, v);
    ck_assert_msg(
        run("ref attention --q q.npy --k k.npy --v v.npy --causal -o o.npy --status s.npy --lse-out l.npy") ==
            0,
        "%s", err_buf);
    ck_assert_uint_eq(load("o.npy", o, 6, &nd, so), 6);
    ck_assert(nd == 4 && so[3] == 2 && so[2] == 3);
    load_u8("s.npy", st, 6);
    ck_assert(o[0] == 1 && o[1] == 2 && st[0] == QF_REF_EXACT);
    /* row 2: q = 0, all logits 0, uniform over 3 keys: (1+3+5)/3 = 3 exactly */
    ck_assert(o[4] == 3 && o[5] == 4);
    ck_assert_uint_eq(load("l.npy", lse, 3, &nd, so), 3);
    ck_assert(nd == 3 && lse[0] == 1.0); /* scale 1/2 * q0.k0 = 1 */
    ck_assert(fabs(lse[2] - log(3.0)) < 1e-15);
    /* a boolean mask that hides everything: the masked row value */
    {
        uint8_t m[9] = {0};
        size_t sm[2] = {3, 3};
        save_t("m.npy", QF_NPY_BOOL, 2, sm, m);
        ck_assert_msg(
            run("ref attention --q q.npy --k k.npy --v v.npy --mask-bool m.npy -o o.npy --status s.npy "
                "--lse-out l.npy") == 0,
            "%s", err_buf);
        load("o.npy", o, 6, NULL, NULL);
        load_u8("s.npy", st, 6);
        load("l.npy", lse, 3, NULL, NULL);
        ck_assert(o[0] == 0 && st[0] == QF_REF_UNDEFINED && lse[0] == -INFINITY);
        expect_usage("mask shape",
                     run("ref attention --q q.npy --k k.npy --v v.npy --mask-bool v.npy -o X.npy"),
                     "--mask-bool: v.npy: shape (1, 1, 3, 2) does not broadcast", NULL);
    }
    /* GQA: 2 query heads on 1 kv head give identical heads */
    {
        double q2[24];
        size_t s2[4] = {1, 2, 3, 4};
        memcpy(q2, q, sizeof q);
        memcpy(q2 + 12, q, sizeof q);
        save("q2.npy", 4, s2, q2);
        ck_assert_msg(run("ref attention --q q2.npy --k k.npy --v v.npy -o o2.npy") == 0, "%s", err_buf);
        expect_usage("gqa", run("ref attention --q q.npy --k q2.npy --v v.npy -o X.npy"),
                     "2 kv heads do not divide the 1 heads", NULL);
    }
    /* directed rounding of a result that is exactly a double but only
     * known through exp: undecided, exit 0 with a warning, 1 with --strict */
    ck_assert_msg(
        run("ref attention --q q.npy --k k.npy --v v.npy --round rtz --prec-max 128 -o o.npy --status "
            "s.npy") == 0,
        "%s", err_buf);
    load_u8("s.npy", st, 6);
    /* row 0: weights e, sqrt(e), e on v rows (1 2), (3 4), (5 6): exactly (3 4) */
    ck_assert_msg(st[0] == QF_REF_UNDECIDED && st[1] == QF_REF_UNDECIDED, "status %d %d", st[0], st[1]);
    ck_assert_msg(strstr(err_buf, "warning") && strstr(err_buf, "undecided"), "%s", err_buf);
    ck_assert_int_eq(
        run("ref attention --q q.npy --k k.npy --v v.npy --round rtz --prec-max 128 -o o.npy --strict"), 1);
    expect_usage("scale 0", run("ref attention --q q.npy --k k.npy --v v.npy --scale 0 -o X.npy"), "--scale",
                 NULL);
    expect_usage("align", run("ref attention --q q.npy --k k.npy --v v.npy --align middle -o X.npy"),
                 "top-left bottom-right", NULL);
    ck_assert(!exists("X.npy"));
    remove_tmpdir();
}
END_TEST

START_TEST(test_norms_activations_rope)
{
    double x[4] = {1, 1, 1, 1}, x2[2] = {1, 3}, y[8], w[2] = {2, 0.5}, b[2] = {1, 1};
    double g[4] = {0, 1, -INFINITY, 2};
    size_t s4[1] = {4}, s2[2] = {1, 2}, sw[1] = {2};
    uint8_t st[8];
    make_tmpdir();
    save("x.npy", 1, s4, x);
    save("x2.npy", 2, s2, x2);
    save("w.npy", 1, sw, w);
    save("b.npy", 1, sw, b);
    save("g.npy", 1, s4, g);
    ck_assert_msg(run("ref rmsnorm --x x.npy --eps 0 -o y.npy --status s.npy") == 0, "%s", err_buf);
    load("y.npy", y, 4, NULL, NULL);
    load_u8("s.npy", st, 4);
    ck_assert(y[0] == 1 && st[0] == QF_REF_EXACT);
    ck_assert_msg(
        run("ref layernorm --x x2.npy --eps 0 --weight w.npy --bias b.npy -o y.npy --status s.npy") == 0,
        "%s", err_buf);
    load("y.npy", y, 2, NULL, NULL);
    load_u8("s.npy", st, 2);
    ck_assert(y[0] == -1 && y[1] == 1.5 && st[0] == QF_REF_EXACT);
    expect_usage("weight shape", run("ref rmsnorm --x x.npy --weight w.npy -o X.npy"),
                 "--weight: w.npy: shape (2,) does not match", NULL);
    ck_assert_msg(run("ref gelu --x g.npy -o y.npy --status s.npy") == 0, "%s", err_buf);
    load("y.npy", y, 4, NULL, NULL);
    ck_assert(y[0] == 0 && fabs(y[1] - 0.8413447460685429) < 1e-15 && y[2] == 0);
    ck_assert_msg(run("ref gelu --x g.npy --approx tanh -o y.npy") == 0, "%s", err_buf);
    load("y.npy", y, 4, NULL, NULL);
    ck_assert(fabs(y[1] - 0.8411919906082768) < 1e-15);
    expect_usage("approx", run("ref gelu --x g.npy --approx fast -o X.npy"), "unknown GELU form 'fast'",
                 NULL);
    ck_assert_msg(run("ref silu --x g.npy -o y.npy") == 0, "%s", err_buf);
    load("y.npy", y, 4, NULL, NULL);
    ck_assert(y[0] == 0 && fabs(y[1] - 0.7310585786300049) < 1e-15);
    ck_assert_msg(run("ref sigmoid --x g.npy -o y.npy --status s.npy") == 0, "%s", err_buf);
    load("y.npy", y, 4, NULL, NULL);
    load_u8("s.npy", st, 4);
    ck_assert(y[0] == 0.5 && st[0] == QF_REF_EXACT && y[2] == 0);
    ck_assert_msg(run("ref relu --x g.npy -o y.npy") == 0, "%s", err_buf);
    load("y.npy", y, 4, NULL, NULL);
    ck_assert(y[0] == 0 && y[1] == 1 && y[2] == 0 && y[3] == 2);
    /* swiglu, fused and split: gate [0, 1], up [-inf?] */
    ck_assert_msg(run("ref swiglu --gate x2.npy --up x2.npy -o y.npy") == 0, "%s", err_buf);
    load("y.npy", y, 2, NULL, NULL);
    ck_assert(fabs(y[0] - 0.7310585786300049) < 1e-15);
    {
        double f[4] = {0, 1, 5, 7};
        size_t sf[2] = {1, 4}, so[2];
        int nd;
        save("f.npy", 2, sf, f);
        ck_assert_msg(run("ref swiglu --x f.npy -o y.npy --status s.npy") == 0, "%s", err_buf);
        ck_assert_uint_eq(load("y.npy", y, 2, &nd, so), 2);
        ck_assert(nd == 2 && so[1] == 2 && y[0] == 0);
        ck_assert_msg(run("ref geglu --x f.npy --approx tanh -o y.npy") == 0, "%s", err_buf);
        expect_usage("glu inputs", run("ref geglu --x f.npy --gate f.npy --up f.npy -o X.npy"), "either",
                     NULL);
    }
    /* rope: position 0 is the identity; the pair rotates by 1 rad at position 1 */
    {
        double r[8] = {1, 0, 0, 1, 1, 0, 0, 1};
        size_t sr[3] = {2, 1, 4};
        save("r.npy", 3, sr, r);
        ck_assert_msg(run("ref rope --x r.npy --layout interleaved -o y.npy --status s.npy") == 0, "%s",
                      err_buf);
        load("y.npy", y, 8, NULL, NULL);
        load_u8("s.npy", st, 8);
        ck_assert(y[0] == 1 && y[1] == 0 && st[0] == QF_REF_EXACT);
        ck_assert(fabs(y[4] - cos(1.0)) < 1e-15 && fabs(y[5] - sin(1.0)) < 1e-15);
        ck_assert_msg(run("ref rope --x r.npy --layout half --offset 3 -o y.npy") == 0, "%s", err_buf);
        load("y.npy", y, 8, NULL, NULL);
        ck_assert(fabs(y[0] - cos(3.0)) < 1e-15 && fabs(y[2] - sin(3.0)) < 1e-15);
        expect_usage("layout", run("ref rope --x r.npy -o X.npy"), "--layout is required", NULL);
    }
    ck_assert(!exists("X.npy"));
    remove_tmpdir();
}
END_TEST

START_TEST(test_router_quant)
{
    double l[8] = {0, 0, 0, 0, 1, 3, 2, 0}, w[4], s[2] = {0.5, 4};
    size_t sl[2] = {2, 4}, ss[1] = {2};
    make_tmpdir();
    save("l.npy", 2, sl, l);
    ck_assert_msg(
        run("ref moe-router --logits l.npy --top-k 2 --renorm -o w.npy --indices i.npy --ties t.npy") == 0,
        "%s", err_buf);
    load("w.npy", w, 4, NULL, NULL);
    ck_assert(w[0] == 0.5 && w[1] == 0.5);
    {
        qf_npy idx;
        char err[512];
        ck_assert(qf_npy_read(tpath("i.npy"), &idx, err, sizeof err) == QF_OK);
        ck_assert_int_eq(idx.dtype, QF_NPY_INT32);
        ck_assert_int_eq(((int32_t *)idx.data)[0], 0);
        ck_assert_int_eq(((int32_t *)idx.data)[1], 1);
        ck_assert_int_eq(((int32_t *)idx.data)[2], 1);
        ck_assert_int_eq(((int32_t *)idx.data)[3], 2);
        qf_npy_free(&idx);
    }
    expect_usage("top-k", run("ref moe-router --logits l.npy --top-k 5 -o X.npy"),
                 "--top-k 5 exceeds the 4 experts", NULL);
    /* quantize to e4m3 with two group scales; dequantize back */
    {
        double x[4] = {1, 0.1, 8, 448 * 4}, y[4];
        size_t sx[1] = {4};
        uint8_t st[4];
        save("x.npy", 1, sx, x);
        save("sc.npy", 1, ss, s);
        ck_assert_msg(
            run("ref quantize --x x.npy --scales sc.npy --group 2 --out-dtype e4m3 -o y.npy --codes c.npy "
                "--status s.npy") == 0,
            "%s", err_buf);
        load("y.npy", y, 4, NULL, NULL);
        load_u8("s.npy", st, 4);
        ck_assert(y[0] == 2 && st[0] == QF_REF_EXACT && st[1] == QF_REF_ROUNDED && y[2] == 2 && y[3] == 448);
        ck_assert_msg(run("ref dequantize --x c.npy --in-dtype e4m3 --scales sc.npy --group 2 -o y.npy") == 0,
                      "%s", err_buf);
        load("y.npy", y, 4, NULL, NULL);
        ck_assert(y[0] == 1 && y[2] == 8 && y[3] == 448 * 4);
        expect_usage("scales count", run("ref quantize --x x.npy --scales sc.npy --out-dtype e4m3 -o X.npy"),
                     "--scales: sc.npy", NULL);
        expect_usage("dequant fmt", run("ref dequantize --x c.npy -o X.npy"), "--in-dtype NAME is required",
                     NULL);
    }
    ck_assert(!exists("X.npy"));
    remove_tmpdir();
}
END_TEST

START_TEST(test_rejections)
{
    double x[2] = {1, 2};
    size_t s[1] = {2};
    FILE *fp;
    int i;
    static const char *ops[] = {"gemm", "softmax",    "log-softmax", "attention", "rmsnorm",  "layernorm",
                                "gelu", "silu",       "sigmoid",     "relu",      "swiglu",   "geglu",
                                "rope", "moe-router", "sum",         "amax",      "quantize", "dequantize"};
    make_tmpdir();
    save("x.npy", 1, s, x);
    expect_usage("unknown op", run("ref frobnicate --x x.npy -o X.npy"), "unknown op 'frobnicate'",
                 "valid ops:", "gemm", "attention", "moe-router", NULL);
    expect_usage("no op", run("ref"), "no op given", NULL);
    expect_usage("missing file", run("ref softmax --x nope.npy -o X.npy"), "--x: nope.npy: cannot open",
                 NULL);
    fp = fopen(tpath("bad.npy"), "wb");
    fputs("not a numpy file at all", fp);
    fclose(fp);
    expect_usage("bad magic", run("ref softmax --x bad.npy -o X.npy"), "--x: bad.npy: not a .npy file", NULL);
    fp = fopen(tpath("trunc.npy"), "wb");
    fwrite("\x93NUMPY\x01\x00\x40\x00{'descr': '<f8', 'fortran_order': False, 'shape': (9,), }         \n", 1,
           74, fp);
    fwrite(x, 1, 16, fp);
    fclose(fp);
    expect_usage("truncated", run("ref softmax --x trunc.npy -o X.npy"), "trunc.npy: truncated data", NULL);
    expect_usage("no output", run("ref softmax --x x.npy"), "-o", NULL);
    expect_usage("foreign option", run("ref softmax --x x.npy --causal -o X.npy"), "--causal does not apply",
                 NULL);
    expect_usage("unknown option", run("ref softmax --x x.npy --frob -o X.npy"), "unknown option '--frob'",
                 NULL);
    expect_usage("stray argument", run("ref softmax x.npy -o X.npy"), "unexpected argument 'x.npy'", NULL);
    expect_usage("round", run("ref softmax --x x.npy --round sideways -o X.npy"),
                 "unknown rounding mode 'sideways'", "rne", NULL);
    expect_usage("stochastic", run("ref softmax --x x.npy --round stochastic -o X.npy"), "deterministic",
                 NULL);
    expect_usage("out dir", run("ref softmax --x x.npy -o nodir/X.npy"), "nodir", NULL);
    expect_usage("same output", run("ref softmax --x x.npy -o X.npy --status X.npy"),
                 "--out and --status name the same file 'X.npy'", NULL);
    expect_usage("threads", run("ref softmax --x x.npy --threads -3 -o X.npy"), "--threads", NULL);
    ck_assert(!exists("X.npy"));
    /* help: general and per op, on stdout, exit 0 */
    ck_assert_int_eq(run("ref --help"), 0);
    for (i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++)
        ck_assert_msg(strstr(out_buf, ops[i]), "general help lacks %s", ops[i]);
    ck_assert(strstr(out_buf, "--in-dtype") && strstr(out_buf, "--strict"));
    for (i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++) {
        ck_assert_int_eq(run("ref %s --help", ops[i]), 0);
        ck_assert_msg(strstr(out_buf, "usage: qualify ref ") && strstr(out_buf, ops[i]), "%s", out_buf);
    }
    ck_assert_int_eq(run("ref gemm --help"), 0);
    ck_assert(strstr(out_buf, "--trans-a") && strstr(out_buf, "--beta"));
    ck_assert_int_eq(run("ref attention -h"), 0);
    ck_assert(strstr(out_buf, "--window-left") && strstr(out_buf, "--mask-bool") &&
              strstr(out_buf, "--lse-out"));
    ck_assert_int_eq(run("--help"), 0);
    ck_assert(strstr(out_buf, "ref"));
    remove_tmpdir();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli/ref");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_gemm_matches_library);
    tcase_add_test(tc, test_gemm_small_integers_exact);
    tcase_add_test(tc, test_in_dtype);
    tcase_add_test(tc, test_softmax_family);
    tcase_add_test(tc, test_attention);
    tcase_add_test(tc, test_norms_activations_rope);
    tcase_add_test(tc, test_router_quant);
    tcase_add_test(tc, test_rejections);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
