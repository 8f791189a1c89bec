"""The warp evaluator on its own: lanes, masks, loops, samples, inlining, budget."""
from __future__ import annotations

import numpy as np

from kernlint.engine.lint import LintOptions, analyse_kernel
from kernlint.eval.events import Barrier, Branch, Loop, MemoryAccess
from kernlint.frontend import parse_source


def evaluate(src: str, block: tuple[int, int, int] = (64, 1, 1), defines: tuple[tuple[str, int], ...] = ()):
    tu = parse_source(src, "t.cu")
    assert tu.kernels, tu.problems
    results = analyse_kernel(tu, tu.kernels[0], LintOptions(block=block, defines=defines), tuple(src.splitlines()))
    assert len(results) == 1
    return results[0]


def accesses(result, kind: str | None = None) -> list[MemoryAccess]:
    return [e for e in result.events if isinstance(e, MemoryAccess) and (kind is None or e.kind == kind)]


def rel(e: MemoryAccess, sample: int = 0, warp: int = 0) -> np.ndarray:
    a = e.address[sample, warp]
    return a - a[0]


def test_lane_addresses_follow_threadidx_and_element_size() -> None:
    r = evaluate("__global__ void k(double* a) { a[threadIdx.x * 3] = 1.0; }")
    (e,) = accesses(r, "store")
    assert e.width == 8
    assert list(rel(e)[:4]) == [0, 24, 48, 72]
    assert e.mask.all()


def test_two_d_block_packs_rows_into_a_warp() -> None:
    # Block (16,16): warp 0 holds rows y=0 and y=1, 16 lanes each.
    r = evaluate("__global__ void k(float* a, int W) { a[threadIdx.y * W + threadIdx.x] = 0; }",
                 block=(16, 16, 1), defines=(("W", 100),))
    (e,) = accesses(r)
    offsets = rel(e)
    assert list(offsets[:16]) == [4 * i for i in range(16)]
    assert offsets[16] == 400
    assert e.address.shape[1] == 8  # 256 threads = 8 warps


def test_if_narrows_mask_and_early_return_removes_lanes() -> None:
    src = """
    __global__ void k(float* a) {
        if (threadIdx.x >= 40) return;
        if (threadIdx.x % 2 == 0) a[threadIdx.x] = 1;
    }"""
    r = evaluate(src)
    (e,) = accesses(r)
    lanes = e.mask[0].reshape(-1)
    expected = np.array([(t < 40) and t % 2 == 0 for t in range(64)])
    assert (lanes == expected).all()
    branches = [b for b in r.events if isinstance(b, Branch)]
    assert {b.kind for b in branches} == {"if", "return"}


def test_loop_unrolls_and_records_trip_counts_per_lane() -> None:
    src = """
    __global__ void k(float* a) {
        for (int j = 0; j < threadIdx.x % 4; ++j) a[j * 64 + threadIdx.x] = 0;
    }"""
    r = evaluate(src)
    (loop,) = [e for e in r.events if isinstance(e, Loop)]
    assert list(loop.trips[0, 0, :8]) == [0, 1, 2, 3, 0, 1, 2, 3]
    assert not loop.truncated
    assert len(accesses(r)) == 3  # iterations 0, 1, 2


def test_long_loop_is_truncated_and_its_variables_become_unknown() -> None:
    src = """
    __global__ void k(float* a, int n) {
        int i = threadIdx.x;
        for (int k = 0; k < n; ++k) i += k;
        a[i] = 0;
    }"""
    r = evaluate(src)
    (loop,) = [e for e in r.events if isinstance(e, Loop)]
    assert loop.truncated
    assert accesses(r) == []  # the address depends on a variable the truncated loop wrote


def test_a_truncated_loop_leaves_a_constant_step_variable_where_it_ends() -> None:
    src = """
    __global__ void k(float* a, int n) {
        int i = threadIdx.x;
        for (int k = 0; k < n; ++k) i += 1;
        a[i] = 0;
    }"""
    r = evaluate(src)
    (loop,) = [e for e in r.events if isinstance(e, Loop)]
    assert loop.truncated
    (e,) = accesses(r)  # eval/fast_forward.py: i = threadIdx.x + n after the loop
    n0, n1 = dict(r.assumed)["n"]
    assert e.address[1, 0, 0] - e.address[0, 0, 0] == 4 * (n1 - n0)
    assert list(rel(e)) == [4 * lane for lane in range(32)]


def test_runtime_sizes_are_sampled_and_recorded_as_assumptions() -> None:
    r = evaluate("__global__ void k(float* a, int ld) { a[threadIdx.x * ld] = 0; }")
    (e,) = accesses(r)
    assert "ld" in e.deps
    names = dict(r.assumed)
    assert len(names["ld"]) == 2
    s0, s1 = names["ld"]
    assert rel(e, 0)[1] == 4 * s0 and rel(e, 1)[1] == 4 * s1
    assert any("ld =" in a for a in r.assumptions(e.deps))


def test_define_replaces_a_sample() -> None:
    r = evaluate("__global__ void k(float* a, int ld) { a[threadIdx.x * ld] = 0; }", defines=(("ld", 1),))
    (e,) = accesses(r)
    assert rel(e)[1] == 4 and not e.deps


def test_loaded_values_are_unknown_so_gathers_yield_no_event() -> None:
    r = evaluate("__global__ void k(float* a, const int* idx, float* o) { o[threadIdx.x] = a[idx[threadIdx.x]]; }")
    roots = sorted((e.root, e.kind) for e in accesses(r))
    assert roots == [("idx", "load"), ("o", "store")]


