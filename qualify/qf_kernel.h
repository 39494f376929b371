/* qf_kernel.h: the kernel ABI, the kernel registry and plugins.
 *
 * A kernel is a qf_kernel record: a name, the op it computes, what it
 * claims (dtype tuples, each with the arithmetic it claims; shape
 * constraints; architecture requirements; bitwise determinism) and a run
 * function.  Built-in kernels (kernels/cpu, kernels/models and kernels/bad) and kernels
 * from plugins (shared objects loaded at run time) register into the same
 * qf_registry.  docs/kernels.md explains the ABI and how to write a plugin.
 *
 * How a kernel is called (the contract the engine relies on):
 *   - The engine draws inputs in binary64, quantizes them into the input
 *     formats of the chosen dtype tuple and hands the kernel tensors of
 *     CODES (qf_format.h: a value is its bit pattern; float32 codes are the
 *     float bits, bfloat16 codes the upper half of a float, FP8 one byte).
 *   - The kernel computes and writes the output tensors as codes of the
 *     tuple's output formats.  The engine decodes them exactly and compares
 *     them with the reference computed from the same quantized inputs.
 *   - The call happens in a child process with a time limit (the runner), so
 *     a kernel may crash or hang; it must not rely on state from a previous
 *     call except through its context (init / fini).
 *   - The run function returns a qf_status; on failure it may write a
 *     reason into call->msg.  QF_EUNSUPPORTED means "not in my claim" (the
 *     verdict UNSUPPORTED), anything else a failed run.
 *
 * ABI stability.  QF_KERNEL_ABI_VERSION changes whenever a struct in this
 * header changes layout or meaning; qf_registry_add rejects a kernel whose
 * abi_version differs, naming the plugin it came from.  The structs this
 * header embeds (qf_arith_claim of qf_bound.h, qf_ref_block_params and the
 * enums of qf_ref.h) are part of the ABI: a change to their layout needs a
 * new QF_KERNEL_ABI_VERSION too.  Format ids are the qf_format_id values
 * of qf_format.h, which only ever grow at the end.
 * Every string a kernel record points to must live as long as the registry
 * (string literals in the plugin; the registry keeps plugins loaded).
 */
#ifndef QF_KERNEL_H
#define QF_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qf_block.h"
#include "qf_bound.h"
#include "qf_format.h"
#include "qf_ref.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QF_KERNEL_ABI_VERSION 3u

typedef struct qf_device qf_device; /* qf_backend.h */
struct qf_backend;                  /* qf_backend.h */

/* The symbol a plugin exports, of type qf_plugin_register_fn (below). */
#define QF_PLUGIN_ENTRY "qf_plugin_register"

#if defined(_WIN32)
#define QF_PLUGIN_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#define QF_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define QF_PLUGIN_EXPORT
#endif

#define QF_TENSOR_MAX_DIMS 6 /* most dimensions of one tensor */
#define QF_KERNEL_MAX_IN   4 /* input tensor slots of an op */
#define QF_KERNEL_MAX_OUT  2 /* output tensor slots of an op */
#define QF_OP_MAX_DIMS     8 /* named problem dimensions of an op */

/* ---- Ops --------------------------------------------------------------------
 * Each op has fixed tensor slots (inputs, outputs) and named problem
 * dimensions (for shape constraints and enablement regions), listed by
 * qf_op_slot_name and qf_op_dim_name:
 *
 * op          inputs                    outputs        dimensions
 * gemm        a, b, c                   d              M N K batch groups
 * attention   q, k, v, mask             out, lse       batch heads kv_heads seq_q seq_k head_dim head_dim_v
 * softmax     x                         y              rows cols
 * rmsnorm     x, weight, bias           y              rows cols
 * layernorm   x, weight, bias           y              rows cols
 * activation  x (gate for GLU), up      y              n
 * rope        x                         y              tokens heads head_dim rotary_dim
 * moe_router  logits, sel_bias          weights, indices  tokens experts top_k
 * quantize    x                         q (codes + scales)  rows cols
 * l2norm      x                         y              rows cols
 *
 * Optional slots (c when beta == 0, mask, lse, weight, bias, up, sel_bias)
 * are absent when the tensor's data pointer is NULL.  Op numbers only grow:
 * a new op is appended before QF_OP_COUNT (l2norm came after quantize), so
 * a plugin built against an older header keeps its op numbers.
 */
