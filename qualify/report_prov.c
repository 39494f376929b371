/* report_prov.c: the provenance's members that are lists of records: the
 * devices of --devices and the confinement of kernel processes (_report.h;
 * docs/runner.md "Devices", docs/security.md "The sandbox"). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "_report.h"
#include "qf_provenance.h"

/* {"retries": N, "list": [{index, uuid, name, pairs, faults, out, why}]}
 * (docs/runner.md "Devices"). */
json_t *_qf_report_devices_json(const qf_provenance *p)
{
    json_t *a = json_array();
    size_t i;
    for (i = 0; a && i < p->ndevices && i < QF_PROV_DEVICES; i++) {
        const qf_provenance_device *d = &p->devices[i];
        if (json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:I, s:I, s:b, s:s}", "index", d->index, "uuid",
                                               d->uuid, "name", d->name, "pairs", (json_int_t)d->pairs, "faults",
                                               (json_int_t)d->faults, "out", d->out, "why", d->why))) {
            json_decref(a);
            return NULL;
        }
    }
    return a ? json_pack("{s:I, s:o}", "retries", (json_int_t)p->device_retries, "list", a) : NULL;
}

/* [{"confinement": HOW, "kernels": [NAME...]}] (docs/security.md). */
json_t *_qf_report_sandbox_json(const qf_provenance *p)
{
    json_t *a = json_array();
    size_t i;
    for (i = 0; a && i < p->nsandbox && i < QF_PROV_SANDBOX; i++)
        if (json_array_append_new(a, json_pack("{s:s, s:o}", "confinement", p->sandbox[i].how, "kernels",
                                               _qf_report_words_json(p->sandbox[i].kernels ? p->sandbox[i].kernels : "")))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* Back from sandbox_json's array (entries of the wrong shape skipped). */
void _qf_report_sandbox_from_json(const json_t *v, qf_provenance *p)
{
    const json_t *e, *k;
    size_t i, j;
    json_array_foreach(v, i, e)
    {
        const char *how = json_string_value(json_object_get(e, "confinement"));
        if (!how)
            continue;
        json_array_foreach(json_object_get(e, "kernels"), j, k)
            if (json_is_string(k))
                qf_provenance_add_sandbox(p, how, json_string_value(k));
    }
}

static const char *member_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Back from devices_json's object (members of the wrong type are skipped:
 * the devices are a record of the run, not an input of any verdict). */
void _qf_report_devices_from_json(const json_t *v, qf_provenance *p)
{
    const json_t *a = json_object_get(v, "list"), *e;
    size_t i;
    p->device_retries = (size_t)json_integer_value(json_object_get(v, "retries"));
    json_array_foreach(a, i, e)
    {
        qf_provenance_device *d = &p->devices[p->ndevices];
        if (p->ndevices == QF_PROV_DEVICES)
            break;
        memset(d, 0, sizeof *d);
        d->index = (int)json_integer_value(json_object_get(e, "index"));
        snprintf(d->uuid, sizeof d->uuid, "%s", member_str(e, "uuid"));
        snprintf(d->name, sizeof d->name, "%s", member_str(e, "name"));
        snprintf(d->why, sizeof d->why, "%s", member_str(e, "why"));
        d->pairs = (size_t)json_integer_value(json_object_get(e, "pairs"));
        d->faults = (size_t)json_integer_value(json_object_get(e, "faults"));
        d->out = json_is_true(json_object_get(e, "out"));
        p->ndevices++;
    }
}
