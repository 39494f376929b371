/* cli/ref.c: 'qualify ref OP': exact or correctly rounded references
 * computed from NumPy .npy files (docs/refs.md).  This file holds the
 * option and op tables, the help and the argument parsing; _ref.h says
 * where the rest is. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_ref.h"
#include "qf_runner.h"
#include "qf_suite.h"

/* clang-format off */
const opt_info _qf_cr_optinfo[O_COUNT] = {
    [O_OUT]          = { "out",            1, "FILE", "output values, float64 .npy: each the exact value of its rounded result (required)" },
    [O_STATUS]       = { "status",         1, "FILE", "per-element status, uint8 .npy: 0 exact, 1 rounded, 2 undecided, 3 undefined" },
    [O_CODES]        = { "codes",          1, "FILE", "per-element codes in --out-dtype, uint8/16/32/64 .npy" },
    [O_IN_DTYPE]     = { "in-dtype",       1, "NAME", "format of the main inputs: float data must be exactly representable in it;\n"
                                                      "integer or raw (|V2, <f1) files of its width are read as its codes" },
    [O_AUX_DTYPE]    = { "aux-dtype",      1, "NAME", "the same for the secondary inputs: --c, --weight, --bias, --mask-add,\n"
                                                      "--scales, --sel-bias, --inv-freq (default: their file's values as they are)" },
    [O_OUT_DTYPE]    = { "out-dtype",      1, "NAME", "format the results are rounded into (default float64)" },
    [O_ROUND]        = { "round",          1, "MODE", "rne (default), rna, rtz, up, down; e8m0 also floor, ceil, even, rceil" },
    [O_SAT]          = { "saturate",       0, NULL,   "overflow gives +-max of --out-dtype" },
    [O_NOSAT]        = { "no-saturate",    0, NULL,   "overflow gives Inf, or NaN, or max, per the format (default)" },
    [O_STRICT]       = { "strict",         0, NULL,   "exit 1 when some element is undecided (default: exit 0, warn)" },
    [O_QUIET]        = { "quiet",          0, NULL,   "no summary line on stdout" },
    [O_THREADS]      = { "threads",        1, "N",    "OpenMP threads (default: all; the results do not depend on it)" },
    [O_PREC_MAX]     = { "prec-max",       1, "BITS", "largest MPFR working precision tried before 'undecided' (default 4096)" },
    [O_MAX_MEM]      = { "max-case-memory", 1, "SIZE", "refuse inputs and outputs estimated above SIZE bytes (512M, 4G: powers of\n"
                                                      "1024) before allocating them (default: a quarter of physical memory)" },
    [O_HELP]         = { "help",           0, NULL,   "this text" },
    [O_A]            = { "a",              1, "FILE", "A: [M, K], or [K, M] with --trans-a; [batch, ...] for a batch" },
    [O_B]            = { "b",              1, "FILE", "B: [K, N], or [N, K] with --trans-b; [batch, ...] for a batch" },
    [O_C]            = { "c",              1, "FILE", "C: [M, N] or [batch, M, N] (a 2-d C is shared by the batch)" },
    [O_ALPHA]        = { "alpha",          1, "X",    "alpha (default 1)" },
    [O_BETA]         = { "beta",           1, "X",    "beta (default 1 with --c; beta 0 does not read C)" },
    [O_TRANS_A]      = { "trans-a",        0, NULL,   "op(A) = A^T" },
    [O_TRANS_B]      = { "trans-b",        0, NULL,   "op(B) = B^T" },
    [O_X]            = { "x",              1, "FILE", "input" },
    [O_SCALE]        = { "scale",          1, "X",    "logit scale (softmax: default 1; attention: default 1/sqrt(head_dim),\n"
                                                      "the real number, not a rounded double)" },
    [O_Q]            = { "q",              1, "FILE", "queries [batch, heads, seq_q, head_dim] ([heads, seq_q, d] or [seq_q, d] too)" },
    [O_K]            = { "k",              1, "FILE", "keys [batch, kv_heads, seq_k, head_dim]; kv_heads divides heads (GQA/MQA)" },
    [O_V]            = { "v",              1, "FILE", "values [batch, kv_heads, seq_k, head_dim_v]" },
    [O_CAUSAL]       = { "causal",         0, NULL,   "causal mask (window-right 0)" },
    [O_WIN_L]        = { "window-left",    1, "N",    "keep keys j >= P - N (P: the query's position; default unbounded)" },
    [O_WIN_R]        = { "window-right",   1, "N",    "keep keys j <= P + N (default unbounded)" },
    [O_SOFTCAP]      = { "softcap",        1, "X",    "logit soft cap: s = X tanh(s / X) (default none)" },
    [O_MASK_ADD]     = { "mask-add",       1, "FILE", "additive mask [.., seq_q, seq_k], leading dims 1 or batch/heads (-inf allowed)" },
    [O_MASK_BOOL]    = { "mask-bool",      1, "FILE", "boolean mask [.., seq_q, seq_k], nonzero = keep" },
    [O_LSE_OUT]      = { "lse-out",        1, "FILE", "log-sum-exp per query row, float64 .npy [batch, heads, seq_q]" },
    [O_LSE_DTYPE]    = { "lse-dtype",      1, "NAME", "format the lse is rounded into (default: --out-dtype)" },
    [O_ALIGN]        = { "align",          1, "WHERE","top-left (default; PyTorch SDPA) or bottom-right (FlashAttention):\n"
                                                      "query i sits at position i, or i + seq_k - seq_q" },
    [O_MASKED_ROW]   = { "masked-row-value", 1, "X",  "output of a row with no kept key (default 0; PyTorch gives nan)" },
    [O_EPS]          = { "eps",            1, "X",    "epsilon (default 1e-6 rmsnorm, 1e-5 layernorm; the binary64 nearest)" },
    [O_WEIGHT]       = { "weight",         1, "FILE", "weight [cols]" },
    [O_BIAS]         = { "bias",           1, "FILE", "bias [cols]" },
    [O_WEIGHT_OFFSET]= { "weight-offset",  1, "X",    "factor (X + weight); 1 for Gemma's (1 + w) (default 0)" },
    [O_APPROX]       = { "approx",         1, "KIND", "erf (default) or tanh" },
    [O_GATE]         = { "gate",           1, "FILE", "gate input (activation side)" },
    [O_UP]           = { "up",             1, "FILE", "up input (linear side), same shape as --gate" },
    [O_THETA]        = { "theta",          1, "X",    "base of the frequencies theta^(-2i/rotary_dim) (default 10000)" },
    [O_LAYOUT]       = { "layout",         1, "KIND", "interleaved (GPT-J: pairs 2i, 2i+1) or half (GPT-NeoX, Llama:\n"
                                                      "pairs i, i + rotary_dim/2); required" },
    [O_OFFSET]       = { "offset",         1, "N",    "position of the first token (default 0)" },
    [O_ROTARY_DIM]   = { "rotary-dim",     1, "N",    "rotated components per head, even (default head_dim)" },
    [O_POSITIONS]    = { "positions",      1, "FILE", "integer positions [tokens] (or [batch, tokens]); overrides --offset" },
    [O_INV_FREQ]     = { "inv-freq",       1, "FILE", "the frequency table [rotary_dim / 2] to use instead of theta" },
    [O_LOGITS]       = { "logits",         1, "FILE", "router logits [tokens, experts]" },
    [O_TOP_K]        = { "top-k",          1, "K",    "experts per token (required)" },
    [O_SCORE]        = { "score",          1, "KIND", "softmax (default) or sigmoid" },
    [O_RENORM]       = { "renorm",         0, NULL,   "divide the selected weights by their sum" },
    [O_ROUTE_SCALE]  = { "route-scale",    1, "X",    "multiply the weights by X (default 1)" },
    [O_SEL_BIAS]     = { "sel-bias",       1, "FILE", "selection bias [experts] (DeepSeek-V3): steers selection only" },
    [O_TIE_TOL]      = { "tie-tol",        1, "X",    "keys within X count as ties (default 0)" },
    [O_INDICES]      = { "indices",        1, "FILE", "selected experts, int32 .npy [tokens, top_k]" },
    [O_TIES]         = { "ties",           1, "FILE", "tie flags, uint8 .npy [tokens, top_k]: 1 set tie, 2 order tie" },
    [O_SCALES]       = { "scales",         1, "FILE", "scales, one per group (default: none, i.e. 1)" },
    [O_GROUP]        = { "group",          1, "G",    "elements per scale, along the flattened input (default 0: one scale)" },
};
/* clang-format on */

