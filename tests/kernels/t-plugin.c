/* t-plugin.c: loading kernels from shared objects (qf_registry_load_plugin)
 * with the example plugin of examples/plugin (a user's own GEMM, linked
 * with -z defs, reaching the host's helpers through the qf_plugin_host
 * table) and its two broken variants, whose paths CTest passes in
 * QF_EXAMPLE_PLUGIN, QF_EXAMPLE_PLUGIN_NOENTRY and QF_EXAMPLE_PLUGIN_BADABI.
 * Without them the test is skipped (exit 77), never passed.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_kernel.h"
#include "qf_test.h"

static const char *good, *noentry, *badabi;

START_TEST(test_load_and_run)
{
    qf_registry *r;
    const qf_kernel *k;
    size_t i, n0;
    float a[3][5], b[5][2], d[3][2];
    qf_tensor in[3], out[1];
    int64_t sa[2] = {3, 5}, sb[2] = {5, 2}, sd[2] = {3, 2};
    qf_op_desc op;
    qf_kernel_call call;
    char msg[256] = "";
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_OK);
    n0 = qf_registry_count(r);
    ck_assert_msg(qf_registry_load_plugin(r, good) == QF_OK, "%s", qf_registry_error(r));
    ck_assert_uint_eq(qf_registry_count(r), n0 + 1);
    k = qf_registry_find(r, "gemm.user.acc4.f32");
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(k->kind, QF_KERNEL_OPTIMIZED);
    ck_assert_int_eq(k->op, QF_OP_GEMM);
    ck_assert_int_eq(k->dtypes[0].arith.sum_order, QF_SUM_SPLITK);
    ck_assert_int_eq(k->dtypes[0].arith.split_k, 4);
    ck_assert_str_eq(qf_registry_origin(r, n0), good);
    for (i = 0; i < n0; i++)
        ck_assert_str_eq(qf_registry_origin(r, i), "built-in");
    /* The fourteen built-in CPU GEMMs (kernels/cpu) and the plugin's. */
    ck_assert_uint_eq(qf_registry_match(r, "gemm.cpu.*", NULL, 0) + qf_registry_match(r, "gemm.user.*", NULL, 0),
                      15);

    /* Run it: four interleaved float32 partial sums, then
     * ((s0 + s1) + s2) + s3, each operation rounded: bit for bit. */
    for (i = 0; i < 15; i++)
        a[i / 5][i % 5] = (float)ldexp((double)(qf_rng_u64(qf_test_seed(), i) >> 40) - 8388608.0, -20);
    for (i = 0; i < 10; i++)
        b[i / 2][i % 2] = (float)ldexp((double)(qf_rng_u64(qf_test_seed() + 1, i) >> 40) - 8388608.0, -21);
    ck_assert_int_eq(qf_tensor_init(&in[0], QF_FLOAT32, 2, sa), QF_OK);
    ck_assert_int_eq(qf_tensor_init(&in[1], QF_FLOAT32, 2, sb), QF_OK);
    ck_assert_int_eq(qf_tensor_init(&in[2], QF_FLOAT32, 2, sd), QF_OK);
    ck_assert_int_eq(qf_tensor_init(&out[0], QF_FLOAT32, 2, sd), QF_OK);
    in[0].data = a;
    in[1].data = b;
    out[0].data = d;
    memset(&op, 0, sizeof op);
    op.op = QF_OP_GEMM;
    op.u.gemm.m = 3;
    op.u.gemm.n = 2;
    op.u.gemm.k = 5;
    op.u.gemm.alpha = 1;
    memset(&call, 0, sizeof call);
    call.abi_version = QF_KERNEL_ABI_VERSION;
    call.kernel = k;
    call.dtype = &k->dtypes[0];
    call.op = &op;
    call.in = in;
    call.out = out;
    call.msg = msg;
    call.msg_size = sizeof msg;
    ck_assert_int_eq(qf_kernel_check(k, &op, call.dtype, msg, sizeof msg), QF_OK);
    ck_assert_msg(k->run(k->user, &call) == QF_OK, "%s", msg);
    for (i = 0; i < 6; i++) {
        size_t r0 = i / 2, c0 = i % 2, l;
        float s[4] = {0, 0, 0, 0}, want;
        for (l = 0; l < 5; l++)
            s[l & 3] = (float)((double)s[l & 3] + (double)(float)((double)a[r0][l] * b[l][c0]));
        want = (float)((double)(float)((double)(float)((double)s[0] + s[1]) + s[2]) + s[3]);
        ck_assert_msg(memcmp(&d[r0][c0], &want, 4) == 0, "d[%zu][%zu] = %a, model %a", r0, c0,
                      (double)d[r0][c0], (double)want);
    }
    /* It declines what it does not claim, with its own message. */
    op.u.gemm.beta = 1;
    ck_assert_int_eq(k->run(k->user, &call), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(msg, "gemm.user.acc4.f32") != NULL, "%s", msg);

    /* The same plugin twice: its kernel name is taken; the second load is
     * rolled back and the first stays usable. */
    ck_assert_int_eq(qf_registry_load_plugin(r, good), QF_EINVAL);
    ck_assert_msg(strstr(qf_registry_error(r), "already registered") != NULL, "%s", qf_registry_error(r));
    ck_assert_msg(strstr(qf_registry_error(r), good) != NULL, "%s", qf_registry_error(r));
    ck_assert_uint_eq(qf_registry_count(r), n0 + 1);
    op.u.gemm.beta = 0;
    ck_assert_int_eq(k->run(k->user, &call), QF_OK);
    qf_registry_free(r);
}
END_TEST

