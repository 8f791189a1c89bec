"""Source-to-source instrumentation for `--confirm`: pure text rewriting, no GPU, no CuPy.

Given a CUDA file and the sites the warp evaluator saw (memory accesses, `if` conditions), build a
device-only copy of the file in which

* host code (`main`, launch wrappers, host globals, `#include <cstdio>` ...) is blanked out, so that
  NVRTC, which has no host headers, only sees kernels, device functions, types and macros;
* every traced memory access `a[i]` becomes `(*__kl_rec(SITE, &(a[i])))`: the helper records the
  lane's byte address (global: the generic address; shared: the offset in the shared window) and
  the warp's `__activemask()`, then returns the same pointer, so the program does what it did;
* every traced `if (c)` becomes `if (__kl_br(SITE, (c)))`, recording `__ballot_sync` of `c`.

Blanking keeps every newline and every column of the code that stays, and the rewrite only inserts
text inside a line, so a `#line 1` after the prelude makes compiler messages (and `-lineinfo`) point
at the user's own lines.

Why a `__device__` control block instead of an extra kernel parameter: the accesses the evaluator
reports may sit in inlined `__device__` helpers, which have no access to the kernel's parameters.
A global control block (set by a one-thread setter kernel before each launch) reaches them all and
leaves every signature untouched, so launching stays the same as for the original kernel.

Trace layout (all indexed by SITE, sampled block b (0/1), warp w of the block, occurrence q):
``addr[((SITE*2 + b)*WPB + w)*MAXSEQ + q][lane]`` (u64, bit 63 set for shared addresses),
``mask[...]`` / ``ballot[...]`` (u32, written by the warp's first active lane), and
``count[(SITE*2 + b)*WPB + w]``: how many times the warp reached the site (it can exceed MAXSEQ;
records past MAXSEQ are dropped). Only the two blocks the static evaluator sampled record, so the
trace is small and measured requests line up with predicted ones.
"""
from __future__ import annotations

import os
import re

from kernlint import ir
from kernlint.frozen import frozen
from kernlint.known_headers import declarations_for

SHARED_FLAG = 1 << 63

# NVRTC has no implicit cuda_fp16.h / cuda_bf16.h (nvcc gets them through cuda_runtime.h).
HALF_TYPES = re.compile(r"\b(__half2?|half2?|__nv_bfloat162?|nv_bfloat162?|__float2half\w*|__half2float|"
                         r"__float2bfloat16\w*|__bfloat162float)\b")

# Both builds (the traced one and the plain one Nsight Compute profiles) share the guard, the
# gridDim and the block filter, controlled from `__constant__` memory that the host fills before each
# launch: reading it costs constant-cache loads, never a global load on the user's line, so the plain
# build's per-instruction counters are those of the user's accesses alone.
GUARD_PRELUDE = r"""#line 1 "<kernlint --confirm instrumentation>"
// ---- kernlint --confirm (generated) ----
#define __KL_MAXR 64
struct __kl_guard_t {
    unsigned long long ranges[2 * __KL_MAXR];  // [lo, hi) of every synthesized buffer
    unsigned long long scratch;                // where an access outside them goes instead
    unsigned long long redirected;             // counter of such accesses (unsigned long long*)
    unsigned int nranges, gx, gy, gz;          // gx..gz: the gridDim the evaluator assumed
    unsigned int b0x, b0y, b0z, b1x, b1y, b1z; // the two sampled blocks
    unsigned int only_sampled, pad;            // 1: every other block returns at once
};
__constant__ __kl_guard_t __kl_g;
__device__ __forceinline__ dim3 __kl_griddim() { return dim3(__kl_g.gx, __kl_g.gy, __kl_g.gz); }
__device__ __forceinline__ bool __kl_skip_block() {
    return __kl_g.only_sampled != 0
        && !(blockIdx.x == __kl_g.b0x && blockIdx.y == __kl_g.b0y && blockIdx.z == __kl_g.b0z)
        && !(blockIdx.x == __kl_g.b1x && blockIdx.y == __kl_g.b1y && blockIdx.z == __kl_g.b1z);
}

// The guard: an access outside every buffer kernlint allocated (the evaluator's sizes are estimates:
// a loop past its iteration cap, a guessed launch shape) or past the block's shared memory (a sampled
// length longer than the array a host guard sizes it by) goes to a scratch buffer instead of faulting.
// The trace keeps the address the program computed, so the measurement is the program's; only the
// value read or written there is not. Shared: 1 KiB of slack, as sm_80+ reserve shared memory per
// block, so that no valid access is redirected.
template <typename T>
__device__ __forceinline__ T* __kl_guard(T* p) {
    const void* g = (const void*)p;
    if (__kl_g.nranges == 0 || sizeof(T) > 4096) return p;
    bool inside = true;
    if (__isShared(g)) {
        unsigned int total;
        asm volatile("mov.u32 %0, %%total_smem_size;" : "=r"(total));
        inside = (unsigned long long)__cvta_generic_to_shared(g) + sizeof(T) <= (unsigned long long)total + 1024ull;
    } else if (__isGlobal(g)) {
        unsigned long long a = (unsigned long long)g;
        inside = false;
        for (unsigned int i = 0; i < __kl_g.nranges && i < __KL_MAXR; ++i)
            inside |= a >= __kl_g.ranges[2 * i] && a + sizeof(T) <= __kl_g.ranges[2 * i + 1];
    }
#ifdef __KL_TRACE
    if (inside) return p;
    atomicAdd((unsigned long long*)__kl_g.redirected, 1ull);
    return (T*)(void*)__kl_g.scratch;
#else
    // The profiled build: a select, no branch and no atomic, so that the compiler keeps one memory
    // instruction per access (Nsight Compute's counters are then per access).
    return (T*)(inside ? (unsigned long long)p : __kl_g.scratch);
#endif
}
"""

