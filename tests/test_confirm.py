"""`--confirm`: the source rewrite (CPU, compiled with nvcc where present) and the GPU runs.

CPU tests check that the instrumentation keeps the program intact, strips host code, and that a
trace equal to what the evaluator predicted confirms every finding (the measuring and verdict code
without a GPU). Tests marked `gpu` run the fixtures on a real device through CuPy and require every
static finding to be confirmed and every `ok:` site to stay quiet.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sweep import first_of_each

from kernlint import confirm
from kernlint.frontend import device_source as ds
from kernlint.confirm import instrument as ins
from kernlint.base.diagnostics import Diagnostic
from kernlint.engine.lint import LintOptions, lint_with_suppressions
from kernlint.eval import events as ev

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
OPTIONS = LintOptions(resources=False)
# (Not the CUB fixture: its findings are in kernlint's model of a missing library, which a GPU build
# replaces with the real one, whose accesses are not traced: not-run by design, tests/test_known_cub.py.)
CONFIRM_FIXTURES = sorted(p for p in FIXTURES.glob("KL*.cu")
                          if p.name.split("_")[0] in ("KL101", "KL102", "KL103", "KL201", "KL301", "KL302",
                                                      "KL303", "KL304", "KL401", "KL404", "KL405")
                          # (findings inside a missing library's stand-in: CUB's model, PyTorch's types, which
                          # the GPU build does not have; they are not run, never confirmed or refuted)
                          and p.name not in ("KL101_cub_block_load.cu", "KL101_torch_dispatch.cu"))


def _rule_of(fixture: Path) -> str:
    """The rule a fixture is about (`KL101_aos.cu`: KL101): sweeps run one fixture per rule by default."""
    return fixture.name.split("_")[0]


@functools.lru_cache(maxsize=None)
def _lint(path: Path) -> tuple[str, Any]:
    """The fixture's text and lint result (frozen data), shared by the tests that read the same fixture."""
    text = path.read_text()
    return text, lint_with_suppressions(text, str(path), OPTIONS)


def _plan(path: Path) -> confirm.FilePlan:
    text, result = _lint(path)
    return confirm.plan_file(result, text, OPTIONS)


# --- the rewrite -----------------------------------------------------------------------------------


def test_device_only_blanks_host_code_and_keeps_lines() -> None:
    text = (FIXTURES / "KL101_transpose.cu").read_text()
    out, removed = ds.device_only(text)
    assert len(out) == len(text) and out.count("\n") == text.count("\n")
    assert "int main" not in out and "<<<" not in out
    assert "#define TILE_DIM 32" in out and "__global__ void transpose_naive" in out
    assert removed and removed[0][0] == text.splitlines().index("int main() {") + 1


def test_device_only_keeps_types_constants_and_device_code(tmp_path: Path) -> None:
    text = """#include <cstdio>
#include <cuda_fp16.h>
#include "mine.h"
struct P { float x; };
struct Host { std::vector<float> v; void fill() { v.push_back(1.0f); } };
constexpr int N = 4;
constexpr int UNUSED = 5;
static float* host_ptr;
namespace ns {
__device__ float twice(float v) { return 2 * v; }
void host_helper() { printf("x"); }
}
extern "C" __global__ void k(P* a) { a[threadIdx.x % N].x = ns::twice(a[threadIdx.x].x); }
void launch(float* a) { k<<<1, 32>>>(a); }
int main() { return 0; }
"""
    out, _ = ds.device_only(text)
    assert "#include <cstdio>" not in out and "#include <cuda_fp16.h>" in out and '#include "mine.h"' in out
    # A header is inlined with its host code removed, keeping what the device code names.
    (tmp_path / "mine.h").write_text('#include <cublas_v2.h>\nstruct Used { int v; };\nstruct Unused { int w; };\n'
                                     'void cublasCheck(int s) { if (s) exit(1); }\n'
                                     '__device__ inline int used_twice(Used u) { return 2 * u.v; }\n')
    inlined = ds.inline_user_headers(out + "__global__ void k2(Used* u) { u->v = used_twice(*u); }\n",
                                      str(tmp_path), (), "/x/main.cu")
    assert "cublas" not in inlined and "struct Used" in inlined and "Unused" not in inlined
    assert "used_twice(Used u)" in inlined and f'#line 1 "{tmp_path / "mine.h"}"' in inlined
    assert '#line 4 "/x/main.cu"' in inlined
    assert "struct P" in out and "constexpr int N" in out and "host_ptr" not in out
    assert "struct Host" not in out and "UNUSED" not in out
    assert "__device__ float twice" in out and "host_helper" not in out
    assert 'extern "C" __global__ void k' in out and "launch" not in out and "main" not in out


def test_rewrite_wraps_accesses_branches_and_loops() -> None:
    plan = _plan(FIXTURES / "KL101_aos.cu")
    assert plan.instrumented is not None
    code = plan.instrumented.code
    assert "float vx = (*__kl_rec(" in code and "&(particles[i].vx)));" in code
    assert "if (__kl_br(" in code and "(i < n)))" in code
    # The user's file starts at line 1 again after the prelude.
    body = code.rsplit(f'#line 1 "{FIXTURES / "KL101_aos.cu"}"\n', 1)[1]
    assert body.count("\n") == (FIXTURES / "KL101_aos.cu").read_text().count("\n")
    loops = _plan(FIXTURES / "KL101_transpose.cu").instrumented
    assert loops is not None and "__kl_br(" in loops.code.split("for (int j = 0;", 1)[1].split(";", 1)[0]


