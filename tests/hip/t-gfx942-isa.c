/* t-gfx942-isa: the gfx942 code objects that clang-19 builds (no GPU needed).
 *
 * The build disassembles the code object embedded in each gfx942 object
 * (kernels/hip/disasm.cmake: .hip_fatbin -> clang-offload-bundler ->
 * llvm-objdump-19) into BUILD/kernels/hip/isa/NAME.gfx942.s, and does the
 * same for the gfx940 code object hipcc (clang 15) built from gemm_fp8.hip.
 * This test reads those files:
 *
 *   - isa: the MFMA FP8 / bf8 (fp8_fp8, bf8_bf8 and the mixed fp8_bf8,
 *     bf8_fp8) and bf16 / f16 instructions and the FP8 conversions are in
 *     the gfx942 code (no silent fallback to the plain path), and each of
 *     the FP8 GEMM's four kernels holds its own MFMA in its K loop.
 *   - shim: kernels.hip (expf, logf, sqrt, division of ROCm 5.2's ocml)
 *     built for gfx942 with the device-library shim
 *     (kernels/hip/oclc_isa_version_942.ll, ISA version 9402) and with
 *     Debian's gfx940 constant (9400) gives the same instructions, so the
 *     shim selects exactly gfx940's library code.
 *   - inner loop: the FP8 GEMM built for gfx940 by hipcc and for gfx942 by
 *     clang-19 computes the same way.  Compared, per kernel (same mangled
 *     name in both): the floating-point instructions (v_mfma_*, and VALU
 *     instructions on f16/bf16/f32/f64 values) of the K loop (from the
 *     target of the backward branch after the MFMA to that branch), with
 *     their modifiers, registers renamed by first use; the loop's MFMA
 *     accumulates in place (C = D); and the floating-point instructions of
 *     the epilogue after the loop, in order.  Integer address arithmetic,
 *     loads, scheduling and waits are the compilers' own and do not reach
 *     a value, so they are left out.  Equal sequences mean the arithmetic
 *     (MFMA per 32 elements of K in order, the scale product in binary64,
 *     one rounding to the output) is the same, whichever compiler and
 *     device library built it.
 *
 * Skipped (77) when the build has no gfx942 code (QF_HIP_GFX942 off in
 * BUILD/CMakeCache.txt); failed when it has and a file is missing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_test.h"

#define MAX_INSN 4096

typedef struct insn {
    char mn[64];        /* mnemonic */
    char ops[160];      /* operands as printed */
    unsigned long addr; /* byte address */
    unsigned long tgt;  /* branch target, 0 if none */
} insn;

typedef struct kern {
    char name[160];
    insn *v;
    int n;
} kern;

static char isa_dir[1024];

static char *slurp(const char *name)
{
    char path[1200];
    FILE *f;
    long sz;
    char *buf;
    snprintf(path, sizeof path, "%s/%s", isa_dir, name);
    f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)sz + 1);
    if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[sz] = 0;
    fclose(f);
    return buf;
}

static char *must_read(const char *name)
{
    char *s = slurp(name);
    if (!s)
        ck_abort_msg("%s/%s is missing: the gfx942 build did not produce it", isa_dir, name);
    return s;
}

/* The instructions of function `sym` in an llvm-objdump listing. */
static int parse_kernel(const char *text, const char *sym, kern *k)
{
    char head[200];
    const char *p, *end;
    snprintf(head, sizeof head, "<%s>:\n", sym);
    p = strstr(text, head);
    if (!p)
        return -1;
    snprintf(k->name, sizeof k->name, "%s", sym);
    k->v = calloc(MAX_INSN, sizeof(insn));
    k->n = 0;
    p += strlen(head);
    end = strstr(p, "\n\n");
    if (!end)
        end = p + strlen(p);
    while (p < end && k->n < MAX_INSN) {
        const char *nl = strchr(p, '\n'), *cm;
        char line[512];
        size_t len = (size_t)((nl && nl < end ? nl : end) - p);
        insn *in = &k->v[k->n];
        if (len >= sizeof line)
            len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = 0;
        p += len + 1;
        cm = strstr(line, "//");
        if (line[0] != '\t' || !cm)
            continue;
        if (sscanf(line + 1, "%63s", in->mn) != 1)
            continue;
        {
            const char *o = line + 1 + strlen(in->mn);
            size_t ol = (size_t)(cm - o);
            while (ol && (*o == ' ' || *o == '\t'))
                o++, ol--;
            while (ol && (o[ol - 1] == ' ' || o[ol - 1] == '\t'))
                ol--;
            if (ol >= sizeof in->ops)
                ol = sizeof in->ops - 1;
            memcpy(in->ops, o, ol);
            in->ops[ol] = 0;
        }
        in->addr = strtoul(cm + 2, NULL, 16);
        {
            const char *t = strstr(cm, "+0x");
            in->tgt = 0;
            if (t && strstr(cm, "<") && !strncmp(in->mn, "s_cbranch", 9))
                in->tgt = 1 + strtoul(t + 3, NULL, 16); /* offset in the function, + 1 */
        }
        k->n++;
    }
    return k->n > 0 ? 0 : -1;
}