typedef enum qf_op {
    QF_OP_GEMM = 0,
    QF_OP_ATTENTION,
    QF_OP_SOFTMAX,
    QF_OP_RMSNORM,
    QF_OP_LAYERNORM,
    QF_OP_ACTIVATION,
    QF_OP_ROPE,
    QF_OP_MOE_ROUTER,
    QF_OP_QUANTIZE,
    QF_OP_L2NORM, /* x / max(||x||_2, eps) per row: qf_op_norm (weight_offset unused) */
    QF_OP_COUNT
} qf_op;

/* "gemm", "attention", ..., as in the table above; NULL if out of range. */
const char *qf_op_name(qf_op op);
/* QF_EPARSE if unknown. */
qf_status qf_op_lookup(const char *name, qf_op *out);
/* One-line description of the op (for `qualify list ops`). */
const char *qf_op_summary(qf_op op);
/* Slot names ("a", "b", "c"; "d"); NULL past the last slot. */
const char *qf_op_slot_name(qf_op op, int is_output, int slot);
int qf_op_slot_count(qf_op op, int is_output);
/* Dimension names ("m", "n", "k", ...); NULL past the last. */
const char *qf_op_dim_name(qf_op op, int dim);
int qf_op_dim_count(qf_op op);

/* GEMM: d = alpha * op(a) op(b) + beta * c, per batch entry or group.
 * Logical shapes (row-major order of the indices; the tensor strides say
 * where elements lie, so a column-major operand is a transposed stride):
 *   a: [batch][m][k] (trans_a: [batch][k][m]),  b: [batch][k][n]
 *   (trans_b: [batch][n][k]),  c, d: [batch][m][n].
 * Grouped GEMM (MoE): groups > 0 and group_m[groups] given: a, c, d are
 * [sum group_m][k or n] (stacked rows), b is [groups][k][n]; m and batch
 * are ignored. */
typedef struct qf_op_gemm {
    size_t m, n, k;
    int trans_a, trans_b;
    double alpha, beta;    /* exact binary64 */
    size_t batch;          /* 0 is taken as 1 */
    size_t groups;         /* 0: not grouped */
    const size_t *group_m; /* [groups] rows per group, or NULL */
} qf_op_gemm;

/* Attention forward, layouts of qf_ref.h ("BHSD"): q [batch][heads][seq_q]
 * [head_dim], k [batch][kv_heads][seq_k][head_dim], v [...][head_dim_v],
 * out [batch][heads][seq_q][head_dim_v], lse [batch][heads][seq_q]. */
typedef enum qf_mask_kind {
    QF_MASK_NONE = 0,
    QF_MASK_CAUSAL,              /* top-left aligned (PyTorch SDPA is_causal) */
    QF_MASK_CAUSAL_BOTTOM_RIGHT, /* FlashAttention >= 2.1 */
    QF_MASK_WINDOW,              /* sliding window_left/right (+ causal flag) */
    QF_MASK_ADDITIVE,            /* the mask slot holds additive logits */
    QF_MASK_BOOLEAN,             /* the mask slot holds keep flags (uint8) */
    QF_MASK_COUNT
} qf_mask_kind;

const char *qf_mask_kind_name(qf_mask_kind m);

typedef struct qf_op_attention {
    size_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
    size_t head_dim_v; /* 0: head_dim */
    double scale;      /* 0: 1/sqrt(head_dim), the real number */
    double softcap;    /* 0: none */
    qf_mask_kind mask;
    int causal;                     /* with QF_MASK_WINDOW */
    long window_left, window_right; /* < 0: unbounded */
} qf_op_attention;

typedef struct qf_op_softmax {
    size_t rows, cols;
    double scale; /* exact; 1 for none */
    int log;      /* log_softmax */
} qf_op_softmax;

