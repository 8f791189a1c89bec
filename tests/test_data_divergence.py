"""KL305: data-dependent branches and trip counts, weighed by the work under them; and the work model."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernlint.base.diagnostics import Severity
from kernlint.engine.lint import LintOptions, lint_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
OPTIONS = LintOptions(resources=False)


def _lint(text: str, name: str = "t.cu"):  # type: ignore[no-untyped-def]
    return lint_source(text, name, OPTIONS).diagnostics


@pytest.fixture(scope="module")
def fixture_diags():  # type: ignore[no-untyped-def]
    path = FIXTURES / "KL305_data_dependent.cu"
    text = path.read_text()
    lines = text.splitlines()
    diags = lint_source(text, str(path), OPTIONS).diagnostics

    def at(snippet: str, code: str = "KL305"):  # type: ignore[no-untyped-def]
        line = next(i for i, ln in enumerate(lines, 1) if snippet in ln and not ln.strip().startswith("//"))
        return [d for d in diags if d.line == line and d.code == code]

    return at


@pytest.mark.parametrize("snippet,severity", [
    ("for (int e = rowPtr[row]; e < rowPtr[row + 1]; ++e)", Severity.WARNING),
    ("if (tid < nodes && frontier[tid])", Severity.WARNING),
    ("for (int i = edgeStart[tid];", Severity.WARNING),
    ("for (int k = 0; k < count[v]; ++k)", Severity.WARNING),
    ("if (!active[i]) return;", Severity.WARNING),
    ("if (a[i] < 0) a[i] = 0;", Severity.INFO),
    ("if (CDF[x] >= u[i]) {", Severity.INFO),  # a search: the exit is found by running the loop
    ("if (!visited[id])", Severity.INFO),
])
def test_severity_follows_the_work_under_the_condition(fixture_diags, snippet, severity) -> None:  # type: ignore[no-untyped-def]
    found = fixture_diags(snippet)
    assert [d.severity for d in found] == [severity], found


def test_message_names_the_deciding_loads_and_remedies(fixture_diags) -> None:  # type: ignore[no-untyped-def]
    (d,) = fixture_diags("if (tid < nodes && frontier[tid])")
    assert "`frontier[tid]`" in d.message and "different addresses" in d.message
    fix = next(n for n in d.notes if n.startswith("fix:"))
    assert "sort or bin" in fix and "a warp" in fix and "compact" in fix
    assert d.metrics["deciding_loads"] == ["frontier[tid]"]
    assert d.metrics["avg_active_lanes_worst"] < 24 <= d.metrics["avg_active_lanes"]


def test_uniform_loads_are_quiet(fixture_diags) -> None:  # type: ignore[no-untyped-def]
    assert fixture_diags("if (flags[blockIdx.x])") == []
    assert fixture_diags("for (int e = start + lane; e < end; e += 32)") == []
    assert fixture_diags("if (any)") == []


def test_access_behind_a_data_mask_states_the_assumption(fixture_diags) -> None:  # type: ignore[no-untyped-def]
    (d,) = fixture_diags("out[i] = p[i].vx;", "KL101")
    assert any("assuming every lane may take the data-dependent branch at line" in a and "alive[i]" in a
               for a in d.assumptions), d.assumptions


def test_a_gather_through_varying_data_is_varying() -> None:
    src = """// kernlint: block=(128,1,1)
__global__ void k(const int* idx, const int* deg, float* out, const float* in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = idx[i];
    float acc = 0.0f;
    for (int j = 0; j < deg[v]; ++j) acc += in[j * 128 + i];
    out[i] = acc;
}
"""
    (d,) = [d for d in _lint(src) if d.code == "KL305"]
    assert d.line == 6 and d.severity is Severity.WARNING
    assert "`deg[v]`" in d.message and "`idx[i]`" in d.message


def test_uniform_address_through_a_warp_index_is_quiet() -> None:
    src = """// kernlint: block=(128,1,1)
