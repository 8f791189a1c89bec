"""KL401-KL405: which findings fire, with which numbers, and what stays quiet."""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernlint.checks.occupancy_rules import RULES, occupancy_diagnostics
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.frontend.resources import KernelResources, estimate_registers, exact_resources

KB = 1024
ROOT = Path(__file__).resolve().parents[1]


def exact(registers: int, *, shared: int = 0, spill: int = 0, barriers: int = 1) -> KernelResources:
    return KernelResources("k", registers, spill, spill, spill, shared, "exact",
                           barriers=barriers, arch="sm_80")


def estimated(registers: int) -> KernelResources:
    return KernelResources("k", registers, 0, 0, 0, 0, "estimated", note="nvcc not found on PATH")


def lint(**overrides: Any) -> list[Diagnostic]:
    args: dict[str, Any] = {
        "path": "k.cu", "kernel": "k", "line": 3, "column": 17, "block_size": 256,
        "block_source": "launch at line 20", "resources": exact(32), "static_shared_bytes": 0,
        "dynamic_shared_bytes": 0, "arch": "sm_80",
    }
    args.update(overrides)
    return occupancy_diagnostics(**args)


def codes(diags: list[Diagnostic]) -> list[str]:
    return sorted(d.code for d in diags)


def only(diags: list[Diagnostic], code: str) -> Diagnostic:
    found = [d for d in diags if d.code == code]
    assert len(found) == 1, [d.message for d in diags]
    return found[0]


# --- KL401 low-occupancy ----------------------------------------------------------------------------

def test_kl401_register_limited_kernel() -> None:
    diag = only(lint(resources=exact(65)), "KL401")
    assert diag.severity is Severity.WARNING and diag.name == "low-occupancy"
    assert diag.message == ("theoretical occupancy 37.5% (24 of 64 warps per SM): limited by "
                            "registers (65 per thread, 256 threads per block)")
    assert (diag.line, diag.column, diag.kernel) == (3, 17, "k")
    lift = " ".join(diag.notes)
    assert "at most 64 registers per thread would give 50%" in lift
    assert "__launch_bounds__(256, 4)" in lift and "-maxrregcount=64" in lift
    assert "128 threads -> 43.75%" in lift  # another block size does better


def test_kl401_metrics() -> None:
    diag = only(lint(resources=exact(65)), "KL401")
    metrics = dict(diag.metrics)
    assert {k: metrics[k] for k in ("registers", "registers_source", "shared_bytes", "block_size",
                                    "active_blocks", "active_warps", "occupancy", "limiter",
                                    "arch")} == {
        "registers": 65, "registers_source": "exact", "shared_bytes": 0, "block_size": 256,
        "active_blocks": 3, "active_warps": 24, "occupancy": 0.375, "limiter": "registers",
        "arch": "sm_80",
    }


def test_kl401_assumptions_state_arch_block_and_register_source() -> None:
    diag = only(lint(resources=exact(65)), "KL401")
    text = " | ".join(diag.assumptions)
    assert "arch sm_80" in text and "default" in text
    assert "block size 256 (launch at line 20)" in text
    assert "65 registers per thread (exact, from ptxas" in text


def test_kl401_estimated_registers_are_labelled() -> None:
    diag = only(lint(resources=estimated(65)), "KL401")
    assert "~65 per thread, estimated" in diag.message
    assert diag.metrics["registers_source"] == "estimated"
    assert any("estimated from the source, not exact" in a for a in diag.assumptions)


def test_kl401_severity_follows_what_the_register_estimate_decides() -> None:
    # 65 registers at 256 threads: 3 blocks, 37.5 %. The estimate's margin, 26 to 163 registers, spans
    # 100 % down to 12.5 %: it cannot decide, so an info, with ptxas's exact count too (one severity with
    # and without nvcc).
    est = only(lint(resources=estimated(65)), "KL401")
    assert est.severity is Severity.INFO
    assert any(n.startswith("severity info: the source estimate of ~65 registers") and "cannot decide" in n
               for n in est.notes), est.notes
    assert only(lint(resources=exact(65), register_estimate=estimated(65)), "KL401").severity is Severity.INFO
    # A caller with only ptxas's count (no estimate to weigh) gets the count's verdict.
    assert only(lint(resources=exact(65)), "KL401").severity is Severity.WARNING


