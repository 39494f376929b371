/* plugin_badreg.c: a kernel plugin that misbehaves inside qf_plugin_register,
 * as chosen by $QF_BADREG:
 *   crash   dereferences a null pointer (SIGSEGV);
 *   hang    never returns;
 *   exit    calls exit(0) (a load that ends qualify "successfully");
 *   other   returns QF_EINVAL without registering anything.
 * tests/security/t-files.c loads it through `qualify list kernels
 * --plugin`: each is exit 2 with a message naming the plugin, never a
 * crash, a hang or a silent exit 0. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_kernel.h"

QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *h)
{
    const char *how = getenv("QF_BADREG");
    (void)reg;
    (void)h;
    if (how && !strcmp(how, "crash")) {
        volatile int *volatile p = NULL;
        return (qf_status)*p;
    }
    if (how && !strcmp(how, "hang"))
        for (;;)
            pause();
    if (how && !strcmp(how, "exit"))
        exit(0);
    return QF_EINVAL;
}