def test_rewrite_nests_sites() -> None:
    text = "__global__ void g(const float* a, const int* idx, float* o) {\n  o[0] = a[idx[threadIdx.x]];\n}\n"
    line = text.splitlines()[1]
    outer_col = line.index("a[idx") + 1
    inner_col = line.index("idx[") + 1
    sites = [ins.Site(0, "access", ins.ir.Span(2, outer_col, 2, outer_col + len("a[idx[threadIdx.x]]"))),
             ins.Site(1, "access", ins.ir.Span(2, inner_col, 2, inner_col + len("idx[threadIdx.x]")))]
    out = ins.instrument(text, sites)
    assert "(*__kl_rec(0u, &(a[(*__kl_rec(1u, &(idx[threadIdx.x])))])))" in out.code
    assert not out.skipped


def test_rewrite_refuses_ranges_that_are_not_expressions() -> None:
    text = "__global__ void g(float* a) {\n  a[0] = 1; a[1] = 2;\n}\n"
    bad = ins.Site(0, "access", ins.ir.Span(2, 3, 2, 20))
    out = ins.instrument(text, [bad])
    assert not out.sites and out.skipped and "statements" in out.skipped[0][1]


def _explicit_instantiations(plan: confirm.FilePlan) -> str:
    """Host-side references that make nvcc instantiate the template kernels NVRTC would."""
    refs = [r.name_expr for r in plan.runs if "<" in r.name_expr]
    return "".join(f"\nstatic void* __kl_inst_{i} = (void*)&{e};" for i, e in enumerate(refs))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("fixture", first_of_each([p for p in CONFIRM_FIXTURES if not p.name.startswith("KL405")]
                                                   + [FIXTURES / "clean_patterns.cu"], lambda p: _rule_of(p)[:3],
                                                   lambda p: p.name))
