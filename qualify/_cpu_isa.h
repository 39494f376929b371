/* _cpu_isa.h: the ISA features of a CPU, one list for the provenance and
 * the guard (header only, not installed).
 *
 * The provenance records the features of the CPU a result came from
 * (provenance.c, docs/reports.md), and the guard allows a `cpu` entry
 * only on a CPU that has every one of them (guard.c, docs/guards.md
 * "Architecture detection").  The two lists must be made the same way:
 * a feature the provenance records and the guard never looks for denies,
 * on the very machine that qualified it, every CPU kernel (a Sapphire
 * Rapids records avx512_fp16 and avx_vnni).  So both libraries call
 * _qf_cpu_isa_list here: libqualify (which links MPFR) and
 * libqualify_guard (which must not) each compile their own copy of these
 * static functions, and neither links the other.
 *
 * The list is made from two inputs, each injectable so that a test can
 * give a CPU this machine is not (tests/guard/t-cpu-isa.c):
 *
 *  - builtin: one bit per _QF_CPU_BUILTIN name, set when
 *    __builtin_cpu_supports says the feature is usable (it also checks,
 *    with XGETBV, that the OS saves the registers, which the flags alone
 *    do not say);
 *  - flags: the /proc/cpuinfo "flags" line (x86) or "Features" line (Arm),
 *    for features not every compiler's __builtin_cpu_supports knows (AMX,
 *    avx512_fp16, avx_vnni); the kernel lists AMX only when the OS enabled
 *    its tile state.
 *
 * The order is fixed (builtin names, then flag names, each in the order
 * below), whatever the order of the flags line. */
#ifndef QF__CPU_ISA_H
#define QF__CPU_ISA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define _QF_CPU_X86 1
/* Names as __builtin_cpu_supports spells them, and as recorded. */
static const char *const _qf_cpu_builtin_names[] = {
    "sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx512bf16"};
/* Names as the flags line spells them. */
static const char *const _qf_cpu_flag_names[] = {"avx512_fp16", "avx_vnni", "amx_tile",
                                                 "amx_bf16",    "amx_int8", "amx_fp16"};
#else
#define _QF_CPU_X86 0
static const char *const _qf_cpu_builtin_names[] = {NULL};
static const char *const _qf_cpu_flag_names[] = {"asimd", "asimdhp", "fphp", "asimddp", "sve",
                                                 "sve2",  "bf16",    "i8mm", "sme",     "sme2"};
/* Each library's list for the given inputs, as it makes it for this
 * machine (builtin = _qf_cpu_builtin(), flags = _qf_cpu_flags(NULL)):
 * libqualify's for the provenance (provenance.c), libqualify_guard's for
 * the guard (guard_arch.c).  Both are _qf_cpu_isa_list;
 * tests/guard/t-cpu-isa.c checks that they agree and that the guard
 * allows on a CPU what the provenance recorded there. */
void _qf_provenance_cpu_isa(unsigned builtin, const char *flags, char *out, size_t size);
void _qf_guard_cpu_isa(unsigned builtin, const char *flags, char *out, size_t size);

#endif
#define _QF_CPU_NBUILTIN (_QF_CPU_X86 ? sizeof _qf_cpu_builtin_names / sizeof _qf_cpu_builtin_names[0] : 0)
#define _QF_CPU_NFLAGS   (sizeof _qf_cpu_flag_names / sizeof _qf_cpu_flag_names[0])

