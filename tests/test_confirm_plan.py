"""--confirm's planning (kernlint/confirm/plan.py) for a file that includes a header of its own: what it
lowers, and that a header's line numbers are never taken for the file's. No GPU needed."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernlint import confirm
from kernlint.engine.lint import LintOptions, lint_with_suppressions
from kernlint.ir.function_table import Released

OPTIONS = LintOptions(resources=False)

KERNEL = """#include "h.cuh"
__global__ void k(const float* a, float* out) {
    out[threadIdx.x] = HELPER(a, threadIdx.x);
}
"""

# Each header puts something at a line and column that is also a line and column of KERNEL: the
# helper's one access (moved to the call's site), an `if` at the call's own position, a helper whose
# name is on the same line of the file.
HEADERS = {
    "single_access": ("pick", """__device__ float pick(const float* p, int i) {
    if (i & 1) return p[i * 2];
    return 0.0f;
}
"""),
    "if_at_the_call": ("pick", """__device__ float twice(const float* p, int i) { return p[i] * 2.0f; }
__device__ float pick(const float* p, int i) {
                       if (i & 1) return twice(p, i * 2);
    return 0.0f;
}
"""),
    "name_on_the_line": ("get2", """// helpers
__device__ float one(const float* p, int i) { return p[i]; }
__device__ float get2(const float* p, int i) { return p[i] + p[i + 1]; }
"""),
}


def _plan(tmp_path: Path, header: str, helper: str, shift: int = 0) -> confirm.FilePlan:
    """The plan of KERNEL calling `helper` from `header`, the header's lines moved down by `shift`."""
    d = tmp_path / f"shift{shift}"
    d.mkdir()
    (d / "h.cuh").write_text("\n" * shift + header)
    text = KERNEL.replace("HELPER", helper)
    path = d / "k.cu"
    path.write_text(text)
    return confirm.plan_file(lint_with_suppressions(text, str(path), OPTIONS), text, OPTIONS)


def _kernel_part(code: str) -> str:
    """The instrumented code after the kernel file's own `#line 2 "path"` (after the inlined header)."""
    at = code.find('#line 2 "')
    assert at >= 0, code[-2000:]
    return code[code.index("\n", at):]


@pytest.mark.parametrize("case", sorted(HEADERS))
def test_where_a_headers_lines_fall_does_not_change_the_plan(tmp_path: Path, case: str) -> None:
    # The header's lines are its own: the same header moved down by blank lines must plan the file's
    # sites, guards and kept lines alike, and instrument the kernel's own text alike.
    helper, header = HEADERS[case][0], HEADERS[case][1]
    at, moved = _plan(tmp_path, header, helper), _plan(tmp_path, header, helper, shift=7)
    assert at.instrumented is not None and moved.instrumented is not None
    assert at.sites == moved.sites
    assert at.guards == moved.guards
    assert at.keep_lines == moved.keep_lines
    assert _kernel_part(at.instrumented.code) == _kernel_part(moved.instrumented.code)


def test_a_header_helpers_access_is_not_instrumented_in_the_files_text(tmp_path: Path) -> None:
    # pick() has one access and is called once: the site at the call stays there (reported as inside a
    # helper), never rewritten at the header's line and column in the kernel's file (which spliced a
    # record call into the kernel's parameter list).
    plan = _plan(tmp_path, HEADERS["single_access"][1], "pick")
    assert plan.instrumented is not None
    assert "__global__ void k(const float* a, float* out) {" in plan.instrumented.code
    assert [s.kind for s in plan.sites] == ["access", "access"]
    skipped = {(s.span.line, s.span.column): why for s, why in plan.instrumented.skipped}
    assert "inside a function called here" in skipped.get((3, 24), ""), skipped


def test_an_if_in_a_header_makes_no_branch_site_in_the_file(tmp_path: Path) -> None:
    plan = _plan(tmp_path, HEADERS["if_at_the_call"][1], "pick")
    assert plan.instrumented is not None
    assert [s.kind for s in plan.sites] == ["access", "access"], plan.sites


def test_a_header_function_named_on_the_files_line_is_not_guarded(tmp_path: Path) -> None:
    # get2 is at line 3 of the header and its name on line 3 of the file: its accesses are not this file's.
    plan = _plan(tmp_path, HEADERS["name_on_the_line"][1], "get2")
    assert plan.guards == ()
    assert plan.keep_lines == {2, 4}  # the kernel's first line (and its body's `{`) and its body's last


def test_planning_lowers_the_functions_it_uses_and_no_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Functions are lowered when first asked for (function_table.py); a header's unused helpers never are.
    from kernlint import frontend

    parsed: list[Any] = []
    real = frontend.parse_source

    def keep(*args: Any, **kwargs: Any) -> Any:
        tu = real(*args, **kwargs)
        parsed.append(tu)
        return tu

    monkeypatch.setattr(frontend, "parse_source", keep)
    header = HEADERS["if_at_the_call"][1] + "".join(
        f"__device__ float unused{i}(const float* p, int j) {{ return p[j + {i}]; }}\n" for i in range(5))
    plan = _plan(tmp_path, header, "pick")
    assert plan.instrumented is not None and len(parsed) == 1
    table = parsed[0].functions
    table.release()
    keys = {k.split("@")[0]: k for k in table}
    for used in ("k", "pick"):
        assert table[keys[used]].name == used
    for i in range(5):
        with pytest.raises(Released):
            table[keys[f"unused{i}"]]