/* rmsnorm and layernorm (qf_ref_norm_params semantics); l2norm uses rows,
 * cols and eps (qf_ref_l2norm_params) and leaves weight_offset 0. */
typedef struct qf_op_norm {
    size_t rows, cols;
    double eps;
    double weight_offset; /* 1: Gemma's (1 + w) */
} qf_op_norm;

typedef struct qf_op_activation {
    size_t n;
    qf_ref_act act;
    int glu; /* y = act(x) * up */
} qf_op_activation;

typedef struct qf_op_rope {
    size_t tokens, heads, head_dim;
    size_t rotary_dim; /* 0: head_dim */
    qf_ref_rope_layout layout;
    double theta;
    int64_t pos_offset;
    const int64_t *positions; /* [tokens] host array, or NULL */
} qf_op_rope;

typedef struct qf_op_moe_router {
    size_t tokens, experts, top_k;
    qf_ref_router_score score;
    int renormalize;
    double route_scale;
} qf_op_moe_router;

/* Quantize x [rows][cols] into a block-scaled (or scaled) format; the
 * output slot q holds the element codes and, in q.scale, the scales. */
typedef struct qf_op_quantize {
    size_t rows, cols;
    qf_ref_block_params block; /* family and its parameters */
} qf_op_quantize;

typedef struct qf_op_desc {
    qf_op op;
    union {
        qf_op_gemm gemm;
        qf_op_attention attention;
        qf_op_softmax softmax;
        qf_op_norm norm; /* rmsnorm, layernorm, l2norm */
        qf_op_activation activation;
        qf_op_rope rope;
        qf_op_moe_router moe_router;
        qf_op_quantize quantize;
    } u;
} qf_op_desc;

/* The op's problem dimensions in qf_op_dim_name order (dims[QF_OP_MAX_DIMS]);
 * returns the count (0 for an invalid op). */
int qf_op_dims(const qf_op_desc *d, int64_t *dims);

/* ---- Tensors ----------------------------------------------------------------
 * A tensor of codes.  Elements are stored unpacked in the format's
 * storage_bits (uint8/16/32/64 containers) unless packed: 4-bit formats
 * may be packed two per byte (element 2i in the low nibble, as
 * qf_format_pack4).  Strides are in elements; a packed tensor needs
 * stride 1 in its last dimension and an even extent there.
 * Index tensors (moe_router indices, boolean masks) have index_bits 8, 32
 * or 64 and hold plain integers (the format is ignored).
 * Scales: the value of element x is decode(code) * decode(scale) [*
 * tensor scale], the scale chosen by scale.kind (see qf_tensor_scale). */
typedef enum qf_scale_kind {
    QF_SCALE_NONE = 0,
    QF_SCALE_TENSOR, /* one scale */
    QF_SCALE_ROW,    /* one per row (last-but-one index) */
    QF_SCALE_COL,    /* one per column (last index) */
    QF_SCALE_BLOCK,  /* one per block of `block` elements along `axis` */
    QF_SCALE_COUNT
} qf_scale_kind;

const char *qf_scale_kind_name(qf_scale_kind s);

typedef struct qf_tensor_scale {
    qf_scale_kind kind;
    qf_format_id format; /* e8m0 (MX), e4m3 (NVFP4), float32, float16, bfloat16 */
    int axis;            /* BLOCK: 1 cuts rows into column blocks, 0 columns into row blocks */
    size_t block;        /* BLOCK: elements per block (32 MX, 16 NVFP4, 32/64/128 groups) */
    void *data;          /* scale codes, row-major (qf_block_scale_count layout); 3-d
                          * tensors: batch entry p's after entry p - 1's */
    size_t count;        /* number of scale codes */
    void *zero_point;    /* int16 per scale (asymmetric integer groups), or NULL */
    int has_global;      /* NVFP4 second level: value *= decode_f32(global_code) */
    uint32_t global_code;
} qf_tensor_scale;

