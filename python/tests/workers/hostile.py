"""A worker whose kernels misbehave, for the host integration tests: each
kernel is a float32 GEMM that is correct except for what its name says."""

import ctypes
import os
import signal
import sys
import time

import numpy as np

import qualify.worker as qw

CLAIM = {"acc_format": "float32", "sum_order": "any"}


def _gemm(a, b, d):
    d[...] = np.matmul(a, b)


@qw.kernel("gemm.py.good", op="gemm", dtypes=["f32.f32.f32.f32"], claim=CLAIM)
def good(a, b, d, **p):
    _gemm(a, b, d)


@qw.kernel("gemm.py.segv", op="gemm", dtypes=["f32.f32.f32.f32"], claim=CLAIM)
def segv(a, b, d, **p):
    os.kill(os.getpid(), signal.SIGSEGV)


@qw.kernel("gemm.py.hang", op="gemm", dtypes=["f32.f32.f32.f32"], claim=CLAIM)
def hang(a, b, d, **p):
    while True:
        time.sleep(0.05)


@qw.kernel("gemm.py.exit", op="gemm", dtypes=["f32.f32.f32.f32"], claim=CLAIM)
def exits(a, b, d, **p):
    os._exit(3)


@qw.kernel("gemm.py.overrun", op="gemm", dtypes=["f32.f32.f32.f32"], claim=CLAIM)
def overrun(a, b, d, **p):
    _gemm(a, b, d)
    # One float past the end of d, through its address: the host's canary
    # bytes sit there.
    ctypes.memset(d.ctypes.data + d.nbytes, 0x7F, 4)


@qw.kernel("gemm.py.chatty", op="gemm", dtypes=["f32.f32.f32.f32"], claim=CLAIM)
def chatty(a, b, d, **p):
    # A print (the package points stdout at stderr) and a write without a
    # newline that sits in stderr's buffer: the package flushes both
    # before done, so the pair's record holds them.
    print("chatty: \x1b[2Jcleared")
    sys.stderr.write("chatty: no newline")
    _gemm(a, b, d)


@qw.kernel("gemm.py.typeerror", op="gemm", dtypes=["f32.f32.f32.f32"], claim=CLAIM)
def typeerror(a, b, d, **p):
    # A bug in the kernel: the worker answers status error with the
    # exception, which is no failed allocation (no memory-limit hint).
    raise TypeError("must be Tensor, not Operand")


if __name__ == "__main__":
    qw.serve(name="hostile")
