#!/usr/bin/env python3
"""XLA's float32 dot claimed with a float64 accumulator: a claim too strong,
which qualify must FAIL at large K (tests/test_third_party.py).  It exists so
the JAX test shows that the verdicts of jax_kernels.py come from the claim
and are not a bound loose enough to pass anything."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import qualify.worker as qw

# the example's dot, written again: importing jax_kernels would register its
# kernels in this worker too, and the host refuses a name served twice
_dot_f32 = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))


@qw.kernel("gemm.jax.overclaim.f64acc", op="gemm", dtypes=["f32.f32.f64.f32"],
           claim={"acc_format": "float64", "sum_order": "any"}, deterministic=False,
           description="jnp.dot in float32 claimed as a float64 accumulator (wrong on purpose)")
def gemm(a: Any, b: Any, *rest: Any, alpha: float = 1.0, beta: float = 0.0,
         trans_a: bool = False, trans_b: bool = False, **p: Any) -> None:
    if alpha != 1.0 or beta != 0.0 or trans_a or trans_b or a.ndim != 2:
        raise qw.Unsupported("plain 2-d a @ b only")
    qw.assign(rest[-1], np.asarray(_dot_f32(qw.to_jax(a), qw.to_jax(b))))


if __name__ == "__main__":
    qw.serve(name="jax-overclaim")
