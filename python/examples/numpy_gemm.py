#!/usr/bin/env python3
"""A qualify kernel worker serving numpy's matmul as a float32 GEMM.

    qualify run shapes/quick.yaml --kernel 'gemm.numpy.*' \
        --worker 'python3 python/examples/numpy_gemm.py'

numpy's ``@`` calls the BLAS it was built with (OpenBLAS on Debian), which
sums in float32 in an order it does not promise: hence the claim of a
float32 accumulator with ``sum_order: any`` (a sequential chain of K
roundings bounds every order) and no determinism across thread counts.
"""

import numpy as np

import qualify.worker as qw


@qw.kernel("gemm.numpy.f32", op="gemm", dtypes=["f32.f32.f32.f32"],
           claim={"acc_format": "float32", "sum_order": "any"},
           description="numpy matmul (its BLAS), float32")
def gemm(a, b, *rest, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, **p):
    # c is present only when beta != 0 (docs/kernels.md): the output is last.
    d = rest[-1]
    c = rest[0] if len(rest) == 2 else None
    if a.ndim != 2 or b.ndim != 2:
        raise qw.Unsupported("batched GEMM is not served by this example")
    # a and b arrive with the logical shapes the run message gives
    # (trans_a / trans_b change the shape); follow the ABI's convention.
    A = a.T if trans_a else a
    B = b.T if trans_b else b
    acc = np.matmul(A, B)                     # float32 BLAS
    if alpha != 1.0:
        acc = np.float32(alpha) * acc
    if c is not None and beta != 0.0:
        acc = acc + np.float32(beta) * c
    d[...] = acc


if __name__ == "__main__":
    qw.serve(name="numpy-gemm")