def test_instrumented_source_compiles_with_nvcc(fixture: Path, tmp_path: Path) -> None:
    plan = _plan(fixture)
    assert plan.instrumented is not None
    # (an asm statement's and an asynchronous copy's sites are left as written by design: their findings are
    # not-run 'inline-asm' / 'async-copy')
    skipped = [s for s in plan.instrumented.skipped
               if "not-run 'inline-asm'" not in s[1] and "not-run 'async-copy'" not in s[1]]
    assert not skipped, skipped
    src = tmp_path / fixture.name
    src.write_text(plan.instrumented.code + _explicit_instantiations(plan) + "\n")
    proc = subprocess.run(["nvcc", "--cubin", "-arch=sm_80", "-std=c++17", "-o", str(tmp_path / "k.cubin"), str(src)],  # noqa: PLW1510
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


# --- measuring and verdicts without a GPU ------------------------------------------------------------


def _fake_trace(plan: confirm.FilePlan, run: confirm.KernelRun, path: Path) -> None:
    """Write the trace a GPU would produce if it behaved exactly as the evaluator predicted."""
    assert run.spec is not None
    nsites, wpb, maxseq = run.spec["nsites"], run.spec["wpb"], run.spec["maxseq"]
    addr = np.zeros((nsites, 2, wpb, maxseq, 32), dtype=np.uint64)
    mask = np.zeros((nsites, 2, wpb, maxseq), dtype=np.uint32)
    ballot = np.zeros_like(mask)
    count = np.zeros((nsites, 2, wpb), dtype=np.uint32)
    arrive = np.zeros((nsites, 2, wpb, 32), dtype=np.uint64)
    weights = (1 << np.arange(32, dtype=np.uint64))

    def record(site: int, m: np.ndarray, b: np.ndarray | None, a: np.ndarray | None) -> None:
        for s in range(2):
            for w in range(wpb):
                if not m[s, w].any():
                    continue
                q = int(count[site, s, w])
                count[site, s, w] += 1
                if q >= maxseq:
                    continue
                mask[site, s, w, q] = int((m[s, w] * weights).sum())
                if b is not None:
                    ballot[site, s, w, q] = int(((b[s, w] & m[s, w]) * weights).sum())
                if a is not None:
                    addr[site, s, w, q] = a[s, w].astype(np.uint64)

    for (line, col, kind), site in plan.site_of_span.items():
        evs = [e for e in run.result.events if (e.span.line, e.span.column) == (line, col)]
        if kind == "access":
            # (the probe records global and shared accesses only: a pointer field of a `__constant__`
            # struct loaded at the same column is not in the trace)
            evs = [e for e in evs if isinstance(e, ev.MemoryAccess) and e.space in ("global", "shared")]
            if not evs:
                continue
            first_kind = evs[0].kind
            for e in evs:
                if e.kind == first_kind:
                    a = e.address.astype(np.uint64) | (np.uint64(ins.SHARED_FLAG) if e.space == "shared" else 0)
                    record(site.id, e.mask, None, a)
        elif kind == "branch":
            for e in evs:
                if isinstance(e, ev.Branch):
                    record(site.id, e.mask, e.cond, None)
        elif kind == "collective":
            # Per-lane arrival counts (instrument.__kl_mark).
            for e in evs:
                if isinstance(e, ev.Barrier):
                    arrive[site.id] += np.broadcast_to(e.mask, e.live.shape).astype(np.uint64)
        elif kind == "switch":
            values, default = plan.switch_arms[(line, col, kind)]
            value_of = {arm: v for v, arm in sorted(values.items(), reverse=True)}
            value_of[default] = max(values, default=0) + 1000
            for e in evs:
                if isinstance(e, ev.Branch) and e.arms is not None:
                    v = np.array([value_of.get(int(arm), 0) for arm in e.arms.ravel()],
                                 dtype=np.uint64).reshape(e.arms.shape)
                    record(site.id, e.mask, None, v)
        else:
            for e in evs:
                if isinstance(e, ev.Loop):
                    for k in range(int(e.trips.max()) + 1):
                        live = e.mask & (e.trips >= k)
                        record(site.id, live, e.trips > k, None)
    np.savez(path, addr=addr, mask=mask, ballot=ballot, count=count, arrive=arrive)


def _confirm_with_fake_gpu(fixture: Path, tmp_path: Path) -> tuple[list[Diagnostic], list[str]]:
    text, result = _lint(fixture)
    plan = confirm.plan_file(result, text, OPTIONS)
    for run in plan.runs:
        if run.spec is None:
            continue
        trace = tmp_path / f"trace_{run.id}.npz"
        _fake_trace(plan, run, trace)
        run.status, run.device = "ok", "fake GPU"
        confirm._measure(plan, run, str(trace))
    notes: list[str] = []
    out = confirm.apply_results(list(result.diagnostics), [plan], [result], notes)
    return out, notes


@pytest.mark.parametrize("fixture", first_of_each(CONFIRM_FIXTURES, _rule_of, lambda p: p.name))
def test_trace_equal_to_prediction_confirms_every_finding(fixture: Path, tmp_path: Path) -> None:
    out, _notes = _confirm_with_fake_gpu(fixture, tmp_path)
    kernel_findings = [d for d in out if d.confirmation]
    assert not [d for d in kernel_findings if d.confirmation == "found-by-confirm"]
    bad = [(d.line, d.code, d.confirmation, d.notes[-1]) for d in kernel_findings
           if d.confirmation != "confirmed" and not d.code.startswith("KL4") and not _on_loaded_values(d)]
    assert not bad


def test_measured_numbers_are_attached(tmp_path: Path) -> None:
    out, _ = _confirm_with_fake_gpu(FIXTURES / "KL101_aos.cu", tmp_path)
    d = next(d for d in out if d.code == "KL101")
    assert d.metrics["measured_sectors"] == d.metrics["sectors"] == 24
    assert d.metrics["measured_ideal_sectors"] == 4


def test_refuted_when_the_gpu_disagrees(tmp_path: Path) -> None:
    """Replace the strided addresses by unit-stride ones: the KL101 finding must be refuted."""
    fixture = FIXTURES / "KL101_mapping.cu"
    text, result = _lint(fixture)
    plan = confirm.plan_file(result, text, OPTIONS)
    for run in plan.runs:
        if run.spec is None:
            continue
        trace = tmp_path / f"trace_{run.id}.npz"
        _fake_trace(plan, run, trace)
        data = dict(np.load(trace))
        data["addr"] = (np.arange(32, dtype=np.uint64) * 4 + np.uint64(1 << 20)) * (data["addr"] != 0)
        np.savez(trace, **data)
        run.status = "ok"
        confirm._measure(plan, run, str(trace))
    out = confirm.apply_results(list(result.diagnostics), [plan], [result], [])
    kl101 = [d for d in out if d.code == "KL101"]
    assert kl101 and all(d.confirmation == "refuted" for d in kl101)
    assert all(d.metrics["measured_ratio"] == 1.0 for d in kl101)


def test_a_cut_short_trace_that_disagrees_refutes_nothing(tmp_path: Path) -> None:
    """The same disagreement, but the warps reached the site more often than the trace kept: the
    recorded prefix is no evidence against the finding (covariance's `data[i * M + j2]`, aligned in the
    first iterations only), so it is not-run 'not-traced', never refuted."""
    fixture = FIXTURES / "KL101_mapping.cu"
    text, result = _lint(fixture)
    plan = confirm.plan_file(result, text, OPTIONS)
    for run in plan.runs:
        if run.spec is None:
            continue
        trace = tmp_path / f"trace_{run.id}.npz"
        _fake_trace(plan, run, trace)
        data = dict(np.load(trace))
        data["addr"] = (np.arange(32, dtype=np.uint64) * 4 + np.uint64(1 << 20)) * (data["addr"] != 0)
        data["count"] = np.where(data["count"] > 0, run.spec["maxseq"] + 1, 0).astype(np.uint32)
        np.savez(trace, **data)
        run.status = "ok"
        confirm._measure(plan, run, str(trace))
    out = confirm.apply_results(list(result.diagnostics), [plan], [result], [])
    kl101 = [d for d in out if d.code == "KL101"]
    assert kl101 and all(d.confirmation == "not-run" and d.metrics["confirm_not_run"] == "not-traced"
                         for d in kl101), [(d.line, d.confirmation) for d in kl101]


def test_found_by_confirm_when_static_analysis_missed(tmp_path: Path) -> None:
    """A coalesced site whose measured addresses are strided is reported as found-by-confirm."""
    fixture = FIXTURES / "KL103_misaligned.cu"
    text, result = _lint(fixture)
    plan = confirm.plan_file(result, text, OPTIONS)
    aligned = next(r for r in plan.runs if r.name_expr == "aligned")
    for run in [aligned]:
        trace = tmp_path / "t.npz"
        _fake_trace(plan, run, trace)
        data = dict(np.load(trace))
        data["addr"] = data["addr"] * np.uint64(32)  # 4-byte lanes now 128 bytes apart
        np.savez(trace, **data)
        run.status = "ok"
        confirm._measure(plan, run, str(trace))
    out = confirm.apply_results(list(result.diagnostics), [plan], [result], [])
    found = [d for d in out if d.confirmation == "found-by-confirm"]
    assert found and {d.code for d in found} <= {"KL101", "KL102"}
    assert all(d.kernel == "aligned" for d in found)


def test_data_dependent_kernel_runs_but_claims_nothing_of_its_own(tmp_path: Path) -> None:
    """A gather runs (guarded), but the site whose address is loaded data yields no found-by-confirm."""
    text, result = _lint(FIXTURES / "KL101_mapping.cu")
    plan = confirm.plan_file(result, text, OPTIONS)
    gather = next(r for r in plan.runs if r.name_expr == "gather")
    assert gather.spec is not None and "loaded data" in gather.data_dependent
    trace = tmp_path / "t.npz"
    _fake_trace(plan, gather, trace)
    data = dict(np.load(trace))
    data["addr"] = data["addr"] * np.uint64(32)  # every traced site now strided
    np.savez(trace, **data)
    gather.status = "ok"
    confirm._measure(plan, gather, str(trace))
    assert any(m.code in ("KL101", "KL102") for m in gather.measured_diags)  # the rules do fire on it ...
    out = confirm.apply_results(list(result.diagnostics), [plan], [result], [])
    assert not [d for d in out if d.kernel == "gather" and d.confirmation == "found-by-confirm"]  # ... no claim


def test_finding_under_a_data_dependent_branch_is_not_judged(tmp_path: Path) -> None:
    out, _ = _confirm_with_fake_gpu(FIXTURES / "KL305_data_dependent.cu", tmp_path)
    under = [d for d in out if d.confirmation and any("data-dependent branch" in a for a in d.assumptions)]
    assert any(d.code == "KL101" for d in under)
    assert all(d.confirmation == "not-run" and d.metrics["confirm_not_run"] == "data-dependent" for d in under)


def test_uniform_loads_are_seeded_with_the_sampled_values(tmp_path: Path) -> None:
    """A warp-uniform load returns its sampled value on the GPU (confirm/seeding.py): the instrumented
    load is wrapped, the launch carries the value of each sample, and the findings are judged."""
    from kernlint.confirm import seeding

    text, result = _lint(FIXTURES / "KL101_uniform_loads.cu")
    plan = confirm.plan_file(result, text, OPTIONS)
    assert plan.instrumented is not None
    code = plan.instrumented.code
    assert "__kl_ldv(" in code and "offsets[blockIdx.x]" in code
    # The load still runs (traced), only its value is replaced: the wrap is outside the access record.
    line = next(ln for ln in code.splitlines() if "int base = " in ln)
    assert line.strip().startswith("int base = __kl_ldv(") and "__kl_rec(" in line, line
    assert "__kl_ldv(" in plan.instrumented.profiled  # the build Nsight Compute profiles sees the same values
    run = next(r for r in plan.runs if r.name_expr == "segment_strided")
    assert run.seeded and run.spec is not None
    assumed = dict(run.result.assumed)
    (site_symbol, target), = run.result.load_sites
    slot = next(s.id for s in plan.instrumented.seeded if s.span.line == int(site_symbol.split(":")[1]))
    for key, sample in (("seed", 0), ("seed2", 1)):
        raw = bytes.fromhex(run.spec.get(key, run.spec["seed"])["hex"])
        vals = np.frombuffer(raw[: seeding.MAXV * 8], dtype=np.int64)
        have = np.frombuffer(raw[seeding.MAXV * 8 + 8: seeding.MAXV * 8 + 8 + seeding.MAXV // 8], dtype=np.uint32)
        assert vals[slot] == assumed[target][sample] and (have[slot >> 5] >> (slot & 31)) & 1
    # Two sites reading the same words share a symbol: both return its value.
    src = ("// kernlint: block=(128,1,1)\n__global__ void k(const int* lim, float* a) {\n"
           "    int s = lim[blockIdx.x];\n    int t = lim[blockIdx.x];\n"
           "    a[(s + t) * 2 + threadIdx.x * 32] = 1.0f;\n}\n")
    path = tmp_path / "twice.cu"
    path.write_text(src)
    res = lint_with_suppressions(src, str(path), OPTIONS)
    twice = confirm.plan_file(res, src, OPTIONS)
    r = twice.runs[0]
    assert len({t for _s, t in r.result.load_sites}) == 1 and len(r.result.load_sites) == 2 and r.seeded
    # With the values seeded, a finding on a loaded stride is judged (here: from a trace equal to the
    # prediction), not set aside as data-dependent.
    out, _ = _confirm_with_fake_gpu(FIXTURES / "KL101_uniform_loads.cu", tmp_path)
    loaded = [d for d in out if d.kernel == "segment_strided" and d.confirmation]
    assert loaded and all(d.confirmation == "confirmed" for d in loaded), [(d.line, d.confirmation) for d in loaded]
    if importlib.util.find_spec("cupy") is not None:
        from kernlint.confirm.cupy_probe import nvrtc_compile

        names = [r.name_expr for r in plan.runs if r.spec]
        for build in (plan.instrumented.code, plan.instrumented.profiled):
            ok, log = nvrtc_compile(build, plan.options, names)
            assert ok, log[-2000:]


def test_a_constant_pointer_field_loaded_at_the_same_column_is_not_the_measured_access(tmp_path: Path) -> None:
    """`prm[b].rows[i]`: the pointer `prm[b].rows` (8 bytes, `__constant__`) and the float load through it
    start at one column; the trace records the float load, so its width (4) is the one measured
    (heartwall's KL103 were refuted as 8-byte requests needing 8 ideal sectors)."""
    src = ("struct P { float* rows; int n; };\n__constant__ P prm[4];\n// kernlint: block=(128,1,1)\n"
           "__global__ void shifted(float* out) {\n    int b = blockIdx.x;\n"
           "    out[b * 128 + threadIdx.x] = prm[b].rows[b * 128 + threadIdx.x + 1];\n}\n")
    path = tmp_path / "shifted.cu"
    path.write_text(src)
    out, _ = _confirm_with_fake_gpu(path, tmp_path)
    (d,) = [d for d in out if d.code == "KL103"]
    assert d.confirmation == "confirmed", d.notes[-1]
    assert d.metrics["measured_ideal_sectors"] == 4 and d.metrics["measured_sectors"] == 5


def test_without_cupy_every_finding_is_not_run_with_one_note(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a))
    text, result = _lint(FIXTURES / "KL101_aos.cu")
    out, notes = confirm.confirm_findings(list(result.diagnostics), [result], {str(FIXTURES / "KL101_aos.cu"): text})
    assert len(notes) == 1 and "CuPy" in notes[0]
    assert {d.confirmation for d in out} == {"not-run"}


def test_cli_exit_status_unaffected_without_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from kernlint.cli.command import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a))
    path = str(FIXTURES / "KL101_aos.cu")
    plain = CliRunner().invoke(main, [path, "--no-ptxas", "--format", "json"])
    confirmed = CliRunner().invoke(main, [path, "--no-ptxas", "--format", "json", "--confirm"])
    assert plain.exit_code == confirmed.exit_code == 1
    assert '"confirmation": "not-run"' in confirmed.stdout
    # `--confirm` takes an optional value; a path right after it is still a path.
    bare = CliRunner().invoke(main, ["--no-ptxas", "--format", "json", "--confirm", path])
    assert bare.exit_code == 1 and '"confirmation": "not-run"' in bare.stdout