/* ---- The op table ------------------------------------------------------------------------------- */

static const int gemm_opts[] = {O_A, O_B, O_C, O_ALPHA, O_BETA, O_TRANS_A, O_TRANS_B, 0};
static const int softmax_opts[] = {O_X, O_SCALE, 0};
static const int attn_opts[] = {O_Q,         O_K,          O_V,       O_SCALE,     O_SOFTCAP,
                                O_CAUSAL,    O_WIN_L,      O_WIN_R,   O_ALIGN,     O_MASK_ADD,
                                O_MASK_BOOL, O_MASKED_ROW, O_LSE_OUT, O_LSE_DTYPE, 0};
static const int norm_opts[] = {O_X, O_EPS, O_WEIGHT, O_BIAS, O_WEIGHT_OFFSET, 0};
static const int gelu_opts[] = {O_X, O_APPROX, 0};
static const int x_opts[] = {O_X, 0};
static const int swiglu_opts[] = {O_GATE, O_UP, O_X, 0};
static const int geglu_opts[] = {O_GATE, O_UP, O_X, O_APPROX, 0};
static const int rope_opts[] = {O_X, O_LAYOUT, O_THETA, O_OFFSET, O_POSITIONS, O_ROTARY_DIM, O_INV_FREQ, 0};
static const int moe_opts[] = {O_LOGITS,   O_TOP_K,   O_SCORE,   O_RENORM, O_ROUTE_SCALE,
                               O_SEL_BIAS, O_TIE_TOL, O_INDICES, O_TIES,   0};
