"""Coverage: which memory accesses and branches of a kernel the evaluator evaluated, and why not the rest.

A *site* is a memory access (a load or store of global/shared/constant memory) or a branch (`if`,
`switch`, a loop condition, a `?:` with side effects) in the kernel or in a helper it inlines (then
reported at the kernel's call site). The sites *seen* are found statically in the IR, mirroring how
the interpreter walks it; the interpreter records while it runs (`Recorder`) which sites produced an
event (*evaluated*: an address computed for the active lanes, a condition known per lane) and, for
the others, why it dropped them. A site never visited is "not reached under the sampled values"
(or cut off by the step budget); one skipped by a condition that is a constant for this launch is
dead code and not counted. Per kernel the shapes are merged (`merge`) into a `KernelCoverage`.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from kernlint.ir import nodes as ir
from kernlint.eval.library_calls import (
    indirect_call,
    is_asm_access,
    is_asm_ld_st,
    is_async_copy,
    is_library_transfer,
    unresolved_call,
)
from kernlint.base.frozen import frozen
from kernlint.base.memo import by_identities, by_identity

MAX_INLINE_DEPTH = 6  # must match the interpreter's

# (report line, report column, code line, column, end line, end column, "access" | "branch"): the
# report position is the kernel's call site for code inlined from a helper, else the code's own;
# the code's whole extent tells `rows[r]` from `rows[r][c]`, which start at the same column.
SiteKey = tuple[int, int, int, int, int, int, str]
Why = tuple[str, str]

ACCESS, BRANCH = "access", "branch"

# kind -> (what, for an access; what, for a branch; how to supply it). `{d}` is the detail.
REASONS: dict[str, tuple[str, str, str]] = {
    "template": ("template parameter `{d}` has no launch or instantiation kernlint could find",
                 "template parameter `{d}` has no launch or instantiation kernlint could find",
                 "bind it with --define {d}=VALUE, an annotation `// kernlint: define({d}=VALUE)` above the "
                 "kernel, or lint it with the file that launches it"),
    "unresolved": ("uses `{d}`, a name kernlint could not resolve (a missing header?)",
                   "uses `{d}`, a name kernlint could not resolve (a missing header?)",
                   "pass the header's directory with -I DIR (or the build's compile_commands.json with -p DIR), "
                   "or define it for the preprocessor with -D {d}=VALUE"),
    "missing_type": ("uses the type `{d}`, which kernlint could not resolve (a missing header?)",
                     "uses the type `{d}`, which kernlint could not resolve (a missing header?)",
                     "pass the header's directory with -I DIR (or the build's compile_commands.json with -p DIR)"),
    "param": ("the value of `{d}` is unknown where the address needs it",
              "the value of `{d}` is unknown where the condition needs it",
              "pass it with --define {d}=VALUE"),
    "type": ("the element type or layout is unknown (dependent type {d})",
             "the element type or layout is unknown (dependent type {d})",
             "launch or instantiate the template with concrete arguments, or bind them with --define"),
    "global": ("the value of the global variable `{d}` is unknown",
               "the value of the global variable `{d}` is unknown",
               "pass it with --define {d}=VALUE"),
    "loaded": ("address depends on loaded data", "condition depends on loaded data", ""),
    "loop": ("a value changed by the loop at line {d} is unknown (the loop was not run to its end)",
             "a value changed by the loop at line {d} is unknown (the loop was not run to its end)",
             "real sizes (--define NAME=VALUE) often let such loops run to their end"),
    "depth": ("helper `{d}` was not inlined (calls nested too deep)",
              "helper `{d}` was not inlined (calls nested too deep)", ""),
    "deep": ("too deeply nested to analyse", "too deeply nested to analyse",
             "split the expression or the chain of `else if` into smaller parts"),
    "large": (f"lines {{d}} were not analysed: the function has more than {ir.MAX_STATEMENTS:,} statements, "
              "the most kernlint analyses in one",
              f"lines {{d}} were not analysed: the function has more than {ir.MAX_STATEMENTS:,} statements, "
              "the most kernlint analyses in one",
              "split the function into smaller ones"),
    "misaligned": ("its address is not a multiple of its width ({d} bytes) in kernlint's model, which a running "
                   "kernel cannot do (it would fault): a size or offset kernlint does not know (a class from a "
                   "missing header?) is in it",
                   "its address is not a multiple of its width in kernlint's model",
                   "pass the header's directory with -I DIR (or the build's compile_commands.json with -p DIR)"),
    "call": ("the value returned by `{d}()` is not modelled", "the value returned by `{d}()` is not modelled", ""),
    "fnptr": ("calls through the function pointer `{d}`, whose target is set at run time",
              "calls through the function pointer `{d}`, whose target is set at run time",
              "no setting supplies it; a `const` pointer initialised with the function's name is followed"),
    "unmodelled": ("uses {d}, which kernlint does not model", "uses {d}, which kernlint does not model", ""),
    "unread_call": ("calls `{d}`, whose namespace kernlint could not resolve (a missing header): the statement was "
                    "not read (a library's copy or MMA there is an access kernlint did not evaluate)",
                    "calls `{d}`, whose namespace kernlint could not resolve (a missing header): the statement was "
                    "not read",
                    "pass the header's directory with -I DIR (or the build's compile_commands.json with -p DIR)"),
    "unresolved_call": ("calls `{d}`, which kernlint could not resolve (undeclared: a header not found?), passing it "
                        "a pointer: what it reads or writes there was not evaluated",
                        "calls `{d}`, which kernlint could not resolve (undeclared: a header not found?)",
                        "pass the header's directory with -I DIR (or the build's compile_commands.json with -p DIR)"),
    "unread_body": ("calls {d}: kernlint did not read its body, so what it reads or writes there was not evaluated",
                    "calls {d}: kernlint did not read its body", ""),
    "lambda_captures": ("calls the lambda at {d}: what it captures could not be bound there, so what it reads or "
                        "writes was not evaluated", "calls the lambda at {d}: what it captures could not be bound "
                        "there", ""),
    "indirect_call": ("calls through `{d}`, a function pointer or function object whose callee kernlint could not "
                      "tell, passing it a pointer or holding variables of its own: what the callee reads or writes "
                      "there was not evaluated",
                      "calls through `{d}`, whose callee kernlint could not tell", ""),
    "library": ("calls `{d}`, a template library's copy or MMA on tensor/fragment objects, which kernlint does not "
                "evaluate (its accesses are inside the library)",
                "calls `{d}`, a template library's copy or MMA on tensor/fragment objects, which kernlint does not "
                "evaluate (its accesses are inside the library)",
                "check the copy and MMA atoms' layouts with the library's own tools (CuTe's print_latex, "
                "Nsight Compute); kernlint evaluates plain pointer and array accesses only"),
    "asm": ("inline PTX `{d}` addresses memory in a form kernlint does not evaluate (it reads a `cp.async` copy "
            "or a plain `ld`/`st` of global or shared memory of up to 16 bytes)",
            "inline PTX `{d}` addresses memory in a form kernlint does not evaluate (it reads a `cp.async` copy "
            "or a plain `ld`/`st` of global or shared memory of up to 16 bytes)",
            "write the access in CUDA C++ (a vector load or store, `__ldg`, `__stcs`), which kernlint evaluates"),
    "collective_copy": ("calls `{d}`, a collective copy: the group's threads share its bytes as the library "
                        "decides (CUDA C++ Programming Guide, \"memcpy_async API\"), so no lane's addresses are known",
                        "calls `{d}`, a collective copy whose lane mapping is the library's",
                        "a per-thread copy (no group argument) of 4, 8 or 16 bytes is evaluated, one vector access "
                        "per lane"),
    "asm_memory": ("{d}", "{d}", "an address into the instruction's state space that kernlint can follow, and a "
                   "guard operand the launch fixes"),
    "async_copy": ("{d}", "{d}", "copy 4, 8 or 16 bytes per call, with a byte count (and source size) the launch "
                   "fixes, from an address kernlint can follow"),
    "budget": ("the evaluator's step budget ran out before this point",
               "the evaluator's step budget ran out before this point",
               "real sizes (--define NAME=VALUE) shorten the loops that use the budget"),
    "time": ("not evaluated: the file's work budget ran out before this point",
             "not evaluated: the file's work budget ran out before this point",
             "raise --timeout (the work budget grows with it), or lint this file with real sizes (--define)"),
    "unreached": ("not reached under the sampled values and launch shape",
                  "not reached under the sampled values and launch shape",
                  "set the real values with --define NAME=VALUE or --block X,Y"),
    "unknown": ("the address could not be determined", "the condition could not be determined", ""),
    "shape": ("not evaluated: the guessed {d}", "not evaluated: the guessed {d}",
              "pass the real block shape with --block X,Y,Z or an annotation `// kernlint: block=(x,y,z)`"),
}


def reason_text(kind: str, detail: str, site_kind: str = ACCESS) -> str:
    """One reason, in words (for an access or for a branch)."""
    access, branch, _hint = REASONS.get(kind, REASONS["unknown"])
    return (branch if site_kind == BRANCH else access).replace("{d}", detail)


def reason_hint(kind: str, detail: str) -> str:
    """How to supply what a reason lacks ("" when nothing can be supplied)."""
    return REASONS.get(kind, REASONS["unknown"])[2].replace("{d}", detail)


# --- what the interpreter records --------------------------------------------------------------


@dataclass
class Recorder:
    """Filled by the interpreter while it runs one kernel under one shape (cheap: dict updates)."""

    hits: set[SiteKey] = field(default_factory=set)
    drops: dict[SiteKey, Why] = field(default_factory=dict)
    local: set[SiteKey] = field(default_factory=set)  # thread-local storage: not a memory access
    dead: set[SiteKey] = field(default_factory=set)  # skipped by a condition that is constant here

    def hit(self, key: SiteKey) -> None:
        self.hits.add(key)

    def drop(self, key: SiteKey, why: Why | None) -> None:
        if key not in self.drops or self.drops[key][0] == "unknown":
            self.drops[key] = why or ("unknown", "")


@frozen
class SiteStatus:
    """One site after a run: evaluated, or the cause (kind, detail) it was not."""

    key: SiteKey
    evaluated: bool
    why: Why = ("", "")


def finish(rec: Recorder, seen: Iterable[SiteKey], truncated: bool | str,
           unresolved: dict[int, str] | None = None) -> tuple[SiteStatus, ...]:
    """Every site of one run with its status; local-storage and dead sites are left out. A site
    dropped for no known cause on a line with an unresolved name (`unresolved`: line -> name) is
    put down to that name. `truncated` is True for the step budget, or a reason kind ("time")."""
    unresolved = unresolved or {}
    out: dict[SiteKey, SiteStatus] = {}
    for key in list(seen) + [k for k in rec.hits] + [k for k in rec.drops]:
        if key in out:
            continue
        if key in rec.hits:
            out[key] = SiteStatus(key, True)
        elif key in rec.drops:
            why = rec.drops[key]
            if why[0] == "unknown" and key[2] in unresolved:
                why = ("unresolved", unresolved[key[2]])
            out[key] = SiteStatus(key, False, why)
        elif key in rec.local or key in rec.dead:
            continue
        else:
            cut = truncated if isinstance(truncated, str) else "budget"
            out[key] = SiteStatus(key, False, (cut, "") if truncated else ("unreached", ""))
    return tuple(out.values())


# --- the sites of a kernel, found statically -------------------------------------------------------


def _strip(e: ir.Expr) -> ir.Expr:
    while isinstance(e, ir.Cast) and not e.explicit:
        e = e.operand
    return e


def is_local_storage(e: ir.Expr, shared: Iterable[str] = ()) -> bool:
    """Whether `e` names thread-local storage: a local array or a struct held by value (registers).

    A variable of a dependent type that is indexed (`packed[k]` on a `Packed128<T>`) is a class
    value with an `operator[]` too: pointers are declared as pointers (`T*`), not as `T`.
    """
    e = _strip(e)
    if isinstance(e, ir.Ref):
        return (e.kind in ("local", "param") and e.ctype.kind in ("array", "struct", "template")
                and e.name not in shared)
    if isinstance(e, ir.Member) and not e.arrow:
        # (a pointer field of a local object, `obj.p` in `obj.p[i]` or `this->p[i]` in a method, points
        # to memory: what it points to is not the object's registers)
        return e.ctype.kind != "pointer" and is_local_storage(e.base, shared)
    if isinstance(e, ir.Index) and e.ctype.kind in ("array", "struct", "template"):
        # a row of a local array, or one of its objects (`accum[i][j].x[0]` on an array of fragments)
        return is_local_storage(e.base, shared)
    return False


def is_local_method_ref(e: ir.Expr, shared: Iterable[str] = ()) -> bool:
    """Whether `e` is a reference a method of a thread-local object returns (`packed[k]` on a
    register type is `*packed.operator[](k)`): dereferencing it reads registers, not memory."""
    e = _strip(e)
    return isinstance(e, ir.Call) and e.receiver is not None and is_local_storage(e.receiver, shared)


_BARRIERS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}
_LOADS = {"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"}
_STORES = {"__stcg", "__stcs", "__stwt", "__stwb"}


def target_function(tu: ir.TranslationUnit, e: ir.Call) -> ir.Function | None:
    """The function clang's reference names, or None."""
    fn = tu.functions.get(e.target) if e.target else None
    if fn is None and e.target:
        # A member of a class template specialization: clang names the specialization
        # (`operator float *`), the file holds the pattern (`operator T *`) at the same place.
        fn = next(tu.functions.at_place(e.target), None)
    return fn