START_TEST(test_bad_plugins)
{
    qf_registry *r;
    size_t n0;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_OK);
    n0 = qf_registry_count(r);

    ck_assert_int_eq(qf_registry_load_plugin(r, "/nonexistent/dir/libnothing.so"), QF_EIO);
    ck_assert_msg(strstr(qf_registry_error(r), "/nonexistent/dir/libnothing.so") != NULL, "%s",
                  qf_registry_error(r));
    ck_assert_int_eq(qf_registry_load_plugin(r, ""), QF_EINVAL);
    ck_assert_int_eq(qf_registry_load_plugin(r, NULL), QF_EINVAL);
    /* Not a shared object at all. */
    {
        char path[4096];
        const char *src = getenv("QF_SOURCE_DIR");
        if (src) {
            snprintf(path, sizeof path, "%s/docs/kernels.md", src);
            ck_assert_int_eq(qf_registry_load_plugin(r, path), QF_EIO);
        }
    }

    ck_assert_int_eq(qf_registry_load_plugin(r, noentry), QF_EIO);
    ck_assert_msg(strstr(qf_registry_error(r), "does not export qf_plugin_register") != NULL, "%s",
                  qf_registry_error(r));
    ck_assert_msg(strstr(qf_registry_error(r), noentry) != NULL, "%s", qf_registry_error(r));

    ck_assert_int_eq(qf_registry_load_plugin(r, badabi), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(qf_registry_error(r), badabi) != NULL, "message does not name the plugin: %s",
                  qf_registry_error(r));
    ck_assert_msg(strstr(qf_registry_error(r), "ABI version 999") != NULL, "%s", qf_registry_error(r));
    ck_assert_uint_eq(qf_registry_count(r), n0);
    ck_assert_ptr_null(qf_registry_find(r, "gemm.user.acc4.f32"));

    /* After all that, the good one still loads. */
    ck_assert_msg(qf_registry_load_plugin(r, good) == QF_OK, "%s", qf_registry_error(r));
    ck_assert_uint_eq(qf_registry_count(r), n0 + 1);
    qf_registry_free(r);
}
END_TEST

START_TEST(test_relative_name)
{
    /* A path without '/' means the file in the current directory. */
    char dir[4096], cwd[4096];
    const char *slash = strrchr(good, '/');
    qf_registry *r;
    ck_assert_ptr_nonnull(slash);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - good), good);
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_msg(qf_registry_load_plugin(r, slash + 1) == QF_OK, "%s", qf_registry_error(r));
    ck_assert_str_eq(qf_registry_origin(r, 0), slash + 1);
    qf_registry_free(r);
    ck_assert_int_eq(chdir(cwd), 0);
}
END_TEST