static const int quant_opts[] = {O_X, O_SCALES, O_GROUP, 0};

/* clang-format off */
static const ref_op ops[] = {
    { "gemm",        _qf_cr_run_gemm,       0,                   "D = alpha op(A) op(B) + beta C, exact dot products rounded once",
      "--a A.npy --b B.npy [--c C.npy --alpha X --beta Y] [--trans-a] [--trans-b] -o D.npy", gemm_opts,
      "Shapes: op(A) [M, K], op(B) [K, N], D [M, N]; a 3-d A or B is a batch (a 2-d one is shared).\n"
      "Every element is the exact alpha sum a*b + beta c rounded once into --out-dtype: never\n"
      "undecided.  alpha and beta are the binary64 values of their text (hex floats are exact).\n" },
    { "softmax",     _qf_cr_run_rows,       0,                   "softmax over the last axis",
      "--x X.npy [--scale S] -o Y.npy", softmax_opts,
      "y = exp(S x) / sum exp(S x) along the last axis of x (any leading shape).  -inf entries give 0;\n"
      "a row of -inf, or with nan or +inf, is undefined (nan).\n" },
    { "log-softmax", _qf_cr_run_rows,       1,                   "log-softmax over the last axis",
      "--x X.npy [--scale S] -o Y.npy", softmax_opts,
      "y = S x - log sum exp(S x) along the last axis.  Special values as for softmax.\n" },
    { "attention",   _qf_cr_run_attention,  0,                   "attention forward: softmax(scale q k^T + masks) v, and the lse",
      "--q Q.npy --k K.npy --v V.npy [--causal] [--window-left N] [--window-right N] [--scale X]\n"
      "                       [--softcap X] [--mask-add M.npy] [--mask-bool M.npy] [--lse-out L.npy] -o O.npy", attn_opts,
      "Layout BHSD: q [batch, heads, seq_q, d], k [batch, kv_heads, seq_k, d], v [batch, kv_heads, seq_k,\n"
      "dv], out [batch, heads, seq_q, dv]; heads / kv_heads query heads share a kv head (GQA).\n"
      "The default scale is 1/sqrt(d) as a real number.  A row with no kept key gives\n"
      "--masked-row-value (undefined status) and lse -inf.\n" },
    { "rmsnorm",     _qf_cr_run_norm,       0,                   "RMSNorm over the last axis",
      "--x X.npy [--eps E] [--weight W.npy] [--bias B.npy] [--weight-offset X] -o Y.npy", norm_opts,
      "y = x / sqrt(mean(x^2) + eps) * (offset + w) + b along the last axis.\n" },
    { "layernorm",   _qf_cr_run_norm,       1,                   "LayerNorm over the last axis",
      "--x X.npy [--eps E] [--weight W.npy] [--bias B.npy] [--weight-offset X] -o Y.npy", norm_opts,
      "y = (x - mean) / sqrt(var + eps) * (offset + w) + b, var the biased (1/n) variance.\n" },
    { "gelu",        _qf_cr_run_act,        QF_REF_ACT_GELU_ERF, "GELU, erf or tanh form",
      "--x X.npy [--approx erf|tanh] -o Y.npy", gelu_opts,
      "erf: x/2 (1 + erf(x/sqrt 2)); tanh: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).\n" },
    { "silu",        _qf_cr_run_act,        QF_REF_ACT_SILU,     "SiLU: x / (1 + exp(-x))",
      "--x X.npy -o Y.npy", x_opts, "" },
    { "sigmoid",     _qf_cr_run_act,        QF_REF_ACT_SIGMOID,  "sigmoid: 1 / (1 + exp(-x))",
      "--x X.npy -o Y.npy", x_opts, "" },
    { "relu",        _qf_cr_run_act,        QF_REF_ACT_RELU,     "ReLU: max(x, 0)",
      "--x X.npy -o Y.npy", x_opts, "" },
    { "swiglu",      _qf_cr_run_glu,        QF_REF_ACT_SILU,     "SwiGLU: silu(gate) * up",
      "(--gate G.npy --up U.npy | --x X.npy) -o Y.npy", swiglu_opts,
      "A fused --x [..., 2d] is split as gate = x[..., :d], up = x[..., d:] (vLLM silu_and_mul).\n" },
    { "geglu",       _qf_cr_run_glu,        QF_REF_ACT_GELU_ERF, "GeGLU: gelu(gate) * up",
      "(--gate G.npy --up U.npy | --x X.npy) [--approx erf|tanh] -o Y.npy", geglu_opts,
      "A fused --x [..., 2d] is split as gate = x[..., :d], up = x[..., d:].\n" },
    { "rope",        _qf_cr_run_rope,       0,                   "rotary position embedding",
      "--x X.npy --layout interleaved|half [--theta T] [--offset N | --positions P.npy]\n"
      "                  [--rotary-dim R] [--inv-freq F.npy] -o Y.npy", rope_opts,
      "x [tokens, heads, head_dim] (also [tokens, head_dim], or [batch, tokens, heads, head_dim] with\n"
      "positions restarting per batch).  Token t sits at position offset + t.\n" },
    { "moe-router",  _qf_cr_run_moe,        0,                   "mixture-of-experts router: top-k experts and their weights",
      "--logits L.npy --top-k K [--score softmax|sigmoid] [--renorm] [--route-scale X]\n"
      "                        [--sel-bias B.npy] [--tie-tol X] [--indices I.npy] [--ties T.npy] -o W.npy", moe_opts,
      "-o gets the weights [tokens, top_k]; --indices the experts (int32), in decreasing key order,\n"
      "equal keys by lower index; --ties marks slots a kernel may legitimately fill differently.\n" },
    { "sum",         _qf_cr_run_rows,       2,                   "sum over the last axis",
      "--x X.npy -o Y.npy", x_opts, "The output drops the last axis.  An empty row sums to 0.\n" },
    { "amax",        _qf_cr_run_rows,       3,                   "max |x| over the last axis",
      "--x X.npy -o Y.npy", x_opts, "The output drops the last axis.  An empty row gives 0.\n" },
    { "quantize",    _qf_cr_run_quant,      0,                   "code = round(x / scale) into --out-dtype",
      "--x X.npy --out-dtype NAME [--scales S.npy [--group G]] -o Y.npy [--codes C.npy]", quant_opts,
      "Element i (flattened) uses scales[i / G]; G = 0 (default) uses one scale.  -o gets the exact\n"
      "values of the codes (x / scale rounded once), --codes the codes.\n" },
    { "dequantize",  _qf_cr_run_quant,      1,                   "y = decode(code) * scale, rounded into --out-dtype",
      "--x CODES.npy --in-dtype NAME [--scales S.npy [--group G]] -o Y.npy", quant_opts,
      "--x holds codes of --in-dtype (uint8/uint16 files) or its values.\n" },
};
/* clang-format on */