@by_identities(max_entries=4096)  # asked at every evaluation of a call (a scan of the file's functions)
def find_callee(tu: ir.TranslationUnit, e: ir.Call) -> ir.Function | None:
    """The device function a call reaches (methods on objects excepted), or None.

    libclang gives no definition for an implicit specialization of a function template
    (`ld(p, i)` calling `template <class T> T ld(const T*, int)`), so fall back to the one
    device function of that name and parameter count in the file, when it is unambiguous.
    """
    fn = target_function(tu, e)
    if fn is None and (e.receiver is not None or e.via):
        return None  # (a call through a variable is never a function of its name: interp_calls.function_object_call)
    if fn is None:
        matches = [f for f in tu.functions.named(e.name) if len(f.params) == len(e.args) and not f.is_kernel]
        if len(matches) > 1 and e.template_args:
            matches = [f for f in matches if len(f.template_params) >= len(e.template_args)]
        if not matches and "::" not in e.name:
            # A method's call of another method without `this->` (`load(p, v, N)` in the other overload
            # of a class template's `load`): clang leaves it unresolved, and the methods spelled so are
            # the candidates; one of that arity is the callee.
            matches = [f for f in tu.functions.methods_spelled(e.name) if len(f.params) == len(e.args)]
        fn = matches[0] if len(matches) == 1 else None
    if fn is None or fn.body is None or fn.is_kernel:
        return None
    return fn


