/* t-cpu-isa.c: the provenance and the guard list a CPU's ISA features the
 * same way (_cpu_isa.h), so the guard allows on a CPU the cpu entries
 * qualified there: for synthetic Sapphire Rapids, Zen 4 and Haswell
 * flags lines (what this machine is does not matter), for this machine,
 * and for a /proc/cpuinfo-like file whose flags line is longer than
 * 1 KiB with AMX at its end (docs/guards.md "Architecture detection").
 *
 * The bug this catches: the provenance recorded avx512_fp16 and avx_vnni
 * from the flags line and the guard never looked for them, so on a
 * Sapphire Rapids every CPU kernel was denied (isa-missing) on the
 * machine it qualified on. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_cpu_isa.h"
#include "qf_guard.h"
#include "qf_provenance.h"
#include "qf_test.h"

/* /proc/cpuinfo flags lines of real CPUs (Linux 6.x). */
static const char spr_flags[] = /* Intel Xeon Platinum 8480+ (Sapphire Rapids), 1.5 KiB */
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse "
    "sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl "
    "xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq dtes64 monitor ds_cpl vmx smx est "
    "tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes "
    "xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 cat_l2 cdp_l3 invpcid_single "
    "intel_ppin cdp_l2 ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow vnmi flexpriority ept vpid ept_ad "
    "fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx smap "
    "avx512ifma clflushopt clwb intel_pt avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves "
    "cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local split_lock_detect avx_vnni avx512_bf16 wbnoinvd "
    "dtherm ida arat pln pts hwp hwp_act_window hwp_epp hwp_pkg_req avx512vbmi umip pku ospke waitpkg "
    "avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg tme avx512_vpopcntdq la57 rdpid "
    "bus_lock_detect cldemote movdiri movdir64b enqcmd fsrm md_clear serialize tsxldtrk pconfig arch_lbr ibt "
    "amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d arch_capabilities";
static const char zen4_flags[] = /* AMD EPYC 9654 (Zen 4) */
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht "
    "syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good amd_lbr_v2 nopl nonstop_tsc cpuid "
    "extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt "
    "aes xsave avx f16c rdrand lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse "
    "3dnowprefetch osvw ibs skinit wdt tce topoext perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb "
    "cat_l3 cdp_l3 invpcid_single hw_pstate ssbd mba perfmon_v2 ibrs ibpb stibp ibrs_enhanced vmmcall "
    "fsgsbase bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma "
    "clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc "
    "cqm_mbm_total cqm_mbm_local avx512_bf16 clzero irperf xsaveerptr rdpru wbnoinvd amd_ppin cppc arat npt "
    "lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists pausefilter pfthreshold avic "
    "v_vmsave_vmload vgif x2avic v_spec_ctrl vnmi avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes "
    "vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq la57 rdpid overflow_recov succor smca fsrm "
    "flush_l1d";
static const char haswell_flags[] = /* Intel Xeon E5-2690 v3 (Haswell): AVX2, no AVX-512 */
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse "
    "sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl "
    "xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg "
    "fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c "
    "rdrand lahf_lm abm cpuid_fault epb invpcid_single pti intel_ppin ssbd ibrs ibpb stibp tpr_shadow vnmi "
    "flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm xsaveopt cqm_llc "
    "cqm_occup_llc dtherm ida arat pln pts md_clear flush_l1d";

#if _QF_CPU_X86
/* What __builtin_cpu_supports answers on a CPU with this flags line (and
 * an OS that saves its registers): the builtin names as the kernel spells
 * them. */
static unsigned builtin_of(const char *flags)
{
    static const char *const as_flag[] = {"sse4_2",  "avx",      "avx2",     "fma",         "f16c",
                                          "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"};
    unsigned b = 0;
    size_t i;
    ck_assert_uint_eq(sizeof as_flag / sizeof as_flag[0], _QF_CPU_NBUILTIN);
    for (i = 0; i < _QF_CPU_NBUILTIN; i++)
        if (_qf_cpu_has_word(flags, as_flag[i]))
            b |= 1u << i;
    return b;
}

