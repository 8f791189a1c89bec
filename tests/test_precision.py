"""Precision mechanisms on real-code patterns: what a finding says, and at which severity."""
from __future__ import annotations

from pathlib import Path

from kernlint.base.diagnostics import Severity
from kernlint.engine.lint import lint_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def lint(name: str):  # type: ignore[no-untyped-def]
    path = FIXTURES / name
    return lint_source(path.read_text(), str(path)).diagnostics


def test_byte_stride_is_a_conditional_info_and_a_row_pitch_a_warning() -> None:
    diags = {d.line: d for d in lint("KL101_byte_stride.cu") if d.code == "KL101"}
    byte_stride = diags[14]
    assert byte_stride.severity is Severity.INFO
    assert byte_stride.message.startswith("uncoalesced global load unless nb0 == 4")
    assert byte_stride.metrics["coalesced_if"] == {"nb0": 4}
    pitch = diags[21]
    assert pitch.severity is Severity.WARNING and "unless" not in pitch.message


def _kernel(diags, name):  # type: ignore[no-untyped-def]
    return [d for d in diags if d.kernel == name and d.code not in ("KL904", "KL103", "KL104")]


def test_one_finding_per_bank_conflict_pattern_with_the_other_lines_related() -> None:
    (d,) = _kernel(lint("grouping_root_cause.cu"), "stencil_rows")
    assert d.code == "KL201" and d.line == 10
    assert sorted(r["line"] for r in d.metrics["related_locations"]) == [11, 13, 14, 15]
    assert any(n.startswith("the same bank-conflict pattern") and "lines 11, 13, 14, 15" in n for n in d.notes)


def test_one_finding_per_thread_mapping_and_code() -> None:
    diags = _kernel(lint("grouping_root_cause.cu"), "row_per_thread")
    assert sorted((d.line, d.code) for d in diags) == [(26, "KL101"), (28, "KL102")]
    (load,) = [d for d in diags if d.code == "KL101"]
    # `A[i * n + k]` and `B[i * n + k]`: the same lane stride, one remapping.
    assert [(r["line"], r["column"]) for r in load.metrics["related_locations"]] == [(26, 31)]
    assert any(n.startswith("also at line 26") for n in load.notes)


def test_a_conflict_in_one_step_of_five_is_an_info_and_in_every_step_a_warning() -> None:
    diags = lint("grouping_root_cause.cu")
    (one,) = _kernel(diags, "network_one_step")
    assert one.severity is Severity.INFO
    assert "2-way in 1 of 5 steps" in one.message and "1.20 wavefronts per request" in one.message
    (every,) = _kernel(diags, "network_every_step")
    assert every.severity is Severity.WARNING


def test_a_suppression_on_a_related_line_silences_that_site_only() -> None:
    from kernlint.engine.lint import lint_with_suppressions

    path = FIXTURES / "grouping_root_cause.cu"
    lines = path.read_text().splitlines()
    lines[13] = lines[13].replace("// expect: KL201 shared-bank-conflict", "// kernlint: ignore[KL201] reviewed")
    diags = lint_with_suppressions("\n".join(lines) + "\n", str(path)).diagnostics
    (d,) = [d for d in diags if d.kernel == "stencil_rows" and d.code == "KL201"]
    assert sorted(r["line"] for r in d.metrics["related_locations"]) == [11, 13, 15]
    assert any("lines 11, 13, 15" in n for n in d.notes) and not any("14" in n for n in d.notes if "pattern" in n)
    assert not [x for x in diags if x.code == "KL901"]


def test_kl103_message_states_the_request_and_the_average_apart() -> None:
    src = """// kernlint: block=(256,1,1)
__global__ void k(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = a[i + 1] + a[(i / 64) * 64 + (i % 64) + ((i / 64) % 2)];
}
"""
    diags = [d for d in lint_source(src, "m.cu").diagnostics if d.code == "KL103"]
    assert diags
    for d in diags:
        m = d.metrics
        request = m["sectors"] / m["ideal_sectors"]
        # "a typical warp request touches S sectors where I would hold ... (S/I x ideal)": the
        # parenthesis is that request's own ratio; the ratio over all requests is named as such.
        assert f"a typical warp request touches {m['sectors']} sectors where {m['ideal_sectors']} would hold" in d.message
        assert f"({request:.2f}x ideal" in d.message
        if f"{m['ratio']:.2f}" != f"{request:.2f}":
            assert f"over all {m['requests']} evaluated requests {m['ratio']:.2f}x" in d.message
    assert any("over all" in d.message for d in diags)


