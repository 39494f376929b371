"""A worker for the tests: several kernels, each exercising one path."""

import numpy as np

import qualify.worker as qw


@qw.kernel("gemm.test.numpy.f32", op="gemm", dtypes=["f32.f32.f32.f32"],
           claim={"acc_format": "float32", "sum_order": "any"}, description="numpy matmul")
def gemm(a, b, *rest, **p):
    # prints must not reach the protocol stream
    print("stray print from the kernel")
    out = rest[-1]
    acc = a.astype(np.float64) @ b.astype(np.float64)
    out[...] = (p["alpha"] * acc).astype(np.float32)


@qw.kernel("gemm.test.picky.f32", op="gemm", dtypes=["f32"], limits={"K": {"min": 1, "max": 4096, "align": 1}})
def picky(a, b, out, **p):
    if p["K"] % 16:
        raise qw.Unsupported(f"K must be a multiple of 16, not {p['K']}")
    out[...] = a @ b


@qw.kernel("gemm.test.broken.f32", op="gemm", dtypes=["f32.f32.f32.f32"])
def broken(a, b, out, **p):
    raise RuntimeError("simulated device failure")


@qw.kernel("gemm.test.returns.bf16", op="gemm", dtypes=["bf16.bf16.f32.bf16"])
def returns(a, b, out, **p):
    # value returned, not written: the worker rounds it into bf16 codes
    fa = np.asarray(a).astype(np.float32) if a.dtype.kind != "u" else (a.astype(np.uint32) << 16).view(np.float32)
    fb = np.asarray(b).astype(np.float32) if b.dtype.kind != "u" else (b.astype(np.uint32) << 16).view(np.float32)
    return fa @ fb


@qw.kernel("softmax.test.params.f32", op="softmax", dtypes=["f32.f32.f32"])
def params(x, y, **p):
    # echo what the worker passed: threads, seed (an int, even above 2^63), dtype
    assert isinstance(p["seed"], int)
    y[...] = 0
    y.flat[0] = p["threads"]
    y.flat[1] = p["seed"] % 1000
    y.flat[2] = 1.0 if p["dtype"] == "f32.f32.f32" else -1.0
    y.flat[3] = p["rows"]


if __name__ == "__main__":
    qw.serve(name="test-basic")
