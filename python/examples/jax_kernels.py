#!/usr/bin/env python3
"""A qualify kernel worker serving JAX ops on the CPU (XLA): dot, softmax,
layer norm.

    qualify run python/examples/jax.yaml \
        --worker 'python3 python/examples/jax_kernels.py'

Every kernel is jitted once per shape (XLA compiles it on first use) and
runs on whatever device JAX picks; the CPU wheels only have the host.

The claims are what XLA documents, which is little: a float32 accumulator
whose summation order it does not promise (``sum_order: any``: a chain of
n roundings bounds every order, FMA or not), and no determinism promise
across thread counts.  XLA's ``exp`` and ``rsqrt`` on the CPU are its own
polynomial approximations, whose accuracy is not documented: the claims
keep the bound module's default (``elem_ulp`` 0, i.e. 2 ulps), and
docs/third-party.md records how much of the bound they use.

``layernorm.jax.fastvar.f32`` is deliberately *not* honest: it is the
one-pass variance ``E[x^2] - E[x]^2`` (what Flax's ``LayerNorm`` computes
with its default ``use_fast_variance=True``) claimed as the two-pass
arithmetic of the norm bound, because qualify has no claim for the one-pass
formula.  It qualifies on zero-mean rows and FAILS on rows of mean 1000,
where the subtraction cancels: run it to see what the cancellation costs.
"""

from __future__ import annotations

import sys
from typing import Any

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    print("jax_kernels.py: JAX is not installed (pip install jax jaxlib ml_dtypes); "
          "this example needs it", file=sys.stderr)
    sys.exit(1)

import numpy as np

import qualify.worker as qw

# The protocol hands float32 arrays; without x64 JAX keeps them float32
# (it would silently turn float64 into float32, but no kernel here takes float64).
ANY_F32 = {"acc_format": "float32", "sum_order": "any"}


def _out(rest: tuple[Any, ...]) -> Any:
    """The op's output: the last slot (optional inputs come before it)."""
    return rest[-1]


@jax.jit
def _dot_f32(a: Any, b: Any) -> Any:
    return jnp.dot(a, b, preferred_element_type=jnp.float32)


@jax.jit
def _dot_bf16(a: Any, b: Any) -> Any:
    # no preferred_element_type: the result type is the inputs' (bfloat16);
    # how XLA accumulates is its choice, and the claim says float32
    return jnp.dot(a, b)


def _gemm_operands(a: Any, b: Any, trans_a: bool, trans_b: bool, alpha: float, beta: float,
                   rest: tuple[Any, ...]) -> tuple[Any, Any]:
    """a and b as jax arrays in the ABI's convention (the run message gives the
    logical shapes; trans_* says they are stored transposed)."""
    if alpha != 1.0 or beta != 0.0 or len(rest) != 1:
        # jnp.dot has no epilogue; adding one in jnp would add roundings the
        # claim does not describe
        raise qw.Unsupported("alpha = 1 and beta = 0 only")
    if a.ndim != 2 or b.ndim != 2:
        raise qw.Unsupported("batched GEMM is not served by this example")
    A = qw.to_jax(a)
    B = qw.to_jax(b)
    return (A.T if trans_a else A), (B.T if trans_b else B)


@qw.kernel("gemm.jax.dot.f32", op="gemm", dtypes=["f32.f32.f32.f32"], claim=ANY_F32,
           deterministic=False, description="jnp.dot, float32, preferred_element_type=float32")
def gemm_f32(a: Any, b: Any, *rest: Any, alpha: float = 1.0, beta: float = 0.0,
             trans_a: bool = False, trans_b: bool = False, **p: Any) -> None:
    A, B = _gemm_operands(a, b, trans_a, trans_b, alpha, beta, rest)
    qw.assign(_out(rest), np.asarray(_dot_f32(A, B)))


@qw.kernel("gemm.jax.dot.bf16_f32", op="gemm", dtypes=["bf16.bf16.f32.f32"], claim=ANY_F32,
           deterministic=False, description="jnp.dot, bfloat16 in, preferred_element_type=float32 out")
def gemm_bf16_f32(a: Any, b: Any, *rest: Any, alpha: float = 1.0, beta: float = 0.0,
                  trans_a: bool = False, trans_b: bool = False, **p: Any) -> None:
    A, B = _gemm_operands(a, b, trans_a, trans_b, alpha, beta, rest)
    qw.assign(_out(rest), np.asarray(_dot_f32(A, B)))