# A shared-memory tree reduction inside each warp (lanes 16, 8, ... 1): a sweep, packed lanes.
WARP_TREE = """// kernlint: block=(256,1,1)
__global__ void warp_tree(const float* in, float* out) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    int lane = tid & 31;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncwarp();
    for (int i = 16; i > 0; i >>= 1) {
        if (lane < i) {
            float t = s[tid + i];
            s[tid] = s[tid] + t * 0.5f + t * t;
        }
        __syncwarp();
    }
    if (lane == 0) out[blockIdx.x * 8 + tid / 32] = s[tid];
}
"""


def test_a_sweep_inside_warps_is_an_info_and_interleaved_addressing_a_warning() -> None:
    src = WARP_TREE + """
// kernlint: block=(256,1,1)
__global__ void interleaved(const float* in, float* out) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (int i = 2; i <= 256; i *= 2) {
        if ((tid + 1) % i == 0) {
            float t = s[tid - i / 2];
            s[tid] = s[tid] + t * 0.5f + t * t;
        }
        __syncthreads();
    }
    if (tid == 255) out[blockIdx.x] = s[tid];
}
"""
    diags = [d for d in lint_source(src, "sweep.cu").diagnostics if d.code == "KL301"]
    (tree,) = [d for d in diags if d.kernel == "warp_tree"]
    assert tree.severity is Severity.INFO and any("it is a sweep" in n for n in tree.notes), tree
    (inter,) = [d for d in diags if d.kernel == "interleaved"]
    assert inter.severity is Severity.WARNING, inter


def test_a_conflict_that_is_a_small_share_of_the_kernels_shared_traffic_is_an_info() -> None:
    src = """// kernlint: block=(256,1,1)
__global__ void k(const float* in, float* out) {
    __shared__ float s[512];
    int tid = threadIdx.x;
    float acc = 0.0f;
    for (int r = 0; r < 32; ++r) {
        s[tid] = in[r * 256 + tid];
        __syncthreads();
        acc += s[(tid + r) % 256];
        __syncthreads();
    }
    if (tid < 32) acc += s[2 * tid];  // one warp, once: 2-way
    out[tid] = acc;
}
"""
    (d,) = [d for d in lint_source(src, "share.cu").diagnostics if d.code == "KL201"]
    assert d.line == 12 and d.metrics["ways"] == 2
    assert d.severity is Severity.INFO
    assert any("of the kernel's evaluated shared-memory wavefronts" in n for n in d.notes), d.notes


def test_a_split_idling_under_a_tenth_of_the_lane_slots_is_an_info() -> None:
    """A quarter of each row loads a float4 tile (the samples' "LargeChunk" copies): 8 % of the
    block's lane-slots idle, under the 20 % from which KL301 warns."""
    src = """// kernlint: block=(16,16,1)
__global__ void k(const float4* A, float4* As, const float* B, float* out, int n) {
    int tx = threadIdx.x, ty = threadIdx.y;
    float acc = 0.0f;
    for (int a = 0; a < 8; ++a) {
        if (tx < 4) {
            As[ty * 4 + tx] = A[a * 64 + ty * 4 + tx];
        }
        __syncthreads();
        for (int k = 0; k < 5; ++k) acc += B[k * 16 + tx] * B[k * 16 + ty] + acc * 0.5f;
        __syncthreads();
    }
    out[ty * 16 + tx] = acc;
}
"""
    (d,) = [d for d in lint_source(src, "chunk.cu").diagnostics if d.code == "KL301"]
    assert 0.05 < d.metrics["idle_fraction"] < 0.10
    assert d.severity is Severity.INFO
    assert any("(warning from 20 %" in n for n in d.notes)


def test_an_array_of_structures_read_whole_is_an_info_and_one_field_a_warning() -> None:
    diags = lint("grouping_root_cause.cu")
    (whole,) = _kernel(diags, "segment_length")
    assert whole.code == "KL101" and whole.severity is Severity.INFO
    assert any("read 100 % of each 20-byte record" in n for n in whole.notes), whole.notes
    (one,) = _kernel(diags, "segment_weight")
    assert one.code == "KL101" and one.severity is Severity.WARNING


