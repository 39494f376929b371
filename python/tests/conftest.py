"""Shared pieces of the tests: a fake host for the worker protocol.

The C host (qualify/worker.c) is built separately; these tests play its
part in Python so the package can be checked without it: they launch a
worker script, read its hello, lay tensors out in a POSIX shared-memory
object the way docs/workers.md says (4096-aligned offsets, poisoned
outputs between canary bytes), send run messages and read done.
"""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
WORKERS = HERE / "workers"
if str(SRC) not in sys.path:  # test the source tree, installed or not
    sys.path.insert(0, str(SRC))
POISON = 0xA5
CANARY = 0x5C
PAGE = 4096


def worker_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["QUALIFY_WORKER_PROTOCOL"] = "1"
    return env


class Shm:
    """A shm_open object made by hand: a file in /dev/shm mapped shared."""

    def __init__(self, size: int) -> None:
        self.name = f"/qf-test-{os.getpid()}-{id(self)}"
        self.path = "/dev/shm/" + self.name[1:]
        self.size = size
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, size)
            self.mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self.mm[:] = bytes([CANARY]) * size
        self.next = PAGE

    def put(self, slot: str, fmt: str, arr: np.ndarray | None = None, shape=None, dtype=None) -> dict:
        """Place a tensor (inputs: its bytes; outputs: poison) at the next page."""
        if arr is not None:
            arr = np.ascontiguousarray(arr)
            shape, raw = arr.shape, arr.tobytes()
        else:
            raw = bytes([POISON]) * (int(np.prod(shape)) * np.dtype(dtype).itemsize)
        off = self.next
        self.mm[off:off + len(raw)] = raw
        self.next = off + ((len(raw) + PAGE - 1) // PAGE + 1) * PAGE  # a canary page between tensors
        strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
        return {"slot": slot, "format": fmt, "shape": list(shape), "strides": strides,
                "offset": off, "bytes": len(raw)}

    def get(self, t: dict, dtype) -> np.ndarray:
        b = self.mm[t["offset"]:t["offset"] + t["bytes"]]
        return np.frombuffer(b, dtype=dtype).reshape(t["shape"]).copy()

    def raw(self, t: dict) -> np.ndarray:
        """The tensor's bytes as they lie in the object."""
        return np.frombuffer(self.mm[t["offset"]:t["offset"] + t["bytes"]], dtype=np.uint8).copy()

    def canaries_intact(self, tensors: list[dict]) -> bool:
        """Every byte outside the tensors still holds the canary."""
        data = np.frombuffer(self.mm, dtype=np.uint8).copy()
        mask = np.ones(self.size, dtype=bool)
        for t in tensors:
            mask[t["offset"]:t["offset"] + t["bytes"]] = False
        return bool(np.all(data[mask] == CANARY))

    def close(self) -> None:
        self.mm.close()
        os.unlink(self.path)


class FakeHost:
    """Runs a worker script over pipes and speaks the host's side."""

    def __init__(self, script: Path | str, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(script), *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=worker_env())
        self.hello = self.recv()
        self.next_id = 1

    def send(self, msg: dict | bytes) -> None:
        data = msg if isinstance(msg, bytes) else json.dumps(msg).encode() + b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, f"worker closed its stdout; stderr: {self.proc.stderr.read().decode()!r}"
        assert line.endswith(b"\n")
        return json.loads(line)

    def run(self, kernel: str, dtype: str, op: dict, shm: Shm, ins: list[dict], outs: list[dict],
            threads: int = 1, seed: str = "12345") -> dict:
        rid = self.next_id
        self.next_id += 1
        self.send({"run": rid, "kernel": kernel, "dtype": dtype, "threads": threads, "seed": seed,
                   "op": op, "shm": shm.name, "shm_bytes": shm.size, "in": ins, "out": outs})
        done = self.recv()
        assert done.get("done") == rid, done
        return done

    def bye(self, timeout: float = 10) -> int:
        self.send({"bye": True})
        self.proc.stdin.close()
        rc = self.proc.wait(timeout)
        self.stderr = self.proc.stderr.read().decode()
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def shm_factory():
    made: list[Shm] = []

    def make(size: int = 1 << 20) -> Shm:
        s = Shm(size)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


@pytest.fixture
def basic_host():
    h = FakeHost(WORKERS / "basic.py")
    yield h
    h.kill()


def gemm_op(M: int, N: int, K: int, alpha: float = 1.0, beta: float = 0.0) -> dict:
    return {"op": "gemm", "M": M, "N": N, "K": K, "batch": 1, "trans_a": False, "trans_b": False,
            "alpha": alpha, "beta": beta}
