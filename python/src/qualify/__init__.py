"""qualify: run and read numerical qualification of kernels from Python.

- ``qualify.worker``: serve your own numpy / PyTorch / JAX functions as
  kernels to ``qualify run --worker`` (docs/workers.md).
- ``qualify.run``: run the ``qualify`` binary and get its results.
- ``qualify.load_results``: read a results.json.

Only numpy is required; ml_dtypes, torch and jax are imported when used.
``qualify.worker`` is imported on first use, so a script that only reads
results does not pay for it.
"""

from __future__ import annotations

from ._run import QualifyError, find_qualify, run
from .results import VERDICTS, Pair, Results, load_results

__version__ = "0.1.0"

__all__ = ["QualifyError", "find_qualify", "run", "VERDICTS", "Pair", "Results", "load_results", "__version__"]
