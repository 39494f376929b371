/* plugin_hostile_msg.c: a kernel plugin (a MODULE library for `qualify run
 * --plugin`) whose one GEMM kernel fails with a message made to attack a
 * terminal and a one-line field: ESC sequences (clear screen, set the
 * window title), BEL, CR, LF, DEL, the C1 control CSI in UTF-8, and the
 * bidi controls RLO (U+202E) and LRI (U+2066) that reorder what a reader
 * sees.
 * tests/security/t-escape.c runs it (issue 17, D9). */
#include <stdio.h>
#include <string.h>

#include "qf_kernel.h"

/* Shared with t-escape.c by value: the test looks for its escaped form. */
#define HOSTILE_MSG "evil\x1b[2J\x1b]0;owned\x07 cr\rlf\nde\x7fl c1\xc2\x9b" "31m end rlo\xe2\x80\xae" "1 lri\xe2\x81\xa6" "2"

static qf_status hostile_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    if (call->msg && call->msg_size)
        snprintf(call->msg, call->msg_size, "%s", HOSTILE_MSG);
    return QF_EIO;
}

static qf_dtype_tuple tuple;

__attribute__((visibility("default"))) qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    qf_kernel kern = {.abi_version = QF_KERNEL_ABI_VERSION,
                      .struct_size = sizeof kern,
                      .name = "gemm.hostile.msg",
                      .op = QF_OP_GEMM,
                      .kind = QF_KERNEL_KNOWN_BAD,
                      .description = "t-escape plugin kernel: fails with control characters in its message",
                      .backend = "cpu",
                      .archs = "cpu",
                      .dtypes = &tuple,
                      .n_dtypes = 1,
                      .run = hostile_run};
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;
    tuple = (qf_dtype_tuple){.name = "f32", .in = {QF_FLOAT32, QF_FLOAT32, QF_FLOAT32}, .out = {QF_FLOAT32},
                             .arith = host->arith_claim_default()};
    return host->add(reg, &kern);
}
