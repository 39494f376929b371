/* t-layer-gap.c: 'qualify workload --weights' with layers that are not
 * numbered 0..N-1 (layers 0, 1 and 3 of a 4-layer file: layer 2 dropped).
 * Before, the layer count stopped at the first missing input_layernorm and
 * the later layers were ignored: the receipt described a 2-layer model and
 * exited 0.  Now: exit 2 naming the file, the stray tensor and the missing
 * layer.  Without QF_QUALIFY_BIN: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_safetensors.h"
#include "qf_test.h"

START_TEST(test_layer_gap)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    char dir[128], full[256], gap[300], args[1024], err[512];
    qf_safetensors st;
    qf_st_write_tensor *w;
    void **data;
    size_t i, n = 0;
    qf_cli_result r;
    snprintf(dir, sizeof dir, "/tmp/qf-t-gap-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(full, sizeof full, "%s/full.safetensors", dir);
    snprintf(args, sizeof args, "--exact --seq 4 --layers 4 --dim 32 --ffn 64 --vocab 32 --save-weights %s",
             full);
    r = qf_cli_run(bin, "workload", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    /* The same file without the tensors of layer 2. */
    ck_assert_msg(qf_safetensors_open(full, &st, err, sizeof err) == QF_OK, "%s", err);
    w = calloc(st.ntensors, sizeof *w);
    data = calloc(st.ntensors, sizeof *data);
    ck_assert(w && data);
    for (i = 0; i < st.ntensors; i++) {
        const qf_st_tensor *t = &st.tensors[i];
        if (!strncmp(t->name, "model.layers.2.", 15))
            continue;
        data[n] = malloc(t->end - t->begin + 1);
        ck_assert_ptr_nonnull(data[n]);
        ck_assert_msg(qf_safetensors_get_bytes(&st, i, data[n], err, sizeof err) == QF_OK, "%s", err);
        w[n].name = t->name;
        w[n].dtype = t->dtype;
        w[n].ndim = t->ndim;
        w[n].shape = t->shape;
        w[n].data = data[n];
        n++;
    }
    ck_assert_uint_lt(n, st.ntensors);
    snprintf(gap, sizeof gap, "%s/gap.safetensors", dir);
    ck_assert_msg(qf_safetensors_write(gap, w, n, NULL, NULL, 0, err, sizeof err) == QF_OK, "%s", err);
    for (i = 0; i < n; i++)
        free(data[i]);
    free(data);
    free(w);
    qf_safetensors_close(&st);

    snprintf(args, sizeof args, "--seq 4 --weights %s", gap);
    r = qf_cli_run(bin, "workload", args);
    ck_assert_msg(r.rc == 2, "rc %d, stdout %s", r.rc, r.out);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strstr(r.err, "gap.safetensors") && strstr(r.err, "model.layers.3.") &&
                      strstr(r.err, "model.layers.2.input_layernorm.weight"),
                  "%s", r.err);
    qf_cli_result_free(&r);
    /* The whole file still runs all 4 layers. */
    snprintf(args, sizeof args, "--exact --seq 4 --weights %s", full);
    r = qf_cli_run(bin, "workload", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "4 layers"));
    qf_cli_result_free(&r);
    qf_test_rmtree(dir);
}
END_TEST

int main(void)
{
    qf_test_require_env("QF_QUALIFY_BIN");
    return qf_test_main("workload/layer-gap", "cli", 300, NULL, NULL, QF_TESTS(test_layer_gap));
}
