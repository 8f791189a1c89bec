"""Source-to-source instrumentation for `--confirm`: pure text rewriting, no GPU, no CuPy.

Given a CUDA file and the sites the warp evaluator saw (memory accesses, `if` conditions), build a
device-only copy of the file in which

* host code (`main`, launch wrappers, host globals, `#include <cstdio>` ...) is blanked out, so that
  NVRTC, which has no host headers, only sees kernels, device functions, types and macros (the text
  analysis that finds what is device code lives in kernlint/frontend/device_source.py);
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

import re

from kernlint.ir import nodes as ir
from kernlint.frontend.device_source import PRELUDE_END, _code_mask, _escape, _line_offsets, device_only, offset_of
from kernlint.base.frozen import frozen

SHARED_FLAG = 1 << 63


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








# --- host code removal ---------------------------------------------------------------------------




























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


def _check_site_text(kind: str, s: str, macros: frozenset[str] = frozenset(),
                     asm_macros: frozenset[str] = frozenset()) -> str | None:
    """Why `s` cannot be rewritten as a site of `kind`, or None when it can. `asm_macros`: the file's
    function-like macros whose body is an asm statement (a use of one is an asm statement too)."""
    if not s.strip():
        return "empty source range"
    head = re.match(r"\s*([A-Za-z_]\w*)\s*\(", s)
    if re.match(r"\s*(?:asm|__asm__|__asm)\b", s) or (head is not None and head.group(1) in asm_macros):
        return "an asm statement: its accesses are not rewritten (verdict: not-run 'inline-asm')"
    if re.match(r"\s*(?:(?:::)?cuda::|(?:::)?cooperative_groups::|cg::)?(?:__pipeline_)?memcpy_async\s*\(", s):
        return "an asynchronous copy: a load and a store at once, not rewritten (verdict: not-run 'async-copy')"
    if ";" in s or "{" in s or "}" in s:
        return "source range spans statements (macro expansion?)"
    if not _balanced(s):
        return "source range is not a complete expression (macro expansion?)"
    # A function-like macro of the file such as `AT(p, i)` may expand to an lvalue: it is tried as
    # one. A call of a function (an inlined helper reported at its call) is not an lvalue.
    call = re.fullmatch(r"\s*([A-Za-z_][\w:]*)\s*\(.*\)\s*", s, re.DOTALL)  # (`ns::f(...)` too)
    macro_call = call is not None and call.group(1) in macros
    if kind == "guard":
        kind = "access"
    if call is not None and not macro_call and kind == "access":
        return "the access is inside a function called here (a helper used in several places)"
    if kind == "collective" and not re.fullmatch(r"\s*[A-Za-z_][\w:.<>\s]*\(.*\)\s*", s, re.DOTALL):
        return "not a call of the barrier or collective (macro expansion?)"
    # (a lone name is an access only as a reference bound to memory, `float &r = a[i]; r = 1.0f;`, the one
    # kind of name kernlint reports an access at: frontend/memory_refs.py; `&(r)` is the element's address)
    if kind == "access" and not re.search(r"[\[\]*]|->|\.", s) and not macro_call \
            and not re.fullmatch(r"\s*[A-Za-z_]\w*\s*", s):
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
    asm_macros = frozenset(re.findall(r"(?m)^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\([^)]*\)[ \t]*(?:\\\s*)?"
                                      r"(?:asm|__asm__|__asm)\b", text))
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
        why = _check_site_text("access" if site.kind in SEED_KINDS else site.kind, text[a:b], macros, asm_macros)
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
















