/* t-evidence.c: the end-to-end evidence of issue 6.
 *
 * A sweep on the CPU and on two simulated architectures (sim:sm_90,
 * sim:gfx942: the CPU models of matrix units) -> `qualify enable` -> guard
 * decisions (CLI, JSON table and the compiled-in C table) that match the
 * table for shapes inside, at the border of and outside the swept region;
 * then the example project's kernel changed to lose precision
 * (examples/sweep-project/demo_gemm.c built with DEMO_BROKEN) makes
 * `qualify diff` exit 1 and name it.  Suite: tests/enable/evidence.yaml. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_enable.h"
#include "qf_guard.h"
#include "qf_report.h"
#include "qf_test.h"

static const char *bin, *src, *bdir;
static char tmp[1024];

static void sh(const char *cmd)
{
    int st = system(cmd);
    ck_assert_msg(st == 0, "command failed (%d): %s", st, cmd);
}

/* Build examples/sweep-project's kernel (good, or with its precision bug)
 * with cc into tmp: the same kernel name before and after a change. */
static void build_plugin(const char *variant, const char *define)
{
    char cmd[8192];
    snprintf(
        cmd, sizeof cmd,
        "cc -std=c11 -O1 -shared -fPIC %s -I'%s/qualify' -I'%s/precision' -I'%s/refs' -I'%s/kernels' "
        "-I'%s/kernels/models' -I'%s/generated' '%s/examples/sweep-project/demo_gemm.c' -o '%s/drift-%s.so'",
        define, src, src, src, src, src, bdir, src, tmp, variant);
    sh(cmd);
}

static void sweep(const char *variant)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "'%s' run '%s/tests/enable/evidence.yaml' --plugin '%s/drift-%s.so' -q -o '%s/%s'", bin, src,
             tmp, variant, tmp, variant);
    /* The lossy sweep fails (exit 1); both must write their reports. */
    (void)system(cmd);
    snprintf(cmd, sizeof cmd, "test -s '%s/%s/results.json'", tmp, variant);
    sh(cmd);
}

static void guard_expect(const char *table, const char *arch, const char *kernel, const char *dtype,
                         const char *shape, int rc, const char *answer)
{
    char args[4096];
    qf_cli_result r;
    snprintf(args, sizeof args, "'%s' --arch '%s' --kernel '%s' --dtype '%s' --shape '%s'", table, arch,
             kernel, dtype, shape);
    r = qf_cli_run(bin, "guard", args);
    ck_assert_msg(r.rc == rc && strstr(r.out, answer), "guard %s: rc %d (expected %d), out: %s err: %s", args,
                  r.rc, rc, r.out, r.err);
    qf_cli_result_free(&r);
}

static const char *H100 = "gemm.model.h100.e4m3", *H100_DT = "e4m3.e4m3.f32.f32";
static const char *MI300 = "gemm.model.mi300.e4m3fnuz", *MI300_DT = "e4m3fnuz.e4m3fnuz.f32.f32";
static const char *CPU = "gemm.cpu.bf16_f32acc", *CPU_DT = "bf16.bf16.f32.bf16";