static const struct cpu {
    const char *name, *flags, *isa; /* isa: the list both must make */
} cpus[] = {
    {"Sapphire Rapids", spr_flags,
     "sse4.2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512vnni avx512bf16 avx512_fp16 avx_vnni amx_tile "
     "amx_bf16 amx_int8"},
    {"Zen 4", zen4_flags, "sse4.2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512vnni avx512bf16"},
    {"Haswell", haswell_flags, "sse4.2 avx avx2 fma f16c"},
};
#define NCPUS (sizeof cpus / sizeof cpus[0])
#endif

/* A cpu entry qualified on a CPU whose provenance recorded isa. */
static qf_guard *guard_over(qf_guard_entry *e, qf_guard_table *t, const char *isa)
{
    static const qf_guard_region q[] = {{0, "QUALIFIED", "", {1}, {64}, {1}}};
    qf_guard *g = NULL;
    memset(e, 0, sizeof *e);
    e->arch = "cpu";
    e->kernel = "simd";
    e->dtype = "f32";
    e->ndims = 1;
    e->dims[0] = "M";
    e->swept_lo[0] = 1;
    e->swept_hi[0] = 64;
    e->nregions = 1;
    e->regions = q;
    e->isa = isa;
    e->params = "";
    e->param_defaults = "";
    t->nentries = 1;
    t->entries = e;
    ck_assert_int_eq(qf_guard_open_table(t, &g), 0);
    qf_guard_set_arch(g, "cpu");
    return g;
}

static qf_guard_answer ask(qf_guard *g, qf_guard_decision *d)
{
    char text[] = "M=8";
    qf_guard_shape s;
    ck_assert_int_eq(qf_guard_shape_parse(text, &s), 0);
    qf_guard_may_run(g, "simd", "f32", &s, d);
    return d->answer;
}

START_TEST(test_synthetic)
{
#if _QF_CPU_X86
    /* allowed[recorded on][asked on]: SPR's list holds Zen 4's, both hold
     * Haswell's; the first feature missing is named. */
    static const int allowed[NCPUS][NCPUS] = {{1, 0, 0}, {1, 1, 0}, {1, 1, 1}};
    static const char *const lacks[NCPUS] = {"", "lacks avx512_fp16,", "lacks avx512f,"};
    size_t i, j;
    unsetenv("QF_GUARD_FORCE");
    for (i = 0; i < NCPUS; i++) {
        char prov[QF_PROV_LONG], guard[1024];
        qf_guard_entry e;
        qf_guard_table t;
        qf_guard *g;
        qf_guard_decision d;
        unsigned b = builtin_of(cpus[i].flags);
        _qf_provenance_cpu_isa(b, cpus[i].flags, prov, sizeof prov);
        _qf_guard_cpu_isa(b, cpus[i].flags, guard, sizeof guard);
        ck_assert_msg(!strcmp(prov, cpus[i].isa), "%s: provenance '%s', want '%s'", cpus[i].name, prov,
                      cpus[i].isa);
        ck_assert_msg(!strcmp(guard, prov), "%s: guard '%s', provenance '%s'", cpus[i].name, guard, prov);
        /* Recorded on cpus[i]: allowed there, and on every CPU whose list
         * holds it; denied, naming the first feature missing, elsewhere. */
        g = guard_over(&e, &t, prov);
        for (j = 0; j < NCPUS; j++) {
            char other[1024];
            _qf_guard_cpu_isa(builtin_of(cpus[j].flags), cpus[j].flags, other, sizeof other);
            qf_guard_set_isa(g, other);
            ask(g, &d);
            if (allowed[i][j]) {
                ck_assert_msg(d.answer == QF_GUARD_QUALIFIED, "recorded on %s, on %s: %s", cpus[i].name,
                              cpus[j].name, d.reason);
            } else {
                ck_assert_msg(d.answer == QF_GUARD_ISA_MISSING, "recorded on %s, on %s: %s", cpus[i].name,
                              cpus[j].name, d.reason);
                ck_assert_msg(strstr(d.reason, lacks[j]), "%s", d.reason);
            }
        }
        qf_guard_close(g);
    }
    /* The flags line alone names nothing __builtin_cpu_supports decides
     * (an OS that does not save the AVX-512 state lists avx512f and cannot
     * run it), and the extras are whole words in a fixed order. */
    {
        char l[256];
        _qf_guard_cpu_isa(0, spr_flags, l, sizeof l);
        ck_assert_str_eq(l, "avx512_fp16 avx_vnni amx_tile amx_bf16 amx_int8");
        _qf_guard_cpu_isa(0, "amx_tile_x xavx_vnni amx_fp16\tavx_vnni", l, sizeof l);
        ck_assert_str_eq(l, "avx_vnni amx_fp16");
        _qf_guard_cpu_isa(builtin_of(haswell_flags), NULL, l, sizeof l);
        ck_assert_str_eq(l, "sse4.2 avx avx2 fma f16c");
    }
#endif
}
END_TEST