def _plan_with(tmp_path: Path, header: str, kernel: str) -> confirm.FilePlan:
    (tmp_path / "h.cuh").write_text(header)
    path = tmp_path / "k.cu"
    path.write_text(kernel)
    return confirm.plan_file(lint_with_suppressions(kernel, str(path), OPTIONS), kernel, OPTIONS)


def test_a_grid_wide_sync_in_a_header_helper_runs_every_block(tmp_path: Path) -> None:
    # Blocks that wait for each other must all run: the helper's own text (in the header) says so, not
    # the kernel file's lines at the header's line numbers.
    header = """#include <cooperative_groups.h>
__device__ void all_blocks_wait() {
    cooperative_groups::this_grid().sync();
}
"""
    kernel = """#include "h.cuh"
__global__ void k(float* out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
    all_blocks_wait();
}
"""
    plan = _plan_with(tmp_path, header, kernel)
    specs = [r.spec for r in plan.runs if r.spec is not None]
    assert specs and all(spec["only_sampled"] is False for spec in specs), [r.reason for r in plan.runs]


def test_a_gather_in_a_header_helper_is_named_with_its_own_file_and_line(tmp_path: Path) -> None:
    header = """// gathers
__device__ float gather(const float* p, const int* idx, int i) {
    return p[idx[i]];
}
"""
    kernel = """#include "h.cuh"
__global__ void k(const float* p, const int* idx, float* out) {
    out[threadIdx.x] = gather(p, idx, threadIdx.x);
}
"""
    plan = _plan_with(tmp_path, header, kernel)
    why = plan.runs[0].data_dependent
    assert "gather() at line 3 of h.cuh: return p[idx[i]];" in why, why


def _pointer_sizes(args: list[dict[str, Any]]) -> list[int]:
    """Bytes of every buffer a launch's arguments allocate, struct fields' included."""
    out = []
    for a in args:
        if a["t"] == "ptr":
            out.append(a["bytes"] + a["front"])
        elif a["t"] == "struct":
            out.extend(f["ptr"]["bytes"] + f["ptr"]["front"] for f in a["fields"] if "ptr" in f)
    return out


@pytest.mark.parametrize("param", ["struct", "pointer"])
def test_a_struct_fields_buffer_is_capped_like_a_parameters(tmp_path: Path, param: str) -> None:
    # p.d reaches n * n * 64 floats: 16 GiB with the sampled n = 4096. A pointer parameter over the cap
    # is evaluated again with smaller sizes; a struct's pointer field was allocated whatever its size.
    from kernlint.confirm.plan import MAX_BUFFER_BYTES

    kernel = ("struct P { float* d; int n; };\n__global__ void k(P p) {\n"
              "    p.d[(size_t)p.n * p.n * 64 + threadIdx.x] = 0.0f;\n}\n") if param == "struct" else (
              "__global__ void k(float* d, int n) {\n"
              "    d[(size_t)n * n * 64 + threadIdx.x] = 0.0f;\n}\n")
    path = tmp_path / "k.cu"
    path.write_text(kernel)
    plan = confirm.plan_file(lint_with_suppressions(kernel, str(path), OPTIONS), kernel, OPTIONS)
    runs = [r for r in plan.runs if r.spec is not None]
    assert runs, [(r.status, r.reason) for r in plan.runs]
    for r in runs:
        sizes = _pointer_sizes(r.spec["args"]) + _pointer_sizes(r.spec.get("args2") or [])
        assert sizes and max(sizes) <= MAX_BUFFER_BYTES, sizes
        assert "sizes sampled smaller" in r.refit, r.refit


@pytest.mark.parametrize("other", ["__device__ float scale(float x) { return 2.0f * x; }\n",
                                   "__global__ void scale(double* a) { a[threadIdx.x] = 0.0; }\n"])
def test_a_kernel_overloaded_with_another_function_is_named_by_its_pointer_type(tmp_path: Path, other: str) -> None:
    # NVRTC cannot look a bare overloaded name up; the kernel is named as `static_cast<void (*)(float *)>(scale)`.
    kernel = other + "__global__ void scale(float* a) { a[threadIdx.x] = 1.0f; }\n"
    path = tmp_path / "k.cu"
    path.write_text(kernel)
    plan = confirm.plan_file(lint_with_suppressions(kernel, str(path), OPTIONS), kernel, OPTIONS)
    names = [r.spec["name_expr"] for r in plan.runs if r.spec is not None]
    assert names and all(n.startswith("static_cast<void (*)(") and n.endswith(")>(scale)") for n in names), names