# --- on a GPU ------------------------------------------------------------------------------------------


def _gpu_ready() -> tuple[bool, str]:
    if importlib.util.find_spec("cupy") is None:
        return False, "CuPy not installed"
    from kernlint.confirm.cupy_probe import gpu_available

    return gpu_available()


_TABLE_KEYS = ("sectors", "ideal_sectors", "ways", "wavefronts", "ideal_wavefronts", "warps_split", "min_trips",
               "max_trips", "occupancy", "registers", "last_warp_lanes", "rejected")


def _on_loaded_values(d: Diagnostic) -> bool:
    """Not judged by design: a finding that depends on values loaded from memory (zeroed inputs), one
    inside kernlint's model of a missing library (the GPU compiles the real one, untraced), one on an access
    made by an asm statement or a copy (not rewritten, untraced), or one that is
    no barrier/collective in a kernel that hung at one (only those are judged from the trace)."""
    if d.confirmation != "not-run":
        return False
    return d.metrics.get("confirm_not_run") in ("data-dependent", "library-model", "async-copy", "inline-asm") or (
        d.metrics.get("confirm_not_run") == "fault" and any("kernel hung" in n for n in d.notes))


def _table_row(d: Diagnostic) -> str:
    """`line:col CODE status | predicted ... | measured ...` for the report."""
    predicted = {k: d.metrics[k] for k in _TABLE_KEYS if k in d.metrics}
    measured = {k: d.metrics[f"measured_{k}"] for k in _TABLE_KEYS if f"measured_{k}" in d.metrics}
    return f"  {d.line}:{d.column} {d.code} {d.kernel} {d.confirmation} | predicted {predicted} | measured {measured}"