# Seeded loads (kernlint/confirm/seeding.py): a warp-uniform load the static evaluation sampled
# (`start = d_Limits[blockIdx.x]` taken as 4352) returns that value on the GPU too, and a loaded
# pointer the start of an allocation of its own, so the run measures what the analysis assumed. The
# load itself still executes (and is traced); only the value it yields is replaced. The host sets
# `__kl_s` before each launch; a site whose bit is clear returns what it loaded.
SEED_PRELUDE = r"""#define __KL_MAXV 128
#define __KL_MAXP 128
#define __KL_PSTRIDE (1ull << 20)
struct __kl_seed_t {
    long long vals[__KL_MAXV];            // the value seeded load site k returns
    unsigned long long pbase;             // loaded-pointer allocations: pbase + slot * __KL_PSTRIDE
    unsigned int have[__KL_MAXV / 32];    // bit k: value site k is seeded in this launch
    unsigned int phave[__KL_MAXP / 32];   // bit k: pointer site k is seeded in this launch
    unsigned int pslot[__KL_MAXP];        // the allocation pointer site k returns
};
__constant__ __kl_seed_t __kl_s;
template <typename T>
__device__ __forceinline__ T __kl_ldv(unsigned int k, T v) {
    return ((__kl_s.have[k >> 5] >> (k & 31)) & 1u) ? (T)__kl_s.vals[k] : v;
}
template <typename T>
__device__ __forceinline__ T __kl_ldp(unsigned int k, T v) {
    return ((__kl_s.phave[k >> 5] >> (k & 31)) & 1u)
        ? (T)(__kl_s.pbase + (unsigned long long)__kl_s.pslot[k] * __KL_PSTRIDE) : v;
}
"""
SEED_KINDS = ("loadval", "loadptr")

GRID_MACRO = r"""// The kernel sees the gridDim the static evaluation assumed (grid-stride loops, `gridDim.x - 1`).
#define gridDim (__kl_griddim())
"""

PRELUDE = "#define __KL_TRACE 1\n" + GUARD_PRELUDE + r"""
struct __kl_ctl_t {
    unsigned long long* addr;
    unsigned int* mask;
    unsigned int* ballot;
    unsigned int* count;
    unsigned long long* arrive;  // per (site, sampled block, lane of the block): arrivals at a collective
    unsigned int wpb, maxseq;
    unsigned int b0x, b0y, b0z, b1x, b1y, b1z;
};
__device__ __kl_ctl_t __kl_ctl;

extern "C" __global__ void __kl_set_ctl(unsigned long long* addr, unsigned int* mask, unsigned int* ballot,
                                        unsigned int* count, unsigned long long* arrive, unsigned int wpb,
                                        unsigned int maxseq,
                                        unsigned int b0x, unsigned int b0y, unsigned int b0z,
                                        unsigned int b1x, unsigned int b1y, unsigned int b1z) {
    __kl_ctl.addr = addr; __kl_ctl.mask = mask; __kl_ctl.ballot = ballot; __kl_ctl.count = count;
    __kl_ctl.arrive = arrive;
    __kl_ctl.wpb = wpb; __kl_ctl.maxseq = maxseq;
    __kl_ctl.b0x = b0x; __kl_ctl.b0y = b0y; __kl_ctl.b0z = b0z;
    __kl_ctl.b1x = b1x; __kl_ctl.b1y = b1y; __kl_ctl.b1z = b1z;
}

// Slot of this warp's next record at `site`, or -1 when this block is not sampled / the slot
// array is full. Called by all active lanes; the first active lane bumps the counter and
// broadcasts the sequence number (the warp-aggregated pattern from the CUDA programming guide).
__device__ __forceinline__ long long __kl_slot(unsigned int site, unsigned int m, unsigned int* lane_out) {
    unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned int b;
    if (blockIdx.x == __kl_ctl.b0x && blockIdx.y == __kl_ctl.b0y && blockIdx.z == __kl_ctl.b0z) b = 0;
    else if (blockIdx.x == __kl_ctl.b1x && blockIdx.y == __kl_ctl.b1y && blockIdx.z == __kl_ctl.b1z) b = 1;
    else return -1;
    if (__kl_ctl.count == 0) return -1;
    unsigned int lane = t % 32u;
    unsigned int leader = __ffs(m) - 1;
    unsigned long long w = ((unsigned long long)site * 2u + b) * __kl_ctl.wpb + t / 32u;
    unsigned int seq = 0;
    if (lane == leader) seq = __kl_ctl.count[w]++;
    seq = __shfl_sync(m, seq, leader);
    *lane_out = lane;
    if (seq >= __kl_ctl.maxseq) return -1;
    return (long long)(w * __kl_ctl.maxseq + seq);
}

template <typename T>
__device__ __forceinline__ T* __kl_rec(unsigned int site, T* p) {
    unsigned int m = __activemask();
    unsigned int lane = 0;
    const void* g = (const void*)p;
    long long slot = __kl_slot(site, m, &lane);
    if (slot >= 0) {
        unsigned long long a = __isShared(g)
            ? (0x8000000000000000ull | (unsigned long long)__cvta_generic_to_shared(g))
            : (unsigned long long)g;
        __kl_ctl.addr[slot * 32 + lane] = a;
        if (lane == __ffs(m) - 1) __kl_ctl.mask[slot] = m;
    }
    return __kl_guard(p);
}

// A barrier or warp collective: each lane counts its own arrivals. The k-th arrival of every lane is one
// occurrence, so lanes of one warp that reach the call in separate groups (independent thread
// scheduling: `__activemask()` at the call then names only one group) still count as arriving
// together; a lane that skips it has a lower count. The counts live in host memory (mapped), so a
// kernel that hangs there leaves them readable.
__device__ __forceinline__ void __kl_mark(unsigned int site) {
    unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned int b;
    if (blockIdx.x == __kl_ctl.b0x && blockIdx.y == __kl_ctl.b0y && blockIdx.z == __kl_ctl.b0z) b = 0;
    else if (blockIdx.x == __kl_ctl.b1x && blockIdx.y == __kl_ctl.b1y && blockIdx.z == __kl_ctl.b1z) b = 1;
    else return;
    if (__kl_ctl.count == 0) return;
    unsigned long long w = ((unsigned long long)site * 2u + b) * __kl_ctl.wpb + t / 32u;
    volatile unsigned long long* slot = &__kl_ctl.arrive[w * 32 + t % 32u];
    *slot = *slot + 1;
    __threadfence_system();  // (visible to the host even if the kernel then hangs)
}

template <typename V>
__device__ __forceinline__ V __kl_sw(unsigned int site, V v) {
    unsigned int m = __activemask();
    unsigned int lane = 0;
    long long slot = __kl_slot(site, m, &lane);
    if (slot >= 0) {
        __kl_ctl.addr[slot * 32 + lane] = (unsigned long long)(long long)v;
        if (lane == __ffs(m) - 1) __kl_ctl.mask[slot] = m;
    }
    return v;
}

template <typename C>
__device__ __forceinline__ bool __kl_br(unsigned int site, const C& c) {
    bool v = static_cast<bool>(c);
    unsigned int m = __activemask();
    unsigned int b = __ballot_sync(m, v);
    unsigned int lane = 0;
    long long slot = __kl_slot(site, m, &lane);
    if (slot >= 0 && lane == __ffs(m) - 1) {
        __kl_ctl.mask[slot] = m;
        __kl_ctl.ballot[slot] = b;
    }
    return v;
}
""" + GRID_MACRO + r"""// ---- end of instrumentation; the user's file follows with its own line numbers ----
"""

