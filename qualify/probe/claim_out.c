/* claim_out.c: what the probe found, for people (qf_probe_print), for
 * programs (qf_probe_json) and as a claim file (qf_probe_write_claim,
 * YAML through libyaml's emitter; docs/probe.md "The claim file"). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "_files.h"
#include "../_json.h"
#include "_probe.h"

static const char *align_name(qf_probe_align a)
{
    switch (a) {
    case QF_PROBE_ALIGN_TRUNCATE: return "truncate";
    case QF_PROBE_ALIGN_FLOOR: return "floor";
    case QF_PROBE_ALIGN_NEAREST: return "nearest";
    default: return "exact";
    }
}

static const char *tri(int v, const char *yes, const char *no)
{
    return v == 1 ? yes : v == 0 ? no : "unobservable";
}

static const char *determinism_name(const qf_probe_result *r)
{
    return r->deterministic_threads ? "thread-count-invariant" : r->deterministic ? "run-to-run" : "none";
}

/* The order in words, with what the claim spelling leaves out. */
static void order_words(const qf_probe_order *o, char *buf, size_t n)
{
    const char *extra = "";
    char f[128] = "";
    if (o->kind == QF_PROBE_ORDER_SPLIT)
        extra = o->lanes_pairwise ? " (lanes l mod S, each sequential; lanes combined pairwise)"
                                  : " (lanes l mod S, each sequential; then lane 0 + lane 1 + ...)";
    if (o->fused > 1)
        snprintf(f, sizeof f, "; fused nodes of %d terms%s", o->fused,
                 o->odd_even ? ", each group's even-indexed terms, then its odd ones" : "");
    snprintf(buf, n, "%s%s%s", o->text, extra, f);
}

void qf_probe_print(FILE *out, const qf_probe_result *r)
{
    char w[256];
    fprintf(out, "probe %s, dtype %s, K = %zu, %zu columns (seed %llu)\n", r->kernel, r->dtype, r->k, r->cols,
            (unsigned long long)r->seed);
    order_words(&r->order, w, sizeof w);
    fprintf(out, "  order:            %s\n", r->varies ? r->order_claim : w);
    if (r->varies)
        for (size_t i = 0; i < r->n_orders; i++) {
            order_words(&r->orders[i], w, sizeof w);
            fprintf(out, "    %s%s: %s\n", r->order_cols[i][0] ? "columns " : "elements of the shapes below",
                    r->order_cols[i], w);
        }
    for (size_t i = 0; i < r->n_shapes; i++)
        fprintf(out, "    %4zu x %2zu x %4zu: %s (%zu of %zu replayed)\n", r->shapes[i].m, r->shapes[i].n,
                r->shapes[i].k, r->shapes[i].text, r->shapes[i].validated_ok, r->shapes[i].validated);
    if (r->n_shapes)
        fprintf(out, "  rows/tiles:       %s; shapes: %s\n",
                r->tile_varies ? "elements of one shape use different orders" : "one order per shape",
                r->shape_varies ? "the order map changes with the shape" : "the same order at every shape probed");
    fprintf(out, "  tree (column 0):  %s\n", r->tree);
    fprintf(out, "  block (fused):    %d term%s per node%s\n", r->block, r->block == 1 ? "" : "s",
            r->sum_tree ? " (two-term additions in a pairwise tree per block)" : "");
    if (r->promote_interval)
        fprintf(out, "  promotion:        every %d terms into a two-term float accumulator\n", r->promote_interval);
    if (r->align == QF_PROBE_ALIGN_EXACT)
        fprintf(out, "  alignment:        exact (no bits dropped before the rounding)\n");
    else
        fprintf(out, "  alignment:        %d fraction bits kept below the largest exponent, dropped bits %s\n",
                r->align_frac_bits, r->align == QF_PROBE_ALIGN_TRUNCATE ? "truncated (toward zero)"
                                    : r->align == QF_PROBE_ALIGN_FLOOR ? "floored (toward -inf)"
                                                                        : "rounded to nearest");
    if (r->acc_frac_min != r->acc_frac_bits)
        fprintf(out, "  accumulator:      %d fraction bits (any of %d..%d fits every output)\n", r->acc_frac_bits,
                r->acc_frac_min, r->acc_frac_bits);
    else
        fprintf(out, "  accumulator:      %d fraction bits\n", r->acc_frac_bits);
    fprintf(out, "  rounding:         %s\n",
            r->acc_round_known ? qf_round_name(r->acc_round) : "unobservable (RTZ and RNE fit every output)");
    if (r->product_frac_bits)
        fprintf(out, "  products:         truncated to %d fraction bits\n", r->product_frac_bits);
    else
        fprintf(out, "  products:         exact; multiply-add %s\n", tri(r->fma, "fused", "unfused (product rounded)"));
    fprintf(out, "  subnormals:       inputs %s, results %s\n", tri(r->flush_in, "flushed", "kept"),
            tri(r->flush_out, "flushed", "kept"));
    fprintf(out, "  specials:         %s\n", r->specials[0] ? r->specials : "(formats without NaN or Inf)");
    fprintf(out, "  determinism:      %s\n", determinism_name(r));
    fprintf(out, "  validation:       %zu of %zu random dot products replayed bit for bit\n", r->validated_ok,
            r->validated);
    fprintf(out, "  evidence:\n");
    for (size_t i = 0; i < r->n_evidence; i++)
        fprintf(out, "    - %s\n", r->evidence[i]);
    fprintf(out, "  %zu kernel calls, %.2f s\n", r->kernel_calls, r->seconds);
}