/* A floating-point instruction: MFMA, or VALU on f16/bf16/f32/f64 values,
 * conversions included (their rounding matters).  Moves are not. */
static int is_fp(const char *mn)
{
    if (!strncmp(mn, "v_mfma", 6))
        return 1;
    if (strncmp(mn, "v_", 2) || strstr(mn, "mov"))
        return 0;
    return strstr(mn, "_f16") || strstr(mn, "_bf16") || strstr(mn, "_f32") || strstr(mn, "_f64");
}

/* Operands with registers renamed in order of first appearance (v[2:5] ->
 * V0, v7 -> V1 ...; s and vcc kept as a class): the register allocation
 * is the compiler's, the data flow between the listed instructions is
 * not compared beyond the MFMA chain. */
static void strip_regs(const char *ops, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = ops; *p && o + 4 < size;) {
        if ((*p == 'v' || *p == 's') && (p[1] == '[' || (p[1] >= '0' && p[1] <= '9')) &&
            (p == ops || p[-1] == ' ' || p[-1] == ',')) {
            out[o++] = (char)(*p == 'v' ? 'V' : 'S');
            p++;
            if (*p == '[') {
                while (*p && *p != ']')
                    p++;
                if (*p)
                    p++;
            } else
                while (*p >= '0' && *p <= '9')
                    p++;
        } else
            out[o++] = *p++;
    }
    out[o] = 0;
}

/* The index range [lo, hi] of the K loop: the backward branch that
 * follows the first MFMA, and its target. */
static int k_loop(const kern *k, int *lo, int *hi)
{
    int m = -1;
    unsigned long base = k->v[0].addr;
    for (int i = 0; i < k->n; i++)
        if (!strncmp(k->v[i].mn, "v_mfma", 6)) {
            m = i;
            break;
        }
    if (m < 0)
        return -1;
    for (int i = m + 1; i < k->n; i++)
        if (k->v[i].tgt && k->v[i].tgt - 1 + base <= k->v[m].addr) {
            unsigned long t = k->v[i].tgt - 1 + base;
            for (int j = 0; j <= m; j++)
                if (k->v[j].addr == t) {
                    *lo = j;
                    *hi = i;
                    return 0;
                }
            return -1;
        }
    return -1;
}

/* The floating-point instructions of v[lo..hi] as one string, one per line. */
static void fp_seq(const kern *k, int lo, int hi, char *out, size_t size)
{
    size_t o = 0;
    out[0] = 0;
    for (int i = lo; i <= hi && i < k->n; i++) {
        char ops[200];
        if (!is_fp(k->v[i].mn))
            continue;
        strip_regs(k->v[i].ops, ops, sizeof ops);
        o += (size_t)snprintf(out + o, o < size ? size - o : 0, "%s %s\n", k->v[i].mn, ops);
    }
}

static void kern_free(kern *k)
{
    free(k->v);
}

static int gfx942_built(void)
{
    const char *b = getenv("QF_BINARY_DIR");
    char path[1024], line[512];
    FILE *f;
    int on = 0;
    if (!b)
        return -1;
    snprintf(isa_dir, sizeof isa_dir, "%s/kernels/hip/isa", b);
    snprintf(path, sizeof path, "%s/CMakeCache.txt", b);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "QF_HIP_GFX942:BOOL=", 19))
            on = !strncmp(line + 19, "ON", 2) || !strncmp(line + 19, "1", 1) || !strncmp(line + 19, "TRUE", 4);
    fclose(f);
    return on;
}

