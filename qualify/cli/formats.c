/* cli/formats.c: 'qualify formats': the format table, code dumps, encode
 * and decode from the command line. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "qf_format.h"

static const char *help_text =
    "usage: qualify formats [--json]\n"
    "       qualify formats --dump NAME\n"
    "       qualify formats --encode NAME [--round MODE] [--saturate|--no-saturate]\n"
    "                       [--seed S] [--random-bits B] VALUE...\n"
    "       qualify formats --decode NAME CODE...\n"
    "\n"
    "Without an action, print every number format and its properties.\n"
    "\n"
    "  --json             print the table as JSON\n"
    "  --dump NAME        one line per code, in code order: '0xCODE VALUE', VALUE\n"
    "                     as a C99 hex float, nan, inf or -inf (formats of 16 bits\n"
    "                     or less)\n"
    "  --encode NAME      print one 0xCODE per VALUE; VALUE is decimal, hex float,\n"
    "                     inf or nan, and is rounded once from its binary64 value\n"
    "  --decode NAME      print the exact value (hex float) of each CODE\n"
    "  --round MODE       rne (default), rna, rtz, up, down, stochastic; for\n"
    "                     float8_e8m0fnu also floor, ceil, even, rceil\n"
    "  --saturate         overflow and +-Inf give +-max\n"
    "  --no-saturate      overflow gives Inf, or NaN, or max (default)\n"
    "  --seed S           stochastic rounding seed (value i uses draw (S, i))\n"
    "  --random-bits B    stochastic rounding: random bits, 1..32 (default 32)\n"
    "  -h, --help         this text\n"
    "\n"
    "Names are canonical (float8_e4m3fn) or aliases (e4m3), case-insensitive.\n"
    "Exit codes: 0 success, 2 bad usage or bad input.\n";

static void print_value(FILE *out, double v)
{
    if (isnan(v))
        fputs("nan", out);
    else if (isinf(v))
        fputs(v < 0 ? "-inf" : "inf", out);
    else
        fprintf(out, "%a", v);
}

static int code_digits(const qf_format *f)
{
    return (f->storage_bits > f->bits ? f->bits : f->storage_bits) / 4 +
           (((f->storage_bits > f->bits ? f->bits : f->storage_bits) % 4) != 0);
}

static const char *nan_desc(const qf_format *f)
{
    switch (f->nan) {
    case QF_NAN_IEEE: return "ieee";
    case QF_NAN_FN: return "all-ones";
    case QF_NAN_FNUZ: return "0x80";
    case QF_NAN_E8M0: return "0xFF";
    case QF_NAN_NONE: return "none";
    }
    return "?";
}

static const char *kind_name(const qf_format *f)
{
    return f->kind == QF_KIND_FLOAT ? "float" : f->kind == QF_KIND_SCALE ? "scale" : "int";
}

static int print_table(void)
{
    int i;
    printf("%-16s %-6s %4s %4s %4s %4s %5s %-14s %-14s %-14s %-10s %-3s %-8s %-3s %s\n", "name", "kind",
           "bits", "exp", "man", "bias", "emin", "max", "min_normal", "min_subnorm", "epsilon", "inf",
           "nan", "-0", "aliases");
    for (i = 0; i < QF_FORMAT_COUNT; i++) {
        const qf_format *f = qf_format_get((qf_format_id)i);
        printf("%-16s %-6s %4d %4d %4d %4d %5d %-14.8g %-14.8g %-14.8g %-10.4g %-3s %-8s %-3s %s\n",
               f->name, kind_name(f), f->bits, f->exp_bits, f->man_bits, f->bias, f->emin, f->max,
               f->min_normal, f->min_subnormal, f->epsilon, f->has_inf ? "yes" : "no", nan_desc(f),
               f->has_negzero ? "yes" : "no", f->aliases);
    }
    return QF_EXIT_OK;
}

static json_t *hexfloat(double v)
{
    char buf[64];
    if (isnan(v))
        return json_string("nan");
    snprintf(buf, sizeof buf, "%a", v);
    return json_string(buf);
}

static int print_json(void)
{
    json_t *arr = json_array();
    int i;
    char *s;
    for (i = 0; i < QF_FORMAT_COUNT; i++) {
        const qf_format *f = qf_format_get((qf_format_id)i);
        json_t *o = json_object(), *al = json_array();
        const char *a = f->aliases;
        while (*a) {
            size_t len = strcspn(a, " ");
            json_array_append_new(al, json_stringn(a, len));
            a += len;
            while (*a == ' ')
                a++;
        }
        json_object_set_new(o, "name", json_string(f->name));
        json_object_set_new(o, "aliases", al);
        json_object_set_new(o, "kind", json_string(kind_name(f)));
        json_object_set_new(o, "bits", json_integer(f->bits));
        json_object_set_new(o, "storage_bits", json_integer(f->storage_bits));
        json_object_set_new(o, "signed", json_boolean(f->is_signed));
        if (f->kind != QF_KIND_INT) {
            json_object_set_new(o, "exponent_bits", json_integer(f->exp_bits));
            json_object_set_new(o, "mantissa_bits", json_integer(f->man_bits));
            json_object_set_new(o, "bias", json_integer(f->bias));
            json_object_set_new(o, "emin", json_integer(f->emin));
            json_object_set_new(o, "emax", json_integer(f->emax));
        } else {
            json_object_set_new(o, "int_min", json_integer(f->int_min));
            json_object_set_new(o, "int_max", json_integer(f->int_max));
        }
        json_object_set_new(o, "max", json_real(f->max));
        json_object_set_new(o, "max_hex", hexfloat(f->max));
        json_object_set_new(o, "min_normal", json_real(f->min_normal));
        json_object_set_new(o, "min_subnormal", json_real(f->min_subnormal));
        json_object_set_new(o, "epsilon", json_real(f->epsilon));
        json_object_set_new(o, "has_inf", json_boolean(f->has_inf));
        json_object_set_new(o, "nan", json_string(nan_desc(f)));
        json_object_set_new(o, "has_negative_zero", json_boolean(f->has_negzero));
        json_object_set_new(o, "has_subnormals", json_boolean(f->has_subnormal));
        json_object_set_new(o, "max_code", json_integer((json_int_t)f->max_code));
        json_object_set_new(o, "source", json_string(f->source));
        json_array_append_new(arr, o);
    }
    s = json_dumps(arr, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(arr);
    if (s == NULL)
        return qf_cli_usage_error("formats", "out of memory");
    puts(s);
    free(s);
    return QF_EXIT_OK;
}

static const qf_format *need_format(const char *name)
{
    const qf_format *f = qf_format_lookup(name);
    if (f == NULL) {
        char names[512];
        qf_format_list_names(names, sizeof names);
        qf_cli_usage_error("formats", "unknown format '%s'; valid formats: %s", name, names);
    }
    return f;
}

static int dump(const qf_format *f)
{
    uint64_t c, n;
    int w = code_digits(f);
    if (f->bits > 16)
        return qf_cli_usage_error("formats", "--dump: format '%s' has %d bits; dumps cover formats of 16 bits or less",
                                  f->name, f->bits);
    n = 1ull << f->bits;
    for (c = 0; c < n; c++) {
        printf("0x%0*" PRIX64 " ", w, c);
        print_value(stdout, qf_format_decode(f, c));
        putchar('\n');
    }
    return QF_EXIT_OK;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    /* ERANGE on overflow/underflow still gives the correctly rounded double
     * (+-HUGE_VAL or a subnormal/zero), which is what we want to encode. */
    return end != s && *end == '\0';
}