def unread_callee(tu: ir.TranslationUnit, e: ir.Call) -> str:
    """For a call of a function the user's code declares (ir.Call.written) whose body kernlint does not have
    (a function defined in another file, or one the front end did not lower): its reason's detail, the
    callee and where it is (`` `g` (declared at k.cu:1, defined in none of the code kernlint read) ``); "" for any
    other call, which kernlint inlines or models. Such a call is an access site coverage counts as seen, and
    the evaluator as not evaluated: what the body reads, writes or branches on is unknown, so the kernel is
    not called fully analysed."""
    if not e.written or (e.scope and is_library_transfer(e)):
        return ""  # (a library's copy or MMA has its own reason)
    if target_function(tu, e) is not None or find_callee(tu, e) is not None:
        return ""
    place = e.written[e.written.rfind("@") + 1:].rpartition("/")[2]
    closure = e.receiver.ctype.name if e.receiver is not None else ""
    if "lambda at " in closure:  # (clang names a closure type `(lambda at FILE:LINE:COL)`)
        return (f"the lambda at {place} (what it captures is not followed: an array, a local reference, an "
                "init-capture, a pack, or a variable by reference whose name is declared again after it)")
    if not e.target:  # (clang found no definition: ir.Call.written names the declaration)
        return f"`{e.name}` (declared at {place}, defined in none of the code kernlint read)"
    return f"`{e.name}` ({place})"