/* The FP8 GEMM's kernels (template <A_BF8, B_BF8> of gemm_fp8.hip) and
 * the MFMA each must run in its K loop. */
#define N_FP8 4
static const char *const fp8_kernels[N_FP8] = {"_ZL11hk_gemm_fp8ILi0ELi0EEvPKhS1_PKfS3_PviiiiPi",
                                               "_ZL11hk_gemm_fp8ILi1ELi1EEvPKhS1_PKfS3_PviiiiPi",
                                               "_ZL11hk_gemm_fp8ILi0ELi1EEvPKhS1_PKfS3_PviiiiPi",
                                               "_ZL11hk_gemm_fp8ILi1ELi0EEvPKhS1_PKfS3_PviiiiPi"};
static const char *const fp8_insn[N_FP8] = {"v_mfma_f32_16x16x32_fp8_fp8", "v_mfma_f32_16x16x32_bf8_bf8",
                                            "v_mfma_f32_16x16x32_fp8_bf8", "v_mfma_f32_16x16x32_bf8_fp8"};

static void want(const char *file, const char *text, const char *insn_name)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\t%s ", insn_name);
    ck_assert_msg(strstr(text, pat) != NULL, "%s: no %s in the gfx942 code object", file, insn_name);
}

START_TEST(isa_present)
{
    char *g = must_read("gemm_fp8.gfx942.s"), *k = must_read("kernels.gfx942.s");
    char *q = must_read("quantize.gfx942.s"), *m = must_read("mfma_probe.gfx942.s");
    want("gemm_fp8", g, "v_mfma_f32_16x16x32_fp8_fp8");
    want("gemm_fp8", g, "v_mfma_f32_16x16x32_bf8_bf8");
    want("gemm_fp8", g, "v_mfma_f32_16x16x32_fp8_bf8"); /* the mixed tuples, a e4m3fnuz x b e5m2fnuz */
    want("gemm_fp8", g, "v_mfma_f32_16x16x32_bf8_fp8"); /* ... and a e5m2fnuz x b e4m3fnuz */
    want("kernels", k, "v_mfma_f32_16x16x16_bf16");
    want("kernels", k, "v_mfma_f32_16x16x16_f16");
    want("quantize", q, "v_cvt_pk_fp8_f32");
    want("quantize", q, "v_cvt_pk_bf8_f32");
    want("mfma_probe", m, "v_mfma_f32_16x16x16_bf16");
    want("mfma_probe", m, "v_mfma_f32_16x16x16_f16");
    want("mfma_probe", m, "v_mfma_f32_16x16x32_fp8_fp8");
    want("mfma_probe", m, "v_mfma_f32_16x16x32_bf8_bf8");
    /* each FP8 kernel's K loop runs its own instruction */
    for (int i = 0; i < N_FP8; i++) {
        kern kk;
        int lo, hi, found = 0;
        ck_assert_msg(parse_kernel(g, fp8_kernels[i], &kk) == 0, "gemm_fp8.gfx942.s: no kernel %s", fp8_kernels[i]);
        ck_assert_msg(k_loop(&kk, &lo, &hi) == 0, "%s: no K loop around an MFMA", fp8_kernels[i]);
        for (int j = lo; j <= hi; j++)
            found += !strcmp(kk.v[j].mn, fp8_insn[i]);
        ck_assert_msg(found == 1, "%s: %d x %s in the K loop, 1 expected", fp8_kernels[i], found, fp8_insn[i]);
        kern_free(&kk);
    }
    free(g), free(k), free(q), free(m);
}
END_TEST

START_TEST(shim_same_code)
{
    char *a = must_read("kernels.gfx942.s"), *b = must_read("kernels.gfx942-isa940.s");
    /* past the first lines, which name the code object file */
    const char *pa = strstr(a, "Disassembly of section"), *pb = strstr(b, "Disassembly of section");
    ck_assert_ptr_nonnull(pa);
    ck_assert_ptr_nonnull(pb);
    ck_assert_msg(strlen(pa) > 1000, "kernels.gfx942.s is too short to hold the kernels");
    if (strcmp(pa, pb) != 0) {
        size_t i = 0;
        while (pa[i] && pa[i] == pb[i])
            i++;
        ck_abort_msg("the shim (ISA version 9402) and Debian's gfx940 constant (9400) give different gfx942 code "
                     "for kernels.hip, first difference at byte %zu: \"%.80s\" vs \"%.80s\"",
                     i, pa + i, pb + i);
    }
    free(a), free(b);
}
END_TEST