def test_kl401_opted_in_shared_memory_tied_with_registers_is_an_info() -> None:
    # 68 KB of shared memory (opted in, over 48 KB) allows 2 blocks of 256 threads per SM, and so do
    # 86 registers: shared memory binds as much as registers do, a deliberate trade.
    diag = only(lint(resources=exact(86), dynamic_shared_bytes=69632), "KL401")
    assert diag.metrics["blocks_by_shared"] == diag.metrics["blocks_by_registers"] == 2
    assert diag.severity is Severity.INFO
    assert any("opts in to" in n for n in diag.notes)


def test_kl401_shared_memory_limited() -> None:
    diag = only(lint(block_size=128, resources=exact(32, shared=40000), static_shared_bytes=40000), "KL401")
    assert diag.message.startswith("theoretical occupancy 25% (16 of 64 warps per SM): limited by shared memory")
    assert any("of shared memory per block (now 40000 B) would give 50%" in n for n in diag.notes)
    assert diag.metrics["limiter"] == "shared"


def test_kl401_block_limited_small_blocks() -> None:
    diag = only(lint(block_size=32, arch="sm_86"), "KL401")
    assert "33.33% (16 of 48 warps per SM)" in diag.message
    assert "resident blocks (at most 16 per SM" in diag.message
    assert "arch sm_86" in diag.assumptions[0] and "default" not in diag.assumptions[0]


def test_kl401_launch_that_cannot_fit() -> None:
    diag = only(lint(block_size=1024, resources=exact(65)), "KL401")
    assert diag.message.startswith("theoretical occupancy 0%: no block of 1024 threads fits")
    assert "too many resources requested" in diag.message


def test_kl401_threshold_is_strict_and_configurable() -> None:
    assert "KL401" not in codes(lint(resources=exact(64)))  # exactly 50 %
    assert "KL401" in codes(lint(resources=exact(64), threshold=0.6))
    assert "KL401" not in codes(lint(resources=exact(65), threshold=0.25))


def test_quiet_without_block_size_or_registers() -> None:
    assert lint(block_size=None, resources=exact(65)) == []
    assert lint(resources=None) == []


# --- KL402 register-spill ---------------------------------------------------------------------------

def test_kl402_spills_from_ptxas() -> None:
    diag = only(lint(resources=exact(32, spill=96), launch_bounds=1024), "KL402")
    assert diag.severity is Severity.WARNING
    assert "96 bytes of spill stores and 96 bytes of spill loads" in diag.message
    assert any("__launch_bounds__(1024)" in n and "64 registers" in n for n in diag.notes)
    assert diag.metrics["spill_stores"] == 96


def test_kl402_not_from_an_estimate() -> None:
    fake = KernelResources("k", 255, 64, 64, 64, 0, "estimated")
    assert "KL402" not in codes(lint(resources=fake))


def test_kl402_at_the_register_maximum() -> None:
    diag = only(lint(resources=exact(255, spill=40)), "KL402")
    assert any("255-register maximum" in n for n in diag.notes)


# --- KL403 occupancy-cliff --------------------------------------------------------------------------

def test_kl403_one_register_from_the_cliff() -> None:
    diag = only(lint(resources=exact(64)), "KL403")
    assert diag.severity is Severity.INFO and diag.name == "occupancy-cliff"
    assert diag.message == ("1 more register per thread (64 -> 65) would drop occupancy from 50% "
                            "to 37.5% (32 -> 24 warps per SM)")
    assert diag.metrics["cliff_delta"] == 1 and diag.metrics["cliff_occupancy"] == 0.375


def test_kl403_margin_is_four_registers() -> None:
    assert "KL403" in codes(lint(resources=exact(61)))  # 4 below the 64 -> 65 cliff
    assert "KL403" not in codes(lint(resources=exact(60)))