typedef struct qf_tensor {
    qf_format_id format;
    int index_bits; /* 0: codes of format; 8/32/64: plain integers */
    int packed;     /* 4-bit formats only: two codes per byte */
    int ndim;
    int64_t shape[QF_TENSOR_MAX_DIMS];
    int64_t stride[QF_TENSOR_MAX_DIMS]; /* elements */
    void *data;                         /* in the back end's memory (device memory for GPU kernels) */
    size_t bytes;                       /* size of the allocation behind data */
    qf_tensor_scale scale;
} qf_tensor;

/* A dense row-major tensor description (no data, no scale). */
qf_status qf_tensor_init(qf_tensor *t, qf_format_id format, int ndim, const int64_t *shape);
/* Number of elements (product of the shape); 0 when ndim == 0 or invalid. */
size_t qf_tensor_numel(const qf_tensor *t);
/* Bytes a dense tensor of this description needs. */
size_t qf_tensor_dense_bytes(const qf_tensor *t);

/* ---- Operand layouts (ABI 3) -------------------------------------------------
 * The memory layouts of its matrix operands (2-d and batched 3-d tensors) a
 * kernel accepts beyond dense row-major, which every kernel takes.  A suite
 * sweeps layouts (docs/suites.md#layouts); the runner then lays the op's
 * matrix tensors out with these strides (qf_tensor.stride, in elements) and
 * poisons every gap between elements, so a kernel that reads the padding
 * gets a wrong answer and one that writes into it is caught
 * (docs/runner.md).  A kernel whose `layouts` lacks a bit the case needs is
 * UNSUPPORTED for it: it is never handed data it did not declare.  The
 * semantics are the BLAS standard's (BLAS Technical Forum Standard, 2001:
 * leading dimensions, and row- and column-major storage in its C
 * interface, annex B):
 *   QF_LAYOUT_LD     padded leading dimension: the stride between rows
 *                    (row-major) or columns (column-major) exceeds the
 *                    extent, ld = extent + pad
 *   QF_LAYOUT_COL    column-major: the last two strides swapped (stride 1
 *                    down a column, ld between columns); for GEMM what
 *                    CBLAS calls CblasColMajor, a transposed view
 *   QF_LAYOUT_BATCH  a batch stride larger than one matrix (ld x extent):
 *                    a gap between batch entries
 * 0 means dense row-major only. */
#define QF_LAYOUT_LD    (1u << 0)
#define QF_LAYOUT_COL   (1u << 1)
#define QF_LAYOUT_BATCH (1u << 2)
#define QF_LAYOUT_ALL   (QF_LAYOUT_LD | QF_LAYOUT_COL | QF_LAYOUT_BATCH)

/* "ld", "col", "batch" for one bit; NULL for anything else. */
const char *qf_layout_name(uint32_t bit);
/* "dense" -> 0, "ld", "col", "batch" -> their bit; QF_EPARSE otherwise. */
qf_status qf_layout_lookup(const char *name, uint32_t *bit);
/* The bits of `layouts` as text, "ld, col" ("dense only" for 0), into buf. */
const char *qf_layout_text(uint32_t layouts, char *buf, size_t size);

/* ---- Claims ------------------------------------------------------------------ */

typedef enum qf_kernel_kind {
    QF_KERNEL_REFERENCE = 0, /* straightforward code whose arithmetic is exactly known */
    QF_KERNEL_OPTIMIZED,     /* a production kernel */
    QF_KERNEL_MODEL,         /* a CPU model of some hardware's arithmetic */
    QF_KERNEL_KNOWN_BAD,     /* deliberately wrong: proves that detection works */
    QF_KERNEL_KIND_COUNT
} qf_kernel_kind;

/* "reference", "optimized", "model", "known-bad". */
const char *qf_kernel_kind_name(qf_kernel_kind k);
qf_status qf_kernel_kind_lookup(const char *name, qf_kernel_kind *out);

/* One supported dtype tuple: the format of every input and output slot (a
 * slot the op does not use, or that is absent, keeps whatever value), the
 * scaling of each input, and the arithmetic the kernel claims for this
 * tuple (qf_bound.h derives the error bound from it; arith.deterministic
 * and arith.deterministic_threads are the kernel's determinism claim). */