/* A /proc/cpuinfo-like file of two processors: the flags line (1.5 KiB,
 * AMX last) is read whole, and the first processor's is taken. */
START_TEST(test_file)
{
    char dir[256], path[300], flags[8192];
    FILE *f;
    int k;
    qf_test_mkdtemp(dir, sizeof dir, "qf-cpu-isa");
    snprintf(path, sizeof path, "%s/cpuinfo", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (k = 0; k < 2; k++)
        fprintf(f,
                "processor\t: %d\nvendor_id\t: GenuineIntel\nmodel\t\t: 143\n"
                "model name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: %s\n"
                "vmx flags\t: vnmi preemption_timer\nbugs\t\t: spectre_v1\n\n",
                k, k ? haswell_flags : spr_flags);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_uint_gt(strlen(spr_flags), 1024);
    _qf_cpu_flags(path, flags, sizeof flags);
    ck_assert_str_eq(flags, spr_flags);
    ck_assert_int_eq(_qf_cpuinfo_value(path, "model name", flags, sizeof flags), 1);
    ck_assert_str_eq(flags, "Intel(R) Xeon(R) Platinum 8480+");
    ck_assert_int_eq(_qf_cpuinfo_value(path, "model", flags, sizeof flags), 1);
    ck_assert_str_eq(flags, "143");
    ck_assert_int_eq(_qf_cpuinfo_value(path, "Features", flags, sizeof flags), 0);
    _qf_cpu_flags("/nonexistent-qf/cpuinfo", flags, sizeof flags);
    ck_assert_str_eq(flags, "");
    qf_test_rmtree(dir);
}
END_TEST

/* This machine, whatever it is: the provenance's list is the guard's, and
 * a guard opened here (which detects its own list) allows a cpu entry
 * that carries the provenance's list. */
START_TEST(test_this_machine)
{
    qf_provenance p;
    char v[64], m[256], isa[1024];
    qf_guard_entry e;
    qf_guard_table t;
    qf_guard *g;
    qf_guard_decision d;
    unsetenv("QF_GUARD_FORCE");
    ck_assert_int_eq(qf_provenance_collect(&p, "/"), QF_OK);
    qf_guard_cpu_identity(v, sizeof v, m, sizeof m, isa, sizeof isa);
    ck_assert_msg(!strcmp(isa, p.cpu_isa[0] ? p.cpu_isa : "unknown"), "guard '%s', provenance '%s'", isa,
                  p.cpu_isa);
    g = guard_over(&e, &t, p.cpu_isa);
    ck_assert_str_eq(qf_guard_isa(g), isa);
    ck_assert_msg(ask(g, &d) == QF_GUARD_QUALIFIED, "%s", d.reason);
    qf_guard_close(g);
    qf_provenance_free(&p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("guard/cpu-isa");
    TCase *tc = tcase_create("cpu-isa");
    tcase_add_test(tc, test_synthetic);
    tcase_add_test(tc, test_file);
    tcase_add_test(tc, test_this_machine);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
