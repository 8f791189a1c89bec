"""eval/samples.py: additive offsets sampled odd (conditional KL103), iteration counts sampled small."""
from __future__ import annotations

from kernlint.base.diagnostics import Severity
from kernlint.engine.lint import LintOptions, lint_source
from kernlint.eval.samples import DIVISOR_SAMPLES, ITERATION_SAMPLES, divisor_parameters, iteration_parameters, offset_parameters
from kernlint.frontend import parse_source

OPTIONS = LintOptions(resources=False)


def _kernel(src: str):  # type: ignore[no-untyped-def]
    return parse_source(src, "t.cu").kernels[0]


def test_offset_parameters_are_plain_addends_of_an_index() -> None:
    fn = _kernel("__global__ void k(const float* a, float* o, int s, int w, int r) {"
                 " int i = threadIdx.x; o[i] = a[i + s] + a[r * w + i] + a[w]; }")
    assert offset_parameters(fn) == {"s"}


def test_iteration_counts_bound_loops_whose_variable_reaches_no_address() -> None:
    fn = _kernel("__global__ void k(float* a, int steps, int n) { float v = a[threadIdx.x];"
                 " for (int t = 0; t < steps; ++t) v = v * 0.5f;"
                 " for (int j = 0; j < n; ++j) v += a[j]; a[threadIdx.x] = v; }")
    assert iteration_parameters(fn) == {"steps"}
    # A count that moves an address (i += 1 per step) is more than a count.
    fn2 = _kernel("__global__ void k(float* a, int n) { int i = threadIdx.x;"
                  " for (int k = 0; k < n; ++k) i += 1; a[i] = 0; }")
    assert iteration_parameters(fn2) == frozenset()


def test_divisors_of_a_size_parameter_are_found_unless_compared() -> None:
    fn = _kernel("__global__ void k(const float* a, float* o, int k, int g, int n, int m, int q) {"
                 " int i = threadIdx.x; int ng = k / g; int per = n / m; int b = i / q;"
                 " for (int j = 0; j < m; ++j) o[i] += a[i * ng + j + per + b]; }")
    # g divides the size k and is never compared; m divides n but bounds a loop (a size of its own);
    # q divides a thread index, not a parameter (`i / q`: an extent, as before).
    assert divisor_parameters(fn) == {"g"}


def test_quotient_of_two_sizes_is_a_size_not_one() -> None:
    """`k / group_size` with both sampled as sizes was 1: the scales' row pitch of one group made a thread-
    per-row read look coalesced. The divisor is sampled small, the quotient is a size, the read a warning."""
    src = """// kernlint: block=(128,1,1)
__global__ void scales_per_row(const short* scales, float* out, int rows, int k, int group_size) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int ngroups = k / group_size;
    float s = 0.f;
    for (int g = 0; g < ngroups; ++g) s += scales[r * ngroups + g];
    out[r] = s;
}
"""
    diags = [d for d in lint_source(src, "t.cu", OPTIONS).diagnostics if d.code == "KL101"]
    assert [(d.line, d.severity) for d in diags] == [(7, Severity.WARNING)]
    # 3840 / 32 = 120 groups of 2-byte scales: lanes 240 B apart, each in its own sector.
    assert diags[0].metrics["sectors"] == 32 and diags[0].metrics["ideal_sectors"] == 2
    assumed = " ".join(diags[0].assumptions)
    assert f"group_size = {DIVISOR_SAMPLES[0]} and {DIVISOR_SAMPLES[1]} (sampled small: it divides" in assumed


def test_iteration_count_is_sampled_small_and_stated() -> None:
    src = """// kernlint: block=(256,1,1)
__global__ void k(float* a, int iteration) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = a[i];
    for (int t = 0; t < iteration; ++t) v = v * 0.5f + 1.0f;
    a[i] = v;
}
"""
    (r,) = lint_source(src, "t.cu", OPTIONS).results
    assert dict(r.assumed)["iteration"] == ITERATION_SAMPLES


def test_runtime_offset_is_a_conditional_kl103() -> None:
    src = """// kernlint: block=(256,1,1)
__global__ void k(const double* a, double* out, int n, int s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i + s];
}
"""
    (d,) = [d for d in lint_source(src, "t.cu", OPTIONS).diagnostics if d.code == "KL103"]
    assert d.severity is Severity.INFO
    assert "unless `s` is a multiple of 4" in d.message and "s = 1" in d.message  # 4 doubles = 32 bytes
    assert d.metrics["aligned_if"] == "s % 4 == 0"
    assert any("s = 1" in a for a in d.assumptions)
    # With the offset given, no condition remains: aligned for 8, misaligned (plain KL103) for 3.
    opts = LintOptions(resources=False, defines=(("s", 8),))
    assert [d for d in lint_source(src, "t.cu", opts).diagnostics if d.code == "KL103"] == []
    opts = LintOptions(resources=False, defines=(("s", 3),))
    (d3,) = [d for d in lint_source(src, "t.cu", opts).diagnostics if d.code == "KL103"]
    assert "unless" not in d3.message


