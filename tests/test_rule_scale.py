"""KL101/KL102 on a kernel with many alike accesses: the per-finding checks (a loop recurrence in the
address, the share of a record the kernel covers) look at the kernel once, not once per finding
(issue 15: 20,000 uncoalesced stores took more than 20 s of CPU in the rules alone)."""
from __future__ import annotations

from kernlint.checks import coalescing
from kernlint.engine.lint import LintOptions, lint_source
from kernlint.eval import data_shape

N = 300


def test_alike_findings_share_one_scan_of_the_kernel(monkeypatch) -> None:
    scans: list[object] = []
    coverage: list[object] = []
    real_scan, real_cov = data_shape._BodyScan.__init__, coalescing._record_coverage

    def scan(self, body):  # type: ignore[no-untyped-def]
        scans.append(body)
        real_scan(self, body)

    def cov(*args):  # type: ignore[no-untyped-def]
        coverage.append(args)
        return real_cov(*args)

    monkeypatch.setattr(data_shape._BodyScan, "__init__", scan)
    monkeypatch.setattr(coalescing, "_record_coverage", cov)
    body = "".join(f"  o[i * 32 + {k}] = a[i];\n" for k in range(N))
    src = f"__global__ void k(const float* a, float* o) {{\n  int i = threadIdx.x;\n{body}}}\n"
    res = lint_source(src, "many.cu", LintOptions(resources=False))
    stores = [d for d in res.diagnostics if d.code == "KL102"]
    assert stores, [d.code for d in res.diagnostics]
    assert len(scans) == 1  # one kernel body, scanned once
    assert len(coverage) <= 2  # every store alike: one answer (loads and stores at most two)