#define N_OPS (sizeof ops / sizeof ops[0])

static void list_ops(FILE *fp)
{
    size_t i;
    for (i = 0; i < N_OPS; i++)
        fprintf(fp, " %s", ops[i].name);
}

static void print_opt(FILE *fp, int id)
{
    char left[64];
    const char *h = _qf_cr_optinfo[id].help, *nl;
    if (id == O_OUT)
        snprintf(left, sizeof left, "-o, --%s %s", _qf_cr_optinfo[id].name, _qf_cr_optinfo[id].arg);
    else if (id == O_HELP)
        snprintf(left, sizeof left, "-h, --help");
    else
        snprintf(left, sizeof left, "--%s%s%s", _qf_cr_optinfo[id].name, _qf_cr_optinfo[id].arg ? " " : "",
                 _qf_cr_optinfo[id].arg ? _qf_cr_optinfo[id].arg : "");
    fprintf(fp, "  %-22s ", left);
    while ((nl = strchr(h, '\n')) != NULL) {
        fprintf(fp, "%.*s\n%25s", (int)(nl - h), h, "");
        h = nl + 1;
    }
    fprintf(fp, "%s\n", h);
}

static void help_general(FILE *fp)
{
    size_t i;
    fprintf(fp, "usage: qualify ref OP [options] -o OUT.npy\n"
                "       qualify ref OP --help\n"
                "\n"
                "Compute an exact or correctly rounded reference from NumPy .npy inputs (float64,\n"
                "float32, float16 natively; other formats as codes or values with --in-dtype NAME).\n"
                "Each output element is rounded once, from the exact real result, into --out-dtype\n"
                "and written as the float64 value of that rounding.\n"
                "\n"
                "ops:\n");
    for (i = 0; i < N_OPS; i++)
        fprintf(fp, "  %-12s %s\n", ops[i].name, ops[i].summary);
    fprintf(fp, "\noptions of every op:\n");
    for (i = 1; i < O_COMMON_END; i++)
        print_opt(fp, (int)i);
    fprintf(fp, "\nExit codes: 0 success (undecided elements are warned about on stderr), 1 undecided\n"
                "elements with --strict, 2 bad usage or bad input.  docs/refs.md has the guarantees.\n");
}

