/* fuzz_suite.c: libFuzzer harness for the suite loader and expansion.
 *
 * Build (clang and libFuzzer from Debian's packages), from the source root:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 \
 *     -Iqualify -Iprecision tests/fuzz/fuzz_suite.c qualify/suite*.c \
 *     qualify/status.c precision/format.c -lyaml -lm -o fuzz_suite
 *   ./fuzz_suite -max_total_time=20 -max_len=4096 tests/suite/data shapes
 *
 * Every input must end in a status (never a crash, leak or hang), and a
 * loaded suite must expand or fail with a message, then free cleanly. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qf_suite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    qf_suite *s = NULL;
    /* A name without a directory: includes resolve against the working
     * directory, and only regular files are read. */
    qf_status st = qf_suite_load_mem((const char *)data, size, "fuzz.yaml", &s, err, sizeof err);
    if (st != QF_OK) {
        if (memchr(err, 0, sizeof err) == NULL)
            __builtin_trap(); /* the message must be terminated */
        return 0;
    }
    qf_suite_cases c;
    uint64_t n = 0;
    if (qf_suite_count(s, &n, err, sizeof err) == QF_OK && n <= 20000 &&
        qf_suite_expand(s, &c, err, sizeof err) == QF_OK) {
        if (c.n != n)
            __builtin_trap();
        for (size_t i = 0; i < c.n && i < 64; i++)
            if (qf_suite_cases_find(&c, c.cases[i].id) != &c.cases[i])
                __builtin_trap(); /* ids are unique and select their case */
        qf_suite_cases_free(&c);
    }
    qf_suite_free(s);
    return 0;
}
