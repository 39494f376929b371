/* report_junit.c: junit.xml from the results of a sweep (qf_report.h,
 * docs/reports.md "junit.xml"): one testsuite per kernel, one testcase per
 * pair; FAILED, CRASHED and TIMEOUT (with strict also MARGINAL, MISTRUSTED
 * and UNCHECKED) are failures, UNSUPPORTED, SKIPPED and UNCHECKED skipped. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "_escape.h"
#include "_report.h"
#include "qf_report.h"

/* Text or attribute content (_escape.h): control characters, bidi
 * controls and bytes that are not UTF-8 as visible escapes. */
#define xml_text _qf_esc_xml

static void junit_counts(const qf_result *r, size_t n, const char *kernel, int strict, size_t *tests,
                         size_t *fail, size_t *skip, double *time)
{
    size_t i;
    *tests = *fail = *skip = 0;
    *time = 0;
    for (i = 0; i < n; i++) {
        if (kernel && strcmp(r[i].kernel, kernel))
            continue;
        (*tests)++;
        if (qf_report_is_failure(r[i].verdict, strict))
            (*fail)++;
        else if (r[i].verdict == QF_VERDICT_UNSUPPORTED || r[i].verdict == QF_VERDICT_SKIPPED)
            (*skip)++;
        if (isfinite(r[i].wall_s) && r[i].wall_s > 0)
            *time += r[i].wall_s;
    }
}

static void junit_case(FILE *out, const qf_result *x, int strict)
{
    char rep[QF_RESULT_CMD_MAX];
    double t = isfinite(x->wall_s) && x->wall_s > 0 ? x->wall_s : 0;
    fputs("    <testcase name=\"", out);
    xml_text(out, x->case_id, 1);
    fputs("\" classname=\"", out);
    xml_text(out, x->kernel, 1);
    fputc('.', out);
    xml_text(out, x->dtype[0] ? x->dtype : "default", 1);
    fprintf(out, "\" time=\"%.6f\"", t);
    _qf_report_reproducer(x, rep, sizeof rep);
    if (qf_report_is_failure(x->verdict, strict)) {
        fputs(">\n      <failure type=\"", out);
        xml_text(out, _qf_report_verdict_name(x->verdict), 1);
        fputs("\" message=\"", out);
        xml_text(out, x->reason[0] ? x->reason : _qf_report_verdict_name(x->verdict), 1);
        fputs("\">", out);
        fputs(_qf_report_verdict_name(x->verdict), out);
        fputs(": ", out);
        xml_text(out, x->reason, 0);
        fputs("\nop: ", out);
        xml_text(out, x->op, 0);
        fputs(" kernel: ", out);
        xml_text(out, x->kernel, 0);
        fputs(" dtypes: ", out);
        xml_text(out, x->dtype, 0);
        fprintf(out, " seed: %llu", (unsigned long long)x->seed);
        fputs(" arch: ", out);
        xml_text(out, x->arch[0] ? x->arch : "cpu", 0);
        fputs("\nreproduce: ", out);
        xml_text(out, rep[0] ? rep : "(unknown)", 0);
        fputs("\n</failure>\n    </testcase>\n", out);
    } else if (x->verdict == QF_VERDICT_UNSUPPORTED || x->verdict == QF_VERDICT_SKIPPED ||
               x->verdict == QF_VERDICT_UNCHECKED) { /* UNCHECKED: checked against nothing, no pass */
        fputs(">\n      <skipped message=\"", out);
        xml_text(out, _qf_report_verdict_name(x->verdict), 1);
        if (x->reason[0]) {
            fputs(": ", out);
            xml_text(out, x->reason, 1);
        }
        fputs("\"/>\n    </testcase>\n", out);
    } else if (x->verdict != QF_VERDICT_QUALIFIED) {
        /* MARGINAL and MISTRUSTED that are not failures stay visible. */
        fputs(">\n      <system-out>", out);
        xml_text(out, _qf_report_verdict_name(x->verdict), 0);
        fputs(": ", out);
        xml_text(out, x->reason, 0);
        fputs("</system-out>\n    </testcase>\n", out);
    } else {
        fputs("/>\n", out);
    }
}

/* The confinement the kernel ran under (provenance "sandbox"), or NULL. */
static const char *sandbox_of(const qf_provenance *p, const char *kernel)
{
    size_t i, n = strlen(kernel);
    for (i = 0; i < p->nsandbox && i < QF_PROV_SANDBOX; i++) {
        const char *w = p->sandbox[i].kernels;
        while (w && *w) {
            const char *e = strchr(w, ' ');
            size_t len = e ? (size_t)(e - w) : strlen(w);
            if (len == n && !strncmp(w, kernel, n))
                return p->sandbox[i].how;
            w = e ? e + 1 : NULL;
        }
    }
    return NULL;
}

qf_status qf_report_junit_file(FILE *out, const qf_result *r, size_t n, const qf_provenance *prov,
                               const qf_report_options *opt)
{
    size_t i, j, tests, fail, skip;
    double time;
    int strict = opt ? opt->strict : 0;
    if (!out || (!r && n))
        return QF_EINVAL;
    junit_counts(r, n, NULL, strict, &tests, &fail, &skip, &time);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
    fprintf(out,
            "<testsuites name=\"qualify\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" "
            "time=\"%.6f\">\n",
            tests, fail, skip, time);
    /* One testsuite per kernel, in order of first appearance. */
    for (i = 0; i < n; i++) {
        for (j = 0; j < i; j++)
            if (!strcmp(r[j].kernel, r[i].kernel))
                break;
        if (j < i)
            continue;
        junit_counts(r, n, r[i].kernel, strict, &tests, &fail, &skip, &time);
        fputs("  <testsuite name=\"", out);
        xml_text(out, r[i].kernel, 1);
        fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" time=\"%.6f\"", tests,
                fail, skip, time);
        if (prov && prov->timestamp[0]) {
            fputs(" timestamp=\"", out);
            xml_text(out, prov->timestamp, 1);
            fputc('"', out);
        }
        fputs(">\n", out);
        if (_qf_report_prov_known(prov)) {
            fputs("    <properties>\n", out);
#define PROP(name, val)                                                                                      \
    do {                                                                                                     \
        fputs("      <property name=\"" name "\" value=\"", out);                                            \
        xml_text(out, val, 1);                                                                               \
        fputs("\"/>\n", out);                                                                                \
    } while (0)
            PROP("kernel_kind", r[i].kernel_kind);
            PROP("qualify_version", prov->qualify_version);
            PROP("git_revision", prov->git_revision);
            PROP("cpu", prov->cpu_model);
            PROP("os", prov->os);
            PROP("compiler", prov->compiler);
            if (prov->gpu_name[0])
                PROP("gpu", prov->gpu_name);
            if (prov->gpu_arch[0])
                PROP("gpu_arch", prov->gpu_arch);
            if (sandbox_of(prov, r[i].kernel))
                PROP("sandbox", sandbox_of(prov, r[i].kernel));
#undef PROP
            fputs("    </properties>\n", out);
        }
        for (j = i; j < n; j++)
            if (!strcmp(r[j].kernel, r[i].kernel))
                junit_case(out, &r[j], strict);
        fputs("  </testsuite>\n", out);
    }
    fputs("</testsuites>\n", out);
    return ferror(out) ? QF_EIO : QF_OK;
}