static void help_op(FILE *fp, const ref_op *op)
{
    int i;
    fprintf(fp, "usage: qualify ref %s %s\n\n%s.\n", op->name, op->synopsis, op->summary);
    if (op->notes && *op->notes)
        fprintf(fp, "\n%s", op->notes);
    fprintf(fp, "\noptions:\n");
    for (i = 0; op->opts[i]; i++)
        print_opt(fp, op->opts[i]);
    fprintf(fp, "\noptions of every op:\n");
    for (i = 1; i < O_COMMON_END; i++)
        print_opt(fp, i);
    fprintf(fp, "\nExit codes: 0 success, 1 undecided elements with --strict, 2 bad usage or bad input.\n");
}

static int op_allows(const ref_op *op, int id)
{
    int i;
    if (id < O_COMMON_END)
        return 1;
    for (i = 0; op->opts[i]; i++)
        if (op->opts[i] == id)
            return 1;
    return 0;
}

static const qf_format *format_opt(args *a, int id)
{
    const qf_format *f;
    if (!a->seen[id])
        return NULL;
    f = qf_format_lookup(a->str[id]);
    if (f == NULL) {
        char names[512];
        qf_format_list_names(names, sizeof names);
        _qf_cr_err(a, "--%s: unknown format '%s'; valid formats: %s", OPTNAME(id), a->str[id], names);
    }
    return f;
}

/* Long options return OPT_BASE + id, clear of the short option letters. */
#define OPT_BASE 256

/* Options may follow the op name; an option's argument may start with '-'
 * (--alpha -1.5). */
