/* dispatch.c: choose between the demo kernel and a fallback with the
 * compiled-in enablement table (docs/guards.md of qualify). */
#include <stdio.h>
#include <string.h>

#include <qf_guard.h>
#include "demo_table.h"

static const char *pick(qf_guard *g, const char *shape_text)
{
    static const char *const kernels[] = {"gemm.demo.halves.f32"};
    char buf[64];
    qf_guard_shape s;
    qf_guard_decision d;
    const char *k;
    snprintf(buf, sizeof buf, "%s", shape_text);
    qf_guard_shape_parse(buf, &s);
    k = qf_guard_select(g, kernels, 1, "reference", "f32.f32.f32.f32", &s, &d);
    printf("%s -> %s (%s)\n", shape_text, k, qf_guard_answer_name(d.answer));
    return k;
}

int main(void)
{
    qf_guard *g;
    int ok;
    if (qf_guard_open_table(&demo_table, &g))
        return 1;
    qf_guard_set_arch(g, "cpu"); /* the sweep ran on the CPU */
    ok = !strcmp(pick(g, "M=8,N=16,K=100,batch=1"), "gemm.demo.halves.f32") &&
         !strcmp(pick(g, "M=8,N=16,K=4096,batch=1"), "reference");
    qf_guard_close(g);
    return ok ? 0 : 1;
}