typedef struct qf_dtype_tuple {
    const char *name; /* short, unique within the kernel: "f32", "bf16_f32acc", "e4m3_e4m3_bf16" */
    qf_format_id in[QF_KERNEL_MAX_IN];
    qf_format_id out[QF_KERNEL_MAX_OUT];
    qf_scale_kind in_scale[QF_KERNEL_MAX_IN]; /* QF_SCALE_NONE for plain tensors */
    qf_format_id in_scale_format[QF_KERNEL_MAX_IN];
    size_t in_scale_block[QF_KERNEL_MAX_IN];
    qf_arith_claim arith;
} qf_dtype_tuple;

/* Constraints on the op's named dimensions (qf_op_dim_name order).  A zero
 * entry means no constraint: min 0, max unbounded, multiple_of 1.  What
 * these cannot say (head_dim in {64, 128}, no transposes) goes into the
 * kernel's `supports` callback. */
typedef struct qf_shape_limits {
    int64_t min[QF_OP_MAX_DIMS];
    int64_t max[QF_OP_MAX_DIMS];
    int64_t multiple_of[QF_OP_MAX_DIMS];
    size_t align_bytes; /* required alignment of every data pointer; 0: none */
} qf_shape_limits;

typedef struct qf_kernel qf_kernel;

/* Everything one call receives. */
typedef struct qf_kernel_call {
    uint32_t abi_version; /* QF_KERNEL_ABI_VERSION */
    const qf_kernel *kernel;
    const qf_dtype_tuple *dtype; /* one of kernel->dtypes */
    const qf_op_desc *op;
    const qf_tensor *in; /* [qf_op_slot_count(op, 0)] */
    qf_tensor *out;      /* [qf_op_slot_count(op, 1)] */
    qf_device *device;   /* where the tensors live (qf_backend.h) */
    uint64_t seed;       /* for kernels that round stochastically */
    int threads;         /* CPU threads the kernel may use; 0: its choice */
    char *msg;           /* reason on failure, or NULL */
    size_t msg_size;
} qf_kernel_call;

/* The run function: compute call->out from call->in.  ctx is what init
 * returned (or kernel->user when there is no init). */
typedef qf_status (*qf_kernel_run_fn)(void *ctx, const qf_kernel_call *call);
/* Optional: allocate per-process state (handles, workspaces) before the
 * first run in a process, free it after the last. */
typedef qf_status (*qf_kernel_init_fn)(const qf_kernel *k, void **ctx);
typedef void (*qf_kernel_fini_fn)(void *ctx);
/* Optional: decide a case the static claim cannot (QF_OK: supported;
 * QF_EUNSUPPORTED with a reason in why). */
typedef qf_status (*qf_kernel_supports_fn)(const qf_kernel *k, const qf_op_desc *op,
                                           const qf_dtype_tuple *dtype, char *why, size_t why_size);

struct qf_kernel {
    uint32_t abi_version; /* QF_KERNEL_ABI_VERSION, checked at registration */
    uint32_t struct_size; /* sizeof(qf_kernel) as the plugin was compiled */
    const char *name;     /* op.impl.dtype[.tile]: "gemm.cpu.naive.f32" */
    qf_op op;
    qf_kernel_kind kind;
    const char *description;
    const char *backend;   /* back end holding its tensors: "cpu", "cuda", "hip" */
    const char *archs;     /* space-separated globs it runs on: "cpu", "sm_90 sm_100", "gfx94*" */
    const char *simulates; /* model kernels: the architecture modelled ("sm_90"), else NULL */
    const qf_dtype_tuple *dtypes;
    size_t n_dtypes;
    qf_shape_limits limits;
    qf_kernel_run_fn run;
    qf_kernel_init_fn init;         /* NULL: none */
    qf_kernel_fini_fn fini;         /* NULL: none */
    qf_kernel_supports_fn supports; /* NULL: limits say everything */
    void *user;                     /* passed as ctx when init is NULL */
    /* Appended in ABI 3. */
    uint32_t layouts; /* QF_LAYOUT_* it accepts beyond dense row-major; 0: dense only */
};

/* Check a case against the kernel's static claim and its supports callback:
 * QF_OK, or QF_EUNSUPPORTED with the reason in why ("K = 7 is not a
 * multiple of 8"). */