def test_kl403_not_for_estimated_registers() -> None:
    assert "KL403" not in codes(lint(resources=estimated(64)))


def test_kl403_launch_failure_cliff() -> None:
    diag = only(lint(block_size=1024, resources=exact(64)), "KL403")
    assert "would make the launch fail" in diag.message


def test_kl403_shared_cliff() -> None:
    # 40000 B + 1 KB reserve at 256 threads: 4 blocks (50 %); 961 more bytes leave room for 3 (37.5 %).
    diag = only(lint(block_size=256, resources=exact(32, shared=40000), static_shared_bytes=40000), "KL403")
    assert diag.message.startswith("961 more bytes of shared memory per block (40000 -> 40961) would "
                                   "drop occupancy from 50% to 37.5%")


def test_kl403_small_or_harmless_drops_are_quiet() -> None:
    # 128 threads: 25 % -> 18.75 % is a drop of 6.25 points, under the 10-point materiality bar.
    assert "KL403" not in codes(lint(block_size=128, resources=exact(32, shared=40000),
                                     static_shared_bytes=40000))
    # 31 -> 33 registers at 256 threads: 100 % -> 75 %, still above the 50 % threshold.
    assert "KL403" not in codes(lint(resources=exact(31)))


def test_kl403_shared_cliff_beyond_ten_percent_is_quiet() -> None:
    # 20 KB per block at 256 threads: 7 blocks; the drop to 6 needs 2487 more bytes (12 %).
    assert "KL403" not in codes(lint(resources=exact(24, shared=20 * KB), static_shared_bytes=20 * KB))


def test_kl403_one_byte() -> None:
    # 40832 B + 1 KB reserve = 41856 B: 4 blocks in 164 KB (50 %); one more byte rounds the block to
    # 41984 B, still 4 blocks; 129 more make it 3 (37.5 %). And 32512 B (5 -> 4 blocks, 62.5 % -> 50 %)
    # stays quiet: the drop does not fall below the threshold.
    diag = only(lint(resources=exact(24, shared=40832), static_shared_bytes=40832), "KL403")
    assert diag.message.startswith("129 more bytes of shared memory per block (40832 -> 40961)")
    assert "KL403" not in codes(lint(resources=exact(24, shared=32512), static_shared_bytes=32512))


def test_kl403_not_when_launch_bounds_pin_the_registers() -> None:
    # __launch_bounds__(256, 4): ptxas keeps <= 64 registers, so the 64 -> 65 cliff cannot happen.
    pinned = lint(resources=exact(64), launch_bounds=256, launch_bounds_min_blocks=4)
    assert "KL403" not in codes(pinned)
    assert "KL403" in codes(lint(resources=exact(64), launch_bounds=256, launch_bounds_min_blocks=3))



def test_kl401_respects_existing_launch_bounds_min_blocks() -> None:
    # An estimate of 96 registers at 512 threads is 25 %, but __launch_bounds__(512, 2) makes
    # ptxas keep 64 registers: 50 %, so no finding, and no advice to add what is there.
    assert "KL401" not in codes(lint(block_size=512, resources=estimated(96), launch_bounds=512,
                                     launch_bounds_min_blocks=2))
    # With minBlocks 1 the attribute caps nothing: KL401 names the attribute to change instead
    # of recommending __launch_bounds__ as if it were missing.
    diag = only(lint(block_size=256, resources=exact(80), launch_bounds=256, launch_bounds_min_blocks=1), "KL401")
    lift = " ".join(diag.notes)
    assert "change the existing __launch_bounds__(256, 1) to __launch_bounds__(256, 4)" in lift
    # When the attribute already asks for the blocks a lower register count would give, no
    # register advice repeats it.
    diag = only(lint(block_size=256, resources=exact(80), launch_bounds=256, launch_bounds_min_blocks=4), "KL401")
    assert "__launch_bounds__(256, 4)" not in " ".join(diag.notes)

# --- KL404 block-size-not-multiple-of-32 --------------------------------------------------------------