char *qf_probe_json(const qf_probe_result *r)
{
    json_t *o = json_object(), *ev = json_array(), *ords = json_array();
    char *s;
    char w[256];
    for (size_t i = 0; i < r->n_evidence; i++)
        json_array_append_new(ev, json_string(r->evidence[i]));
    for (size_t i = 0; i < r->n_orders; i++) {
        order_words(&r->orders[i], w, sizeof w);
        json_array_append_new(ords, json_pack("{s:s, s:s, s:s}", "order", r->orders[i].text, "words", w, "columns",
                                              r->order_cols[i]));
    }
    json_object_set_new(o, "kernel", json_string(r->kernel));
    json_object_set_new(o, "dtype", json_string(r->dtype));
    json_object_set_new(o, "k", json_integer((json_int_t)r->k));
    json_object_set_new(o, "columns", json_integer((json_int_t)r->cols));
    json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
    json_object_set_new(o, "order", json_string(r->order_claim));
    json_object_set_new(o, "orders", ords);
    json_object_set_new(o, "tree", json_string(r->tree));
    json_object_set_new(o, "block", json_integer(r->block));
    json_object_set_new(o, "promote_interval", json_integer(r->promote_interval));
    json_object_set_new(o, "align", json_string(align_name(r->align)));
    json_object_set_new(o, "align_frac_bits", json_integer(r->align_frac_bits));
    json_object_set_new(o, "acc_frac_bits", json_integer(r->acc_frac_bits));
    json_object_set_new(o, "acc_frac_bits_min", json_integer(r->acc_frac_min));
    json_object_set_new(o, "acc_round", json_string(r->acc_round_known ? qf_round_name(r->acc_round) : "unobservable"));
    json_object_set_new(o, "product_frac_bits", json_integer(r->product_frac_bits));
    json_object_set_new(o, "fma", json_string(tri(r->fma, "fused", "unfused")));
    json_object_set_new(o, "flush_in", json_string(tri(r->flush_in, "flushed", "kept")));
    json_object_set_new(o, "flush_out", json_string(tri(r->flush_out, "flushed", "kept")));
    json_object_set_new(o, "specials", json_string(r->specials));
    json_object_set_new(o, "determinism", json_string(determinism_name(r)));
    json_object_set_new(o, "validated", json_integer((json_int_t)r->validated));
    json_object_set_new(o, "validated_ok", json_integer((json_int_t)r->validated_ok));
    {
        json_t *sh = json_array();
        for (size_t i = 0; i < r->n_shapes; i++)
            json_array_append_new(sh, json_pack("{s:I, s:I, s:I, s:s, s:I, s:I}", "m", (json_int_t)r->shapes[i].m,
                                                 "n", (json_int_t)r->shapes[i].n, "k", (json_int_t)r->shapes[i].k,
                                                 "map", r->shapes[i].text, "validated",
                                                 (json_int_t)r->shapes[i].validated, "validated_ok",
                                                 (json_int_t)r->shapes[i].validated_ok));
        json_object_set_new(o, "shapes", sh);
        json_object_set_new(o, "tile_varies", json_boolean(r->tile_varies));
        json_object_set_new(o, "shape_varies", json_boolean(r->shape_varies));
    }
    json_object_set_new(o, "evidence", ev);
    json_object_set_new(o, "kernel_calls", json_integer((json_int_t)r->kernel_calls));
    json_object_set_new(o, "seconds", json_real(r->seconds));
    s = _qf_json_dumps(o, JSON_INDENT(2)); /* C1 and bidi controls as \u escapes */
    json_decref(o);
    return s;
}