def test_device_functions_are_inlined() -> None:
    src = """
    __device__ float col(const float* a, int t, int ld) { return a[t * ld]; }
    __global__ void k(const float* a, float* out) { out[threadIdx.x] = col(a, threadIdx.x, 64); }"""
    r = evaluate(src)
    loads = accesses(r, "load")
    assert len(loads) == 1 and rel(loads[0])[1] == 256


def test_unsigned_arithmetic_wraps_at_32_bits() -> None:
    src = "__global__ void k(float* a) { unsigned int t = threadIdx.x - 1u; if (t < 8u) a[t] = 0; }"
    r = evaluate(src)
    (e,) = accesses(r)
    assert not e.mask[0, 0, 0]  # lane 0: 0u - 1 wraps to 4294967295, fails the guard
    assert e.mask[0, 0, 1:9].all()


def test_struct_member_offsets_and_vector_casts() -> None:
    src = """
    struct P { float x, y, z, vx, vy, vz; };
    __global__ void k(P* p, const float* in, float* out) {
        out[threadIdx.x] = p[threadIdx.x].vx;
        float4 v = reinterpret_cast<const float4*>(in)[threadIdx.x];
        out[threadIdx.x] = v.x;
    }"""
    r = evaluate(src)
    loads = accesses(r, "load")
    member = next(e for e in loads if e.root == "p")
    assert rel(member)[1] == 24 and member.width == 4
    vec = next(e for e in loads if e.root == "in")
    assert vec.width == 16 and rel(vec)[1] == 16


def test_barrier_event_records_reaching_lanes() -> None:
    r = evaluate("__global__ void k() { if (threadIdx.x < 32) __syncthreads(); }")
    (b,) = [e for e in r.events if isinstance(e, Barrier)]
    assert b.scope == "block"
    assert b.mask[0, 0].all() and not b.mask[0, 1].any()
    assert b.live.all()


def test_step_budget_stops_runaway_analysis_with_a_note() -> None:
    from kernlint.eval.interp import Interpreter
    from kernlint.project.launch import LaunchShape

    src = """
    __global__ void k(float* a) {
        for (int i = 0; i < 40; ++i) for (int j = 0; j < 40; ++j) for (int m = 0; m < 40; ++m) a[i + j + m] = 0;
    }"""
    tu = parse_source(src, "t.cu")
    res = Interpreter(tu, tu.kernels[0], LaunchShape((32, 1, 1), "test"), {}, budget=2000).run()
    assert res.truncated
    assert any("budget" in n for n in res.notes)


def test_shared_arrays_are_a_separate_space() -> None:
    src = """
    __global__ void k(const float* in) {
        __shared__ float tile[32][33];
        tile[threadIdx.y][threadIdx.x] = in[threadIdx.x];
    }"""
    r = evaluate(src, block=(32, 8, 1))
    st = next(e for e in accesses(r, "store") if e.space == "shared")
    assert st.root == "tile"
    assert rel(st, 0, 1)[0] == 0  # warp 1 is row y=1: base of row 1
    assert st.address[0, 1, 0] - st.address[0, 0, 0] == 33 * 4


def test_partial_assignment_over_loaded_data_stays_unknown() -> None:
    # Lanes >= 16 keep a loaded index: the merged address is unknown, so no event is guessed.
    src = """
    __global__ void k(const int* idx_arr, float* a) {
        int idx = idx_arr[threadIdx.x];
        if (threadIdx.x < 16) idx = threadIdx.x * 32;
        a[idx] = 0.0f;
    }"""
    r = evaluate(src)
    assert [e.root for e in accesses(r, "store")] == []


def test_variable_declared_without_initializer_takes_each_branch_value() -> None:
    src = """
    __global__ void k(float* a) {
        int idx;
        if (threadIdx.x % 2) idx = threadIdx.x * 2; else idx = threadIdx.x * 4;
        a[idx] = 0.0f;
    }"""
    r = evaluate(src)
    (e,) = accesses(r, "store")
    words = (e.address[0, 0] - e.address[0, 0, 0]) // 4
    assert list(words[:4]) == [0, 2, 8, 6]


def test_a_declaration_of_several_names_in_a_loop_takes_this_iterations_values() -> None:
    """`int y = d - tx + 1, x = tx + 1;` is one declaration: lowered as a group of declarators, which
    must not act as a scope. It did, and from the second iteration on each name was restored to its
    value of the first (d = 0) when the group ended: the guard below took only lane 0 at every d."""
    from kernlint.checks.divergence import branch_sites, warp_split

    src = """// kernlint: block=(32,1,1)
__global__ void k(int* out) {
    int tx = threadIdx.x;
    for (int d = 0; d < 8; ++d) {
        int y = d - tx + 1, x = tx + 1;
        if (y >= 1) out[d * 32 + x] = y;
    }
}
"""
    tu = parse_source(src, "k.cu")
    [r] = [r for r in analyse_kernel(tu, tu.kernels[0], LintOptions(resources=False), tuple(src.splitlines()))
           if not r.regions and r.odd_offset is None]
    [site] = branch_sites(r)
    taken = [int(warp_split(e.cond, e.mask).taken[0, 0]) for e in site.events]
    assert taken == [d + 1 for d in range(8)]  # lanes tx <= d
    assert not np.any([e.deps for e in site.events])
