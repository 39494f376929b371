"""A worker for the layout tests (docs/workers.md `layouts`): numpy GEMMs
that take strided views, and one that takes dense operands only."""

import numpy as np

import qualify.worker as qw


def _gemm(a, b, *rest, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, **p):
    # a, b, c, d are numpy views with the run message's strides: padded
    # rows, column-major or spaced batch entries are all just views, and
    # matmul over views never touches the gaps between their elements.
    d = rest[-1]
    c = rest[0] if len(rest) == 2 else None
    A = np.swapaxes(a, -1, -2) if trans_a else a
    B = np.swapaxes(b, -1, -2) if trans_b else b
    acc = np.matmul(A.astype(np.float64), B.astype(np.float64)) * alpha
    if c is not None and beta != 0.0:
        acc = acc + beta * c.astype(np.float64)
    d[...] = acc.astype(np.float32)


strided = qw.kernel("gemm.numpy.strided.f32", op="gemm", dtypes=["f32.f32.f32.f32"],
                    claim={"acc_format": "float32", "sum_order": "any"},
                    description="numpy matmul on strided views", layouts=["ld", "col", "batch"])(_gemm)
dense = qw.kernel("gemm.numpy.dense.f32", op="gemm", dtypes=["f32.f32.f32.f32"],
                  claim={"acc_format": "float32", "sum_order": "any"},
                  description="numpy matmul, dense operands only")(_gemm)


@qw.kernel("gemm.numpy.pad_write.f32", op="gemm", dtypes=["f32.f32.f32.f32"],
           claim={"acc_format": "float32", "sum_order": "any"}, layouts=["ld"],
           description="computes d right, then zeros the padding of its rows")
def pad_write(a, b, *rest, **p):
    _gemm(a, b, *rest, **p)
    d = rest[-1]
    # the whole row pitch as one flat view of the buffer: the padding too
    rows, cols = d.shape[-2], d.shape[-1]
    ld = d.strides[-2] // d.itemsize
    if ld > cols:
        flat = np.lib.stride_tricks.as_strided(d, shape=(rows, ld), strides=(d.strides[-2], d.itemsize))
        flat[:, cols:] = 0


if __name__ == "__main__":
    qw.serve(name="strided")
