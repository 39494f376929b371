"""A per-tensor scaled FP8 GEMM declared through a dtype dict's in_scale
(python/tests/test_host.py): d = (s_a a) (s_b b) in binary64, rounded once
to bfloat16.  Needs ml_dtypes (the e4m3 values)."""

import numpy as np

import qualify.worker as qw

PER_TENSOR = [{"kind": "tensor", "format": "float32"}, {"kind": "tensor", "format": "float32"}]


@qw.kernel("gemm.py.scaled", op="gemm",
           dtypes=[{"name": "e4m3.e4m3.f32.bf16+pt", "in": ["e4m3", "e4m3", "bf16"], "out": ["bf16"],
                    "in_scale": PER_TENSOR}],
           claim={"acc_format": "float32", "sum_order": "any"})
def gemm(a, b, *rest, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, **p):
    if beta != 0:
        raise qw.Unsupported("beta != 0")
    av = np.asarray(a).astype(np.float64) * float(np.asarray(a.scale).reshape(-1)[0])
    bv = np.asarray(b).astype(np.float64) * float(np.asarray(b.scale).reshape(-1)[0])
    av = av.T if trans_a else av
    bv = bv.T if trans_b else bv
    qw.assign(rest[-1], alpha * (av @ bv))


qw.serve()