int qf_cli_ref(int argc, char **argv)
{
    struct option lopts[O_COUNT + 1];
    args A;
    args *a = &A;
    const char *pos[2] = {NULL, NULL};
    int npos = 0, c, i, help = 0, extra = 0, rc;
    qf_suite_op sop;

    memset(a, 0, sizeof *a);
    snprintf(a->cmd, sizeof a->cmd, "ref");
    for (i = 1, c = 0; i < O_COUNT; i++, c++) {
        lopts[c].name = _qf_cr_optinfo[i].name;
        lopts[c].has_arg = _qf_cr_optinfo[i].has_arg ? required_argument : no_argument;
        lopts[c].flag = NULL;
        lopts[c].val = OPT_BASE + i;
    }
    memset(&lopts[c], 0, sizeof lopts[c]);

    optind = 1;
    opterr = 0;
    for (;;) {
        int id;
        if (optind < argc && (argv[optind][0] != '-' || argv[optind][1] == '\0')) {
            if (npos < 2)
                pos[npos] = argv[optind];
            npos++;
            optind++;
            continue;
        }
        if ((id = getopt_long(argc, argv, "+ho:", lopts, NULL)) == -1) {
            while (optind < argc) { /* after "--" */
                if (npos < 2)
                    pos[npos] = argv[optind];
                npos++;
                optind++;
            }
            break;
        }
        if (id == 'h')
            id = O_HELP;
        else if (id == 'o')
            id = O_OUT;
        else if (id > OPT_BASE && id < OPT_BASE + O_COUNT)
            id -= OPT_BASE;
        else {
            if (optopt == 'o' || (optopt > OPT_BASE && optopt < OPT_BASE + O_COUNT))
                return _qf_cr_err(a, "option '%s' needs a value; see 'qualify ref --help'", argv[optind - 1]);
            return _qf_cr_err(a, "unknown option '%s'; see 'qualify ref --help'", argv[optind - 1]);
        }
        if (id == O_HELP) {
            help = 1;
            continue;
        }
        if (a->seen[id] && _qf_cr_optinfo[id].has_arg && strcmp(a->str[id], optarg))
            return _qf_cr_err(a, "--%s given twice ('%s' and '%s')", OPTNAME(id), a->str[id], optarg);
        a->seen[id] = 1;
        a->str[id] = _qf_cr_optinfo[id].has_arg ? optarg : NULL;
    }
    extra = npos > 1;
    if (npos == 0) {
        if (help) {
            help_general(stdout);
            return QF_EXIT_OK;
        }
        fprintf(stderr, "qualify ref: no op given; valid ops:");
        list_ops(stderr);
        fputc('\n', stderr);
        return QF_EXIT_USAGE;
    }
    for (i = 0; i < (int)N_OPS; i++)
        if (!strcmp(pos[0], ops[i].name))
            a->op = &ops[i];
    if (a->op == NULL && qf_suite_op_lookup(pos[0], &sop) == QF_OK) {
        /* The op table's spelling (log_softmax, moe_router) names the same
         * reference; activations are named per function here. */
        char alias[64];
        size_t j;
        snprintf(alias, sizeof alias, "%s", pos[0]);
        for (j = 0; alias[j]; j++)
            if (alias[j] == '_')
                alias[j] = '-';
        for (i = 0; i < (int)N_OPS; i++)
            if (!strcmp(alias, ops[i].name))
                a->op = &ops[i];
        if (a->op == NULL && qf_suite_op_kernel_op(sop) == QF_OP_ACTIVATION) {
            fprintf(stderr,
                    "qualify ref: '%s' is named per function here: gelu, silu, sigmoid, relu (glu: swiglu, "
                    "geglu)\n",
                    pos[0]);
            return QF_EXIT_USAGE;
        }
    }
    if (a->op == NULL) {
        fprintf(stderr, "qualify ref: unknown op '%s'; valid ops:", pos[0]);
        list_ops(stderr);
        fputc('\n', stderr);
        return QF_EXIT_USAGE;
    }
    snprintf(a->cmd, sizeof a->cmd, "ref %s", a->op->name);
    if (help) {
        help_op(stdout, a->op);
        return QF_EXIT_OK;
    }
    if (extra)
        return _qf_cr_err(a, "unexpected argument '%s' (inputs are given with options such as --x FILE)",
                          pos[1]);
    for (i = 1; i < O_COUNT; i++)
        if (a->seen[i] && !op_allows(a->op, i))
            return _qf_cr_err(a, "--%s does not apply to %s; see 'qualify ref %s --help'", OPTNAME(i),
                              a->op->name, a->op->name);
    if ((rc = _qf_cr_need(a, O_OUT)))
        return rc;
    {
        static const int outs[] = {O_OUT, O_STATUS, O_CODES, O_LSE_OUT, O_INDICES, O_TIES};
        size_t u, v;
        for (u = 0; u < sizeof outs / sizeof outs[0]; u++)
            for (v = u + 1; v < sizeof outs / sizeof outs[0]; v++)
                if (a->seen[outs[u]] && a->seen[outs[v]] && !strcmp(a->str[outs[u]], a->str[outs[v]]))
                    return _qf_cr_err(a, "--%s and --%s name the same file '%s'", OPTNAME(outs[u]),
                                      OPTNAME(outs[v]), a->str[outs[u]]);
    }

    /* Formats, rounding, precision. */
    if ((a->seen[O_IN_DTYPE] && !(a->in_fmt = format_opt(a, O_IN_DTYPE))) ||
        (a->seen[O_AUX_DTYPE] && !(a->aux_fmt = format_opt(a, O_AUX_DTYPE))) ||
        (a->seen[O_LSE_DTYPE] && !(a->lse_fmt = format_opt(a, O_LSE_DTYPE))))
        return QF_EXIT_USAGE;
    a->out_fmt = qf_format_get(QF_FLOAT64);
    if (a->seen[O_OUT_DTYPE] && !(a->out_fmt = format_opt(a, O_OUT_DTYPE)))
        return QF_EXIT_USAGE;
    a->ro = qf_ref_opts_default();
    a->ro.format = a->out_fmt;
    if (a->seen[O_SAT] && a->seen[O_NOSAT])
        return _qf_cr_err(a, "--saturate and --no-saturate exclude each other");
    a->ro.saturate = a->seen[O_SAT];
    if (a->seen[O_ROUND]) {
        qf_round r = QF_ROUND_RNE;
        int known = qf_round_lookup(a->str[O_ROUND], &r) == QF_OK;
        if (!known || !qf_round_valid(a->out_fmt, r) || r == QF_ROUND_STOCHASTIC) {
            int k;
            if (known && r == QF_ROUND_STOCHASTIC)
                fprintf(stderr,
                        "qualify %s: --round stochastic: a reference is deterministic; valid modes:", a->cmd);
            else
                fprintf(stderr, "qualify %s: unknown rounding mode '%s' for %s; valid modes:", a->cmd,
                        a->str[O_ROUND], a->out_fmt->name);
            for (k = 0; k < QF_ROUND_COUNT; k++)
                if (k != QF_ROUND_STOCHASTIC && qf_round_valid(a->out_fmt, (qf_round)k))
                    fprintf(stderr, " %s", qf_round_name((qf_round)k));
            fputc('\n', stderr);
            return QF_EXIT_USAGE;
        }
        a->ro.round = r;
    }
    if (a->lse_fmt && a->seen[O_ROUND] && !qf_round_valid(a->lse_fmt, a->ro.round))
        return _qf_cr_err(a, "--round %s does not apply to --lse-dtype %s", a->str[O_ROUND],
                          a->lse_fmt->name);
    {
        long t, pm;
        if ((rc = _qf_cr_get_long(a, O_THREADS, 0, 0, 4096, &t)) ||
            (rc = _qf_cr_get_long(a, O_PREC_MAX, 4096, 64, 1L << 24, &pm)))
            return rc;
        a->ro.threads = (int)t;
        a->ro.prec_max = (int)pm;
    }
    a->strict = a->seen[O_STRICT];
    a->quiet = a->seen[O_QUIET];
    a->mem_budget = qf_runner_default_case_memory();
    if (a->seen[O_MAX_MEM] && qf_runner_parse_bytes(a->str[O_MAX_MEM], &a->mem_budget))
        return _qf_cr_err(a, "--max-case-memory '%s': a positive size expected (bytes, or a number with K, M, G "
                             "or T: 512M, 4G)",
                          a->str[O_MAX_MEM]);
    return a->op->run(a);
}