HOST = """#define LIMIT 1024
__global__ void merge_global(float* d, unsigned size, unsigned stride) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned pos = 2 * g - (g & (stride - 1));
    float a = d[pos], b = d[pos + stride];
    if ((g & (size / 2)) != 0) { d[pos] = b; d[pos + stride] = a; }
}
__global__ void sort_shared(float* d, unsigned arrayLength) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < arrayLength) d[i] = d[i] * 2.0f;
}
void sort(float* d, unsigned N, unsigned arrayLength) {
    if (arrayLength <= LIMIT) {
        sort_shared<<<N / LIMIT, LIMIT / 2>>>(d, arrayLength);
    }
    for (unsigned size = 2 * LIMIT; size <= 8192; size <<= 1)
        for (unsigned stride = size / 2; stride > 0; stride >>= 1)
            if (stride >= LIMIT) merge_global<<<N / 512, 256>>>(d, size, stride);
}
"""


def test_host_loops_and_conditions_give_joint_samples() -> None:
    tu = parse_source(HOST, "host.cu")
    by_kernel = {ln.kernel: ln for ln in tu.launches}
    merge = by_kernel["merge_global"]
    # One (size, stride) pair per sample, both from one host iteration: stride < size holds.
    sizes, strides = merge.arg_samples[1], merge.arg_samples[2]
    assert sizes is not None and strides is not None
    assert all(st < sz and st >= 1024 for sz, st in zip(sizes, strides))
    assert by_kernel["sort_shared"].arg_samples[1] == (1024, 1024)  # `if (arrayLength <= LIMIT)` bounds it
    results = lint_source(HOST, "host.cu", OPTIONS).results
    # One evaluation per host iteration picked, each with its (size, stride) pair.
    pairs = [(dict(r.defines)["size"], dict(r.defines)["stride"]) for r in results
             if r.kernel.name == "merge_global" and r.odd_offset is None]
    assert pairs == list(zip(sizes, strides))
    r = next(r for r in results if r.kernel.name == "merge_global")
    assert any("size, stride from the loops and conditions around it" in a for a in r.assumptions())
    # Parameters the host gives are not re-sampled odd.
    assert not [x for x in results if x.kernel.name == "merge_global" and x.odd_offset is not None]


def test_a_host_loop_with_an_unknown_bound_still_gives_its_first_values() -> None:
    src = """#define BS 16
__global__ void diag(float* m, int dim, int offset) {
    int i = threadIdx.x;
    m[offset * dim + offset + i] = 0.0f;
}
void lud(float* m, int dim) {
    for (int i = 0; i < dim - BS; i += BS) diag<<<1, BS>>>(m, dim, i);
}
"""
    (ln,) = parse_source(src, "lud.cu").launches
    assert ln.arg_samples[2] == (0, 16) and ln.arg_samples[1] is None
    diags = lint_source(src, "lud.cu", OPTIONS).diagnostics
    # The host only passes multiples of 16: no "misaligned unless offset is a multiple of 8".
    assert not [d for d in diags if d.code == "KL103"]


def test_a_host_loop_is_read_through_libclang_once_whatever_its_trip_count(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The host loops around a launch are enumerated up to 4096 iterations: each condition, step and
    argument is read from libclang once and then folded per iteration (host_samples `_Folder.compiled`),
    so the libclang reads do not grow with the trip count; the samples still come from its first and
    last iterations."""
    from clang import cindex as ci

    real = ci.Cursor.spelling
    reads = [0]

    def spelling(self):  # type: ignore[no-untyped-def]
        reads[0] += 1
        return real.fget(self)  # type: ignore[attr-defined]

    monkeypatch.setattr(ci.Cursor, "spelling", property(spelling))
    counts = {}
    for trips in (16, 4000):
        src = ("__global__ void k(float* a, int step) { a[threadIdx.x * step] = 0.0f; }\n"
               f"void run(float* a) {{ for (int i = 1; i <= {trips}; i += 1) if (i % 2 == 0) k<<<1, 32>>>(a, i * 2); }}\n")
        reads[0] = 0
        (ln,) = parse_source(src, f"/tmp/kl_host_loop_{trips}.cu").launches
        counts[trips] = reads[0]
        assert ln.arg_samples[1] == (4, 2 * trips)
    assert counts[16] == counts[4000]
