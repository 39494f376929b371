/* fuzz_npy.c: libFuzzer harness for the .npy reader.
 *
 * Parses the input as a whole file image (qf_npy_read_mem); when it is
 * accepted, converts the elements to binary64 or bits as the dtype allows.
 * Any crash, leak or sanitizer report is a bug.
 *
 * Build (clang 14, from the repository root):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iprecision -Iqualify \
 *     tests/fuzz/fuzz_npy.c qualify/npy.c qualify/status.c \
 *     precision/format.c precision/decode.c precision/encode.c precision/array.c \
 *     -lm -o fuzz_npy
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qf_npy.h"

#define MAX_LOAD (1u << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qf_npy a;
    char err[512];
    err[0] = '\0';
    if (qf_npy_read_mem(data, size, "fuzz.npy", &a, err, sizeof err) != QF_OK) {
        if (strlen(err) == 0 || strncmp(err, "fuzz.npy: ", 10) != 0)
            abort();
        return 0;
    }
    if (a.data == NULL)
        abort();
    if (a.count <= MAX_LOAD) {
        double *v = malloc((a.count ? a.count : 1) * sizeof *v);
        uint64_t *b = malloc((a.count ? a.count : 1) * sizeof *b);
        size_t bad;
        if (v && b) {
            (void)qf_npy_get_f64(&a, v, &bad);
            (void)qf_npy_get_bits(&a, b);
        }
        free(v);
        free(b);
    }
    qf_npy_free(&a);
    return 0;
}
