"""A worker for the tests: a numpy FP8 per-tensor quantizer (Transformer
Engine's recipe as docs/numerics.md states it: S = RN32(448 / amax), codes
= RNE_e4m3(saturate(x * S)), the float32 scale code as the one scale),
served through the protocol's quantize block parameters.  Cases of other
families are declined, with the parameters the worker received in the
reason, so a test can see what the host sent."""

import json

import numpy as np

import qualify.worker as qw

E4M3_MAX = 448.0


def _exponent(a: np.ndarray) -> np.ndarray:
    """floor(log2(a)) of each a > 0 (0 where a = 0), exactly: frexp gives
    a = m 2^e with m in [0.5, 1).  Not np.log2: numpy dispatches it to SVML
    on AVX-512 CPUs, where a result one ulp below a whole number floors to
    the exponent below, and the codes then differ from CPU to CPU."""
    return np.frexp(np.where(a > 0, a, 1.0))[1] - 1


def e4m3_codes(v: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even into float8_e4m3fn codes; |v| <= 448, no NaN.
    Powers of two are made with np.ldexp (exact on every CPU), not np.exp2."""
    a = np.abs(v)
    e = _exponent(a)
    q = np.ldexp(1.0, np.maximum(e, -6) - 3)  # the spacing of e4m3 at a
    r = np.rint(a / q) * q                    # exact: q is a power of two
    e2 = _exponent(r)
    normal = r >= 2.0**-6
    exp_field = np.where(normal, e2 + 7, 0)
    mant = np.where(normal, np.ldexp(r, 3 - e2) - 8, np.ldexp(r, 9))
    code = (exp_field.astype(np.uint16) << 3) | mant.astype(np.uint16)
    code = np.where(r == 0, 0, code) | np.where(v < 0, 0x80, 0)
    return code.astype(np.uint8)


@qw.kernel("quantize.py.fp8", op="quantize", dtypes=["float32.float8_e4m3fn"],
           description="numpy FP8 per-tensor scaling (amax recipe)")
def fp8(x, q, **p):
    if p.get("family") != "fp8" or p.get("granularity") != "tensor":
        keys = {k: p[k] for k in sorted(p) if k not in ("seed", "threads", "dtype")}
        raise qw.Unsupported("only fp8 per-tensor; got " + json.dumps(keys, sort_keys=True))
    xv = np.asarray(x, dtype=np.float64)
    amax = float(np.max(np.abs(xv)))
    s = np.float32(E4M3_MAX / amax) if amax > 0 and np.isfinite(amax) else np.float32(1.0)
    codes = e4m3_codes(np.clip(xv * np.float64(s), -E4M3_MAX, E4M3_MAX))
    q.view(np.uint8)[...] = codes
    q.scale.view(np.uint32)[...] = np.float32(s).view(np.uint32)


@qw.kernel("quantize.py.nvfp4_noglobal", op="quantize", dtypes=["float32.float4_e2m1fn"],
           description="writes codes and scales but never the NVFP4 tensor scale")
def nvfp4_noglobal(x, q, **p):
    q.view(np.uint8)[...] = 0
    q.scale.view(np.uint8)[...] = 0x38  # e4m3 1.0


if __name__ == "__main__":
    qw.serve()