PRELUDE_END = "// ---- end of instrumentation;"

# Headers NVRTC provides (with the CUDA include path CuPy passes); every other <...> include is
# host-only (stdio, cuda_runtime, iostream, vector, ...) and is blanked.
DEVICE_HEADERS = re.compile(
    r"^(cuda_fp16\.h|cuda_bf16\.h|cuda_fp8\.h|cuda_fp4\.h|cuda_fp6\.h|mma\.h|cooperative_groups\.h|"
    r"cooperative_groups/.*|cuda/.*|cub/.*|thrust/.*|math_constants\.h|sm_\d+_intrinsics\.h|"
    r"cuda_pipeline.*\.h|cuda_awbarrier.*\.h|crt/.*|vector_types\.h|vector_functions\.h)$")

_DEVICE_WORDS = re.compile(r"\b(__global__|__device__|__constant__|__managed__)\b")
_KEEP_DECL_WORDS = re.compile(
    r"\b(__global__|__device__|__constant__|__managed__|__shared__|typedef|using|struct|class|union|enum|template|"
    r"constexpr|const|static_assert|namespace)\b")


@frozen
class Site:
    """One place to trace: "access" (a memory access), "branch" (an `if`), "switch", "loop" (its condition),
    "collective" (a barrier or `*_sync` warp intrinsic: the lanes that arrive, from `__activemask()`).

    For branches and loops `span` is the whole statement; the condition is found in its text.
    """

    id: int
    kind: str
    span: ir.Span


@frozen
class Instrumented:
    """The rewritten source and what happened to each requested site."""

    code: str  # prelude + device-only user source with the sites rewritten
    device_code: str  # the device-only user source without instrumentation (for attributes, ncu)
    sites: tuple[Site, ...]  # the sites that were rewritten
    skipped: tuple[tuple[Site, str], ...]  # sites left alone, with the reason
    blanked: tuple[tuple[int, int], ...]  # (first line, last line) of host code that was removed
    # The plain build Nsight Compute profiles: every access guarded like in `code`, the same gridDim
    # and the same two blocks running, and nothing recorded (so its counters are the user's accesses).
    profiled: str = ""
    seeded: tuple[Site, ...] = ()  # the seeded load sites that were rewritten (kinds SEED_KINDS)


# --- lexing ------------------------------------------------------------------------------------


def _code_mask(text: str) -> list[bool]:
    """True for characters that are code (not inside comments, strings, or preprocessor lines)."""
    n = len(text)
    out = [True] * n
    i = 0
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":
            # A preprocessor line, with backslash continuations (comments inside it end nothing).
            j = i
            while j < n:
                if text[j] == "\n" and (j == 0 or text[j - 1] != "\\"):
                    break
                j += 1
            for k in range(i, j):
                out[k] = False
            i = j
            continue
        at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = False
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                out[k] = False
            i = j
            continue
        if c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if m:
                end = text.find(")" + m.group(1) + '"', i)
                j = n if end < 0 else end + len(m.group(1)) + 2
                for k in range(i, j):
                    out[k] = False
                i = j
                continue
        if c in "\"'":
            # A char literal or a digit separator (1'000): treat ' after a digit as a separator.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + 1)
            for k in range(i, j):
                out[k] = False
            i = j
            continue
        i += 1
    return out


def _line_offsets(text: str) -> list[int]:
    offs = [0]
    for i, c in enumerate(text):
        if c == "\n":
            offs.append(i + 1)
    return offs


def offset_of(text: str, line_offsets: list[int], line: int, column: int) -> int | None:
    """Character offset of a 1-based (line, byte column) position, as libclang reports them."""
    if line < 1 or line > len(line_offsets) or column < 1:
        return None
    start = line_offsets[line - 1]
    end = line_offsets[line] - 1 if line < len(line_offsets) else len(text)
    line_text = text[start:end]
    raw = line_text.encode("utf-8")
    if column - 1 > len(raw):
        return None
    return start + len(raw[: column - 1].decode("utf-8", errors="ignore"))


# --- host code removal ---------------------------------------------------------------------------


@frozen
class _Chunk:
    start: int
    end: int  # exclusive
    header_end: int  # offset of the opening `{` of its body, or `end` when it has none
    braced: bool