/* ---- YAML ------------------------------------------------------------------------ */

static int scalar(yaml_emitter_t *e, const char *s)
{
    yaml_event_t ev;
    yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1, YAML_ANY_SCALAR_STYLE);
    return yaml_emitter_emit(e, &ev) ? 0 : -1;
}

static int kv(yaml_emitter_t *e, const char *k, const char *v)
{
    return scalar(e, k) || scalar(e, v);
}

static int kvi(yaml_emitter_t *e, const char *k, long v)
{
    char b[32];
    snprintf(b, sizeof b, "%ld", v);
    return kv(e, k, b);
}

static int write_fn(void *data, unsigned char *buf, size_t size)
{
    return fwrite(buf, 1, size, (FILE *)data) == size;
}

/* The claim's order cannot be varies(...) of these: an unnamed tree, or
 * more orders than a varies set holds (QF_SUM_VARIES_MAX = 4). */
static int claim_order_any(const qf_probe_result *r)
{
    if (r->n_orders > 4)
        return 1;
    for (size_t i = 0; i < r->n_orders; i++)
        if (r->orders[i].kind == QF_PROBE_ORDER_UNKNOWN)
            return 1;
    return r->order.kind == QF_PROBE_ORDER_UNKNOWN;
}

/* The `replay` section (docs/claims.md "Replay details"): what the bound's
 * keys cannot say and a bit-exact replay needs. */
static int write_replay(yaml_emitter_t *e, const qf_probe_result *r)
{
    yaml_event_t ev;
    static const char *const first[] = {"exact", "rounded", "both_rounded"};
    int bad = 0, odd_even = 0, halving = 0, lanes = 0;
    char entry[640];
    for (size_t i = 0; i < r->n_orders; i++) {
        odd_even |= r->orders[i].odd_even;
        halving |= r->orders[i].kind == QF_PROBE_ORDER_PAIRWISE && r->orders[i].lanes_pairwise > 1;
        lanes |= r->orders[i].kind == QF_PROBE_ORDER_SPLIT && r->orders[i].lanes_pairwise;
    }
    bad |= scalar(e, "replay");
    yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
    bad |= !yaml_emitter_emit(e, &ev);
    bad |= kv(e, "first_term", first[r->leaf_round >= 0 && r->leaf_round <= 2 ? r->leaf_round : 0]);
    if (odd_even)
        bad |= kv(e, "odd_even", "1");
    if (halving)
        bad |= kv(e, "pairwise", "halving");
    if (lanes)
        bad |= kv(e, "split_lanes", "pairwise");
    if (r->n_shapes && (r->tile_varies || r->shape_varies || r->n_orders > 1)) {
        bad |= scalar(e, "order_map");
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
        bad |= !yaml_emitter_emit(e, &ev);
        for (size_t i = 0; i < r->n_shapes; i++) {
            snprintf(entry, sizeof entry, "%zux%zux%zu: %s", r->shapes[i].m, r->shapes[i].n, r->shapes[i].k,
                     r->shapes[i].text);
            bad |= scalar(e, entry);
        }
        yaml_sequence_end_event_initialize(&ev);
        bad |= !yaml_emitter_emit(e, &ev);
    }
    yaml_mapping_end_event_initialize(&ev);
    bad |= !yaml_emitter_emit(e, &ev);
    return bad;
}