def test_a_hashed_index_is_an_info_and_accesses_with_one_2d_mapping_are_one_finding() -> None:
    hashed = """// kernlint: block=(256,1,1)
__global__ void k(const float* table, float* out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned h = i * 2654435761u;
    h ^= h >> 13;
    h *= 2246822519u;
    h ^= h >> 16;
    out[i] = table[h & 1048575u];
}
"""
    (d,) = [d for d in lint_source(hashed, "hash.cu").diagnostics if d.code == "KL101"]
    assert d.severity is Severity.INFO and any("follow no stride" in n for n in d.notes)
    # RGBA pixels written channel by channel by a 16x16 block: the lanes of a warp span two rows, so
    # there is no single lane stride, but the three stores share one mapping: one finding.
    pixels = """// kernlint: block=(16,16,1)
__global__ void k(float* img, int pitch) {
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    float* p = img + y * pitch + 4 * x;
    p[0] = 1.0f;
    p[1] = 0.5f;
    p[2] = 0.25f;
}
"""
    (st,) = [d for d in lint_source(pixels, "rgba.cu").diagnostics if d.code == "KL102"]
    assert st.line == 5 and sorted(r["line"] for r in st.metrics["related_locations"]) == [6, 7]


def test_records_written_whole_field_by_field_are_an_info() -> None:
    src = """// kernlint: block=(256,1,1)
__global__ void k(float (*xy)[2], const float* a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    xy[i][0] = a[i] * 2.0f;
    xy[i][1] = a[i] * 3.0f;
}
"""
    (d,) = [d for d in lint_source(src, "xy.cu").diagnostics if d.code == "KL102"]
    assert d.severity is Severity.INFO
    assert any("write 100 % of each 8-byte record" in n and "L2 merges" in n for n in d.notes), d.notes
    one = src.replace("    xy[i][1] = a[i] * 3.0f;\n", "")
    (w,) = [d for d in lint_source(one, "x.cu").diagnostics if d.code == "KL102"]
    assert w.severity is Severity.WARNING


def test_an_address_following_a_loop_recurrence_is_an_info_and_a_stepped_one_a_warning() -> None:
    src = """// kernlint: block=(256,1,1)
__global__ void k(float* data, int n, int rounds) {
    unsigned r = threadIdx.x + blockIdx.x * blockDim.x;
    for (int t = 0; t < rounds; ++t) {
        r ^= r << 13;
        r ^= r >> 17;
        r ^= r << 5;
        data[(r % n) * 4] += 1.0f;
    }
}

// kernlint: block=(256,1,1)
__global__ void stepped(float* data, int n, int rounds) {
    unsigned r = threadIdx.x + blockIdx.x * blockDim.x;
    for (int t = 0; t < rounds; ++t) {
        r = r + 1024;
        data[r * 64] += 1.0f;
    }
}
"""
    diags = [d for d in lint_source(src, "rng.cu").diagnostics if d.code in ("KL101", "KL102")]
    rng = [d for d in diags if d.kernel == "k"]
    assert rng and all(d.severity is Severity.INFO for d in rng)
    assert any("advances by a recurrence" in n and "`r`" in n for d in rng for n in d.notes)
    step = [d for d in diags if d.kernel == "stepped"]
    assert step and all(d.severity is Severity.WARNING for d in step), step


def test_device_runtime_calls_are_read_from_the_kernel_text_without_comments_or_placement_new() -> None:
    from kernlint.checks.device_runtime import runtime_calls
    from kernlint.frontend.clang_frontend import parse_source

    src = """__global__ void child(int* p) { p[0] = 1; }
struct Pool { __device__ void free(int*) {} };
__global__ void k(int* p, void* buf, Pool pool) {
    // cudaMalloc(&p, 4); in a comment
    const char* s = "free(p)";
    new (buf) int(3);
    child<<<1, 32>>>(p);
    int* q = new int[4];
    free(q);
    pool.free(q);
}
"""
    tu = parse_source(src, "k.cu")
    fn = next(f for f in tu.kernels if f.name == "k")
    calls = [(c.line, c.name) for c in runtime_calls(fn, src.splitlines())]
    assert calls == [(7, "a child launch of child"), (8, "new"), (9, "free")]