def test_kl404_at_each_launch_site() -> None:
    diags = lint(launch_sites=((20, 5, 100), (22, 5, 256), (24, 9, 16)))
    sites = sorted((d.line, d.column, d.metrics["block_size"]) for d in diags if d.code == "KL404")
    assert sites == [(20, 5, 100), (24, 9, 16)]
    hundred = next(d for d in diags if d.code == "KL404" and d.line == 20)
    assert hundred.message == ("block of 100 threads is not a multiple of the warp size (32): its "
                               "last warp runs 4 of 32 lanes, so 28 of 128 lanes per block "
                               "(21.88%) are scheduled but idle")
    assert "use 96 or 128 threads" in hundred.notes[0]
    sixteen = next(d for d in diags if d.code == "KL404" and d.line == 24)
    assert "use 32 threads" in sixteen.notes[0]


def test_kl404_quiet_for_launches_of_at_most_one_warp() -> None:
    # <<<1, 1>>> setup kernels and a one-block 16-thread step are serial by choice; a grid of
    # many 1-thread or 48-thread blocks, or an unknown grid, still wastes lanes on every warp.
    diags = lint(launch_sites=((20, 5, 1, 1), (21, 5, 16, 1), (22, 5, 8, 4), (23, 5, 1, 4096),
                               (24, 5, 48, None), (25, 5, 1, None)))
    assert sorted(d.line for d in diags if d.code == "KL404") == [23, 24, 25]


def test_kl404_severity_follows_the_share_of_idle_lanes() -> None:
    # 176 threads: 6 warps, 16 of 192 lanes idle (8.33 %), under the tenth: info with the figure.
    # 80 threads: 3 warps, 16 of 96 idle (16.67 %): warning. 1000 threads: 24 of 1024 (2.34 %): info.
    diags = lint(launch_sites=((20, 5, 176), (21, 5, 80), (22, 5, 1000)))
    by_line = {d.line: d for d in diags if d.code == "KL404"}
    assert by_line[20].severity is Severity.INFO
    assert any("8.33% of the block's lane-slots (warning from 10%)" in n for n in by_line[20].notes)
    assert by_line[21].severity is Severity.WARNING
    assert not any(n.startswith("severity info") for n in by_line[21].notes)
    assert by_line[22].severity is Severity.INFO


def test_kl404_launch_bounds() -> None:
    diag = only(lint(launch_bounds=200), "KL404")
    assert diag.message.startswith("__launch_bounds__(200) is not a multiple of the warp size")
    assert (diag.line, diag.column) == (3, 17)
    assert "KL404" not in codes(lint(launch_bounds=256, launch_sites=((20, 5, 512),)))


# --- KL405 shared-memory-exceeds-limit ----------------------------------------------------------------

def test_kl405_static_shared_over_48_kb() -> None:
    diags = lint(resources=estimated(32), static_shared_bytes=48 * KB + 4)
    diag = only(diags, "KL405")
    assert diag.severity is Severity.ERROR
    assert diag.message.startswith("static shared memory of 49156 B per block exceeds the 48 KB limit")
    assert any("extern __shared__" in n and "163 KB" in n for n in diag.notes)
    assert codes(diags) == ["KL405"]  # no occupancy noise for a kernel that cannot compile


def test_kl405_exactly_48_kb_is_fine() -> None:
    assert "KL405" not in codes(lint(resources=exact(32, shared=48 * KB), static_shared_bytes=48 * KB))


def test_kl405_static_plus_dynamic_over_opt_in_maximum() -> None:
    diag = only(lint(static_shared_bytes=40 * KB, dynamic_shared_bytes=130 * KB,
                     resources=estimated(32)), "KL405")
    assert "170 KB per block (40 KB static + 130 KB dynamic) exceeds the 163 KB" in diag.message
    # The same request fits an H100's 227 KB.
    assert "KL405" not in codes(lint(static_shared_bytes=40 * KB, dynamic_shared_bytes=130 * KB,
                                     resources=estimated(32), arch="sm_90"))