@by_identity(max_entries=4096)  # asked at every evaluation of a `?:`
def has_side_effects(e: object) -> bool:
    """Assignments, increments and calls (other than pure math) make a `?:` a real branch."""
    for n in ir.walk(e):
        if isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">="):
            return True
        if isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--"):
            return True
        if isinstance(n, ir.Call) and (n.name.startswith("atomic") or n.target):
            return True
    return False


def shared_names(fn: ir.Function, tu: ir.TranslationUnit) -> frozenset[str]:
    """Names of the `__shared__` arrays a kernel declares in its body (they are memory, not locals)."""
    return _declared_shared(fn) | {name for name, d in tu.globals.items() if d.shared}


@by_identity
def _declared_shared(fn: ir.Function) -> frozenset[str]:
    return frozenset(n.name for n in ir.walk(fn.body) if isinstance(n, ir.VarDecl) and n.shared)


class _Walker:
    """Collect the sites under a statement or expression, in the order the interpreter visits them."""

    def __init__(self, tu: ir.TranslationUnit, shared: frozenset[str]) -> None:
        self.tu = tu
        self.shared = shared
        self.out: list[SiteKey] = []
        self.stack: list[str] = []
        self.level = 0  # stmt/expr calls in progress (bounded: deep IR never raises RecursionError)

    def site(self, span: ir.Span, outer: ir.Span | None, kind: str) -> None:
        o = outer or span
        self.out.append((o.line, o.column, span.line, span.column, span.end_line, span.end_column, kind))

    # statements
    def stmt(self, s: object, outer: ir.Span | None, depth: int) -> None:
        if isinstance(s, ir.OpaqueStmt) and s.reason in ir.UNREAD:
            self.site(s.span, outer, BRANCH)
        elif s is not None and self.level < 400:  # the interpreter's nesting bound, roughly
            self.level += 1
            try:
                self._stmt(s, outer, depth)
            finally:
                self.level -= 1

    def _stmt(self, s: object, outer: ir.Span | None, depth: int) -> None:
        if s is None:
            return
        if isinstance(s, ir.Block):
            for x in s.body:
                self.stmt(x, outer, depth)
        elif isinstance(s, ir.ExprStmt):
            self.expr(s.expr, outer, depth)
        elif isinstance(s, ir.VarDecl):
            if not s.shared and s.init is not None:
                self.expr(s.init, outer, depth)
        elif isinstance(s, ir.If):
            self.expr(s.cond, outer, depth)
            self.site(s.span, outer, BRANCH)
            self.stmt(s.then, outer, depth)
            self.stmt(s.other, outer, depth)
        elif isinstance(s, ir.For):
            self.stmt(s.init, outer, depth)
            if s.cond is not None:
                self.expr(s.cond, outer, depth)
                self.site(s.span, outer, BRANCH)
            self.stmt(s.body, outer, depth)
            if s.step is not None:
                self.expr(s.step, outer, depth)
        elif isinstance(s, ir.While):
            self.expr(s.cond, outer, depth)
            self.site(s.span, outer, BRANCH)
            self.stmt(s.body, outer, depth)
        elif isinstance(s, ir.Switch):
            self.expr(s.cond, outer, depth)
            self.site(s.span, outer, BRANCH)
            for _labels, body in s.cases:
                for x in body:
                    self.stmt(x, outer, depth)
        elif isinstance(s, ir.Return):
            if s.value is not None:
                self.expr(s.value, outer, depth)

    # expressions
    def expr(self, e: object, outer: ir.Span | None, depth: int) -> None:
        if isinstance(e, ir.Opaque) and e.reason == ir.TOO_DEEP:
            self.site(e.span, outer, BRANCH)
        elif e is not None and self.level < 400:
            self.level += 1
            try:
                self._expr(e, outer, depth)
            finally:
                self.level -= 1

    def _expr(self, e: object, outer: ir.Span | None, depth: int) -> None:
        if e is None or isinstance(e, (ir.Lit, ir.Ref)):
            return
        if isinstance(e, ir.Cast):
            self.expr(e.operand, outer, depth)
        elif isinstance(e, ir.Binary):
            if e.op == "=":
                self.expr(e.rhs, outer, depth)
                self.store(e.lhs, outer, depth)
            elif e.op.endswith("=") and e.op not in ("==", "!=", "<=", ">="):
                self.expr(e.rhs, outer, depth)
                self.expr(e.lhs, outer, depth)
                self.store(e.lhs, outer, depth)
            else:
                self.expr(e.lhs, outer, depth)
                self.expr(e.rhs, outer, depth)
        elif isinstance(e, ir.Unary):
            if e.op == "*":
                self.expr(e.operand, outer, depth)
                if e.ctype.kind not in ("array", "function") and not is_local_method_ref(e.operand, self.shared):
                    self.site(e.span, outer, ACCESS)
            elif e.op == "&":
                self.lvalue(e.operand, outer, depth)
            elif e.op in ("pre++", "pre--", "post++", "post--"):
                self.expr(e.operand, outer, depth)
                self.store(e.operand, outer, depth)
            else:
                self.expr(e.operand, outer, depth)
        elif isinstance(e, (ir.Index, ir.Member)):
            self.read(e, outer, depth)
        elif isinstance(e, ir.Cond):
            self.expr(e.cond, outer, depth)
            self.expr(e.then, outer, depth)
            self.expr(e.other, outer, depth)
            if has_side_effects(e.then) or has_side_effects(e.other):
                self.site(e.span, outer, BRANCH)
        elif isinstance(e, ir.Call):
            self.call(e, outer, depth)
        elif isinstance(e, ir.InitList):
            for x in e.items:
                self.expr(x, outer, depth)
        elif isinstance(e, ir.Opaque):
            if unresolved_call(e):
                self.site(e.span, outer, ACCESS)  # a call of an undeclared name, given a pointer (eval/library_calls.py)
            for x in e.children:
                self.expr(x, outer, depth)

    def read(self, e: ir.Index | ir.Member, outer: ir.Span | None, depth: int) -> None:
        if isinstance(e, ir.Member):
            base = _strip(e.base) if isinstance(e.base, ir.Cast) else e.base
            if isinstance(base, ir.Ref) and base.kind == "builtin":
                return
            if not e.arrow and isinstance(base, ir.Ref) and base.kind in ("param", "local"):
                return  # a member of a value held in a variable
        if self.lvalue(e, outer, depth) and e.ctype.kind != "array":
            self.site(e.span, outer, ACCESS)

    def lvalue(self, e: ir.Expr, outer: ir.Span | None, depth: int) -> bool:
        """Evaluate what an lvalue's address needs; whether it lives in memory (not thread-local)."""
        if isinstance(e, ir.Cast) and not e.explicit:
            return self.lvalue(e.operand, outer, depth)
        if isinstance(e, ir.Index):
            self.expr(e.base, outer, depth)
            self.expr(e.index, outer, depth)
            return not is_local_storage(e.base, self.shared)
        if isinstance(e, ir.Unary) and e.op == "*":
            self.expr(e.operand, outer, depth)
            return not is_local_method_ref(e.operand, self.shared)
        if isinstance(e, ir.Member):
            if e.arrow:
                self.expr(e.base, outer, depth)
                return True
            if isinstance(_strip(e.base), (ir.Index, ir.Member, ir.Unary)):
                return self.lvalue(e.base, outer, depth)
            self.expr(e.base, outer, depth)
            return False
        return False

    def store(self, target: ir.Expr, outer: ir.Span | None, depth: int) -> None:
        inner = _strip(target)
        if isinstance(inner, ir.Ref):
            return
        if isinstance(inner, ir.Member) and not inner.arrow:
            base = _strip(inner.base)
            if isinstance(base, ir.Ref) and base.kind in ("local", "param"):
                return
        if isinstance(inner, (ir.Index, ir.Member)) or (isinstance(inner, ir.Unary) and inner.op == "*"):
            if self.lvalue(inner, outer, depth) and inner.ctype.kind != "array":
                self.site(inner.span, outer, ACCESS)

    def call(self, e: ir.Call, outer: ir.Span | None, depth: int) -> None:
        name = e.name
        if name in _LOADS and e.args:
            self.expr(e.args[0], outer, depth)
            if e.args[0].ctype.kind in ("pointer", "template"):
                self.site(e.span, outer, ACCESS)
            for a in e.args[1:]:
                self.expr(a, outer, depth)
            return
        if name in _STORES and len(e.args) >= 2:
            self.expr(e.args[0], outer, depth)
            self.expr(e.args[1], outer, depth)
            if e.args[0].ctype.kind in ("pointer", "template"):
                self.site(e.span, outer, ACCESS)
            return
        if is_asm_ld_st(e):
            for a in e.args:
                self.expr(a, outer, depth)
            self.site(e.span, outer, ACCESS)  # a plain inline-PTX load or store (eval/asm_memory.py)
            return
        if is_async_copy(e) or is_asm_access(e):
            for a in e.args if is_async_copy(e) else ():  # (an asm's operands are not run: interp_calls)
                self.expr(a, outer, depth)
            self.site(e.span, outer, ACCESS)  # a copy's read and write (eval/async_copy.py), an asm's access
            return
        if name == "operator=" and e.receiver is None and len(e.args) >= 2:
            self.expr(e.args[-1], outer, depth)
            self.store(e.args[0], outer, depth)
            return
        if is_library_transfer(e):
            self.site(e.span, outer, ACCESS)  # a library's copy/MMA: an access, seen (eval/library_calls.py)
        if e.receiver is not None:
            self.expr(e.receiver, outer, depth)
        for a in e.args:
            self.expr(a, outer, depth)
        if name in _BARRIERS or name.endswith("_sync") or name == "__syncwarp":
            return
        callee = find_callee(self.tu, e)
        if callee is None and (unread_callee(self.tu, e) or indirect_call(e)):
            self.site(e.span, outer, ACCESS)  # a body kernlint does not have: seen, not evaluated
        if callee is None or callee.key in self.stack or depth > MAX_INLINE_DEPTH:
            return
        self.stack.append(callee.key)
        try:
            self.stmt(callee.body, outer or e.span, depth + 1)
        finally:
            self.stack.pop()