START_TEST(fp8_inner_loop_same)
{
    const char *const *names = fp8_kernels;
    char *t940 = slurp("gemm_fp8.gfx940.s"), *t942 = must_read("gemm_fp8.gfx942.s");
    if (!t940) {
        free(t942);
        ck_abort_msg("gemm_fp8.gfx940.s is missing: gfx940 must be in QF_HIP_ARCHS for this comparison");
    }
    for (int i = 0; i < N_FP8; i++) {
        kern a, b;
        int alo, ahi, blo, bhi, am = -1, bm = -1;
        static char sa[65536], sb[65536];
        ck_assert_int_eq(parse_kernel(t940, names[i], &a), 0);
        ck_assert_int_eq(parse_kernel(t942, names[i], &b), 0);
        ck_assert_msg(k_loop(&a, &alo, &ahi) == 0 && k_loop(&b, &blo, &bhi) == 0, "%s: no K loop", names[i]);
        fp_seq(&a, alo, ahi, sa, sizeof sa);
        fp_seq(&b, blo, bhi, sb, sizeof sb);
        ck_assert_msg(sa[0] != 0, "%s: no floating-point instruction in the K loop", names[i]);
        ck_assert_msg(!strcmp(sa, sb), "%s: K loop differs\ngfx940 (hipcc):\n%sgfx942 (clang-19):\n%s", names[i], sa,
                      sb);
        /* the MFMA accumulates in place: its C operand is its D register */
        for (int j = alo; j <= ahi; j++)
            if (!strncmp(a.v[j].mn, "v_mfma", 6))
                am = j;
        for (int j = blo; j <= bhi; j++)
            if (!strncmp(b.v[j].mn, "v_mfma", 6))
                bm = j;
        ck_assert(am >= 0 && bm >= 0);
        for (int s = 0; s < 2; s++) {
            const insn *in = s ? &b.v[bm] : &a.v[am];
            const char *last = strrchr(in->ops, ',');
            char d[32] = "";
            sscanf(in->ops, "%31[^,]", d);
            ck_assert_msg(last && !strcmp(last + 2, d), "%s (%s): the MFMA does not accumulate in place: %s",
                          names[i], s ? "gfx942" : "gfx940", in->ops);
        }
        /* the epilogue: scale product, scaling, output rounding */
        fp_seq(&a, ahi + 1, a.n - 1, sa, sizeof sa);
        fp_seq(&b, bhi + 1, b.n - 1, sb, sizeof sb);
        ck_assert_msg(strstr(sa, "v_mul_f64") != NULL, "%s: no binary64 scale product after the loop", names[i]);
        ck_assert_msg(!strcmp(sa, sb), "%s: epilogue differs\ngfx940 (hipcc):\n%sgfx942 (clang-19):\n%s", names[i],
                      sa, sb);
        kern_free(&a);
        kern_free(&b);
    }
    free(t940), free(t942);
}
END_TEST

int main(void)
{
    int on = gfx942_built(), nf;
    Suite *s;
    SRunner *r;
    if (on < 0) {
        fprintf(stderr, "t-gfx942-isa: QF_BINARY_DIR/CMakeCache.txt not found (run through ctest)\n");
        return 1;
    }
    if (!on) {
        printf("t-gfx942-isa: skipped: this build has no gfx942 code objects (QF_HIP_GFX942 is off: clang-19 or "
               "lld-19 missing)\n");
        return 77;
    }
    s = suite_create("gfx942-isa");
    {
        TCase *tc = tcase_create("isa");
        tcase_add_test(tc, isa_present);
        tcase_add_test(tc, shim_same_code);
        tcase_add_test(tc, fp8_inner_loop_same);
        suite_add_tcase(s, tc);
    }
    r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    nf = srunner_ntests_failed(r);
    srunner_free(r);
    return nf ? 1 : 0;
}
