"""Lambdas that capture (frontend/lambdas.py, eval/closures.py): copies seen as at the making, references as at
each call and written back, `mutable` copies kept in the object, nested calls, and what stays an honest KL904.
fixtures/KL101_capturing_lambda.cu has the kernels of each kind with their clean twins."""
from __future__ import annotations

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.frontend.clang_frontend import parse_source

_LAUNCH = "int main() { float* a; k<<<64, 256>>>(a, 1 << 20); }\n"
_INDEX = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"


def _lint(body: str, before: str = ""):
    """`body` as the kernel `k(float* a, int n)`'s, after `i`; its result and its one coverage record."""
    src = before + "__global__ void k(float* a, int n) {\n" + _INDEX + body + "}\n" + _LAUNCH
    res = lint_source(src, "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    return res, rec


def _codes(res) -> list[str]:
    return sorted(d.code for d in res.diagnostics)


def _sectors(res) -> list[str]:
    """Each finding's code with its sectors per request (`32 32-byte sectors` for a 128-byte lane stride)."""
    return sorted(f"{d.code} {d.message.split('touches ')[1].split(' for')[0]}" for d in res.diagnostics
                  if "touches " in d.message)


def test_the_captures_frontend_reads() -> None:
    """Each variable the body names from the enclosing function, by the list's mode else the default; `this`
    for a member named inside a method; what is not followed has no call operator lowered for it."""
    src = ("struct S { float* p; int m;\n"
           "  __device__ void go(int i) { auto f = [=](int j) { p[j * m] = 0.0f; }; f(i); } };\n"
           "__global__ void k(float* a, int n, float& r) {\n" + _INDEX
           + "    float acc = 0.0f; float buf[4]; const int N = 32;\n"
           "    auto mix = [a, &acc, n](int q) mutable { acc += a[q * n]; n = 3; };\n"
           "    auto arr = [&](int q) { buf[q] = 1; };\n"
           "    auto init = [p = a + 1](int q) { return p[q]; };\n"
           "    auto cst = [](int q) { return q * N; };\n"
           "    auto rr = [&](int q) { r += q + i; };\n"
           "    mix(1); arr(1); init(1); cst(1); rr(1);\n    S s; s.go(i);\n}\n")
    table = parse_source(src, "k.cu").functions
    seen: set[str] = set()
    while set(table) - seen:  # (lowering a function records the lambdas in it)
        for key in list(set(table) - seen):
            seen.add(key)
            table[key]

    def caps(line: int):
        key = next((k for k in table if k.startswith("operator()@") and k.endswith(f":{line}")), None)
        return None if key is None else (table[key].captures, table[key].mutable)

    assert caps(2) == ((("this", "ref"),), False)
    assert caps(6) == ((("acc", "ref"), ("a", "copy"), ("n", "copy")), True)
    assert caps(7) is None and caps(8) is None  # an array captured, an init-capture: not lowered
    assert caps(9) == ((("N", "copy"),), False)  # a constant named without capture: its value
    assert caps(10) == ((("r", "ref"), ("i", "ref")), False)


def test_a_mutable_lambda_keeps_its_copy_the_variable_is_untouched() -> None:
    """`[s] mutable` adds 2 to its copy at each call: the second call's `j * s` is j * 4 (0 + 2 + 2): lanes 16
    bytes apart, 4 bytes each: 512 bytes, 16 sectors per request for 128 bytes (4.0x); with a fresh copy at each
    call it would be j * 2: 8 sectors. The variable `s` is still 0 after the calls: `a[i * (s + 1)]` is a[i],
    coalesced (a[i * 5] had the copy been written to it)."""
    body = ("    int s = 0;\n    auto bump = [s](int j) mutable { s += 2; return j * s; };\n"
            "    bump(i);\n    int idx = bump(i);\n    if (i < n) { a[idx] = 0.0f; a[i * (s + 1)] = 1.0f; }\n")
    res, rec = _lint(body)
    assert rec.status == "full" and _sectors(res) == ["KL102 16 32-byte sectors"], res.diagnostics
    assert [d.line for d in res.diagnostics] == [7]


def test_a_lambda_calling_another_that_shares_a_reference_sees_its_writes() -> None:
    """`outer` calls `inner` twice; both capture `s` by reference: each `inner` adds 16 to the `s` that `outer`
    holds while it runs, and `outer` adds 0 after them: s = 32 at the store (8.0x). Were `inner`'s writes
    taken from the kernel's frame while `outer` runs, `outer`'s write back would leave s = 0."""
    body = ("    int s = 0;\n    auto inner = [&]() { s += 16; };\n"
            "    auto outer = [&]() { inner(); s += 0; inner(); };\n    outer();\n    if (i < n) a[i * s] = 0.0f;\n")
    res, rec = _lint(body)
    assert rec.status == "full" and _sectors(res) == ["KL102 32 32-byte sectors"], res.diagnostics


def test_a_copy_of_the_object_copied_this() -> None:
    """`[*this]` copies the object when the lambda is made: its `ld` then is 32, set to 1 after: 8.0x; `[this]`
    reads the object at the call: 1, coalesced."""
    def src(capture: str) -> str:
        return ("struct R { float* p; int ld;\n  __device__ void run(int i) {\n"
                f"    auto st = [{capture}](int j) {{ p[j * ld] = 0.0f; }};\n    ld = 1;\n    st(i);\n  }}\n}};\n")
    body = "    R r;\n    r.p = a;\n    r.ld = 32;\n    if (i < n) r.run(i);\n"
    res, rec = _lint(body, src("*this"))
    assert rec.status == "full" and _sectors(res) == ["KL102 32 32-byte sectors"], res.diagnostics
    res, rec = _lint(body, src("this"))
    assert rec.status == "full" and not res.diagnostics, res.diagnostics


def test_a_lambda_made_for_a_forwarding_reference_is_followed() -> None:
    """`apply(F&& f)` given the lambda itself (a temporary): it is the object the helper calls."""
    before = "template <class F> __device__ void apply(int c, F&& f) { for (int k = 0; k < c; ++k) f(k); }\n"
    res, rec = _lint("    apply(2, [&](int k) { if (i < n) a[(i + k * n) * 32] = 0.0f; });\n", before)
    assert rec.status == "full" and _sectors(res) == ["KL102 32 32-byte sectors"], res.diagnostics


def test_a_variable_hidden_where_the_lambda_may_be_called_is_not_guessed() -> None:
    """The lambda captures the outer `s` (32) by reference; it is called inside a block that declares another
    `s` (1), which the evaluator's frame holds under that name there: the lambda is not followed (KL904), rather
    than read with the wrong `s` (coalesced: a wrong clean). Its twin declares the other `s` before the lambda
    (no call can be where it hides the captured one): followed, 8.0x."""
    body = ("    int s = 32;\n    auto st = [&](int j) { a[j * s] = 0.0f; };\n"
            "    { int s = 1; if (i < n) st(i + s - 1); }\n")
    res, rec = _lint(body)
    assert _codes(res) == ["KL904"] and rec.status == "partial", res.diagnostics
    [gap] = rec.gaps
    assert gap.kind == "unread_body" and "declared again after it" in gap.detail
    before = ("    { int s = 1; a[i + s - 1] = 0.0f; }\n    int s = 32;\n    auto st = [&](int j) { a[j * s] = 0.0f; };\n"
              "    if (i < n) st(i);\n")
    res, rec = _lint(before)
    assert rec.status == "full" and _sectors(res) == ["KL102 32 32-byte sectors"], res.diagnostics


def test_an_object_call_kernlint_cannot_follow_is_not_silent_without_a_pointer() -> None:
    """`f(k)` in a helper, `f` bound to a lambda kernlint does not follow (it captures an array) and given no
    pointer: what it reaches through its captures is unknown: an access not evaluated (was: silence)."""
    before = "template <class F> __device__ void apply(int c, F f) { for (int k = 0; k < c; ++k) f(k); }\n"
    body = "    float t[2] = {0.0f, 1.0f};\n    apply(2, [&](int k) { if (i < n) a[(i + k * n) * 32] = t[1]; });\n"
    res, rec = _lint(body, before)
    assert _codes(res) == ["KL904"] and rec.status == "partial", res.diagnostics
    assert [g.kind for g in rec.gaps] == ["indirect_call"]


def test_what_a_lambda_writes_under_unknown_data_or_in_a_loop_stopped_early_is_unknown() -> None:
    """`pitch` written only through lambda calls (no assignment in the branch's or loop's text): under a branch
    on loaded data some lanes add 31 and some do not, and a loop of `n` (2^20) iterations is stopped before its
    end; either way `pitch` is unknown at the store, which is not evaluated (KL904), not called 8.0x from a
    `pitch` of 32 every lane was given."""
    before = "__device__ float load(const float* p, int i) { return p[i]; }\n"
    branch = ("    int pitch = 1;\n    auto widen = [&](int k) { pitch += k; };\n"
              "    if (load(a, i) > 0.0f) widen(31);\n    if (i < n) a[i * pitch] = 0.0f;\n")
    loop = ("    int pitch = 1;\n    auto widen = [&](int k) { pitch += k; };\n"
            "    for (int j = 0; j < n; ++j) widen(31);\n    if (i < n) a[i * pitch] = 0.0f;\n")
    for body in (branch, loop):
        res, rec = _lint(body, before)
        assert "KL102" not in _codes(res) and rec.status == "partial", (body, res.diagnostics)
        assert rec.accesses_seen - rec.accesses_evaluated == 1, rec


def test_a_lambda_in_a_template_kernel_s_pattern_is_followed() -> None:
    """In a template's pattern clang gives the closure type no members and the call `st(i)` no callee (`auto`
    left undeduced): the lambda is still read (its captures from the list and the body) and called. Bound by a
    launch to S = 32, its store is 8.0x; with no launch, the store's stride is the unbound `S`: not evaluated
    for that reason (was: no access seen at all, 'fully analysed')."""
    src = ("template <int S>\n__global__ void k(float* a, int n) {\n" + _INDEX
           + "    auto st = [&](int j) { a[j * S] = 0.0f; };\n    if (i < n) st(i);\n}\n")
    res = lint_source(src + "int main() { float* a; k<32><<<64, 256>>>(a, 1 << 20); }\n", "k.cu",
                      LintOptions(resources=False))
    [rec] = res.coverage
    assert rec.status == "full" and _sectors(res) == ["KL102 32 32-byte sectors"], res.diagnostics
    res = lint_source(src, "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    assert (rec.status, rec.accesses_seen, rec.accesses_evaluated) == ("partial", 1, 0), rec
    assert [(g.kind, g.detail) for g in rec.gaps] == [("template", "S")]


def test_a_lambda_call_reads_what_it_captures_for_the_liveness_after_a_stopped_loop() -> None:
    """The loop of 2^20 iterations is stopped early, `acc` (+= q: no constant step) unknown after it; the next
    statement to name `acc` assigns it, but `show(i)` before that reads it through its capture: `acc` is still
    read after the loop (eval/liveness.py), so the store in `show` is not evaluated (was: read with the stopped
    loop's partial sum, 'fully analysed')."""
    body = ("    int acc = 0;\n    auto show = [&](int j) { a[j * acc] = 0.0f; };\n"
            "    for (int q = 0; q < n; ++q) acc += q;\n    if (i < n) show(i);\n    acc = 0;\n    a[i + acc] = 1.0f;\n")
    res, rec = _lint(body)
    assert (rec.status, rec.accesses_seen, rec.accesses_evaluated) == ("partial", 2, 1), rec
    assert _codes(res) == ["KL904"], res.diagnostics


def test_a_lambda_called_inside_another_in_a_template_s_pattern() -> None:
    """`st` calls `row`, which it captures by reference: in the pattern of a template kernel with no launch,
    `row(j)` is a call through a variable whose `auto` clang leaves undeduced; the lambda's type comes with the
    variable into `st`'s frame, so the call is followed: a + j * 32, 8.0x (was: a call kernlint could not tell)."""
    src = ("template <int S>\n__global__ void k(float* a, int n) {\n" + _INDEX
           + "    auto row = [&](int j) -> float* { return a + j * 32; };\n"
           "    auto st = [&](int j) { float* p = row(j); p[0] = 0.0f; };\n    if (i < n) st(i);\n}\n")
    res = lint_source(src, "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    assert rec.status == "full" and _sectors(res) == ["KL102 32 32-byte sectors"], (rec, res.diagnostics)


def test_a_lambda_returned_by_a_helper_keeps_its_copies() -> None:
    """Made in `scaled` (returned), called in the kernel: its copies are its own (`p`, `s` = 32), so the helper
    having returned does not matter (unlike a capture by reference: fixtures/KL904_unread_callee.cu): 8.0x."""
    before = "__device__ auto scaled(const float* p, int s) { return [=](int j) { return p[j * s]; }; }\n"
    res, rec = _lint("    auto at = scaled(a, 32);\n    if (i < n) a[i] = at(i);\n", before)
    assert rec.status == "full" and _sectors(res) == ["KL101 32 32-byte sectors"], res.diagnostics


def test_what_a_helper_writes_through_a_reference_under_unknown_data_is_unknown() -> None:
    """The same for a helper's reference parameter (`widen(pitch, 31)`, copied in and written back: the branch's
    text assigns nothing): lanes whose loaded value is not positive keep `pitch` = 1, so the store's stride is
    unknown, not 32 in every lane (was: 8.0x, from the branch's side evaluated for all lanes)."""
    before = ("__device__ float load(const float* p, int i) { return p[i]; }\n"
              "__device__ void widen(int& p, int k) { p += k; }\n")
    body = "    int pitch = 1;\n    if (load(a, i) > 0.0f) widen(pitch, 31);\n    if (i < n) a[i * pitch] = 0.0f;\n"
    res, rec = _lint(body, before)
    assert "KL102" not in _codes(res) and rec.status == "partial", res.diagnostics
    assert rec.accesses_seen - rec.accesses_evaluated == 1, rec