def sites_of(node: object, tu: ir.TranslationUnit, shared: frozenset[str], outer: ir.Span | None = None,
             depth: int = 1) -> tuple[SiteKey, ...]:
    """The sites under a statement (or a function body), reported at `outer` when inside a helper.

    Remembered per node and unit (by identity: both immutable, and the entry holds them, so their ids
    stay theirs) and the other arguments (by value): every evaluation of a kernel (each launch shape,
    re-sampled regions, odd offsets, KL201's paddings) asks for its body's sites again."""
    key = (id(node), id(tu), shared, outer, depth)
    hit = _SITES.get(key)
    if hit is not None and hit[0] is node and hit[1] is tu:
        return hit[2]
    w = _Walker(tu, shared)
    if isinstance(node, (ir.Block, ir.If, ir.For, ir.While, ir.Switch, ir.Return, ir.ExprStmt, ir.VarDecl)):
        w.stmt(node, outer, depth)
    else:
        w.expr(node, outer, depth)
    out = tuple(w.out)
    if len(_SITES) >= 1024:
        _SITES.clear()
    _SITES[key] = (node, tu, out)
    return out


_SITES: dict[tuple[object, ...], tuple[object, ir.TranslationUnit, tuple[SiteKey, ...]]] = {}


# --- per kernel ----------------------------------------------------------------------------------