def _top_level_chunks(text: str, mask: list[bool], start: int, end: int) -> list[_Chunk]:
    """Split [start, end) into top-level declarations: up to a `;` or a closing `}` at depth 0."""
    chunks: list[_Chunk] = []
    i = start
    chunk_start = start
    depth = 0
    paren = 0
    header_end = -1
    while i < end:
        c = text[i]
        if not mask[i]:
            if depth == 0 and paren == 0 and chunk_start == i and text[i] in "#/":
                # A comment or preprocessor line between declarations belongs to nobody.
                j = i
                while j < end and not mask[j]:
                    j += 1
                chunk_start = j
                i = j
                continue
            i += 1
            continue
        if c.isspace() and chunk_start == i and depth == 0:
            chunk_start = i + 1
            i += 1
            continue
        if c in "([":
            paren += 1
        elif c in ")]":
            paren = max(0, paren - 1)
        elif c == "{":
            if depth == 0 and paren == 0:
                header_end = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and paren == 0:
                # `struct S {...} s;` and `= {...};` continue to the `;`; a function body ends here.
                rest = i + 1
                while rest < end and (text[rest].isspace() or not mask[rest]):
                    rest += 1
                # (`template <class T>` before a function is not a class: drop the parameter list)
                header = re.sub(r"^\s*template\s*<(?:[^<>]|<[^<>]*>)*>", "", text[chunk_start:header_end])
                if re.search(r"\b(struct|class|union|enum)\b", header) or re.search(r"=\s*$", header):
                    i += 1
                    continue
                chunks.append(_Chunk(chunk_start, i + 1, header_end, True))
                chunk_start = i + 1
                header_end = -1
            elif depth < 0:
                depth = 0
        elif c == ";" and depth == 0 and paren == 0:
            he = header_end if header_end >= 0 else i + 1
            chunks.append(_Chunk(chunk_start, i + 1, he, header_end >= 0))
            chunk_start = i + 1
            header_end = -1
        i += 1
    if chunk_start < end and text[chunk_start:end].strip():
        chunks.append(_Chunk(chunk_start, end, end, False))
    return chunks


def _blank(chars: list[str], start: int, end: int) -> None:
    for k in range(start, end):
        if chars[k] != "\n":
            chars[k] = " "


_CONDITIONAL = re.compile(r"(?m)^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b[^\n]*")


def _blank_code(text: str, chars: list[str], start: int, end: int) -> None:
    """Blank [start, end) but keep conditional directives (`#if` ... `#endif`) in it.

    A removed declaration can span a directive whose partner lies outside it (a declaration that
    ends after an `#endif`, a macro invocation without a `;`): blanking the directive would leave
    the rest of the file unbalanced, and NVRTC would reject every kernel.
    """
    keep = [(m.start(), m.end()) for m in _CONDITIONAL.finditer(text, start, end)]
    pos = start
    for a, b in keep:
        _blank(chars, pos, a)
        pos = b
    _blank(chars, pos, end)


_FUNC_NAME = re.compile(r"(~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*(?:<[^()]*>)?\s*\($")


def _function_name(header: str) -> str | None:
    """The name a function definition's header declares (`Outer::name` gives `name`); None for operators."""
    head = re.sub(r"^\s*template\s*<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>", "", header)
    head = re.sub(r"\[\[[^\]]*\]\]", " ", head)
    if re.search(r"\boperator\b", head):
        return None
    k = head.find("(")
    while k >= 0:
        m = _FUNC_NAME.search(head[:k + 1])
        if m and m.group(1).split("::")[-1].strip() not in ("__launch_bounds__", "__align__", "alignas",
                                                             "__attribute__", "__declspec", "decltype"):
            return m.group(1).split("::")[-1].strip().lstrip("~")
        k = head.find("(", k + 1)
    return None


_MACRO_DEF = re.compile(r"(?m)^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)((?:[^\n]*\\\r?\n)*[^\n]*)")


def macro_uses(text: str) -> dict[str, set[str]]:
    """Each macro the text defines -> the identifiers its body names (so a kernel that uses a macro
    keeps the functions the macro calls)."""
    out: dict[str, set[str]] = {}
    for m in _MACRO_DEF.finditer(text):
        out.setdefault(m.group(1), set()).update(_IDENT.findall(m.group(2)))
    return out


_IDENT = re.compile(r"[A-Za-z_]\w*")


_TEMPLATE_HEAD = re.compile(r"^\s*template\s*<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>")