@pytest.mark.gpu
@pytest.mark.parametrize("fixture", CONFIRM_FIXTURES, ids=lambda p: p.name)
def test_gpu_confirms_every_finding(fixture: Path) -> None:
    ready, why = _gpu_ready()
    if not ready:
        pytest.skip(why)
    from test_fixtures import (
        parse_markers,  # same directory: the fixture marker grammar
    )

    text, result = _lint(fixture)
    out, notes = confirm.confirm_findings(list(result.diagnostics), [result], {str(fixture): text},
                                          options=OPTIONS)
    table = "\n".join(_table_row(d) for d in out)
    faults = [n for n in notes if " fault " in n or "timeout" in n]
    assert not faults, faults
    static = [d for d in out if d.confirmation in ("confirmed", "refuted", "not-run")
              and not d.code.startswith("KL4") and not _on_loaded_values(d)]
    assert all(d.confirmation == "confirmed" for d in static), table + "\n" + "\n".join(notes)
    # Occupancy findings: measured from the compiled kernel where it says something, never refuted.
    assert not [d for d in out if d.code.startswith("KL4") and d.confirmation == "refuted"], table
    _expect, ok, _todo, _problems = parse_markers(text)
    found = {(d.line, d.code) for d in out if d.confirmation == "found-by-confirm"}
    assert not (found & ok), f"ok: sites measured noisy: {sorted(found & ok)}\n{table}"
    assert not found, f"found by confirmation: {sorted(found)}\n{table}"
    if os.environ.get("KERNLINT_CONFIRM_TABLE"):
        with open(os.environ["KERNLINT_CONFIRM_TABLE"], "a", encoding="utf-8") as fh:
            fh.write(f"## {fixture.name}\n{table}\n")