START_TEST(test_evidence)
{
    char cmd[8192], table[2048], path[2048];
    qf_cli_result r;
    char *md;

    build_plugin("good", "");
    build_plugin("lossy", "-DDEMO_BROKEN");
    sweep("good");
    sweep("lossy");

    /* Results carry the simulated architectures. */
    snprintf(path, sizeof path, "%s/good/results.json", tmp);
    md = qf_cli_slurp(path);
    ck_assert_msg(strstr(md, "\"arch\": \"sim:sm_90\"") && strstr(md, "\"arch\": \"sim:gfx942\"") &&
                      strstr(md, "\"arch\": \"cpu\""),
                  "results.json lacks the sim:/cpu architecture labels");
    free(md);

    /* ... and the report says so (MARGINAL sm_90 cases are failures with --strict) */
    snprintf(cmd, sizeof cmd, "--strict '%s/good/results.json'", tmp);
    r = qf_cli_run(bin, "show", cmd);
    ck_assert_msg(r.rc == 1 && strstr(r.out, "arch: sim:sm_90 (simulated on the CPU)"),
                  "show --strict: %d %s", r.rc, r.out);
    qf_cli_result_free(&r);

    /* ---- qualify enable */
    snprintf(cmd, sizeof cmd, "'%s/good/results.json' -o '%s/en' --name evidence_table", tmp, tmp);
    r = qf_cli_run(bin, "enable", cmd);
    ck_assert_msg(r.rc == 0, "enable: %d %s", r.rc, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "3 architectures"));
    qf_cli_result_free(&r);
    snprintf(path, sizeof path, "%s/en/enable.md", tmp);
    md = qf_cli_slurp(path);
    ck_assert_msg(strstr(md, "## sim:sm_90 (simulated") && strstr(md, "## sim:gfx942 (simulated") &&
                      strstr(md, "## cpu\n") && strstr(md, "ISA features: "),
                  "enable.md: %s", md);
    /* sm_90 without promotion: small K qualifies, large K is MARGINAL */
    ck_assert_msg(strstr(md, "K in [16, 64] % 16") && strstr(md, "K in [256, 4096], batch = 1: MARGINAL"),
                  "enable.md regions: %s", md);
    free(md);
    snprintf(table, sizeof table, "%s/en/enable.json", tmp);

    /* ---- guard decisions (CLI over the JSON table) */
    /* inside */
    guard_expect(table, "sim:sm_90", H100, H100_DT, "M=8,N=16,K=32,batch=1", 0, "(qualified)");
    /* at the border of the qualified region: its corners */
    guard_expect(table, "sim:sm_90", H100, H100_DT, "M=1,N=16,K=16,batch=1", 0, "(qualified)");
    guard_expect(table, "sim:sm_90", H100, H100_DT, "M=16,N=16,K=64,batch=1", 0, "(qualified)");
    /* off its alignment class (K % 16) */
    guard_expect(table, "sim:sm_90", H100, H100_DT, "M=16,N=16,K=63,batch=1", 1, "(not-qualified)");
    /* between the last qualified (64) and the first failed (256) K */
    guard_expect(table, "sim:sm_90", H100, H100_DT, "M=16,N=16,K=128,batch=1", 1, "(not-qualified)");
    /* in the failed region, with its reason */
    guard_expect(table, "sim:sm_90", H100, H100_DT, "M=4,N=16,K=2048,batch=1", 1, "MARGINAL: normwise error");
    /* outside the swept range: just past the border */
    guard_expect(table, "sim:sm_90", H100, H100_DT, "M=17,N=16,K=16,batch=1", 1, "(not-swept)");
    guard_expect(table, "sim:gfx942", MI300, MI300_DT, "M=16,N=16,K=4096,batch=1", 0, "(qualified)");
    guard_expect(table, "sim:gfx942", MI300, MI300_DT, "M=16,N=16,K=4112,batch=1", 1, "(not-swept)");
    guard_expect(table, "cpu", CPU, CPU_DT, "M=7,N=16,K=1024,batch=1", 0, "(qualified)");
    /* a kernel of another architecture, and an architecture not in the table */
    guard_expect(table, "cpu", H100, H100_DT, "M=1,N=16,K=16,batch=1", 1, "(not-swept)");
    guard_expect(table, "sm_90", H100, H100_DT, "M=1,N=16,K=16,batch=1", 1, "(unknown-arch)");

    /* Every swept shape: the guard agrees with the verdicts (all cases at
     * the shape QUALIFIED <=> allowed; else denied as failed). */
    {
        qf_result *res = NULL;
        size_t n = 0, i, d, checked = 0;
        qf_guard *g = NULL;
        char err[1024], pkey[QF_ENABLE_PARAMS_MAX];
        snprintf(path, sizeof path, "%s/good/results.json", tmp);
        ck_assert_int_eq(qf_report_read(path, &res, &n, NULL, err, sizeof err), QF_OK);
        ck_assert_msg(qf_guard_open_json(table, &g, err, sizeof err) == 0, "%s", err);
        for (i = 0; i < n; i++) {
            qf_guard_shape s;
            qf_guard_decision dec;
            int allowed;
            if (res[i].verdict == QF_VERDICT_UNSUPPORTED || res[i].verdict == QF_VERDICT_SKIPPED)
                continue;
            s.ndims = res[i].ndims;
            for (d = 0; d < s.ndims; d++) {
                s.names[d] = res[i].dims[d].name;
                s.values[d] = res[i].dims[d].value;
            }
            qf_guard_set_arch(g, res[i].arch);
            /* asked with the case's own parameters, as its entry keys them */
            qf_enable_param_key(&res[i], pkey, sizeof pkey, NULL, 0);
            allowed = qf_guard_may_run_params(g, res[i].kernel, res[i].dtype, pkey, &s, &dec);
            ck_assert_msg(allowed == (res[i].verdict == QF_VERDICT_QUALIFIED),
                          "%s %s %s: verdict %s, guard: %s", res[i].arch, res[i].kernel, res[i].case_id,
                          qf_verdict_name(res[i].verdict), dec.reason);
            if (!allowed)
                ck_assert_int_eq(dec.answer, QF_GUARD_FAILED);
            checked++;
        }
        ck_assert_uint_ge(checked, 30);
        /* The cpu entries carry this machine's ISA features: on a CPU
         * without them (here: one claiming only sse2) they are denied. */
        for (i = 0; i < n; i++)
            if (!strcmp(res[i].arch, "cpu") && res[i].verdict == QF_VERDICT_QUALIFIED)
                break;
        ck_assert_uint_lt(i, n);
        {
            qf_guard_shape s;
            qf_guard_decision dec;
            s.ndims = res[i].ndims;
            for (d = 0; d < s.ndims; d++) {
                s.names[d] = res[i].dims[d].name;
                s.values[d] = res[i].dims[d].value;
            }
            qf_guard_set_arch(g, "cpu");
            ck_assert_int_eq(qf_guard_may_run(g, res[i].kernel, res[i].dtype, &s, &dec), 1);
            qf_guard_set_isa(g, "sse2");
            ck_assert_int_eq(qf_guard_may_run(g, res[i].kernel, res[i].dtype, &s, &dec), 0);
            ck_assert_int_eq(dec.answer, QF_GUARD_ISA_MISSING);
        }
        qf_guard_close(g);
        free(res);
    }

    /* The compiled-in table: the generated C pair built into a dispatcher
     * that links libqualify_guard, Jansson and libdl only (no MPFR). */
    if (!getenv("QF_SANITIZED") || !strcmp(getenv("QF_SANITIZED"), "OFF") ||
        !strcmp(getenv("QF_SANITIZED"), "0")) {
        static const char *dispatcher =
            "#include <stdio.h>\n#include \"evidence_table.h\"\n"
            "int main(void) {\n"
            "    qf_guard *g; qf_guard_shape s; qf_guard_decision d;\n"
            "    const char *list[] = {\"gemm.model.h100.e4m3\"};\n"
            "    char t1[] = \"M=16,N=16,K=64,batch=1\", t2[] = \"M=16,N=16,K=256,batch=1\";\n"
            "    if (qf_guard_open_table(&evidence_table, &g)) return 3;\n"
            "    qf_guard_set_arch(g, \"sim:sm_90\");\n"
            "    qf_guard_shape_parse(t1, &s);\n"
            "    printf(\"%s\\n\", qf_guard_select(g, list, 1, \"gemm.cpu.naive.f32\", "
            "\"e4m3.e4m3.f32.f32\", &s, &d));\n"
            "    qf_guard_shape_parse(t2, &s);\n"
            "    printf(\"%s\\n\", qf_guard_select(g, list, 1, \"gemm.cpu.naive.f32\", "
            "\"e4m3.e4m3.f32.f32\", &s, &d));\n"
            "    printf(\"%s\\n\", qf_guard_answer_name(d.answer));\n"
            "    qf_guard_close(g); return 0;\n}\n";
        FILE *f;
        snprintf(path, sizeof path, "%s/en/dispatch.c", tmp);
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(dispatcher, f);
        fclose(f);
        snprintf(cmd, sizeof cmd,
                 "cd '%s/en' && cc -std=c11 -I. -I'%s/qualify' dispatch.c evidence_table.c "
                 "'%s/libqualify_guard.a' "
                 "$(pkg-config --libs jansson) -ldl -o dispatch && ./dispatch > dispatch.out && "
                 "printf 'gemm.model.h100.e4m3\\ngemm.cpu.naive.f32\\nfailed\\n' | cmp - dispatch.out && "
                 "! nm dispatch | grep -qi mpfr",
                 tmp, src, bdir);
        sh(cmd);
    }

    /* ---- qualify diff: the lossy change is named, exit 1 */
    snprintf(cmd, sizeof cmd, "'%s/good/results.json' '%s/lossy/results.json'", tmp, tmp);
    r = qf_cli_run(bin, "diff", cmd);
    ck_assert_msg(r.rc == 1, "diff rc %d: %s %s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "## qualify diff: REGRESSED"));
    ck_assert_ptr_nonnull(strstr(r.out, "### New failures"));
    ck_assert_ptr_nonnull(strstr(r.out, "### Error growth"));
    ck_assert_ptr_nonnull(strstr(r.out, "`gemm.demo.halves.f32`"));
    /* the counts docs/diff.md quotes from this very run */
    ck_assert_msg(strstr(r.out, "(34 cases) vs NEW") && strstr(r.out, "34 matched, 0 only in base, 0 only in new"),
                  "%s", r.out);
    ck_assert_msg(strstr(r.out, "**12 regressions**: 4 new failures, 0 verdicts worse, 4 error growth, "
                                "4 qualified shapes lost, 0 slowdowns."),
                  "%s", r.out);
    /* the enablement region it had is gone */
    ck_assert_ptr_nonnull(strstr(r.out,
                                 "| `gemm.demo.halves.f32` | cpu | gemm | f32.f32.f32.f32 | trans_a=false,"
                                 "trans_b=false,alpha=1,beta=0,group_size=128 | M in [1, 16], N = 16, "
                                 "K in [16, 256] % 16, batch = 1 | none |"));
    /* nothing else regressed: the other kernels are unchanged */
    ck_assert_ptr_null(strstr(r.out, "`gemm.model."));
    qf_cli_result_free(&r);
    /* the same sweep against itself: no regression */
    snprintf(cmd, sizeof cmd, "'%s/good/results.json' '%s/good/results.json'", tmp, tmp);
    r = qf_cli_run(bin, "diff", cmd);
    ck_assert_msg(r.rc == 0 && strstr(r.out, "no regressions"), "diff self rc %d: %s", r.rc, r.out);
    qf_cli_result_free(&r);

    /* ---- what the guard detects here: an architecture and the CPU */
    r = qf_cli_run(bin, "guard", "--detect");
    ck_assert_msg(r.rc == 0 && strstr(r.out, "arch: ") && strstr(r.out, "\ncpu: ") &&
                      strstr(r.out, "\nisa: "),
                  "guard --detect: %d %s", r.rc, r.out);
    qf_cli_result_free(&r);

    /* ---- bad input: exit 2, the file named, nothing on stdout */
    {
        FILE *f;
        snprintf(path, sizeof path, "%s/corrupt.json", tmp);
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs("{\"schema_version\": 1, \"cases\": [{\"kernel\": 3}]}", f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "'%s/good/results.json' '%s' -o '%s/en2'", tmp, path, tmp);
        r = qf_cli_run(bin, "enable", cmd);
        ck_assert_msg(r.rc == 2 && strstr(r.err, path) && !r.out[0], "enable corrupt: %d %s", r.rc, r.err);
        qf_cli_result_free(&r);
        snprintf(cmd, sizeof cmd, "'%s/good/results.json'", tmp);
        r = qf_cli_run(bin, "enable", cmd);
        ck_assert_msg(r.rc == 2 && strstr(r.err, "-o DIR"), "enable without -o: %d %s", r.rc, r.err);
        qf_cli_result_free(&r);
        /* a results file is not a table */
        snprintf(cmd, sizeof cmd, "'%s/good/results.json' --kernel k --dtype d --shape M=1", tmp);
        r = qf_cli_run(bin, "guard", cmd);
        ck_assert_msg(r.rc == 2 && strstr(r.err, "not an enablement table"), "guard on results: %d %s", r.rc,
                      r.err);
        qf_cli_result_free(&r);
        snprintf(cmd, sizeof cmd, "'%s' --kernel k --dtype d --shape M=x", table);
        r = qf_cli_run(bin, "guard", cmd);
        ck_assert_msg(r.rc == 2 && strstr(r.err, "--shape"), "guard bad shape: %d %s", r.rc, r.err);
        qf_cli_result_free(&r);
    }

    qf_test_rmtree(tmp);
}
END_TEST

int main(void)
{
    Suite *s;
    TCase *tc;
    bin = getenv("QF_QUALIFY_BIN");
    src = getenv("QF_SOURCE_DIR");
    bdir = getenv("QF_BINARY_DIR");
    if (!bin || !src || !bdir) {
        printf("SKIP enable/evidence: QF_QUALIFY_BIN, QF_SOURCE_DIR, QF_BINARY_DIR are set by CTest\n");
        return QF_TEST_SKIP;
    }
    if (system("cc --version >/dev/null 2>&1")) {
        printf("SKIP enable/evidence: no C compiler 'cc' to build the test plugin\n");
        return QF_TEST_SKIP;
    }
    snprintf(tmp, sizeof tmp, "%s/qf-evidence-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) {
        printf("SKIP enable/evidence: cannot create a temporary directory\n");
        return QF_TEST_SKIP;
    }
    s = suite_create("enable/evidence");
    tc = tcase_create("evidence");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_evidence);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