def test_a_kernel_whose_threads_call_the_device_runtime_gets_its_warnings_as_info_with_the_reason() -> None:
    diags = lint("device_runtime.cu")
    store = next(d for d in diags if d.code == "KL102" and d.kernel == "per_thread_launches")
    assert store.severity is Severity.INFO
    assert store.metrics["device_runtime_call"] == {"line": 19, "call": "cudaMalloc"}
    assert any("each thread of the kernel makes a device-runtime call (cudaMalloc at line 19)" in n for n in store.notes)
    # One lane per warp launching: only its branch is info; the strided load beside it stays a warning.
    leader = [d for d in diags if d.kernel == "leader_launches"]
    assert {(d.code, d.severity) for d in leader if d.code in ("KL101", "KL301")} == {
        ("KL101", Severity.WARNING), ("KL301", Severity.INFO)}
    (branch,) = [d for d in leader if d.code == "KL301"]
    assert "made by one lane" in " ".join(branch.notes)
    (plain,) = [d for d in diags if d.kernel == "leader_without_runtime" and d.code == "KL301"]
    assert plain.severity is Severity.WARNING


def test_every_declarator_of_a_for_init_is_in_the_loop_scope() -> None:
    # `for (int k = 0, i = row; ...)` after an earlier loop over `i`: the loop ran 0 times with the old
    # `i` (the declarators were a block of their own), and the kernel was called fully analysed.
    src = """__global__ void k(const float* A, float* out) {
    float s = 0;
    for (int i = threadIdx.x; i < 512; i += blockDim.x) s += 1;
    for (int k = 0, i = blockIdx.x * 8; (k < 8) && (i < 512); k++, i++)
        s += A[i * 512 + threadIdx.x];
    out[threadIdx.x] = s;
}
"""
    from kernlint.eval.events import Loop

    res = lint_source(src, "k.cu").results[0]
    loop = next(e for e in res.events if isinstance(e, Loop) and e.span.line == 4)
    assert int(loop.trips.min()) == 8 and int(loop.trips.max()) == 8


def test_kl301_advice_matches_the_pattern_pyramid_butterfly_tree() -> None:
    diags = {d.kernel: d for d in lint("KL301_pyramid.cu") if d.code == "KL301"}
    pyramid = next(n for n in diags["pyramid"].notes if n.startswith("fix:"))
    # Not a reduction: no shuffles, no sequential addressing; the lanes are already packed.
    assert "shfl" not in pyramid and "sequential addressing" not in pyramid
    assert "already one contiguous run that moves by a constant step" in pyramid
    butterfly = next(n for n in diags["butterfly"].notes if n.startswith("fix:"))
    assert "one thread per pair" in butterfly
    tree = WARP_TREE
    (d,) = [d for d in lint_source(tree, "tree.cu").diagnostics if d.code == "KL301"]
    assert "warp shuffles" in next(n for n in d.notes if n.startswith("fix:"))


def test_pointer_offsets_follow_locals_and_swaps_and_ignore_plain_pointers() -> None:
    from kernlint.frontend.pointer_offsets import arg_offsets

    host = """float *bufferIn = 0, *bufferOut = 0;
    float *bufferSrc = bufferIn + padding;
    float *bufferDst = bufferOut + padding;
    float *tmp = bufferDst; bufferDst = bufferSrc; bufferSrc = tmp;"""
    assert arg_offsets(["bufferDst", "bufferSrc", "n"], host) == (
        "bufferDst = bufferOut + padding", "bufferSrc = bufferIn + padding", "")
    assert arg_offsets(["(float*)(d + 4)", "&a[k]", "&a[0]", "p->q", "d"], "float* d = base;") == (
        "d + 4", "&a[k]", "", "", "")
    assert arg_offsets(["d_in", "d_out"], "cudaMalloc(&d_in, n); d_out = d_in;") == ()


def test_pointer_offsets_of_one_declarator_and_of_a_row_address() -> None:
    from kernlint.frontend.pointer_offsets import arg_offsets

    # One declaration of two pointers: src's value is `buf` (the `+ pad` is dst's), as clang's tokens show it.
    host = "float * src = buf , * dst = buf + pad ; float * a = f ( b , c + 1 ) , * e = a ;"
    assert arg_offsets(["src", "dst", "a", "e"], host) == ("", "dst = buf + pad", "", "")
    # The address of row k's first element is offset by k rows; of the first row's, by none.
    assert arg_offsets(["&a[k][0]", "& a [ 0 ] [ 0 ]", "&a[0][k]"], "") == ("&a[k][0]", "", "&a[0][k]")