enum { OPT_JSON = 1, OPT_DUMP, OPT_ENCODE, OPT_DECODE, OPT_ROUND, OPT_SAT, OPT_NOSAT, OPT_SEED, OPT_RBITS };

static int formats_main(int argc, char **argv, const struct option *opts, char **pos, int *npos);

int qf_cli_formats(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, OPT_JSON },
        { "dump", required_argument, NULL, OPT_DUMP },
        { "encode", required_argument, NULL, OPT_ENCODE },
        { "decode", required_argument, NULL, OPT_DECODE },
        { "round", required_argument, NULL, OPT_ROUND },
        { "saturate", no_argument, NULL, OPT_SAT },
        { "no-saturate", no_argument, NULL, OPT_NOSAT },
        { "seed", required_argument, NULL, OPT_SEED },
        { "random-bits", required_argument, NULL, OPT_RBITS },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int npos = 0, rc;
    if (pos == NULL)
        return qf_cli_usage_error("formats", "out of memory");
    rc = formats_main(argc, argv, opts, pos, &npos);
    free(pos);
    return rc;
}

/* Options may follow values; a value such as -1.5 or -inf is a value. */
static int is_value(const char *a)
{
    return a[0] != '-' || (a[1] != '-' && a[1] != 'h' && a[1] != '\0');
}