__global__ void k(const int* deg, float* out, const float* in) {
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    float acc = 0.0f;
    for (int j = 0; j < deg[w]; ++j) acc += in[j * 128 + threadIdx.x];
    out[threadIdx.x] = acc;
}
"""
    assert [d for d in _lint(src) if d.code == "KL305"] == []


def test_kl301_weighs_operations_not_statements() -> None:
    path = FIXTURES / "KL301_work.cu"
    text = path.read_text()
    diags = [d for d in lint_source(text, str(path), OPTIONS).diagnostics if d.code == "KL301"]
    lines = text.splitlines()
    by_line = {d.line: d for d in diags}
    ring = next(i for i, ln in enumerate(lines, 1) if "tx > 0 && tx < 15" in ln)
    even = next(i for i, ln in enumerate(lines, 1) if "if (ty % 2 == 0) {" in ln)
    assign = next(i for i, ln in enumerate(lines, 1) if "if (ty % 2 == 0) v = 0.0f;" in ln)
    # The ring's one statement weighs as its eight loads and seven additions: 18 % of the block's
    # lane-slots idle (as one statement it would weigh a few %), still under the 20 % from which a
    # branch is a warning (rules/KL301), so an info that states the figure.
    assert 0.15 < by_line[ring].metrics["idle_fraction"] < 0.20
    assert by_line[ring].severity is Severity.INFO
    assert any("18 % of the block's lane-slots" in n for n in by_line[ring].notes)
    assert by_line[even].severity is Severity.WARNING
    assert by_line[assign].severity is Severity.INFO
    # The kernel-wide prediction ncu's rule checks: every finding carries it, below 32 when lanes idle.
    for d in diags:
        assert 0 < d.metrics["avg_active_lanes"] < 32
    assert by_line[even].metrics["avg_active_lanes"] < 24 < by_line[assign].metrics["avg_active_lanes"]


def test_worst_launch_wins_and_is_named() -> None:
    """Several real launch shapes: the worst finding at a site is kept, whichever shape came first."""

    from kernlint.checks.base import Rule
    from kernlint.base.diagnostics import Diagnostic
    from kernlint.engine.lint import analyse_kernel, combine
    from kernlint.frontend import parse_source

    src = (FIXTURES / "KL301_two_launches.cu").read_text()
    tu = parse_source(src, "two.cu")
    results = analyse_kernel(tu, tu.kernels[0], OPTIONS, tuple(src.splitlines()))
    assert [dict(r.shape.arg_values)["width"] for r in results] == [32, 4]

    def fake(r):  # type: ignore[no-untyped-def]
        sev = Severity.INFO if dict(r.shape.arg_values)["width"] == 32 else Severity.WARNING
        yield Diagnostic(path="two.cu", line=8, column=5, code="KL301", name="divergent-branch", severity=sev,
                         message=f"width {dict(r.shape.arg_values)['width']}", kernel="k")

    rule = Rule("KL301", "divergent-branch", "", Severity.WARNING, fake)
    (d,) = combine(results, (rule,))
    assert d.severity is Severity.WARNING and d.message == "width 4"
    note = next(n for n in d.notes if n.startswith("the worst of 2"))
    assert "width = 4" in note and "info with the launch at line 15" in note
    # Reversed order: the same answer.
    (d2,) = combine(list(reversed(results)), (rule,))
    assert d2.message == "width 4"


def test_confirmation_leaves_data_dependent_findings_alone() -> None:
    from kernlint.confirm import _confirmable

    path = FIXTURES / "KL305_data_dependent.cu"
    diags = lint_source(path.read_text(), str(path), OPTIONS).diagnostics
    assert not any(_confirmable(d) for d in diags if d.code == "KL305")
    assert any(_confirmable(d) for d in diags if d.code == "KL101")


@pytest.fixture(scope="module")
def inherent_diags():  # type: ignore[no-untyped-def]
    path = FIXTURES / "KL305_inherent.cu"
    text = path.read_text()
    lines = text.splitlines()
    diags = lint_source(text, str(path), OPTIONS).diagnostics

    def at(snippet: str):  # type: ignore[no-untyped-def]
        line = next(i for i, ln in enumerate(lines, 1) if snippet in ln and not ln.strip().startswith("//"))
        return [d for d in diags if d.line == line and d.code == "KL305"]

    return at


@pytest.mark.parametrize("snippet,severity,why", [
    ("while (s != next)", Severity.INFO, "decided inside the loop"),
    ("while (z > 1.0f && k < 64)", Severity.INFO, "decided inside the loop"),
    ("for (int k = 0; k < c; ++k)", Severity.WARNING, ""),
    ("if (nb >= 0)", Severity.INFO, "sentinel"),
    ("} else if (nb == -1)", Severity.INFO, "exceptional side of the index-validity test at line"),
    ("if (v < 0.0f)", Severity.INFO, "light"),
    ("if (data[i] != expected)", Severity.INFO, "reports an error"),
    ("if (src[i] > 0) {", Severity.INFO, "stream compaction"),
    ("if (img[p - 1] != c ||", Severity.INFO, "adaptive refinement"),
])
def test_inherent_divergence_is_info_with_the_reason(inherent_diags, snippet, severity, why) -> None:  # type: ignore[no-untyped-def]
    (d,) = inherent_diags(snippet)
    assert d.severity is severity, d
    reason = " ".join(n for n in d.notes if n.startswith("severity info:"))
    assert (why in reason) if why else not reason, d.notes


def test_a_sentinel_test_that_does_not_index_is_not_a_validity_test() -> None:
    """The same heavy branch on a loaded flag that is never used as an index stays a warning."""
    src = """// kernlint: block=(192,1,1)
__global__ void k(const int* kind, const float* vars, const float* area, float* flux, int nelr) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float f = 0.0f;
    int nb = kind[i];
    if (nb >= 0) {
        float a = area[i] + area[i + nelr] + area[i + 2 * nelr] + area[i + 3 * nelr];
        float d = vars[i] * a, e = vars[i + nelr] * a, m = vars[i + 2 * nelr];
        float p = (e - 0.5f * m * m / d) * 0.4f;
        f += (p + d) * 0.5f + (d - e) * sqrtf(p / d) * 0.25f + m * e * 0.125f;
    }
    flux[i] = f;
}
"""
    (d,) = [d for d in _lint(src) if d.code == "KL305"]
    assert d.severity is Severity.WARNING, d


def test_a_return_in_a_helper_leaves_only_the_helper() -> None:
    """`if (x < 0) return 0;` in an inlined helper is a light branch, not an exit from the kernel
    (which once charged it the rest of the kernel)."""
    src = """__device__ float clampf(float v) {
    if (v < 0.0f) return 0.0f;
    return v;
}
// kernlint: block=(256,1,1)
__global__ void k(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = clampf(in[i]);
    float acc = 0.0f;
    for (int j = 0; j < 16; ++j) acc += in[j * n + i] * a;
    out[i] = acc;
}
"""
    (d,) = [d for d in _lint(src) if d.code == "KL305"]
    assert d.severity is Severity.INFO and "early return" not in d.message, d
    assert d.metrics["region_share"] < 0.2
