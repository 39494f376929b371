#!/usr/bin/env python3
"""A qualify kernel worker serving PyTorch ops: bf16 matmul, SDPA, RMSNorm.

    qualify run shapes/quick.yaml --kernel '*.torch.*' \
        --worker 'python3 python/examples/torch_kernels.py'

With ``QUALIFY_TORCH_DEVICE=cuda`` the kernels run on the GPU (the worker
copies the tensors there and back); by default on the CPU.  The claims
are what PyTorch documents, no more: a float32 accumulator in an order it
does not promise (``sum_order: any``), no determinism promise.  Claim less
than the truth and the bound is loose; claim more and good kernels fail:
qualify's verdicts are only as good as the claim (docs/kernels.md "Claims").
"""

import os
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_kernels.py: PyTorch is not installed (pip install torch); "
          "this example needs it", file=sys.stderr)
    sys.exit(1)

import qualify.worker as qw

DEVICE = os.environ.get("QUALIFY_TORCH_DEVICE") or None  # None: CPU, zero copy
ANY_F32 = {"acc_format": "float32", "sum_order": "any"}


@qw.kernel("gemm.torch.matmul.bf16", op="gemm", dtypes=["bf16.bf16.f32.bf16"], claim=ANY_F32,
           device=DEVICE, description="torch.matmul, bfloat16 in and out")
def matmul(a, b, *rest, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, **p):
    if alpha != 1.0 or beta != 0.0:
        # torch.matmul has no epilogue; emulating one would add roundings
        # the claim does not describe
        raise qw.Unsupported("alpha = 1 and beta = 0 only")
    A = a.mT if trans_a else a
    B = b.mT if trans_b else b
    return torch.matmul(A, B)  # written into the bf16 output bit for bit


@qw.kernel("attention.torch.sdpa.bf16", op="attention", dtypes=["bf16.bf16.bf16.f32.bf16"], claim=ANY_F32,
           device=DEVICE, description="F.scaled_dot_product_attention, bfloat16")
def sdpa(q, k, v, *rest, scale=0.0, softcap=0.0, causal=False, mask="none", heads=1, kv_heads=1, **p):
    out = rest[0]  # rest: out and (when asked for) lse, which SDPA does not return
    if len(rest) > 1:
        raise qw.Unsupported("SDPA does not return the log-sum-exp")
    if softcap:
        raise qw.Unsupported("SDPA has no softcap")
    if mask not in ("none", "causal"):
        raise qw.Unsupported(f"mask {mask}")
    return F.scaled_dot_product_attention(
        q, k, v, is_causal=(mask == "causal" or bool(causal)), scale=(scale or None),
        enable_gqa=(heads != kv_heads))


@qw.kernel("rmsnorm.torch.rms_norm.f32", op="rmsnorm", dtypes=["f32.f32.f32.f32"], claim=ANY_F32,
           device=DEVICE, description="F.rms_norm, float32")
def rms_norm(x, *rest, eps=1e-6, weight_offset=0.0, **p):
    y = rest[-1]
    w = rest[0] if len(rest) > 1 else None
    if w is not None and weight_offset:
        w = w + weight_offset
    return F.rms_norm(x, (x.shape[-1],), weight=w, eps=eps)


if __name__ == "__main__":
    qw.serve(name="torch-kernels")