def _declared_names(code: str) -> set[str]:
    """Names a type or constant declaration introduces (struct S, typedef ... T;, using T =, int N = ...)."""
    code = _TEMPLATE_HEAD.sub("", code)  # `template <class T>`: T is no name of the file
    names = set(re.findall(r"\b(?:struct|class|union|enum(?:\s+class)?)\s+(?:(?:__align__|alignas|__attribute__|"
                           r"__declspec)\s*\((?:[^()]|\([^()]*\))*\)\s*|\[\[[^\]]*\]\]\s*)*([A-Za-z_]\w*)", code))
    names |= set(re.findall(r"\busing\s+([A-Za-z_]\w*)\s*=", code))
    m = re.search(r"\btypedef\b.*?([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*;\s*$", code, re.DOTALL)
    if m:
        names.add(m.group(1))
    # a function pointer typedef: `typedef float (*binary_t)(float, float);`
    names |= set(re.findall(r"\btypedef\b[^;]*?\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", code))
    for m in re.finditer(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?:=|\{)", code.split("{")[0] if "struct" not in code else ""):
        names.add(m.group(1))
    return names


def device_only(text: str, keep_lines: frozenset[int] = frozenset(),
                used_elsewhere: frozenset[str] = frozenset(),
                include_dirs: tuple[str, ...] = (), roots: bool = True) -> tuple[str, list[tuple[int, int]]]:
    """Blank host code (same length, same newlines) so that only the device code the kernels need remains.

    The kernels are the roots: `__global__` definitions and the functions covering a line in
    `keep_lines` (the kernels and device functions the front end found, which also catches
    qualifiers hidden behind macros). Everything else -- device functions, `__device__`/`__constant__`
    variables, types, typedefs, constants, other functions -- stays only when code that stays names it
    (to a fixed point; a macro that kept code uses names what its body names), so a host function in a
    header (`template <class T> [[nodiscard]] cudaError_t f(...)`, an error-check helper using a removed
    cuBLAS handle) goes, while the `struct Particle` a kernel reads and the `__device__` helper it calls
    stay. For a header, `used_elsewhere` holds the names the including file's device code uses and
    there are no roots of its own. `#include <...>` of host headers is blanked; one that resolves under
    `include_dirs` (a project's `-I` directory) stays, to be inlined like a quoted one.
    """
    mask = _code_mask(text)
    chars = list(text)
    line_offsets = _line_offsets(text)
    removed: list[tuple[int, int]] = []

    def line_of(off: int) -> int:
        lo, hi = 0, len(line_offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_offsets[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def code_of(start: int, end: int) -> str:
        return "".join(c if m else " " for c, m in zip(text[start:end], mask[start:end]))

    kept: list[_Chunk] = []
    candidates: list[tuple[_Chunk, set[str]]] = []  # kept only when kept code names one of the names
    dropped: list[_Chunk] = []

    def visit(start: int, end: int) -> None:
        for ch in _top_level_chunks(text, mask, start, end):
            header = code_of(ch.start, ch.header_end)
            first, last = line_of(ch.start), line_of(max(ch.start, ch.end - 1))
            covers_kept = any(first <= ln <= last for ln in keep_lines)
            if ch.braced and re.search(r"^\s*(inline\s+)?namespace\b[^=]*$", header) or \
                    ch.braced and re.match(r'^\s*extern\s+"C(\+\+)?"\s*$', text[ch.start:ch.header_end]):
                visit(ch.header_end + 1, ch.end - 1)
                continue
            if "<<<" in text[ch.start:ch.end]:
                dropped.append(ch)
            elif ch.braced and "(" in header and not re.search(r"\b(struct|class|union|enum)\b",
                                                               _TEMPLATE_HEAD.sub("", header).split("(")[0]):
                name = _function_name(header)
                if roots and (covers_kept or re.search(r"\b__global__\b", header)):
                    kept.append(ch)
                elif name is None:  # an operator: kept when it is device code
                    (kept if _DEVICE_WORDS.search(header) else dropped).append(ch)
                else:
                    candidates.append((ch, {name}))
            elif covers_kept or re.search(r"\b__shared__\b", header) or \
                    re.search(r"\b__global__\b", header) and "(" in header:
                kept.append(ch)
            elif _DEVICE_WORDS.search(header) or _KEEP_DECL_WORDS.search(header):
                body = code_of(ch.start, ch.end)
                names = _declared_names(body)
                if "(" in body and not names and not re.search(r"\b(struct|class|union|enum|typedef|using)\b", body):
                    fname = _function_name(body[:body.index("(") + 1])
                    names = {fname} if fname else set()
                if not names and "(" not in body:  # `__constant__ float c[N];`, `extern int n;`
                    m = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*;\s*$", body)
                    names = {m.group(1)} if m else set()
                if not names and re.search(r"\b(static_assert|enum)\b", body):
                    kept.append(ch)  # a static_assert or an anonymous enum (whose names cannot be told)
                else:
                    candidates.append((ch, names))
            else:
                dropped.append(ch)

    visit(0, len(text))
    macros = macro_uses(text)
    used: set[str] = set(used_elsewhere)  # names the including file's device code uses (for headers)

    def add_used(names: set[str]) -> None:
        stack = [n for n in names if n not in used]
        while stack:
            n = stack.pop()
            if n in used:
                continue
            used.add(n)
            stack.extend(m for m in macros.get(n, ()) if m not in used)

    for n in list(used):
        add_used(set(macros.get(n, ())))
    for ch in kept:
        add_used(set(_IDENT.findall(code_of(ch.start, ch.end))))
    changed = True
    while changed:
        changed = False
        for item in list(candidates):
            ch, names = item
            if names & used:
                candidates.remove(item)
                kept.append(ch)
                add_used(set(_IDENT.findall(code_of(ch.start, ch.end))))
                changed = True
    for ch in dropped + [c for c, _n in candidates]:
        _blank_code(text, chars, ch.start, ch.end)
        removed.append((line_of(ch.start), line_of(max(ch.start, ch.end - 1))))
    removed.sort()
    # Host-only includes: NVRTC has no host headers.
    for m in re.finditer(r"(?m)^[ \t]*#[ \t]*include[ \t]*<([^>]+)>.*$", text):
        name = m.group(1).strip()
        if not DEVICE_HEADERS.match(name) and not any(os.path.isfile(os.path.join(d, name)) for d in include_dirs):
            _blank(chars, m.start(), m.end())
    return "".join(chars), removed


# --- site rewriting ------------------------------------------------------------------------------


def _balanced(s: str) -> bool:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    for c in s:
        if c in "([{":
            stack.append(c)
        elif c in ")]}" and (not stack or stack.pop() != pairs[c]):
            return False
    return not stack


def _check_site_text(kind: str, s: str, macros: frozenset[str] = frozenset()) -> str | None:
    """Why `s` cannot be rewritten as a site of `kind`, or None when it can."""
    if not s.strip():
        return "empty source range"
    if ";" in s or "{" in s or "}" in s:
        return "source range spans statements (macro expansion?)"
    if not _balanced(s):
        return "source range is not a complete expression (macro expansion?)"
    # A function-like macro of the file such as `AT(p, i)` may expand to an lvalue: it is tried as
    # one. A call of a function (an inlined helper reported at its call) is not an lvalue.
    call = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*\(.*\)\s*", s, re.DOTALL)
    macro_call = call is not None and call.group(1) in macros
    if kind == "guard":
        kind = "access"
    if call is not None and not macro_call and kind == "access":
        return "the access is inside a function called here (a helper used in several places)"
    if kind == "collective" and not re.fullmatch(r"\s*[A-Za-z_][\w:.<>\s]*\(.*\)\s*", s, re.DOTALL):
        return "not a call of the barrier or collective (macro expansion?)"
    if kind == "access" and not re.search(r"[\[\]*]|->|\.", s) and not macro_call:
        return "source range does not look like a memory access (macro expansion?)"
    return None


def instrument(text: str, sites: list[Site], keep_lines: frozenset[int] = frozenset(),
               filename: str = "kernel.cu", include_dirs: tuple[str, ...] = (),
               guards: tuple[ir.Span, ...] = (), entries: tuple[ir.Span, ...] = (),
               seeds: tuple[Site, ...] = ()) -> Instrumented:
    """Rewrite `sites` of `text` and strip host code; see the module docstring for the scheme.

    `guards` are the spans of the other memory accesses of the file's device functions: they are
    not traced, only guarded (an untraced access in a helper must not fault the kernel either).
    `entries` are the bodies of the file's kernels: each starts with `if (__kl_skip_block()) return;`
    (inactive unless the host asks for it: then only the sampled blocks run).
    """
    first_guard = max((s.id for s in sites), default=-1) + 1
    sites = list(sites) + [Site(first_guard + k, "guard", sp) for k, sp in enumerate(guards)]
    sites += list(seeds)  # kinds SEED_KINDS, ids are their slots (confirm/seeding.py)
    device, removed = device_only(text, keep_lines, include_dirs=include_dirs)
    mask = _code_mask(device)
    line_offsets = _line_offsets(text)
    placed: list[tuple[int, int, Site]] = []
    skipped: list[tuple[Site, str]] = []
    macros = frozenset(re.findall(r"(?m)^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(", text))
    for site in sites:
        sp = site.span
        a = offset_of(text, line_offsets, sp.line, sp.column)
        b = offset_of(text, line_offsets, sp.end_line or sp.line, sp.end_column or sp.column)
        if a is None or b is None or b <= a:
            skipped.append((site, "no usable source range"))
            continue
        if site.kind == "branch":
            # The span is the whole `if` statement: trace the text between its parentheses.
            inner = _if_condition(text, mask, a, b)
            if isinstance(inner, str):
                skipped.append((site, inner))
                continue
            a, b = inner
        elif site.kind == "switch":
            m = re.match(r"switch\s*\(", text[a:b])
            inner = _paren_body(text, mask, a + m.end(), b) if m else "not a `switch (` statement"
            if isinstance(inner, str):
                skipped.append((site, inner))
                continue
            a, b = inner
        elif site.kind == "loop":
            inner = _loop_condition(text, mask, a, b)
            if isinstance(inner, str):
                skipped.append((site, inner))
                continue
            a, b = inner
        if not all(mask[a:b]) and not any(mask[a:b]):
            skipped.append((site, "source range is inside a comment or a removed host function"))
            continue
        if device[a:b] != text[a:b]:
            skipped.append((site, "source range is in removed host code"))
            continue
        pointer_arg = _intrinsic_pointer_arg(text, mask, a, b) if site.kind in ("access", "guard") else None
        if pointer_arg is not None:
            # `__ldg(p)` / `__stcs(p, v)`: the access is through the first argument, a pointer.
            a, b = pointer_arg
            site = Site(site.id, "pointer" if site.kind == "access" else "guard-pointer", site.span)
        why = _check_site_text("access" if site.kind in SEED_KINDS else site.kind, text[a:b], macros)
        if why:
            skipped.append((site, why))
            continue
        placed.append((a, b, site))
    # Nest properly: drop a site that partly overlaps an earlier one (containment is fine).
    # (A seeded load wraps the access at the same range: it goes outside, so it sorts first.)
    placed.sort(key=lambda t: (t[0], -t[1], t[2].kind not in SEED_KINDS))
    accepted: list[tuple[int, int, Site]] = []
    for a, b, site in placed:
        clash = next((x for x in accepted if x[0] < b and a < x[1] and not (x[0] <= a and b <= x[1])
                      and not (a <= x[0] and x[1] <= b)), None)
        if clash is not None or any(x[0] == a and x[1] == b and (x[2].kind in SEED_KINDS) == (site.kind in SEED_KINDS)
                                    for x in accepted):
            skipped.append((site, "overlaps another traced site"))
            continue
        accepted.append((a, b, site))
    skipped = [(site, why) for site, why in skipped if site.kind != "guard" and site.kind not in SEED_KINDS]
    seeded = tuple(s for _a, _b, s in accepted if s.kind in SEED_KINDS)
    filters = []
    for sp in entries:
        at = offset_of(text, line_offsets, sp.line, sp.column)
        if at is not None and at < len(device) and device[at] == "{" and mask[at]:
            filters.append((at + 1, at + 1, Site(-1, "entry", sp)))
    code = _render(device, accepted + filters, 0, len(device))
    profiled = _render(device, [(a, b, Site(s.id, "guard" if s.kind in ("access", "guard") else
                                         ("guard-pointer" if s.kind == "pointer" else s.kind), s.span))
                                for a, b, s in accepted if s.kind in ("access", "guard", "pointer")]
                       + [x for x in accepted if x[2].kind in SEED_KINDS] + filters,
                       0, len(device))
    header = PRELUDE.replace(GRID_MACRO, SEED_PRELUDE + GRID_MACRO, 1) + f'#line 1 "{_escape(filename)}"\n'
    plain_header = GUARD_PRELUDE + SEED_PRELUDE + GRID_MACRO + PRELUDE_END + "\n" + f'#line 1 "{_escape(filename)}"\n'
    return Instrumented(header + code, device, tuple(s for _a, _b, s in accepted
                                                     if s.kind != "guard" and s.kind not in SEED_KINDS),
                        tuple(skipped), tuple(removed), plain_header + profiled, seeded)


# Intrinsics the evaluator models as a memory access through their first (pointer) argument.
POINTER_INTRINSICS = frozenset({"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv",
                                "__stcg", "__stcs", "__stwt", "__stwb"})


# Atomics (`atomicAdd(&flag, 1)`, `atomicCAS_block(p, c, v)`): the access is through the first argument.
ATOMIC = re.compile(r"atomic(Add|Sub|Exch|Min|Max|Inc|Dec|CAS|And|Or|Xor)(_block|_system)?")


def _intrinsic_pointer_arg(text: str, mask: list[bool], a: int, b: int) -> tuple[int, int] | None:
    """The range of the first argument when text[a:b] is a call of a pointer intrinsic."""
    m = re.match(r"\s*([A-Za-z_]\w*)\s*\(", text[a:b])
    if not m or (m.group(1) not in POINTER_INTRINSICS and not ATOMIC.fullmatch(m.group(1))):
        return None
    start = a + m.end()
    depth = 0
    for i in range(start, b):
        if not mask[i]:
            continue
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return (start, i) if text[start:i].strip() else None
            depth -= 1
        elif c == "," and depth == 0:
            return (start, i) if text[start:i].strip() else None
    return None


def _if_condition(text: str, mask: list[bool], a: int, b: int) -> tuple[int, int] | str:
    """Offsets of the condition inside `if (...)` starting at `a`, or why there is none."""
    m = re.match(r"if\s*(constexpr\b)?\s*\(", text[a:b])
    if not m:
        return "the statement does not start with `if (` (macro expansion?)"
    if m.group(1):
        return "`if constexpr` is resolved at compile time"
    return _paren_body(text, mask, a + m.end(), b)


def _loop_condition(text: str, mask: list[bool], a: int, b: int) -> tuple[int, int] | str:
    """Offsets of the condition of `for (init; cond; step)` or `while (cond)` starting at `a`."""
    m = re.match(r"(for|while)\s*\(", text[a:b])
    if not m:
        return "not a `for (` or `while (` loop (a do-while, or a macro expansion)"
    start = a + m.end()
    if m.group(1) == "while":
        return _paren_body(text, mask, start, b)
    # Find the two `;` at parenthesis depth 1.
    depth = 0
    semis: list[int] = []
    i = start
    while i < b:
        if mask[i]:
            c = text[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == ";" and depth == 0:
                semis.append(i)
        i += 1
    if len(semis) != 2:
        return "range-based or unusual `for`: no condition to trace"
    lo, hi = semis[0] + 1, semis[1]
    if not text[lo:hi].strip():
        return "loop without a condition"
    return (lo, hi)


def _paren_body(text: str, mask: list[bool], start: int, b: int) -> tuple[int, int] | str:
    depth = 1
    i = start
    while i < b:
        if mask[i]:
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 0:
                    return (start, i) if text[start:i].strip() else "empty condition"
        i += 1
    return "unbalanced parentheses in the condition"


def _escape(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"')


def _render(text: str, sites: list[tuple[int, int, Site]], start: int, end: int) -> str:
    """Emit text[start:end] with the outermost sites in it wrapped (recursively for nested ones)."""
    out: list[str] = []
    pos = start
    i = 0
    inside = [s for s in sites if start <= s[0] and s[1] <= end]
    inside.sort(key=lambda t: (t[0], -t[1], t[2].kind not in SEED_KINDS))
    while i < len(inside):
        a, b, site = inside[i]
        nested = [s for s in inside[i + 1:] if a <= s[0] and s[1] <= b]
        out.append(text[pos:a])
        body = _render(text, nested, a, b)
        if site.kind == "entry":
            out.append(" if (__kl_skip_block()) return; ")
        elif site.kind == "guard":
            out.append(f"(*__kl_guard(&({body})))")
        elif site.kind == "loadval":
            out.append(f"__kl_ldv({site.id}u, ({body}))")
        elif site.kind == "loadptr":
            out.append(f"__kl_ldp({site.id}u, ({body}))")
        elif site.kind == "guard-pointer":
            out.append(f"__kl_guard(({body}))")
        elif site.kind == "access":
            out.append(f"(*__kl_rec({site.id}u, &({body})))")
        elif site.kind == "pointer":
            out.append(f"__kl_rec({site.id}u, ({body}))")
        elif site.kind == "loop":
            out.append(f" __kl_br({site.id}u, ({body}))")
        elif site.kind == "switch":
            out.append(f"__kl_sw({site.id}u, ({body}))")
        elif site.kind == "collective":
            out.append(f"(__kl_mark({site.id}u), {body})")
        else:
            out.append(f"__kl_br({site.id}u, ({body}))")
        pos = b
        i += 1 + len(nested)
    out.append(text[pos:end])
    return "".join(out)


# --- which sites to trace --------------------------------------------------------------------------


def branch_condition_span(stmt: ir.If) -> ir.Span:
    """The span of an `if` statement's condition expression (implicit casts peeled)."""
    c: ir.Expr = stmt.cond
    while isinstance(c, ir.Cast) and not c.explicit and c.span == ir.NO_SPAN:
        c = c.operand
    return c.span


def walk(node: object) -> list[object]:
    """Every IR node reachable from `node` (statements and expressions), depth first, in order."""
    out: list[object] = []
    stack: list[object] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, tuple):
            stack.extend(reversed(n))
            continue
        if n is None or isinstance(n, (str, int, float, bool, ir.CType, ir.Span)):
            continue
        slots = getattr(type(n), "__slots__", None)
        if slots is None:
            continue
        out.append(n)
        stack.extend(reversed([getattr(n, name, None) for name in slots]))
    return out


_USER_INCLUDE = re.compile(r'(?m)^[ \t]*#[ \t]*include[ \t]*(?:"([^"]+)"|<([^>]+)>)[^\n]*$')


_LINE_DIRECTIVE = re.compile(r'(?m)^#line (\d+)[^\n]*\n')


def _logical_line(code: str, pos: int) -> int:
    """The line number the compiler gives offset `pos`, honouring the last `#line` before it."""
    last = None
    for m in _LINE_DIRECTIVE.finditer(code, 0, pos):
        last = m
    if last is None:
        return code.count("\n", 0, pos) + 1
    return int(last.group(1)) + code.count("\n", last.end(), pos)


def device_names(code: str) -> set[str]:
    """Identifiers the code (not comments, strings or directives) names, and what the macros it uses name."""
    mask = _code_mask(code)
    used = set(_IDENT.findall("".join(c if k else " " for c, k in zip(code, mask))))
    macros = macro_uses(code)
    stack = [n for n in used if n in macros]
    while stack:
        for m in macros.get(stack.pop(), ()):
            if m not in used:
                used.add(m)
                stack.append(m)
    return used


def inline_user_headers(code: str, base_dir: str, include_dirs: tuple[str, ...], filename: str) -> str:
    """Replace each `#include "x.h"` (or `<x.h>` found under `include_dirs`) by the header's device-only text.

    Project headers often mix device helpers with host code (`cublas_v2.h`, error-check
    functions); NVRTC cannot compile the host half, so each header goes through `device_only`
    too, keeping only what the device code names (the including file's and, to a fixed point, what
    the kept parts of every header name: a type one header keeps may come from another). `#line`
    directives keep compiler messages and `-lineinfo` pointing at the right file and line. A header
    is inlined once (include guards and `#pragma once` then have nothing left to guard); an include
    that does not resolve stays as written, and NVRTC reports it.
    """
    # The instrumentation prelude's own names (`count`, `mask`, `site` ...) are not the user's.
    user = code.split(PRELUDE_END, 1)[-1]
    used = frozenset(device_names(user))
    out = code
    for _ in range(8):
        out = _inline(code, base_dir, include_dirs, filename, used, set(), 0)
        grown = used | device_names(out.split(PRELUDE_END, 1)[-1])
        if grown == used:
            break
        used = frozenset(grown)
    return out


def _inline(code: str, base_dir: str, include_dirs: tuple[str, ...], filename: str, used: frozenset[str],
            seen: set[str], _depth: int) -> str:
    out: list[str] = []
    pos = 0
    for m in _USER_INCLUDE.finditer(code):
        name = (m.group(1) or m.group(2)).strip()
        angled = m.group(1) is None  # `<x.h>` searches only the -I directories
        path = next((os.path.join(d, name) for d in ((*include_dirs,) if angled else (base_dir, *include_dirs))
                     if os.path.isfile(os.path.join(d, name))), None)
        if angled and path is None:
            continue  # a CUDA header device_only kept (cuda_fp16.h, cooperative_groups.h)
        if path is None and not DEVICE_HEADERS.match(name):
            # Not the project's: a host or CUDA runtime header (`#include "cuda.h"`), which NVRTC
            # would find in the toolkit and then fail on its host includes.
            out.append(code[pos:m.start()] + f"// (host header left out: {name})")
            pos = m.end()
            continue
        if path is None or _depth > 8:
            continue
        line_no = _logical_line(code, m.start())
        out.append(code[pos:m.start()])
        real = os.path.realpath(path)
        if real in seen:
            out.append(f"// (already inlined: {name})")
        else:
            seen.add(real)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    header = fh.read()
            except OSError:
                out.append(m.group(0))
                pos = m.end()
                continue
            filtered, _ = device_only(header, used_elsewhere=used, include_dirs=include_dirs, roots=False)
            filtered = _inline(filtered, os.path.dirname(path), include_dirs, real, used, seen, _depth + 1)
            out.append(f'#line 1 "{_escape(real)}"\n{filtered}\n#line {line_no + 1} "{_escape(filename)}"')
        pos = m.end()
    out.append(code[pos:])
    return "".join(out)


# What nvcc's implicit host headers (math.h, float.h, sys/types.h, cstddef) give device code and
# NVRTC does not: defined only when missing.
_COMPAT_MACROS = """#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.175494351e-38F
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 1.192092896e-07F
#endif
#ifndef DBL_MAX
#define DBL_MAX 1.7976931348623158e+308
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
"""


def with_half_headers(code: str, filename: str) -> str:
    """Prepend what NVRTC lacks and nvcc gets from host headers (see `_COMPAT_MACROS`).

    cuda_fp16.h/cuda_bf16.h when their types are used, `uint`-style typedefs, `std::size_t`, and
    the float limits; a `#line` directive after them keeps the user's line numbers.
    """
    extra = ""
    if HALF_TYPES.search(code) and not re.search(r"#\s*include\s*<cuda_bf16\.h>", code):
        extra += "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
    for name, real in (("uint", "unsigned int"), ("ushort", "unsigned short"), ("ulong", "unsigned long")):
        if re.search(rf"\b{name}\b", code) and not re.search(rf"\btypedef\b[^;]*\b{name}\s*;", code):
            extra += f"typedef {real} {name};\n"
    if "std::size_t" in code or "std::ptrdiff_t" in code:
        extra += "namespace std { using size_t = decltype(sizeof(0)); using ptrdiff_t = decltype((int*)0 - (int*)0); }\n"
    if "std::bool_constant" in code or "std::integral_constant" in code:
        # (NVRTC has no <type_traits>; llm.c passes std::bool_constant<...> as a tag argument)
        extra += ("namespace std { template <class T, T v> struct integral_constant { static constexpr T value = v; "
                  "constexpr operator T() const { return v; } }; template <bool B> using bool_constant = "
                  "integral_constant<bool, B>; }\n")
    extra += declarations_for(code)  # library types of headers NVRTC lacks (cufftComplex, XMFLOAT3)
    extra += _COMPAT_MACROS
    return extra + f'#line 1 "{_escape(filename)}"\n' + code