def test_dynamic_shared_over_48_kb_assumes_opt_in() -> None:
    diags = lint(dynamic_shared_bytes=64 * KB)
    assert "KL405" not in codes(diags)
    diag = only(diags, "KL401")  # 2 blocks of 65 KB in 164 KB: 25 %
    assert diag.metrics["active_blocks"] == 2 and diag.metrics["limiter"] == "shared"


def test_exact_static_shared_wins_over_the_ir_count() -> None:
    diags = lint(resources=exact(32, shared=48 * KB + 512), static_shared_bytes=1024)
    assert "KL405" in codes(diags)


# --- the no-compiler path, end to end -------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_exact_then_estimated_without_nvcc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With nvcc: exact registers.  With PATH stripped: no data, a note, and an estimate labelled so."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    src = (ROOT / "tests" / "test_resources.py").read_text().split('REGISTER_HEAVY = """')[1].split('"""')[0]
    kernels, note = exact_resources(src, str(tmp_path / "heavy.cu"), "sm_80")
    assert note is None and kernels["heavy"][0].source == "exact"
    diag = only(lint(block_size=256, resources=kernels["heavy"][0]), "KL401")
    assert diag.metrics["registers_source"] == "exact"

    monkeypatch.setenv("PATH", str(tmp_path))
    kernels, note = exact_resources(src, str(tmp_path / "heavy.cu"), "sm_80")
    assert kernels == {} and note is not None
    guess = KernelResources("heavy", estimate_registers(96, 0, 0), 0, 0, 0, 0, "estimated", note=note)
    diag = only(lint(block_size=256, resources=guess), "KL401")
    assert diag.metrics["registers_source"] == "estimated"
    assert any("nvcc not found" in a for a in diag.assumptions)


# --- the rule table and its docs -------------------------------------------------------------------------

def test_rules_table() -> None:
    assert [r.code for r in RULES] == ["KL401", "KL402", "KL403", "KL404", "KL405"]
    assert len({r.name for r in RULES}) == 5
    assert {r.code: r.severity for r in RULES} == {
        "KL401": Severity.WARNING, "KL402": Severity.WARNING, "KL403": Severity.INFO,
        "KL404": Severity.WARNING, "KL405": Severity.ERROR}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_doc_exists_with_all_sections(rule: Any) -> None:
    doc = (ROOT / "rules" / rule.doc_filename).read_text()
    assert doc.startswith(f"# {rule.name} ({rule.code})\n")
    headings = re.findall(r"^## (.+)$", doc, flags=re.MULTILINE)
    assert headings == ["What it does", "Why it matters", "How kernlint decides", "Example",
                        "Use instead", "When to ignore", "References"]
    example = doc.split("## Example")[1].split("## Use instead")[0]
    use_instead = doc.split("## Use instead")[1].split("## When to ignore")[0]
    assert example.count("```cuda") == 1 and use_instead.count("```cuda") == 1


def test_kl401_opt_in_shared_memory_is_info() -> None:
    # 72 KB of dynamic shared memory per block needs cudaFuncSetAttribute: a deliberate choice.
    diag = only(lint(resources=exact(64), dynamic_shared_bytes=72 * KB), "KL401")
    assert diag.severity is Severity.INFO and diag.metrics["limiter"] == "shared"
    assert any("opts in to 72 KB" in n for n in diag.notes)
    # Under the 48 KB default the same limiter is still a warning.
    diag = only(lint(block_size=128, resources=exact(32), dynamic_shared_bytes=40 * KB), "KL401")
    assert diag.severity is Severity.WARNING


def test_an_unknown_dynamic_shared_amount_is_said_to_be_counted_as_none() -> None:
    # A launch `k<<<g, b, n * sizeof(float)>>>` whose amount does not fold: counted as 0 B, and said so
    # (more shared memory can only lower occupancy, so a KL401 found without it stands).
    said = only(lint(resources=exact(128), dynamic_shared_unknown=True), "KL401").assumptions
    assert any("0 B dynamic per block (the dynamic amount is not known: counted as none" in a for a in said)
    known = only(lint(resources=exact(128)), "KL401").assumptions
    assert not any("not known" in a for a in known)