/* Is the word w in the list (words separated by spaces or tabs)? */
static inline int _qf_cpu_has_word(const char *list, const char *w)
{
    size_t n = strlen(w);
    const char *p = list;
    if (!list || !n)
        return 0;
    while ((p = strstr(p, w)) != NULL) {
        if ((p == list || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\t' || p[n] == '\0'))
            return 1;
        p += n;
    }
    return 0;
}

/* Append " w" (or "w" to an empty list); a word that does not fit whole
 * is left out. */
static inline void _qf_cpu_add_word(char *list, size_t size, const char *w)
{
    size_t len = strlen(list);
    if (len + 1 + strlen(w) + 1 > size)
        return;
    snprintf(list + len, size - len, "%s%s", len ? " " : "", w);
}

/* The bits of _qf_cpu_builtin_names this process may use (0 off x86). */
static inline unsigned _qf_cpu_builtin(void)
{
    unsigned b = 0;
#if _QF_CPU_X86 && defined(__GNUC__)
    /* __builtin_cpu_supports needs string literals. */
    __builtin_cpu_init();
    b |= __builtin_cpu_supports("sse4.2") ? 1u << 0 : 0;
    b |= __builtin_cpu_supports("avx") ? 1u << 1 : 0;
    b |= __builtin_cpu_supports("avx2") ? 1u << 2 : 0;
    b |= __builtin_cpu_supports("fma") ? 1u << 3 : 0;
    b |= __builtin_cpu_supports("f16c") ? 1u << 4 : 0;
    b |= __builtin_cpu_supports("avx512f") ? 1u << 5 : 0;
    b |= __builtin_cpu_supports("avx512bw") ? 1u << 6 : 0;
    b |= __builtin_cpu_supports("avx512vl") ? 1u << 7 : 0;
    b |= __builtin_cpu_supports("avx512vnni") ? 1u << 8 : 0;
    b |= __builtin_cpu_supports("avx512bf16") ? 1u << 9 : 0;
/* Each library's list for the given inputs, as it makes it for this
 * machine (builtin = _qf_cpu_builtin(), flags = _qf_cpu_flags(NULL)):
 * libqualify's for the provenance (provenance.c), libqualify_guard's for
 * the guard (guard_arch.c).  Both are _qf_cpu_isa_list;
 * tests/guard/t-cpu-isa.c checks that they agree and that the guard
 * allows on a CPU what the provenance recorded there. */
void _qf_provenance_cpu_isa(unsigned builtin, const char *flags, char *out, size_t size);
void _qf_guard_cpu_isa(unsigned builtin, const char *flags, char *out, size_t size);

#endif
    return b;
}

/* The value of the first "key<spaces or tabs>: value" line of a
 * /proc/cpuinfo-like file, trimmed, into out; 0 when there is none.  Lines
 * are read whole: a flags line is longer than 1 KiB on recent CPUs, and
 * AMX comes at its end. */
static inline int _qf_cpuinfo_value(const char *path, const char *key, char *out, size_t size)
{
    FILE *f = fopen(path ? path : "/proc/cpuinfo", "r");
    char *line = NULL;
    size_t cap = 0, klen = strlen(key);
    int found = 0;
    if (!f)
        return 0;
    while (!found && getline(&line, &cap, f) > 0) {
        char *v = line + klen, *end;
        if (strncmp(line, key, klen))
            continue;
        while (*v == ' ' || *v == '\t')
            v++;
        if (*v != ':')
            continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        end = v + strlen(v);
        while (end > v && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        snprintf(out, size, "%s", v);
        found = 1;
    }
    free(line);
    fclose(f);
    return found;
}

/* The ISA feature list (space-separated, "" when none) of a CPU whose
 * __builtin_cpu_supports answers are builtin and whose flags line is flags
 * (NULL or "": none). */
static inline void _qf_cpu_isa_list(unsigned builtin, const char *flags, char *out, size_t size)
{
    size_t i;
    if (!size)
        return;
    out[0] = '\0';
    for (i = 0; i < _QF_CPU_NBUILTIN; i++)
        if (builtin & (1u << i))
            _qf_cpu_add_word(out, size, _qf_cpu_builtin_names[i]);
    for (i = 0; flags && i < _QF_CPU_NFLAGS; i++)
        if (_qf_cpu_has_word(flags, _qf_cpu_flag_names[i]))
            _qf_cpu_add_word(out, size, _qf_cpu_flag_names[i]);
}

/* The flags line of a /proc/cpuinfo-like file (NULL: /proc/cpuinfo):
 * "flags" on x86, "Features" on Arm; "" when there is none. */
static inline void _qf_cpu_flags(const char *cpuinfo, char *out, size_t size)
{
    if (!_qf_cpuinfo_value(cpuinfo, "flags", out, size) && !_qf_cpuinfo_value(cpuinfo, "Features", out, size))
        out[0] = '\0';
}

/* Each library's list for the given inputs, as it makes it for this
 * machine (builtin = _qf_cpu_builtin(), flags = _qf_cpu_flags(NULL)):
 * libqualify's for the provenance (provenance.c), libqualify_guard's for
 * the guard (guard_arch.c).  Both are _qf_cpu_isa_list;
 * tests/guard/t-cpu-isa.c checks that they agree and that the guard
 * allows on a CPU what the provenance recorded there. */
void _qf_provenance_cpu_isa(unsigned builtin, const char *flags, char *out, size_t size);
void _qf_guard_cpu_isa(unsigned builtin, const char *flags, char *out, size_t size);

#endif
