"""Running the qualify binary from Python."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from .results import Results, load_results

__all__ = ["QualifyError", "find_qualify", "run"]


class QualifyError(RuntimeError):
    """qualify could not be run, or stopped on bad usage or input (exit 2)."""

    def __init__(self, msg: str, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(msg)
        self.returncode = returncode
        self.stderr = stderr


def find_qualify() -> str:
    """The qualify binary: $QUALIFY_BIN, else `qualify` on PATH."""
    env = os.environ.get("QUALIFY_BIN")
    if env:
        return env
    found = shutil.which("qualify")
    if not found:
        raise QualifyError("qualify not found: put it on PATH or set QUALIFY_BIN")
    return found


def run(
    suite: str | os.PathLike[str] | None = None,
    workers: Sequence[str] = (),
    output: str | os.PathLike[str] | None = None,
    extra_args: Sequence[str] = (),
    kernel: str | None = None,
    quiet: bool = True,
) -> Results:
    """Run ``qualify run`` and return its results.

    ``workers`` are command lines passed as ``--worker`` (docs/workers.md);
    ``output`` is the run's directory (a fresh temporary one when None);
    ``kernel`` a ``--kernel`` glob; ``extra_args`` go through unchanged
    (``["--seed", "3", "--jobs", "2"]``).  Exit statuses 0 and 1 are both
    a finished sweep (1: something FAILED, CRASHED or TIMEOUT; see
    ``Results.returncode``), so they return; anything else raises
    QualifyError with qualify's message, since then there are no results.
    """
    exe = find_qualify()
    out = Path(output) if output is not None else Path(tempfile.mkdtemp(prefix="qualify-run-"))
    cmd = [exe, "run"]
    if suite is not None:
        cmd.append(os.fspath(suite))
    cmd += ["-o", os.fspath(out)]
    for w in workers:
        cmd += ["--worker", w]
    if kernel is not None:
        cmd += ["--kernel", kernel]
    if quiet:
        cmd.append("-q")
    cmd += list(extra_args)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise QualifyError(f"cannot run {exe}: {e}") from None
    if proc.returncode not in (0, 1):
        raise QualifyError(
            f"qualify run exited with status {proc.returncode}: {proc.stderr.strip()[-2000:]}",
            proc.returncode, proc.stderr,
        )
    path = out / "results.json"
    if not path.exists():
        raise QualifyError(f"qualify run wrote no {path}: {proc.stderr.strip()[-2000:]}", proc.returncode, proc.stderr)
    res = load_results(path)
    res.returncode = proc.returncode
    return res