# --- Nsight Compute output -------------------------------------------------------------------------

# Trimmed from `ncu --import r.ncu-rep --page source --csv --print-source cuda,sass` (ncu 2025.3.1,
# H200) on fixtures/KL101_transpose.cu: a row per CUDA line with the sums, then its SASS rows.
NCU_SOURCE_PAGE = '''"Kernel Name","transpose_naive(float *, const float *, int, int)",
"File Name","/work/main/fixtures/KL101_transpose.cu"
"Line No","Source","Address","Source","Instructions Executed","Thread Instructions Executed","Divergent Branches","L2 Theoretical Sectors Global Excessive","L2 Theoretical Sectors Global","L2 Theoretical Sectors Global Ideal"
"10","float v = in[(y + j) * w + x];","-","-","1056","33792","0","0","1536","1536"
"","","0x7f195b7a0100","      LDG.E R5, desc[UR4][R2.64]","96","3072","0","0","384","384"
"11","out[x * h + y + j] = v;  // expect: KL102 uncoalesced-global-store","-","-","576","18432","0","10752","12288","1536"
'''


def test_ncu_source_page_is_parsed_per_line() -> None:
    from kernlint.confirm.ncu import parse_source_page

    lines = parse_source_page(NCU_SOURCE_PAGE)
    assert lines[11]["ncu_global_sectors"] == 12288 and lines[11]["ncu_global_sectors_ideal"] == 1536
    assert lines[10]["ncu_global_sectors"] == lines[10]["ncu_global_sectors_ideal"] == 1536
    assert lines[11]["ncu_divergent_branches"] == 0