qf_status qf_kernel_check(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype, char *why,
                          size_t why_size);
/* Does the kernel run on architecture arch ("cpu", "sm_90", "gfx942",
 * "sim:sm_90")?  A model kernel matches "sim:<simulates>" and its own archs. */
int qf_kernel_arch_ok(const qf_kernel *k, const char *arch);
/* The tuple with this name, or NULL. */
const qf_dtype_tuple *qf_kernel_dtype(const qf_kernel *k, const char *name);
/* Glob match ('*', '?', '[...]' as fnmatch without flags). */
int qf_kernel_glob(const char *pattern, const char *name);

/* ---- Registry ------------------------------------------------------------------ */

typedef struct qf_registry qf_registry;

qf_status qf_registry_create(qf_registry **out);
/* Frees the registry and unloads its plugins.  Kernel pointers from find,
 * get and match stay valid until then (also while more kernels are added). */
void qf_registry_free(qf_registry *r);

/* Register a kernel (the record is copied; its strings and tables are not).
 * Rejected with a message (qf_registry_error): wrong abi_version or
 * struct_size (QF_EUNSUPPORTED), a NULL or malformed name, run or dtypes,
 * an op or kind out of range, a name already registered (QF_EINVAL). */
qf_status qf_registry_add(qf_registry *r, const qf_kernel *k);
/* Register the built-in kernels: kernels/cpu, kernels/models, kernels/bad,
 * then the CUDA and HIP ones when those back ends are linked in (the list
 * is kernels/families.c). */
qf_status qf_registry_add_builtins(qf_registry *r);
/* dlopen a plugin and call its QF_PLUGIN_ENTRY; QF_EIO when it cannot be
 * loaded or lacks the symbol, the entry's status when it fails.  Kernels
 * added before a failure are removed again (a plugin registers all or
 * nothing). */
qf_status qf_registry_load_plugin(qf_registry *r, const char *path);

size_t qf_registry_count(const qf_registry *r);
const qf_kernel *qf_registry_get(const qf_registry *r, size_t i);
/* "built-in" or the plugin's path. */
const char *qf_registry_origin(const qf_registry *r, size_t i);
/* Replace the arithmetic claim of every tuple (whose name matches
 * dtype_glob; NULL or "": all) of every kernel matching kernel_glob by c,
 * recording origin (a claim file, docs/claims.md): the run then judges the
 * kernel by the claim the file states.  The kernel's own table is not
 * written: the registry copies it.  Returns the tuples replaced (0: none
 * matched, or c is out of its domain). */
size_t qf_registry_set_claim(qf_registry *r, const char *kernel_glob, const char *dtype_glob,
                             const qf_arith_claim *c, const char *origin);
/* The claim file that replaced kernel i's claim, or NULL. */
const char *qf_registry_claim_origin(const qf_registry *r, size_t i);
const qf_kernel *qf_registry_find(const qf_registry *r, const char *name);
/* Kernels whose names match the glob, in registration order: writes up to
 * max pointers into out (out may be NULL to count) and returns the count. */
size_t qf_registry_match(const qf_registry *r, const char *glob, const qf_kernel **out, size_t max);
/* The message of the last failure ("" if none). */
const char *qf_registry_error(const qf_registry *r);

/* ---- Plugins --------------------------------------------------------------------
 * A plugin is a shared object exporting
 *     QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg,
 *                                                   const qf_plugin_host *host);
 * which registers its kernels with host->add(reg, &kernel).  The plugin
 * reaches the host only through this table, so it needs no link-time
 * dependency on libqualify (the qualify binary has it linked statically,
 * so its symbols are not there to resolve against) and builds with
 * -Wl,-z,defs.  The table holds the helpers of this header and of
 * qf_format.h / qf_block.h a kernel needs (docs/kernels.md lists them).
 *
 * Growth: fields are only ever appended, and struct_size is the size of the
 * host's table.  A plugin built against an older header reads only the
 * fields it knows; one built against a newer header checks a field with
 * QF_PLUGIN_HOST_HAS before calling it, so it can decline (or do without)
 * on an older host.  Appending here does not change QF_KERNEL_ABI_VERSION.
 *
 * Lifetime: the table itself is valid only during the call to the entry
 * point (plugin_path too).  The functions it points to live as long as the
 * process, so a plugin that wants them in its run, init or supports
 * functions copies the table (qf_plugin_host_copy) into its own storage. */
