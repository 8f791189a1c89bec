"""bench/precision_audit.py: the seeded draw, the sheet to judge by hand, and its scoring."""
from __future__ import annotations

import importlib.util
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "precision_audit", Path(__file__).resolve().parent.parent / "bench" / "precision_audit.py")
audit = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
_SPEC.loader.exec_module(audit)  # type: ignore[union-attr]


def _diags(path: Path) -> list[dict]:
    return [{"path": str(path), "line": k, "column": 1, "code": "KL101", "severity": sev, "message": f"m{k}",
             "notes": [], "assumptions": []} for k, sev in enumerate(["warning", "info", "warning", "error",
                                                                     "warning", "info"], start=1)]


def test_draw_is_seeded_and_keeps_warnings_and_errors_only(tmp_path: Path) -> None:
    diags = _diags(tmp_path / "k.cu")
    a, total = audit.draw(diags, 3, 7, None)
    b, _ = audit.draw(list(reversed(diags)), 3, 7, None)
    assert total == 4
    assert [d["line"] for d in a] == [d["line"] for d in b]  # same run and seed: same draw, whatever the order
    assert all(d["severity"] in ("warning", "error") for d in a)


def test_sheet_round_trip_scores_the_verdicts(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text("\n".join(f"line {k}" for k in range(1, 20)) + "\n")
    picked, total = audit.draw(_diags(src), 4, 1, None)
    text = audit.sheet(picked, total, 1, tmp_path)
    assert text.count("verdict: \n") == 4 and "> " not in text.split("```")[0]
    filled = text.replace("verdict: \nsampled: no\nreason: ", "verdict: worth\nsampled: no\nreason: ok", 2)
    filled = filled.replace("verdict: \nsampled: no\nreason: ", "verdict: minor\nsampled: no\nreason: small", 1)
    filled = filled.replace("verdict: \nsampled: no\nreason: ", "verdict: false\nsampled: yes\nreason: stride", 1)
    fig = audit.score(filled)
    assert (fig["judged"], fig["worth"], fig["minor"], fig["false"]) == (4, 2, 1, 1)
    assert fig["pct_true"] == 75.0 and fig["pct_worth"] == 50.0
    assert len(fig["false_from_sampled_value"]) == 1 and fig["false_from_sampled_value"][0].endswith("stride")
