"""Reading a qualify results.json (docs/reports.md, docs/schema/results.schema.json).

The file is the report of one sweep: one object per (case, kernel) pair and
a summary.  These classes keep what a script usually asks of it (which
pairs, which verdict, which metrics) and the raw JSON for everything else,
since readers must ignore keys they do not know (the schema's rule).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

__all__ = ["VERDICTS", "Pair", "Results", "load_results"]

VERDICTS = ("QUALIFIED", "MARGINAL", "FAILED", "CRASHED", "TIMEOUT", "MISTRUSTED", "UNSUPPORTED", "SKIPPED",
            "UNCHECKED")

_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _real(v: Any) -> Any:
    """The schema writes non-finite reals as strings; read them back as floats."""
    if isinstance(v, str) and v in _SPECIAL:
        return _SPECIAL[v]
    return v


@dataclass
class Pair:
    """One (case, kernel) pair of a sweep and its verdict."""

    case_id: str
    kernel: str
    verdict: str
    reason: str = ""
    op: str = ""
    dtype: str = ""
    shape: dict[str, int] = field(default_factory=dict)
    seed: int | str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)  # empty when nothing was compared
    reproduce: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def passed(self) -> bool:
        """QUALIFIED: the only verdict that enables a kernel outright."""
        return self.verdict == "QUALIFIED"


@dataclass
class Results:
    """A parsed results.json: its pairs, verdict counts and the raw JSON."""

    pairs: list[Pair]
    summary: dict[str, int]
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    path: Path | None = None
    returncode: int | None = None  # set by qualify.run: 0, or 1 when something FAILED

    def __iter__(self) -> Iterator[Pair]:
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def by_verdict(self, verdict: str) -> list[Pair]:
        """The pairs with this verdict (case-insensitive)."""
        v = verdict.upper()
        return [p for p in self.pairs if p.verdict == v]

    @property
    def failed(self) -> list[Pair]:
        """Pairs FAILED, CRASHED or TIMEOUT: the ones that make `qualify run` exit 1."""
        return [p for p in self.pairs if p.verdict in ("FAILED", "CRASHED", "TIMEOUT")]

    def table(self) -> str:
        """A small verdict table per kernel and dtype, for a terminal."""
        counts: dict[tuple[str, str], Counter[str]] = {}
        for p in self.pairs:
            counts.setdefault((p.kernel, p.dtype), Counter())[p.verdict] += 1
        used = [v for v in VERDICTS if any(c[v] for c in counts.values())]
        head = ["kernel", "dtype", *used]
        rows = [[k, d, *(str(c[v]) for v in used)] for (k, d), c in counts.items()]
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        fmt = "  ".join("{:<%d}" % w for w in widths)
        return "\n".join(fmt.format(*r) for r in [head, *rows])


def _pair(c: dict[str, Any]) -> Pair:
    m = c.get("metrics")
    return Pair(
        case_id=str(c.get("case_id", "")),
        kernel=str(c.get("kernel", "")),
        verdict=str(c.get("verdict", "")),
        reason=str(c.get("reason", "")),
        op=str(c.get("op", "")),
        dtype=str(c.get("dtype", "")),
        shape=dict(c.get("shape") or {}),
        seed=c.get("seed"),
        metrics={k: _real(v) for k, v in m.items()} if isinstance(m, dict) else {},
        reproduce=str(c.get("reproduce", "")),
        raw=c,
    )


def parse_results(doc: dict[str, Any], path: Path | None = None) -> Results:
    """Results from an already-parsed results.json object."""
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise ValueError(f"{path or 'results'}: not a qualify results.json (no 'cases' list)")
    pairs = [_pair(c) for c in doc["cases"] if isinstance(c, dict)]
    counts = {v: 0 for v in VERDICTS}
    given = (doc.get("summary") or {}).get("verdicts")
    if isinstance(given, dict):
        for v in VERDICTS:
            counts[v] = int(given.get(v, 0))
    else:
        for p in pairs:
            counts[p.verdict] = counts.get(p.verdict, 0) + 1
    return Results(pairs=pairs, summary=counts, raw=doc, path=path)


def load_results(path: str | Path) -> Results:
    """Parse ``results.json`` (or a directory holding one) into Results."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    with open(p, encoding="utf-8") as f:
        return parse_results(json.load(f), p)