/* `qualify run --plugin`: the plugin's kernel, which calls the host's
 * helpers from its run function in the runner's child process, is
 * QUALIFIED on every case. */
START_TEST(test_qualify_run)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    char dir[4096], cmd[16384];
    int rc;
    ck_assert_msg(bin != NULL, "QF_QUALIFY_BIN comes from CTest");
    qf_test_mkdtemp(dir, sizeof dir, "qf-t-plugin");
    qf_test_write_text(dir, "suite.yaml",
                       "suite: plugin\nrefute: false\nop: gemm\nkernels: [gemm.user.*]\ndtypes: [float32]\n"
                       "shapes: {M: [1, 5], N: [8], K: [3, 64]}\n");
    snprintf(cmd, sizeof cmd, "\"%s\" run \"%s/suite.yaml\" --plugin \"%s\" -q -o \"%s/out\"", bin, dir, good,
             dir);
    rc = system(cmd);
    ck_assert_msg(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "exit %d: %s", rc, cmd);
    /* Four cases, each QUALIFIED and none anything else. */
    snprintf(cmd, sizeof cmd,
             "test $(grep -c '\"verdict\": *\"QUALIFIED\"' \"%s/out/results.json\") -eq 4 && "
             "! grep '\"verdict\"' \"%s/out/results.json\" | grep -v QUALIFIED",
             dir, dir);
    ck_assert_msg(system(cmd) == 0, "not all cases QUALIFIED: %s", cmd);
    qf_test_rmtree(dir);
}
END_TEST

static qf_status short_add(qf_registry *r, const qf_kernel *k)
{
    (void)r;
    (void)k;
    return QF_OK;
}

/* A host older than the plugin's header hands a shorter table (struct_size
 * ends before kernel_check): the plugin must decline instead of calling
 * past it, and the QF_PLUGIN_HOST_HAS / qf_plugin_host_copy pair says so. */
START_TEST(test_short_host_table)
{
    qf_plugin_host old, copy;
    qf_plugin_register_fn fn;
    void *h, *sym;
    memset(&old, 0, sizeof old);
    old.abi_version = QF_KERNEL_ABI_VERSION;
    old.struct_size = (uint32_t)(offsetof(qf_plugin_host, plugin_path) + sizeof old.plugin_path);
    old.add = short_add;
    old.arith_claim_default = qf_arith_claim_default;
    old.format_get = qf_format_get;
    old.format_decode = qf_format_decode; /* past struct_size: must not count */
    ck_assert(QF_PLUGIN_HOST_HAS(&old, plugin_path));
    ck_assert(!QF_PLUGIN_HOST_HAS(&old, format_lookup));
    qf_plugin_host_copy(&copy, &old);
    ck_assert_uint_eq(copy.struct_size, old.struct_size);
    ck_assert_ptr_null(copy.format_decode);
    ck_assert(copy.add == short_add);

    h = dlopen(good, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    sym = dlsym(h, QF_PLUGIN_ENTRY);
    ck_assert_ptr_nonnull(sym);
    memcpy(&fn, &sym, sizeof fn);
    ck_assert_int_eq(fn(NULL, &old), QF_EUNSUPPORTED);
    dlclose(h);
}
END_TEST

int main(void)
{
    Suite *s;
    TCase *tc;
    good = getenv("QF_EXAMPLE_PLUGIN");
    noentry = getenv("QF_EXAMPLE_PLUGIN_NOENTRY");
    badabi = getenv("QF_EXAMPLE_PLUGIN_BADABI");
    if (!good || !*good || !noentry || !*noentry || !badabi || !*badabi) {
        fprintf(stderr, "QF_EXAMPLE_PLUGIN* not set (run through ctest): skipped\n");
        return QF_TEST_SKIP;
    }
    s = suite_create("kernels/plugin");
    tc = tcase_create("plugin");
    tcase_add_test(tc, test_load_and_run);
    tcase_add_test(tc, test_bad_plugins);
    tcase_add_test(tc, test_relative_name);
    tcase_add_test(tc, test_qualify_run);
    tcase_add_test(tc, test_short_host_table);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
