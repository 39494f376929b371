"""The worker protocol end to end: a worker script driven by a fake host."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import WORKERS, FakeHost, gemm_op


def test_hello_lists_every_kernel(basic_host):
    h = basic_host.hello
    assert h["qualify_worker"] == 1
    assert h["name"] == "test-basic"
    names = [k["name"] for k in h["kernels"]]
    assert names == ["gemm.test.numpy.f32", "gemm.test.picky.f32", "gemm.test.broken.f32",
                     "gemm.test.returns.bf16", "softmax.test.params.f32"]
    k = h["kernels"][0]
    assert k["op"] == "gemm" and k["kind"] == "optimized" and k["archs"] == "cpu"
    assert k["description"] == "numpy matmul" and k["deterministic"] is False
    assert k["dtypes"] == [{"name": "f32.f32.f32.f32", "in": ["float32"] * 3, "out": ["float32"],
                            "claim": {"acc_format": "float32", "sum_order": "any"}}]
    assert "limits" not in k
    assert h["kernels"][1]["limits"] == {"K": {"min": 1, "max": 4096, "align": 1}}
    bf = h["kernels"][3]["dtypes"][0]
    assert bf["in"] == ["bfloat16", "bfloat16", "bfloat16"] and bf["out"] == ["bfloat16"]
    assert bf["claim"]["acc_format"] == "float32"
    assert basic_host.bye() == 0


def test_gemm_writes_outputs_in_place(basic_host, shm_factory):
    rng = np.random.default_rng(1)
    M, N, K = 7, 9, 40
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    shm = shm_factory()
    ta, tb = shm.put("a", "float32", a), shm.put("b", "float32", b)
    td = shm.put("d", "float32", shape=(M, N), dtype=np.float32)
    done = basic_host.run("gemm.test.numpy.f32", "f32.f32.f32.f32", gemm_op(M, N, K, alpha=2.0), shm, [ta, tb], [td])
    assert done == {"done": 1, "status": "ok"}
    d = shm.get(td, np.float32)
    want = (2.0 * (a.astype(np.float64) @ b.astype(np.float64))).astype(np.float32)
    assert np.array_equal(d, want)
    assert shm.canaries_intact([ta, tb, td])
    # inputs untouched
    assert np.array_equal(shm.get(ta, np.float32), a)
    assert basic_host.bye() == 0
    # the kernel's print went to stderr, not into the protocol
    assert "stray print from the kernel" in basic_host.stderr


def test_strided_input(basic_host, shm_factory):
    """A column-major operand: strides in elements, as the spec says."""
    rng = np.random.default_rng(2)
    M, N, K = 5, 3, 6
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    shm = shm_factory()
    ta = shm.put("a", "float32", np.ascontiguousarray(a.T))  # stored [K][M]
    ta.update(shape=[M, K], strides=[1, M])
    tb = shm.put("b", "float32", b)
    td = shm.put("d", "float32", shape=(M, N), dtype=np.float32)
    done = basic_host.run("gemm.test.numpy.f32", "f32.f32.f32.f32", gemm_op(M, N, K), shm, [ta, tb], [td])
    assert done["status"] == "ok"
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    assert np.array_equal(shm.get(td, np.float32), want)


def test_unsupported_then_ok(basic_host, shm_factory):
    shm = shm_factory()
    for K, status in ((10, "unsupported"), (16, "ok")):
        ta = shm.put("a", "float32", np.ones((2, K), np.float32))
        tb = shm.put("b", "float32", np.ones((K, 3), np.float32))
        td = shm.put("d", "float32", shape=(2, 3), dtype=np.float32)
        done = basic_host.run("gemm.test.picky.f32", "f32", gemm_op(2, 3, K), shm, [ta, tb], [td])
        assert done["status"] == status, done
        if status == "unsupported":
            assert done["msg"] == "K must be a multiple of 16, not 10"
        else:
            assert np.all(shm.get(td, np.float32) == 16)


def test_exception_is_error_and_worker_survives(basic_host, shm_factory):
    shm = shm_factory()
    ta = shm.put("a", "float32", np.ones((2, 2), np.float32))
    tb = shm.put("b", "float32", np.ones((2, 2), np.float32))
    td = shm.put("d", "float32", shape=(2, 2), dtype=np.float32)
    done = basic_host.run("gemm.test.broken.f32", "f32.f32.f32.f32", gemm_op(2, 2, 2), shm, [ta, tb], [td])
    assert done["status"] == "error"
    assert "simulated device failure" in done["msg"]
    done = basic_host.run("gemm.test.numpy.f32", "f32.f32.f32.f32", gemm_op(2, 2, 2), shm, [ta, tb], [td])
    assert done["status"] == "ok"
    assert basic_host.bye() == 0


@pytest.mark.parametrize("change, words", [
    ({"dtype": "bf16"}, "no dtype tuple 'bf16'"),
    ({"kernel": "gemm.nope"}, "unknown kernel"),
    ({"in_format": "float33"}, "unknown format"),
    ({"in_offset": 1 << 30}, "outside"),
    ({"in_shape": [200, 200]}, "needs"),
    ({"shm": "/qf-test-does-not-exist"}, "No such file"),
    ({"seed": "twelve"}, "seed"),
])
def test_bad_runs_are_errors(basic_host, shm_factory, change, words):
    shm = shm_factory()
    ta = shm.put("a", "float32", np.ones((2, 2), np.float32))
    tb = shm.put("b", "float32", np.ones((2, 2), np.float32))
    td = shm.put("d", "float32", shape=(2, 2), dtype=np.float32)
    msg = {"run": 5, "kernel": "gemm.test.numpy.f32", "dtype": "f32.f32.f32.f32", "threads": 1, "seed": "1",
           "op": gemm_op(2, 2, 2), "shm": shm.name, "shm_bytes": shm.size, "in": [ta, tb], "out": [td]}
    for k, v in change.items():
        if k.startswith("in_"):
            ta[k[3:]] = v
        else:
            msg[k] = v
    basic_host.send(msg)
    done = basic_host.recv()
    assert done["done"] == 5 and done["status"] == "error", done
    assert words in done["msg"], done["msg"]
    assert np.all(shm.raw(td) == 0xA5)  # nothing written
    assert basic_host.bye() == 0


def test_bf16_returned_value_rounded_to_codes(basic_host, shm_factory):
    rng = np.random.default_rng(3)
    M, N, K = 4, 5, 8
    fa = rng.standard_normal((M, K)).astype(np.float32)
    fb = rng.standard_normal((K, N)).astype(np.float32)
    ca = (fa.view(np.uint32) >> 16).astype(np.uint16)  # truncation: any bf16 value will do
    cb = (fb.view(np.uint32) >> 16).astype(np.uint16)
    shm = shm_factory()
    ta, tb = shm.put("a", "bfloat16", ca), shm.put("b", "bfloat16", cb)
    td = shm.put("d", "bfloat16", shape=(M, N), dtype=np.uint16)
    done = basic_host.run("gemm.test.returns.bf16", "bf16.bf16.f32.bf16", gemm_op(M, N, K), shm, [ta, tb], [td])
    assert done["status"] == "ok", done
    va = (ca.astype(np.uint32) << 16).view(np.float32)
    vb = (cb.astype(np.uint32) << 16).view(np.float32)
    prod = va @ vb
    # nearest-even bf16 of the float32 product, computed independently here
    u = prod.view(np.uint32).astype(np.uint64)
    lsb = (u >> 16) & 1
    want = ((u + 0x7FFF + lsb) >> 16).astype(np.uint16)
    assert np.array_equal(shm.get(td, np.uint16), want)
    assert shm.canaries_intact([ta, tb, td])


def test_params_threads_seed_dtype(basic_host, shm_factory):
    shm = shm_factory()
    tx = shm.put("x", "float32", np.zeros((2, 4), np.float32))
    ty = shm.put("y", "float32", shape=(2, 4), dtype=np.float32)
    op = {"op": "softmax", "rows": 2, "cols": 4, "scale": 1.0, "log": False}
    done = basic_host.run("softmax.test.params.f32", "f32.f32.f32", op, shm, [tx], [ty],
                          threads=3, seed="18446744073709551615")
    assert done["status"] == "ok", done
    y = shm.get(ty, np.float32).ravel()
    assert list(y[:4]) == [3.0, 615.0, 1.0, 2.0]


def test_bad_json_stops_worker(basic_host):
    basic_host.send(b"this is not json\n")
    assert basic_host.proc.wait(10) == 2
    assert "protocol error" in basic_host.proc.stderr.read().decode()


def test_unexpected_message_stops_worker(basic_host):
    basic_host.send({"hello": 1})
    assert basic_host.proc.wait(10) == 2


def test_end_of_input_exits_cleanly(basic_host):
    basic_host.proc.stdin.close()
    assert basic_host.proc.wait(10) == 0


def test_worker_without_kernels_fails(tmp_path):
    script = tmp_path / "empty.py"
    script.write_text("import qualify.worker as qw\nqw.serve()\n")
    with pytest.raises(AssertionError, match="closed its stdout"):
        FakeHost(script)


def test_numpy_example_worker(shm_factory):
    """python/examples/numpy_gemm.py serves and computes a correct GEMM."""
    h = FakeHost(WORKERS.parent.parent / "examples" / "numpy_gemm.py")
    try:
        assert h.hello["kernels"][0]["name"] == "gemm.numpy.f32"
        rng = np.random.default_rng(4)
        a = rng.standard_normal((3, 17)).astype(np.float32)
        b = rng.standard_normal((17, 2)).astype(np.float32)
        shm = shm_factory()
        ta, tb = shm.put("a", "float32", a), shm.put("b", "float32", b)
        td = shm.put("d", "float32", shape=(3, 2), dtype=np.float32)
        done = h.run("gemm.numpy.f32", "f32.f32.f32.f32", gemm_op(3, 2, 17), shm, [ta, tb], [td])
        assert done["status"] == "ok", done
        np.testing.assert_allclose(shm.get(td, np.float32), a @ b, rtol=1e-5)
        assert h.bye() == 0
    finally:
        h.kill()


def test_torch_example_without_torch_says_so():
    """Without PyTorch the torch example exits 1 with a clear message, no traceback."""
    import subprocess
    import sys

    from conftest import worker_env
    code = ("import sys, runpy; sys.modules['torch'] = None; "
            f"runpy.run_path({str(WORKERS.parent.parent / 'examples' / 'torch_kernels.py')!r}, run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], env=worker_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "PyTorch is not installed" in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""