typedef struct qf_plugin_host {
    uint32_t abi_version; /* QF_KERNEL_ABI_VERSION of the host */
    uint32_t struct_size; /* sizeof(qf_plugin_host) of the host; fields are only ever appended */
    qf_status (*add)(qf_registry *r, const qf_kernel *k);
    qf_arith_claim (*arith_claim_default)(void);
    const qf_format *(*format_get)(qf_format_id id);
    const char *plugin_path; /* the path being loaded */
    /* Appended after plugin_path: check them with QF_PLUGIN_HOST_HAS. */
    const qf_format *(*format_lookup)(const char *name);
    double (*format_decode)(const qf_format *f, uint64_t code);
    uint64_t (*format_encode)(const qf_format *f, double x, qf_round round, int saturate, int random_bits,
                              uint64_t rnd_word);
    qf_status (*format_decode_array)(const qf_format *f, const void *codes, size_t n, double *out);
    qf_status (*format_encode_array)(const qf_format *f, const double *x, size_t n, void *codes,
                                     const qf_encode_opts *opts);
    size_t (*format_array_bytes)(const qf_format *f, size_t n);
    qf_status (*format_pack4)(const uint8_t *codes, size_t n, uint8_t *packed);
    qf_status (*format_unpack4)(const uint8_t *packed, size_t n, uint8_t *codes);
    qf_encode_opts (*encode_opts_default)(void);
    uint64_t (*rng_u64)(uint64_t seed, uint64_t i);
    size_t (*block_scale_count)(size_t rows, size_t cols, int axis, size_t block);
    qf_status (*tensor_init)(qf_tensor *t, qf_format_id format, int ndim, const int64_t *shape);
    size_t (*tensor_numel)(const qf_tensor *t);
    size_t (*tensor_dense_bytes)(const qf_tensor *t);
    const char *(*op_name)(qf_op op);
    int (*op_slot_count)(qf_op op, int is_output);
    const char *(*op_slot_name)(qf_op op, int is_output, int slot);
    int (*op_dims)(const qf_op_desc *d, int64_t *dims);
    qf_status (*kernel_check)(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                              char *why, size_t why_size);
    const qf_dtype_tuple *(*kernel_dtype)(const qf_kernel *k, const char *name);
    const char *(*status_str)(qf_status s);
    /* A stand-in device back end of the plugin's own, which its kernels
     * name in qf_kernel.backend (qf_backend_add in qf_backend.h). */
    qf_status (*backend_add)(const struct qf_backend *be);
} qf_plugin_host;

/* Does the host's table have this field?  (Plugins built against a newer
 * header than the host's.) */
#define QF_PLUGIN_HOST_HAS(host, field)                                                                      \
    ((host)->struct_size >= offsetof(qf_plugin_host, field) + sizeof((host)->field))

/* Copy the host's table into *dst (a plugin's static qf_plugin_host): as
 * much of it as both sides know, the rest zeroed; dst->struct_size says how
 * much is valid, so QF_PLUGIN_HOST_HAS works on the copy.  Inline, so that
 * a plugin needs no symbol of libqualify for it. */
static inline void qf_plugin_host_copy(qf_plugin_host *dst, const qf_plugin_host *host)
{
    size_t n = host->struct_size < sizeof *dst ? host->struct_size : sizeof *dst;
    memset(dst, 0, sizeof *dst);
    memcpy(dst, host, n);
    dst->struct_size = (uint32_t)n;
}

typedef qf_status (*qf_plugin_register_fn)(qf_registry *reg, const qf_plugin_host *host);

/* The built-in kernel table (kernels/cpu): n entries. */
const qf_kernel *qf_kernels_cpu(size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* QF_KERNEL_H */