def test_kl103_on_a_pointer_the_launch_offsets_says_unless_and_names_the_launch() -> None:
    diags = [d for d in lint("KL103_launch_offset.cu") if d.code == "KL103"]
    padded = next(d for d in diags if d.kernel == "stencil_padded")
    assert padded.message.startswith("misaligned global load unless the offset its launch adds to `input` realigns it")
    assert padded.metrics["launch_offset"] == {"input": "src = bufferIn + padding at line 26"}
    plain = next(d for d in diags if d.kernel == "stencil_plain")
    assert plain.message.startswith("misaligned global load: ") and "launch_offset" not in plain.metrics


def test_a_data_branch_whose_region_groups_its_lanes_is_divergent_by_design() -> None:
    diags = {d.kernel: d for d in lint("KL305_divergent_entry.cu") if d.code == "KL305"}
    helper = diags["bucket_max"]
    assert helper.severity is Severity.INFO
    assert any("(`coalesced_threads()` in aggregated_max())" in n for n in helper.notes)
    part = diags["odd_even_sums"]
    assert part.severity is Severity.INFO and any("the group `part` from `binary_partition()`" in n for n in part.notes)
    assert diags["bucket_max_plain"].severity is Severity.WARNING


def test_group_in_region_ignores_comments_and_unrelated_groups() -> None:
    from kernlint.checks.divergent_entry import group_in_region
    from kernlint.frontend.clang_frontend import parse_source

    src = """__global__ void k(const int* a, int* out) {
    int x = a[threadIdx.x];
    if (x > 3) {
        // coalesced_threads() would be nice here
        out[threadIdx.x] = x;
    }
}
"""
    tu = parse_source(src, "k.cu")
    fn = tu.kernels[0]
    node = next(n for n in fn.body.body if type(n).__name__ == "If")
    assert group_in_region(fn, tu, src.splitlines(), node.span) == ""


def test_a_partial_padding_is_not_offered_to_the_access_it_does_not_help() -> None:
    # A 16x16 transpose through [16][17] (padded for 16 banks): on 32 banks both the row store and
    # the column load are 2-way; [16][18] fixes the load only, so the store is told so.
    src = """// kernlint: block=(16,16)
__global__ void tr(const float* in, float* out, int w) {
    __shared__ float block[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    block[threadIdx.y][threadIdx.x] = in[y * w + x];
    __syncthreads();
    int tx = blockIdx.y * 16 + threadIdx.x, ty = blockIdx.x * 16 + threadIdx.y;
    out[ty * w + tx] = block[threadIdx.x][threadIdx.y];
}
"""
    diags = {d.line: d for d in lint_source(src, "tr.cu").diagnostics if d.code == "KL201"}
    assert diags[5].message.endswith("declare block[16][18] to reduce block's other conflicts (this access stays 2-way)")
    assert diags[8].message.endswith("declare block[16][18] to reduce it")


def test_a_parallel_search_bracket_test_is_an_election_by_data() -> None:
    from kernlint.checks.search_hit import is_bracket_test
    from kernlint.frontend.clang_frontend import parse_source

    diags = {d.kernel: d for d in lint("KL305_search_hit.cu") if d.code == "KL305"}
    assert diags["find_slot"].severity is Severity.INFO
    assert any("bracket test of a parallel search" in n for n in diags["find_slot"].notes)
    assert diags["below_key"].severity is Severity.WARNING
    src = """__global__ void k(const int* a, const int* keys, int* out) {
  int t = threadIdx.x;
  if (keys[0] >= a[t] && keys[0] < a[t + 1]) out[0] = 3;
  if (a[t] <= keys[t] && a[t + 1] > keys[t]) out[t] = 1;
  if (a[t] <= keys[0] && a[t + 2] > keys[0]) out[t] = 2;
  if (a[t] <= keys[0] && b[t + 1] > keys[0]) out[t] = 2;
}"""
    tu = parse_source(src, "b.cu")
    from kernlint.ir import nodes as ir

    verdicts = [is_bracket_test(n.cond) for n in ir.walk(tu.kernels[0].body) if isinstance(n, ir.If)]
    assert sorted(verdicts) == [False, False, False, True]


