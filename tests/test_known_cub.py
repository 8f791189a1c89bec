"""The stub for missing CUB headers (kernlint/ir/known_cub.py): block load/store evaluated as CUB documents."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.frontend import clang_frontend
from kernlint.ir.known_cub import is_cub
from kernlint.ir.known_headers import stub_text

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "KL101_cub_block_load.cu"


def _coverage(text: str, path: str) -> dict[str, tuple[str, int, int]]:
    res = lint_source(text, path, LintOptions(resources=False))
    return {r.name: (r.status, r.accesses_seen, r.accesses_evaluated) for r in res.coverage}


def test_cub_headers_get_the_stub_by_path() -> None:
    assert is_cub("cub/cub.cuh") and is_cub("cub/block/block_load.cuh")
    assert "class BlockLoad" in stub_text("cub/block/block_store.cuh")
    assert "BlockLoad" not in stub_text("mylib/block_load.cuh")  # a basename alone names no library


def test_block_load_and_store_are_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    text = FIXTURE.read_text()
    cov = _coverage(text, str(FIXTURE))
    # the Load (or Store) call and the kernel's own store: both evaluated
    assert cov["direct"] == ("full", 2, 2)
    assert cov["warp_striped"] == ("full", 2, 2)
    assert cov["vectorized"] == ("partial", 2, 1)  # VECTORIZE: seen, not evaluated
    # Without the stub (an empty file, as for any missing header) the same kernels were not analysed.
    monkeypatch.setattr(clang_frontend, "stub_text", lambda name: "")
    before = _coverage(text + "\n// (no stub)\n", str(FIXTURE.with_name("cub_without_stub.cu")))
    assert before["direct"][0] in ("partial", "none") and before["warp_striped"][0] in ("partial", "none")



def test_a_finding_inside_the_cub_model_is_not_judged_on_a_gpu() -> None:
    # On a GPU the real CUB is compiled and its accesses are not traced: --confirm says not-run, with why.
    from kernlint.confirm.verdict import in_library_model

    res = lint_source(FIXTURE.read_text(), str(FIXTURE), LintOptions(resources=False))
    stubbed = next(r.unit.stubbed for r in res.results if r.unit is not None)
    by_line = {d.line: d for d in res.diagnostics if d.code in ("KL101", "KL102")}
    assert in_library_model(by_line[17], stubbed) and in_library_model(by_line[44], stubbed)
    assert not in_library_model(by_line[17], ())  # (no CUB header read as the stub: nothing modelled)