@frozen
class Gap:
    """Sites not evaluated for one reason: the lines they are on (report lines) and how many."""

    kind: str
    detail: str
    lines: tuple[int, ...]
    accesses: int
    branches: int

    def text(self) -> str:
        site_kind = BRANCH if self.accesses == 0 else ACCESS
        return reason_text(self.kind, self.detail, site_kind)

    def hint(self) -> str:
        return reason_hint(self.kind, self.detail)

    def to_dict(self) -> dict[str, object]:
        return {"reason": self.kind, "detail": self.detail, "text": self.text(), "hint": self.hint(),
                "lines": list(self.lines), "accesses": self.accesses, "branches": self.branches}


@frozen
class KernelCoverage:
    """How much of one kernel was evaluated (every shape and binding it was evaluated under, merged)."""

    name: str
    path: str
    line: int
    column: int = 1
    accesses_seen: int = 0
    accesses_evaluated: int = 0
    branches_seen: int = 0
    branches_evaluated: int = 0
    access_lines_seen: int = 0
    access_lines_evaluated: int = 0
    gaps: tuple[Gap, ...] = ()
    error: str = ""  # the analysis failed (KL905): nothing was evaluated
    # Uses of names the front end could not resolve (a header not found): clang drops the expressions
    # around them, so what they did is not among the sites seen, and the kernel is never "full".
    unresolved_uses: int = 0

    @property
    def status(self) -> str:
        """full (everything seen was evaluated), partial, or none (nothing was)."""
        if self.error:
            return "none"
        seen = self.accesses_seen + self.branches_seen
        done = self.accesses_evaluated + self.branches_evaluated
        if done == seen and not self.unresolved_uses:
            return "full"
        return "none" if done == 0 else "partial"

    def to_dict(self) -> dict[str, object]:
        """The record reporters write: `{"name", "path", "line", "coverage": {...}}`."""
        cov: dict[str, object] = {
            "status": self.status,
            "accesses": {"evaluated": self.accesses_evaluated, "seen": self.accesses_seen},
            "branches": {"evaluated": self.branches_evaluated, "seen": self.branches_seen},
            "access_lines": {"evaluated": self.access_lines_evaluated, "seen": self.access_lines_seen},
            "reasons": [g.to_dict() for g in self.gaps],
        }
        if self.error:
            cov["error"] = self.error
        if self.unresolved_uses:
            cov["unresolved_uses"] = self.unresolved_uses
        return {"name": self.name, "path": self.path, "line": self.line, "coverage": cov}


