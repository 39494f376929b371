/* fuzz_safetensors.c: libFuzzer harness for the .safetensors reader.
 *
 * Parses the input as a whole file image (qf_safetensors_read_mem); when
 * it is accepted, loads every tensor of reasonable size as binary64 and as
 * bits, and looks up a name and a metadata key, so that every path that
 * touches the data section runs under the sanitizers.  Any crash, leak or
 * sanitizer report is a bug: hostile input must give a status and a
 * message, nothing else.
 *
 * Build (clang 14, from the repository root):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iprecision -Iqualify \
 *     tests/fuzz/fuzz_safetensors.c qualify/safetensors.c qualify/status.c \
 *     precision/format.c precision/decode.c precision/encode.c precision/array.c \
 *     -ljansson -lm -o fuzz_safetensors
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qf_safetensors.h"

#define MAX_LOAD (1u << 16) /* elements loaded per tensor */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qf_safetensors st;
    char err[512];
    size_t i, idx;
    err[0] = '\0';
    if (qf_safetensors_read_mem(data, size, "fuzz.safetensors", &st, err, sizeof err) != QF_OK) {
        /* a message is always produced and terminated */
        if (strlen(err) == 0 || strncmp(err, "fuzz.safetensors: ", 18) != 0)
            abort();
        return 0;
    }
    for (i = 0; i < st.ntensors; i++) {
        const qf_st_tensor *t = &st.tensors[i];
        if (t->count <= MAX_LOAD) {
            double *v = malloc((t->count ? t->count : 1) * sizeof *v);
            uint64_t *b = malloc((t->count ? t->count : 1) * sizeof *b);
            if (v && b) {
                (void)qf_safetensors_get_f64(&st, i, v, err, sizeof err);
                (void)qf_safetensors_get_bits(&st, i, b, err, sizeof err);
            }
            free(v);
            free(b);
        }
        if (qf_safetensors_find(&st, t->name, &idx, err, sizeof err) != QF_OK)
            abort(); /* every listed name is found */
    }
    (void)qf_safetensors_find(&st, "absent", &idx, err, sizeof err);
    (void)qf_safetensors_meta(&st, "format");
    qf_safetensors_close(&st);
    return 0;
}