qf_status qf_probe_write_claim(const qf_probe_result *r, const char *path, char *err, size_t err_size)
{
    yaml_emitter_t e;
    yaml_event_t ev;
    _qf_out o; /* beside path, renamed over it (_files.h) */
    FILE *f = _qf_out_open(&o, path, _QF_OUT_SYNC, err, err_size);
    int bad = 0, acc = r->acc_frac_bits, guard = 0, narrow;
    const char *accf = "float32", *sum = "sequential";
    if (!f)
        return QF_EIO;
    /* accumulator: float32 unless the kept width says otherwise; alignment
     * narrower than the accumulator is claimed as the accumulator's width
     * (the claim has one width for both, qf_bound.h) */
    narrow = r->align != QF_PROBE_ALIGN_EXACT && r->align_frac_bits < acc;
    if (narrow)
        acc = r->align_frac_bits;
    else if (r->align != QF_PROBE_ALIGN_EXACT)
        guard = r->align_frac_bits - acc;
    if (r->order.kind == QF_PROBE_ORDER_PAIRWISE)
        sum = "pairwise";
    else if (r->order.kind == QF_PROBE_ORDER_SPLIT)
        sum = "splitk";
    yaml_emitter_initialize(&e);
    yaml_emitter_set_output(&e, write_fn, f);
    yaml_emitter_set_unicode(&e, 1);
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    bad |= !yaml_emitter_emit(&e, &ev);
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    bad |= !yaml_emitter_emit(&e, &ev);
    yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
    bad |= !yaml_emitter_emit(&e, &ev);
    bad |= kvi(&e, "claim_version", 1) || kv(&e, "kernel", r->kernel) || kv(&e, "dtype", r->dtype);
    bad |= scalar(&e, "arith");
    yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
    bad |= !yaml_emitter_emit(&e, &ev);
    bad |= kv(&e, "acc_format", accf) || kvi(&e, "acc_frac_bits", acc == 23 ? 0 : acc) ||
           kvi(&e, "block_fma", r->sum_tree ? 1 : r->block) ||
           kv(&e, "acc_round", qf_round_name(r->acc_round_known ? r->acc_round : QF_ROUND_RTZ)) ||
           kvi(&e, "align_truncates", r->align != QF_PROBE_ALIGN_EXACT) || kvi(&e, "guard_bits", guard) ||
           kvi(&e, "promote_interval", r->promote_interval) || kv(&e, "promote_format", "float32") ||
           kv(&e, "sum_order", sum) || kvi(&e, "split_k", r->order.kind == QF_PROBE_ORDER_SPLIT ? r->order.split : 1) ||
           kv(&e, "out_round", "rne") || kvi(&e, "flush_subnormals", r->flush_in == 1 || r->flush_out == 1) ||
           kvi(&e, "deterministic", r->deterministic) || kvi(&e, "deterministic_threads", r->deterministic_threads);
    if (r->fma == 1 || r->fma == 0)
        bad |= kv(&e, "fma", r->fma ? "fused" : "unfused");
    bad |= kv(&e, "order", claim_order_any(r) ? "any" : r->order_claim) ||
           kvi(&e, "product_frac_bits", r->product_frac_bits);
    if (r->align != QF_PROBE_ALIGN_EXACT)
        bad |= kv(&e, "align_round", align_name(r->align));
    bad |= kv(&e, "determinism", determinism_name(r));
    yaml_mapping_end_event_initialize(&ev);
    bad |= !yaml_emitter_emit(&e, &ev);
    bad |= write_replay(&e, r);
    bad |= scalar(&e, "evidence");
    yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
    bad |= !yaml_emitter_emit(&e, &ev);
    if (!r->acc_round_known)
        bad |= scalar(&e, "acc_round: RTZ and RNE fit every output; rtz (the larger bound) is claimed");
    if (narrow)
        bad |= scalar(&e, "acc_frac_bits: alignment keeps fewer bits than the accumulator; the claim states "
                          "the alignment width");
    for (size_t i = 0; i < r->n_evidence; i++)
        bad |= scalar(&e, r->evidence[i]);
    yaml_sequence_end_event_initialize(&ev);
    bad |= !yaml_emitter_emit(&e, &ev);
    yaml_mapping_end_event_initialize(&ev);
    bad |= !yaml_emitter_emit(&e, &ev);
    yaml_document_end_event_initialize(&ev, 1);
    bad |= !yaml_emitter_emit(&e, &ev);
    yaml_stream_end_event_initialize(&ev);
    bad |= !yaml_emitter_emit(&e, &ev);
    yaml_emitter_delete(&e);
    if (bad) {
        _qf_out_abort(&o);
        snprintf(err, err_size, "cannot write the claim to %s", path);
        return QF_EIO;
    }
    return _qf_out_commit(&o, err, err_size);
}