def union(a: tuple[SiteStatus, ...], b: tuple[SiteStatus, ...],
          lines: Iterable[int] = ()) -> tuple[SiteStatus, ...]:
    """Two runs of one shape (a re-evaluation of regions with other samples): evaluated by either.

    A site neither evaluated keeps the reason of the run that reached it (`unreached` in the first
    run, a call not modelled in the re-evaluation: the call is what is left to fix). The step budget
    is no reason for a site that a re-evaluation within the budget reached (or found dead): the
    re-evaluation's reason replaces it. A site the budget kept the first run from, on a line the
    re-evaluation ran without meeting it, or on one of `lines` (the lines a complete re-evaluation
    covered) that it never met, is no code of this binding (the arm of a `?:` whose condition is a
    compile-time constant, `!kIsVariableC ? x * C[i] : x`; a discarded `if constexpr` branch): dropped."""
    out = {s.key: s for s in a}
    for s in b:
        old = out.get(s.key)
        if old is None or (s.evaluated and not old.evaluated) or (
                not s.evaluated and not old.evaluated and old.why[0] == "unreached" and s.why[0] != "unreached") or (
                not s.evaluated and not old.evaluated and old.why[0] == "budget" and s.why[0] != "budget"):
            out[s.key] = s
    ran = {s.key[0] for s in b if s.evaluated} | set(lines)
    met = {s.key for s in b}
    return tuple(s for s in out.values()
                 if not (not s.evaluated and s.why[0] == "budget" and s.key[0] in ran and s.key not in met))