def test_a_heavy_data_branch_in_a_kernel_already_below_24_lanes_must_cost_a_lane_itself() -> None:
    diags = {d.kernel: d for d in lint("KL305_low_average.cu") if d.code == "KL305"}
    low = diags["few_lanes_then_filter"]
    assert low.severity is Severity.INFO
    assert low.metrics["avg_active_lanes"] - low.metrics["avg_active_lanes_worst"] < 1.0
    assert any("the low average comes from elsewhere" in n for n in low.notes)
    assert diags["filter_only"].severity is Severity.WARNING


def test_roles_come_from_use_not_names() -> None:
    from kernlint.eval import roles
    from kernlint.frontend import parse_source

    src = """
__global__ void k(const float* a, float* b, long w, int n, int s, int ld) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < n) b[x] = a[x * w] + a[y * ld + x] + a[(x % s) * 2];
}
"""
    (fn,) = parse_source(src, "r.cu").kernels
    got = {k: (r.role, r.line) for k, r in roles.roles(fn).items()}
    # `w` only scales x in an address; `n` bounds x; `ld` multiplies the row y beside the column x;
    # `s` divides an index (x % s) and is a size, whatever it is called.
    assert got == {"w": (roles.STRIDE, 5), "n": (roles.EXTENT, 5), "ld": (roles.PITCH, 5), "s": (roles.EXTENT, 5)}


def test_element_stride_is_conditional_on_one_and_says_its_role() -> None:
    diags = {d.line: d for d in lint("KL101_parameter_roles.cu") if d.code in ("KL101", "KL102")}
    stride = diags[13]
    assert stride.severity is Severity.INFO and stride.metrics["coalesced_if"] == {"s00": 1}
    assert any("`s00` is a stride: only scales the thread index `i`" in a for a in stride.assumptions)
    held = diags[23]  # src[2 * i * s]: 2x even at s == 1
    assert held.severity is Severity.WARNING
    assert any("uncoalesced with s = 1 as well" in a for a in held.assumptions)
    assert any("`n` is an extent: bounds `i` at line 32" in a for a in diags[32].assumptions)
    assert any("`width` is a row pitch" in a for a in diags[46].assumptions)
    # `w` only scales `y` in the kernel, but the helper it is passed to bounds a loop with it.
    helper = diags[68]
    assert helper.severity is Severity.WARNING and "coalesced_if" not in helper.metrics
    assert any("`w` is an extent: is passed to `row_sum` as `w`" in a for a in helper.assumptions)


def test_fallback_side_names_the_fast_path() -> None:
    diags = {d.line: d for d in lint("KL101_fallback_branch.cu") if d.code == "KL101"}
    d = diags[16]
    assert d.severity is Severity.INFO
    assert d.metrics["fallback_of"] == {"fast_line": 14, "condition": "stride == 1"}
    assert "the fast path at line 14 handles `stride == 1`" in d.message
    assert diags[52].metrics["fallback_of"]["condition"] == "contiguous"
    assert diags[60].severity is Severity.WARNING and diags[62].severity is Severity.WARNING


def test_runtime_block_values_tried() -> None:
    from kernlint.project.launch import runtime_blocks

    shapes = [b for b, _text in runtime_blocks(("ne13", "ne12", "1"), None)]
    # 1, 32, 256 each; (1, 1) is one thread (skipped); (32, 256), (256, 32), (256, 256) exceed 1024 threads.
    assert shapes == [(1, 32, 1), (1, 256, 1), (32, 1, 1), (32, 32, 1), (256, 1, 1)]
    # __launch_bounds__(64) is tried and caps the block; the same expression twice takes one value.
    assert [b for b, _t in runtime_blocks(("n", "1", "1"), 64)] == [(32, 1, 1), (64, 1, 1)]
    assert [b for b, _t in runtime_blocks(("n", "n", "1"), None)] == [(32, 32, 1)]
    (_b, text), *_ = runtime_blocks(("128", "rows", "1"), None)
    assert text.startswith("rows = 1 ")


def test_runtime_block_finding_names_the_condition() -> None:
    diags = {d.line: d for d in lint("KL102_runtime_block.cu") if d.code == "KL102"}
    assert diags[12].severity is Severity.INFO and "unless ne13 == 1" in diags[12].message
    assert diags[18].severity is Severity.WARNING
    assert any("holds under every shape tried" in a and "(1, 256, 1)" in a for a in diags[18].assumptions)
