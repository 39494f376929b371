/* recipe.c: the one spelling of each scaling recipe (qf_recipe.h). */
#include <string.h>

#include "qf_recipe.h"

const char *const qf_scale_recipe_names[QF_SCALE_RECIPE_COUNT + 1] = {
    "none", "per_tensor", "per_channel", "per_token", "per_block", "mx", "nvfp4", "group", NULL};

/* Older words of `qualify audit` (docs/audit.md "Recipe words"): scripts
 * that spell e4m3:channel keep working, and reports show per_channel. */
static const struct {
    const char *alias;
    qf_scale_recipe recipe;
} aliases[] = {
    {"tensor", QF_SCALE_RECIPE_PER_TENSOR},
    {"channel", QF_SCALE_RECIPE_PER_CHANNEL},
    {"row", QF_SCALE_RECIPE_PER_CHANNEL},
};

const char *qf_scale_recipe_name(qf_scale_recipe r)
{
    return (unsigned)r < QF_SCALE_RECIPE_COUNT ? qf_scale_recipe_names[r] : NULL;
}

qf_status qf_scale_recipe_lookup(const char *name, qf_scale_recipe *out)
{
    int i;
    if (!name || !out)
        return QF_EINVAL;
    for (i = 0; i < QF_SCALE_RECIPE_COUNT; i++)
        if (!strcmp(qf_scale_recipe_names[i], name)) {
            *out = (qf_scale_recipe)i;
            return QF_OK;
        }
    return QF_EPARSE;
}

qf_status qf_scale_recipe_lookup_alias(const char *name, qf_scale_recipe *out)
{
    size_t i;
    qf_status st = qf_scale_recipe_lookup(name, out);
    if (st != QF_EPARSE)
        return st;
    for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(aliases[i].alias, name)) {
            *out = aliases[i].recipe;
            return QF_OK;
        }
    return QF_EPARSE;
}