def merge(fn: ir.Function, path: str, runs: Sequence[tuple[SiteStatus, ...]], all_guessed: bool) -> KernelCoverage:
    """Merge the runs of one kernel: a site counts as evaluated when any run evaluated it, or, when
    every shape is a guess (findings must then hold under all of them), only when all runs that
    reached it did."""
    status: dict[SiteKey, SiteStatus] = {}
    for run in runs:
        for st in run:
            old = status.get(st.key)
            if old is None:
                status[st.key] = st
            elif all_guessed:
                # Every guessed shape that reaches a site must evaluate it; a shape that never
                # reaches it (a guard on threadIdx.y == 15 under a guessed blockDim.y of 8) does
                # not count against it (engine.py keeps the findings of the shapes that reach it).
                if old.evaluated and not st.evaluated and st.why[0] != "unreached":
                    status[st.key] = st
                elif not old.evaluated and old.why[0] == "unreached" and (st.evaluated or st.why[0] != "unreached"):
                    status[st.key] = st
            elif st.evaluated and not old.evaluated:
                status[st.key] = st
    acc = [s for s in status.values() if s.key[-1] == ACCESS]
    br = [s for s in status.values() if s.key[-1] == BRANCH]
    lines_seen = {s.key[0] for s in acc}
    lines_bad = {s.key[0] for s in acc if not s.evaluated}
    groups: dict[Why, list[SiteStatus]] = {}
    for s in sorted(status.values(), key=lambda s: s.key):
        if not s.evaluated:
            groups.setdefault(s.why, []).append(s)
    gaps = [Gap(w[0], w[1], tuple(sorted({s.key[0] for s in ss})), sum(1 for s in ss if s.key[-1] == ACCESS),
                sum(1 for s in ss if s.key[-1] == BRANCH)) for w, ss in groups.items()]
    gaps.sort(key=lambda g: (-(g.accesses + g.branches), g.lines[0] if g.lines else 0))
    return KernelCoverage(fn.name, path, fn.span.line, fn.span.column, len(acc), sum(s.evaluated for s in acc),
                          len(br), sum(s.evaluated for s in br), len(lines_seen), len(lines_seen - lines_bad),
                          tuple(gaps))


def with_unresolved(record: KernelCoverage, unresolved: Sequence[tuple[int, int, str]]) -> KernelCoverage:
    """`record` with the kernel's unresolved names (front-end problems: line, column, message naming the
    name in quotes) as reasons: each name one reason "unresolved" on the lines that use it."""
    if not unresolved or record.error:
        return record
    by_name: dict[str, set[int]] = {}
    for line, _col, message in unresolved:
        name = message.split("'")[1] if message.count("'") >= 2 else message
        by_name.setdefault(name, set()).add(line)
    gaps = list(record.gaps)
    for name, lines in sorted(by_name.items()):
        at = next((i for i, g in enumerate(gaps) if g.kind == "unresolved" and g.detail == name), None)
        if at is None:
            gaps.append(Gap("unresolved", name, tuple(sorted(lines)), 0, 0))
        else:
            g = gaps[at]
            gaps[at] = Gap(g.kind, g.detail, tuple(sorted(set(g.lines) | lines)), g.accesses, g.branches)
    return replace(record, gaps=tuple(gaps), unresolved_uses=len(unresolved))


def failed(fn: ir.Function, path: str, error: str) -> KernelCoverage:
    """The record of a kernel whose analysis raised (KL905)."""
    return KernelCoverage(fn.name, path, fn.span.line, fn.span.column, error=error)


def show_lines(lines: Sequence[int], cap: int = 6) -> str:
    """"line 7", "lines 3, 5, 9", "lines 3, 5, 7, 9, 11, 13 and 7 more lines"."""
    if len(lines) == 1:
        return f"line {lines[0]}"
    shown = ", ".join(str(n) for n in lines[:cap])
    more = len(lines) - cap
    return f"lines {shown}" + (f" and {more} more line{'s' if more > 1 else ''}" if more > 0 else "")


def summary(records: Sequence[KernelCoverage], included: int = 0) -> str:
    """"12 kernels: 9 fully analysed, 2 partly, 1 not analysed (KL904)". `included`: kernels the linted
    files include from other project files without launching or instantiating them (each is linted
    with its own file and the files that launch it), said when no kernel was analysed."""
    n = len(records)
    full = sum(1 for r in records if r.status == "full")
    part = sum(1 for r in records if r.status == "partial")
    none = n - full - part
    head = f"{n} kernel{'s' if n != 1 else ''}"
    if n == 0 and included:
        return (f"no kernel defined, launched or instantiated here; {included} kernel{'s' if included != 1 else ''} "
                "included from the project, linted with the files that define or launch "
                f"{'them' if included != 1 else 'it'}")
    if n == 0:
        return "no kernels found"
    if full == n:
        return f"{head}: {'all' if n > 1 else ''} fully analysed".replace(":  ", ": ")
    parts = [f"{full} fully analysed"]
    if part:
        parts.append(f"{part} partly")
    if none:
        parts.append(f"{none} not analysed")
    return f"{head}: {', '.join(parts)} (KL904)"