@qw.kernel("gemm.jax.dot.bf16", op="gemm", dtypes=["bf16.bf16.f32.bf16"], claim=ANY_F32,
           deterministic=False, description="jnp.dot, bfloat16 in and out (XLA's accumulator)")
def gemm_bf16(a: Any, b: Any, *rest: Any, alpha: float = 1.0, beta: float = 0.0,
              trans_a: bool = False, trans_b: bool = False, **p: Any) -> None:
    A, B = _gemm_operands(a, b, trans_a, trans_b, alpha, beta, rest)
    # the result is bfloat16 already: assign copies its values, no rounding
    qw.assign(_out(rest), np.asarray(_dot_bf16(A, B)))


@jax.jit
def _softmax(x: Any, scale: Any) -> Any:
    return jax.nn.softmax(x * scale, axis=-1)


@qw.kernel("softmax.jax.nn.f32", op="softmax", dtypes=["f32"], claim=ANY_F32,
           deterministic=False, description="jax.nn.softmax, float32")
def softmax(x: Any, *rest: Any, scale: float = 1.0, log: bool = False, **p: Any) -> None:
    if log:
        raise qw.Unsupported("log_softmax is not served by this example")
    s = np.float32(scale if scale else 1.0)
    if not np.isfinite(s) or np.float64(s) != np.float64(scale if scale else 1.0):
        # the bound assumes the scale product rounds once from the exact scale
        raise qw.Unsupported("scale is not a float32 value")
    qw.assign(_out(rest), np.asarray(_softmax(qw.to_jax(x), s)))


def _affine(y: Any, w: Any, b: Any) -> Any:
    """y * w + b as a model writes it (either may be absent)."""
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


@jax.jit
def _layernorm_twopass(x: Any, eps: Any) -> Any:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = jnp.mean(d * d, axis=-1, keepdims=True)
    return d * jax.lax.rsqrt(var + eps)


@jax.jit
def _layernorm_fastvar(x: Any, eps: Any) -> Any:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.maximum(jnp.mean(x * x, axis=-1, keepdims=True) - mean * mean, 0.0)
    return (x - mean) * jax.lax.rsqrt(var + eps)


def _layernorm(fn: Any, x: Any, rest: tuple[Any, ...], eps: float, weight_offset: float) -> None:
    """Run a layer-norm body and apply weight and bias by slot (kernels.md:
    weight and bias are optional and, when present, come before y)."""
    slots = {t.slot: t for t in rest[:-1] if hasattr(t, "slot")}
    w = slots.get("weight")
    b = slots.get("bias")
    if len(rest) > 1 and not slots:  # positional fallback: weight then bias
        w = rest[0]
        b = rest[1] if len(rest) > 2 else None
    e = np.float32(eps)
    if np.float64(e) != np.float64(eps):
        raise qw.Unsupported("eps is not a float32 value")  # the bound assumes eps exact
    W = None if w is None else qw.to_jax(w)
    if W is not None and weight_offset:
        raise qw.Unsupported("weight_offset")  # w + offset would add a rounding
    y = _affine(fn(qw.to_jax(x), e), W, None if b is None else qw.to_jax(b))
    qw.assign(_out(rest), np.asarray(y))


@qw.kernel("layernorm.jax.twopass.f32", op="layernorm", dtypes=["f32"], claim=ANY_F32,
           deterministic=False, description="layer norm in jnp: mean, then the mean of (x - mean)^2")
def layernorm(x: Any, *rest: Any, eps: float = 1e-5, weight_offset: float = 0.0, **p: Any) -> None:
    _layernorm(_layernorm_twopass, x, rest, eps, weight_offset)


@qw.kernel("layernorm.jax.fastvar.f32", op="layernorm", dtypes=["f32"], claim=ANY_F32,
           deterministic=False,
           description="layer norm in jnp with Flax's fast variance E[x^2] - E[x]^2, "
                       "claimed as two-pass (a deliberate overclaim)")
def layernorm_fastvar(x: Any, *rest: Any, eps: float = 1e-5, weight_offset: float = 0.0, **p: Any) -> None:
    _layernorm(_layernorm_fastvar, x, rest, eps, weight_offset)


if __name__ == "__main__":
    qw.serve(name="jax-kernels")