static int formats_main(int argc, char **argv, const struct option *opts, char **pos, int *npos)
{
    int json = 0, c, i, actions = 0, argc_pos;
    const char *dump_name = NULL, *enc_name = NULL, *dec_name = NULL, *round_name = NULL;
    qf_encode_opts eo = qf_encode_opts_default();

    optind = 1;
    opterr = 0;
    for (;;) {
        char *end;
        if (optind < argc && is_value(argv[optind])) {
            pos[(*npos)++] = argv[optind++];
            continue;
        }
        if ((c = getopt_long(argc, argv, "+h", opts, NULL)) == -1) {
            if (optind < argc) { /* "--": everything after is a value */
                while (optind < argc)
                    pos[(*npos)++] = argv[optind++];
            }
            break;
        }
        switch (c) {
        case OPT_JSON: json = 1; break;
        case OPT_DUMP: dump_name = optarg; actions++; break;
        case OPT_ENCODE: enc_name = optarg; actions++; break;
        case OPT_DECODE: dec_name = optarg; actions++; break;
        case OPT_ROUND: round_name = optarg; break;
        case OPT_SAT: eo.saturate = 1; break;
        case OPT_NOSAT: eo.saturate = 0; break;
        case OPT_SEED:
            errno = 0;
            eo.seed = strtoull(optarg, &end, 0);
            if (*optarg == '\0' || *end != '\0' || errno)
                return qf_cli_usage_error("formats", "--seed: '%s' is not an unsigned integer", optarg);
            break;
        case OPT_RBITS:
            errno = 0;
            eo.random_bits = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || eo.random_bits < 1 || eo.random_bits > 32)
                return qf_cli_usage_error("formats", "--random-bits: '%s' is not an integer in 1..32", optarg);
            break;
        case 'h': fputs(help_text, stdout); return QF_EXIT_OK;
        default:
            if (optopt)
                return qf_cli_usage_error("formats", "option '%s' needs a value or is unknown; see --help",
                                          argv[optind - 1]);
            return qf_cli_usage_error("formats", "unknown option '%s'; see --help", argv[optind - 1]);
        }
    }
    argc_pos = *npos;
    if (actions > 1)
        return qf_cli_usage_error("formats", "--dump, --encode and --decode exclude each other");
    if (round_name && !enc_name)
        return qf_cli_usage_error("formats", "--round only applies to --encode");
    if (dump_name) {
        const qf_format *f = need_format(dump_name);
        if (*npos > 0)
            return qf_cli_usage_error("formats", "unexpected argument '%s'", pos[0]);
        return f ? dump(f) : QF_EXIT_USAGE;
    }
    if (enc_name || dec_name) {
        const qf_format *f = need_format(enc_name ? enc_name : dec_name);
        if (f == NULL)
            return QF_EXIT_USAGE;
        if (*npos == 0)
            return qf_cli_usage_error("formats", "%s: no values given", enc_name ? "--encode" : "--decode");
        if (round_name) {
            if (qf_round_lookup(round_name, &eo.round) != QF_OK || !qf_round_valid(f, eo.round)) {
                int r;
                fprintf(stderr, "qualify formats: unknown rounding mode '%s' for %s; valid modes:", round_name,
                        f->name);
                for (r = 0; r < QF_ROUND_COUNT; r++)
                    if (qf_round_valid(f, (qf_round)r))
                        fprintf(stderr, " %s", qf_round_name((qf_round)r));
                fputc('\n', stderr);
                return QF_EXIT_USAGE;
            }
        }
        /* Parse every value first: bad input prints nothing to stdout. */
        for (i = 0; i < argc_pos; i++) {
            double v;
            if (enc_name && !parse_double(pos[i], &v))
                return qf_cli_usage_error("formats", "value %d '%s' is not a number (decimal, hex float, inf, nan)",
                                          i + 1, pos[i]);
            if (dec_name) {
                char *end;
                errno = 0;
                (void)strtoull(pos[i], &end, 0);
                if (pos[i][0] == '\0' || pos[i][0] == '-' || *end != '\0' || errno)
                    return qf_cli_usage_error("formats", "code %d '%s' is not an unsigned integer", i + 1,
                                              pos[i]);
            }
        }
        for (i = 0; i < argc_pos; i++) {
            if (enc_name) {
                double v;
                uint64_t code;
                parse_double(pos[i], &v);
                code = qf_format_encode(f, v, eo.round, eo.saturate, eo.random_bits,
                                        qf_rng_u64(eo.seed, (uint64_t)i));
                printf("0x%0*" PRIX64 "\n", f->id == QF_TF32 ? 8 : code_digits(f), code);
            } else {
                uint64_t code = strtoull(pos[i], NULL, 0);
                print_value(stdout, qf_format_decode(f, code));
                putchar('\n');
            }
        }
        return QF_EXIT_OK;
    }
    if (*npos > 0)
        return qf_cli_usage_error("formats", "unexpected argument '%s'", pos[0]);
    return json ? print_json() : print_table();
}