def test_ncu_mode_without_ncu_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernlint.confirm import ncu

    monkeypatch.setattr(ncu.shutil, "which", lambda name: None)
    notes: list[str] = []
    assert ncu.profile_with_ncu([], [], "/tmp", notes) == []
    assert notes and "not on PATH" in notes[0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_isolating_a_kernel_lets_the_others_compile(tmp_path: Path) -> None:
    """KL405's kernel is rejected by ptxas; with its body emptied the rest of the file compiles."""
    plan = _plan(FIXTURES / "KL405_shared_limits.cu")
    assert plan.instrumented is not None

    def nvcc(code: str) -> subprocess.CompletedProcess[str]:
        src = tmp_path / "k.cu"
        src.write_text(code)
        return subprocess.run(["nvcc", "--cubin", "-arch=sm_80", "-o", str(tmp_path / "k.cubin"), str(src)],
                              capture_output=True, text=True, timeout=300, check=False)

    whole = nvcc(plan.instrumented.code)
    assert whole.returncode != 0 and "shared" in whole.stderr
    assert nvcc(confirm.isolate_kernel(plan, "fits").code).returncode == 0
    alone = nvcc(confirm.isolate_kernel(plan, "too_much_shared").code)
    assert alone.returncode != 0 and "too_much_shared" in alone.stderr


FAULTY = """// kernlint: block=(64,1,1)
__global__ void faults(float* out) {
    if (threadIdx.x == 0) __trap();  // (a wild pointer no longer faults: the guard redirects it)
    out[threadIdx.x * 2] = 1.0f;
}

__global__ void fine(float* out) {
    out[threadIdx.x * 2] = 1.0f;
}

__global__ void spins(volatile float* flag, float* out) {
    while (flag[0] == 0.0f) { }
    out[threadIdx.x] = 1.0f;
}
"""


@pytest.mark.gpu
def test_gpu_fault_and_hang_are_notes_and_the_rest_still_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ready, why = _gpu_ready()
    if not ready:
        pytest.skip(why)
    monkeypatch.setattr(confirm, "CHILD_TIMEOUT_S", 20.0)
    path = tmp_path / "faulty.cu"
    path.write_text(FAULTY)
    text, result = _lint(path)
    plan = confirm.plan_file(result, text, OPTIONS)
    notes: list[str] = []
    confirm.execute(plan, str(tmp_path), notes)
    status = {r.name_expr: r.status for r in plan.runs}
    assert status["faults"] == "fault", (status, notes)
    assert status["fine"] == "ok", (status, notes)
    # A hang keeps the trace recorded until then (mapped host memory): the run is measured, marked hung.
    spins = next(r for r in plan.runs if r.name_expr == "spins")
    assert (spins.status == "ok" and spins.hung) or spins.status == "timeout", (status, notes)
    assert any("faults" in n and "fault" in n for n in notes) and any("spins" in n for n in notes)
    out = confirm.apply_results(list(result.diagnostics), [plan], [result], notes)
    kl102 = [d for d in out if d.code == "KL102" and d.kernel == "fine"]
    assert all(d.confirmation == "confirmed" for d in kl102)


TRICKY = r"""#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
// kernlint: block=(128,1,1)
#define AT(p, i) p[i]
#define TILE 32

namespace util {
__device__ __forceinline__ float load_strided(const float* a, int i, int ld) { return a[i * ld]; }
}

struct Host {
    std::vector<float> v;
    void fill() { for (auto& x : v) x = 1.0f; printf("{ not a block }\n"); }
};

extern "C" __global__ void __launch_bounds__(128) via_helper(const float* a, float* out, int ld) {
    int t = threadIdx.x;
    out[t] = util::load_strided(a, t, ld);
}

__global__ void via_macro(const float* a, float* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    AT(out, t) = AT(a, t * 4);
}

__global__ void multi_line(const float* a,
                           float* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        out[t] = a[
            t * 2
        ];
    }
}

__global__ void streaming(const float* a, float* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    __stcs(out + t * 2, __ldg(a + t));
}

struct Pair { float* lo; float* hi; int n; };

template <typename T, int STRIDE>
__global__ void tmpl(Pair p, const T* src) {
    __shared__ T tile[TILE][TILE + 1];
    int t = threadIdx.x;
    tile[t % TILE][t / TILE] = src[t * STRIDE];
    __syncthreads();
    p.lo[t] = tile[t / TILE][t % TILE];
}

int main() {
    Host h;
    h.fill();
    float *a, *out;
    cudaMalloc(&a, 1 << 20);
    via_helper<<<1, 128>>>(a, out, 64);
    tmpl<float, 2><<<1, 128>>>(Pair{out, out, 0}, a);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_tricky_source_helpers_macros_templates_host_types(tmp_path: Path) -> None:
    """Host-only types and includes go, helper and macro accesses are traced, and nvcc compiles it."""
    path = tmp_path / "tricky.cu"
    path.write_text(TRICKY)
    plan = _plan(path)
    assert plan.instrumented is not None
    assert not plan.instrumented.skipped, plan.instrumented.skipped
    code = plan.instrumented.code
    assert "std::vector" not in code and "{ return (*__kl_rec(" in code and "(*__kl_rec(0u, &(a[i * ld])))" in code
    assert "&(AT(out, t))" in code
    assert "__stcs(__kl_rec(" in code and "__ldg(__kl_rec(" in code
    src = tmp_path / "k.cu"
    src.write_text(code + _explicit_instantiations(plan) + "\n")
    proc = subprocess.run(["nvcc", "--cubin", "-arch=sm_80", "-std=c++17", "-o", str(tmp_path / "k.cubin"), str(src)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out, _ = _confirm_with_fake_gpu(path, tmp_path)
    assert all(d.confirmation == "confirmed" for d in out if d.code.startswith("KL1")), [
        (d.line, d.code, d.confirmation, d.notes[-1]) for d in out]


LONG_LOOP = """// kernlint: block=(128,1,1)
__global__ void long_loop(const float* a, float* out, int n) {
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += a[k * 4096 + threadIdx.x];
    out[threadIdx.x] = acc;
}
"""


@pytest.mark.gpu
def test_gpu_guard_redirects_accesses_past_the_evaluated_iterations(tmp_path: Path) -> None:
    """The evaluator stops a long loop early, so its buffer is too small; the guard keeps it running."""
    ready, why = _gpu_ready()
    if not ready:
        pytest.skip(why)
    path = tmp_path / "long_loop.cu"
    path.write_text(LONG_LOOP)
    text, result = _lint(path)
    plan = confirm.plan_file(result, text, OPTIONS)
    notes: list[str] = []
    confirm.execute(plan, str(tmp_path), notes)
    run = plan.runs[0]
    assert run.status == "ok", (run.status, run.reason, notes)
    assert run.redirected > 0


def test_template_kernels_launch_with_their_template_arguments() -> None:
    # The engine evaluates an instantiated copy of a template kernel; confirmation must still launch
    # the real template as `name<args>` (NVRTC rejects a bare template name).
    plan = _plan(FIXTURES / "KL101_template.cu")
    names = {r.name_expr for r in plan.runs}
    assert names and all("<" in n and n.endswith(">") for n in names), names


def test_regions_reached_through_blockidx_trace_the_blocks_they_were_evaluated_with() -> None:
    # `if (bx == 1)` is evaluated again with blockIdx.x = 1 (eval/resample.py); tracing the default
    # blocks 0 and 3 would never execute the flagged store.
    plan = _plan(FIXTURES / "KL101_block_guard.cu")
    samples = [r.spec["samples"] for r in plan.runs if r.name_expr == "second_block" and r.spec]
    xs = sorted([s0[0], s1[0]] for s0, s1 in samples)
    assert xs == [[0, 3], [1, 1]], samples


@pytest.mark.gpu
@pytest.mark.parametrize("fixture", [
    "KL101_transpose.cu",
    # Shared memory: ncu's per-instruction wavefronts equal the trace's once an instruction listed under
    # its line once per inlining context is counted once (H100, issue 18).
    "KL201_transpose.cu",
])
def test_gpu_ncu_counters_per_instruction_equal_the_trace(fixture: str) -> None:
    """Under --confirm=ncu each finding carries its own instructions' counters, equal to the trace's totals."""
    ready, why = _gpu_ready()
    if not ready:
        pytest.skip(why)
    if shutil.which("ncu") is None:
        pytest.skip("Nsight Compute (ncu) not on PATH")
    path = FIXTURES / fixture
    if not path.exists():
        pytest.skip(f"{fixture} not in this checkout")
    text, result = _lint(path)
    out, notes = confirm.confirm_findings(list(result.diagnostics), [result], {str(path): text},
                                          mode="ncu", options=OPTIONS)
    compared = [(d.line, d.code, k, v) for d in out for k, v in d.metrics.items() if k.endswith("_equals_trace")]
    assert compared, "\n".join(notes) + "\n" + "\n".join(str(dict(d.metrics)) for d in out)
    assert all(v for *_rest, v in compared), compared


def test_a_site_behind_a_branch_on_loaded_data_that_never_ran_is_data_dependent() -> None:
    """On zeroed inputs a branch on loaded values may keep a site from running at all: that is not a
    refutation nor a probe failure, but the data-dependent case (KL102_reference_flag.cu's `bisect`)."""
    from kernlint.confirm.verdict import _verdict

    path = FIXTURES / "KL102_reference_flag.cu"
    text, result = _lint(path)
    plan = confirm.plan_file(result, text, OPTIONS)
    (d,) = [d for d in result.diagnostics if d.code == "KL102" and d.kernel == "bisect"]
    for r in plan.runs:  # as if the GPU ran the kernel and never reached the store
        r.status, r.measured, r.traced_spans = "ok", object(), set()
    out = _verdict(d, plan)
    assert out.confirmation == "not-run" and out.metrics["confirm_not_run"] == "data-dependent"
    assert "loaded data (line 26)" in out.notes[-1]


def test_a_finding_on_an_asynchronous_copy_is_not_run_with_its_reason() -> None:
    """An asynchronous copy (cuda::memcpy_async, inline-asm cp.async, __pipeline_memcpy_async) is a load and a
    store at once, made by a call or an asm statement the instrumentation does not rewrite: its findings are
    not-run 'async-copy', saying so, whatever the run measured; the other findings of the file are judged."""
    from kernlint.confirm.verdict import _verdict

    for name in ("KL101_async_copy.cu", "KL201_async_copy.cu"):
        path = FIXTURES / name
        text, result = _lint(path)
        plan = confirm.plan_file(result, text, OPTIONS)
        for r in plan.runs:  # as if the GPU ran every kernel and traced nothing at the copies
            r.status, r.measured, r.traced_spans = "ok", object(), set()
        copies = [d for d in result.diagnostics if d.code in ("KL101", "KL201")]
        assert copies, name
        for d in copies:
            out = _verdict(d, plan)
            assert out.confirmation == "not-run" and out.metrics["confirm_not_run"] == "async-copy", (name, d.line)
            assert "asynchronous copy" in out.notes[-1]


_RESAMPLED_GUARD = """\
__global__ void copy_rows(const float* in, float* out, int rows, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t % rows;
    int c = t / rows;
    out[t] = in[c * 4096 + r + 1];
    if ((t + 1) % rows == 0) {
        out[t + n] = 0.0f;
    }
}
"""


def test_a_re_evaluation_of_dead_regions_judges_only_findings_inside_them(tmp_path: Path) -> None:
    """The guard at line 7 never holds for rows = 4096/6144, so the engine evaluates the kernel again
    with rows = 1 and 32 and reports only what it finds inside the guard (engine.combine). That
    evaluation also flags line 6 (32 sectors at rows = 1), but it is not the one the finding was
    reported under; a GPU run of it that disagrees at line 6 must not refute it (rodinia heartwall
    kernel.cu:169, `in2_rows` re-sampled as 1 and 32)."""
    path = tmp_path / "resampled_guard.cu"
    path.write_text(_RESAMPLED_GUARD)
    text, result = _lint(path)
    (d,) = [d for d in result.diagnostics if d.code == "KL103"]
    assert d.line == 6
    plan = confirm.plan_file(result, text, OPTIONS)
    resampled = [r for r in plan.runs if r.result.regions]
    assert resampled and all(r.spec is not None for r in resampled)
    site = plan.site_of_span[(6, d.column, "access")]
    for run in plan.runs:
        if run.spec is None:
            continue
        trace = tmp_path / f"trace_{run.id}.npz"
        _fake_trace(plan, run, trace)
        if run.result.regions:  # this run's line 6 measured aligned: the rule does not fire there
            data = dict(np.load(trace))
            lanes = np.arange(32, dtype=np.uint64) * np.uint64(4) + np.uint64(1 << 20)
            data["addr"][site.id] = lanes * (data["addr"][site.id] != 0)
            np.savez(trace, **data)
        run.status, run.device = "ok", "fake GPU"
        confirm._measure(plan, run, str(trace))
    for run in resampled:
        assert not any(key[0] == 6 for key in run.static_keys)  # its line-6 findings predict nothing
        assert (6, d.column, "KL103") not in {(m.line, m.column, m.code) for m in run.measured_diags}
    out = confirm.apply_results(list(result.diagnostics), [plan], [result], [])
    (judged,) = [x for x in out if x.code == "KL103" and x.line == 6]
    assert judged.confirmation == "confirmed", judged.notes[-1]


def test_a_site_under_a_loop_cut_short_that_never_ran_is_data_dependent() -> None:
    """`while (*residual > tol)`: the static pass assumes iterations (it cannot load `*residual`); zeroed
    inputs never enter the loop, so the site is not traced: that is not-run data-dependent, naming the loop."""
    fixture = FIXTURES / "KL102_data_loop_second_iteration.cu"
    text, result = _lint(fixture)
    plan = confirm.plan_file(result, text, OPTIONS)
    run = next(r for r in plan.runs if r.name_expr == "iterate")
    run.status = "ok"
    run.static_keys = {(d.line, d.column, d.code) for d in result.diagnostics if d.kernel == "iterate"}
    run.traced_spans = set()
    run.measured = run.result  # a measurement in which the site never ran
    finding = next(d for d in result.diagnostics if d.kernel == "iterate" and d.code == "KL101")
    plan.runs = [run]
    from kernlint.confirm.verdict import _verdict
    out = _verdict(finding, plan)
    assert out.confirmation == "not-run", out.notes
    assert out.metrics["confirm_not_run"] == "data-dependent"
    assert "loop at line 35" in " ".join(out.notes)
