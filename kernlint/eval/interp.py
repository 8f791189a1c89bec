"""Abstract interpretation of a kernel body for every lane of every warp of one block.

The interpreter is concrete where it can be: threadIdx comes from the launch shape, and each
unknown (blockIdx, gridDim, a runtime size such as `n` or `width`) is *sampled* — evaluated under a
few stated values at once (the leading array axis). Rules then report only what holds in every
sample, and every finding lists the sampled values it depended on. Loaded data is unknown, and so
is everything computed from it: a gather through loaded indices yields no finding.

Control flow keeps an active mask per lane: `if` splits it, `return`/`break`/`continue` remove lanes,
loops run until no lane is active or an iteration cap is reached (then variables the loop writes
become unknown). A step budget bounds the work per kernel.
"""
from __future__ import annotations

import re
import dataclasses
from dataclasses import dataclass, field

import numpy as np

from kernlint import deadline, ir
from kernlint.eval import coverage as cov
from kernlint.eval import atomics, builtins_math, coop_groups, data_shape
from kernlint.eval import events as ev
from kernlint.eval import asserted_shape, fast_forward, resample
from kernlint.eval.flops import statement_flops
from kernlint.eval.load_reuse import RecentLoads
from kernlint.eval.samples import ITERATION_SAMPLES, SHIFT_SAMPLES, iteration_parameters, shift_parameters
from kernlint.eval.shared_scalars import SharedScalars, is_shared_scalar_type
from kernlint.eval import dependent_types, uniform_data
from kernlint.eval import local_arrays
from kernlint.eval.values import UNINIT, UNKNOWN, Frame, Val, c_div, c_mod, const, unknown, why_of, wrap_int
from kernlint.launch import LaunchShape, fold_bound

WARP = 32
MAX_LOOP_ITERATIONS = 48
MAX_EVENTS_PER_SITE = 48
MAX_INLINE_DEPTH = 6
MAX_EVAL_NESTING = 200  # statements + expressions being evaluated, nested (helpers inlined included)
DEFAULT_BUDGET = 60_000
CALL_KEY_OFFSET = 100_000  # region keys of kernel call lines for helper regions: column -(col + this)
CLOCK_EVERY = 500  # steps between looks at the file's wall-clock budget (kernlint/deadline.py)

# Sampled values for unknowns. Sizes are multiples of 1024 elements (aligned rows, as allocations
# from cudaMalloc/cudaMallocPitch usually are) and large enough that tail guards keep every lane.
SIZE_SAMPLES = (4096, 6144)
SIZE_STEP = 256  # later integer parameters are sampled 256 lower each (rows stay 1 KB-aligned)
BLOCK_SAMPLES = ((0, 0, 0), (3, 2, 1))
GRID_SAMPLE = (64, 64, 4)
POINTER_SPACING = 1 << 36  # byte distance between the sampled bases of distinct pointer params


_pure = ir.is_pure  # `e` reads no memory, calls nothing and changes nothing (kernlint/ir.py)


def _block_member(e: ir.Expr) -> str | None:
    """'x' for `blockIdx.x` (through casts), else None."""
    while isinstance(e, ir.Cast):
        e = e.operand
    if isinstance(e, ir.Member) and e.field in ("x", "y", "z"):
        base = e.base.operand if isinstance(e.base, ir.Cast) else e.base
        if isinstance(base, ir.Ref) and base.kind == "builtin" and base.name == "blockIdx":
            return e.field
    return None


def _block_alias(body: ir.Stmt, name: str) -> str | None:
    """'x' when every write to the variable `name` in `body` stores blockIdx.x (`int bx = blockIdx.x;`)."""
    dims: set[str | None] = set()
    for n in ir.walk(body):
        if isinstance(n, ir.VarDecl) and n.name == name:
            dims.add(_block_member(n.init) if n.init is not None else "")
        elif isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">=") \
                and _target_name(n.lhs) == name:
            dims.add(_block_member(n.rhs) if n.op == "=" else None)
        elif isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--", "&") \
                and _target_name(n.operand) == name:
            dims.add(None)
    dims.discard("")  # a declaration without an initializer
    return next(iter(dims)) if len(dims) == 1 else None


class BudgetExceeded(Exception):
    """The per-kernel step budget ran out (or, with the argument "time", the file's wall-clock budget)."""


class _LoopExit(Exception):
    pass


@dataclass
class EvalResult:
    events: list[ev.Event] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    assumed: dict[str, tuple[int, ...]] = field(default_factory=dict)  # symbol -> sampled values
    # Each uniform load's own site symbol -> the symbol it took (another site's, when it read words an
    # earlier load read): what --confirm substitutes at that site (kernlint/confirm/seeding.py).
    load_sites: dict[str, str] = field(default_factory=dict)
    truncated: bool = False
    out_of_time: bool = False  # truncated by the file's wall-clock budget, not the step budget
    shared_layout: dict[str, tuple[int, ir.CType]] = field(default_factory=dict)  # name -> (base, type)
    coverage: tuple[cov.SiteStatus, ...] = ()  # every access and branch site: evaluated, or why not
    # `if`s with memory accesses that never ran under any sample because of sampled parameters:
    # (line, column, first line, last line) of the region -> those parameters (eval/resample.py).
    dead_regions: dict[tuple[int, int, int, int], frozenset[str]] = field(default_factory=dict)
    # For dead regions whose guard picks out blocks the samples miss: blockIdx.x -> a block that enters.
    block_targets: dict[tuple[int, int, int, int], dict[str, int]] = field(default_factory=dict)
    # The regions (keys as in `dead_regions`) that ran for some sample: a re-sampled evaluation
    # reached a region when it is here (one inside other dead code is in neither).
    regions_taken: frozenset[tuple[int, int, int, int]] = frozenset()
    # An `assert` that fails for every thread reaching it: the launch shape evaluated is one the
    # kernel itself rules out (`assert(blockDim.x == 4)` under a guessed (32, 8)).
    contradiction: str = ""
    # What the kernel's asserts ask of the launch: (blockDim|gridDim, dim) -> (value, assert line).
    pins: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)


class Interpreter:
    """Evaluate one kernel under one launch shape."""

    def __init__(self, tu: ir.TranslationUnit, fn: ir.Function, shape: LaunchShape,
                 defines: dict[str, int], budget: int = DEFAULT_BUDGET,
                 shared_types: dict[str, ir.CType] | None = None,
                 sample_overrides: dict[str, tuple[int, ...]] | None = None,
                 loop_cap: int | None = None) -> None:
        self.tu = tu
        # A re-evaluation after the budget ran out stops loops over sampled values after this many
        # iterations (engine.py `_frugal`): what they write becomes unknown, what follows is reached.
        self.loop_cap = loop_cap
        self.fn = fn
        self.shape = shape
        self.defines = defines
        self.budget = budget
        self.result = EvalResult()
        self.bindings = dict(shape.bindings)
        self.known_types: dict[str, ir.CType] = {}  # concrete types bound by name (concrete_argument)
        bx, by, bz = shape.block
        threads = bx * by * bz
        self.W = max(1, (threads + WARP - 1) // WARP)
        self.S = len(BLOCK_SAMPLES)
        lin = np.arange(self.W * WARP, dtype=np.int64).reshape(1, self.W, WARP)
        self.lin = np.broadcast_to(lin, (self.S, self.W, WARP))
        self.tid = (lin % bx, (lin // bx) % by, lin // (bx * by))
        self.entry_mask = np.broadcast_to(lin < threads, (self.S, self.W, WARP)).copy()
        grid = shape.grid
        self.grid_known = grid is not None
        g = grid or GRID_SAMPLE
        blocks = []
        for k, s in enumerate(BLOCK_SAMPLES):
            # A re-evaluation may sample blockIdx as the blocks a dead guard picks out (eval/resample.py).
            over = [(sample_overrides or {}).get(f"blockIdx.{d}") for d in "xyz"]
            s = tuple(int(o[min(k, len(o) - 1)]) if o else s[i] for i, o in enumerate(over))
            blocks.append(tuple(max(0, min(s[i], g[i] - 1)) for i in range(3)))
        self.block_idx = tuple(np.array([b[i] for b in blocks], dtype=np.int64).reshape(self.S, 1, 1) for i in range(3))
        self.grid_dim = g
        self.mask = self.entry_mask.copy()
        self.frames: list[Frame] = []
        # (call span, helper, helper span, helper in the kernel's file)
        self.call_sites: list[tuple[ir.Span, str, ir.Span, bool]] = []
        self.loop_stack: list[dict[str, object]] = []
        self.exceptional_sides: list[int] = []  # index-validity tests whose exceptional side is running (KL305)
        self.site_counts: dict[tuple[int, int, str], int] = {}
        self.shared_next = 0
        self.shared_bases: dict[str, int] = {}
        self.param_bases: dict[str, int] = {}
        self.cost = 0
        self._clock_at = CLOCK_EVERY  # the cost at which the file's wall-clock budget is looked at next
        self.sampled_params = 0
        self.iteration_params = iteration_parameters(fn)
        self.shift_params = shift_parameters(fn)
        self.unresolved_lines = {ln for ln, _c, _m in fn.unresolved}
        # The first unresolved name on each line: an initializer clang dropped because of it leaves
        # the variable unknown for that reason (coverage names it).
        self.unresolved_names: dict[int, str] = {}
        for ln, _c, msg in fn.unresolved:
            if msg.count("'") >= 2:
                self.unresolved_names.setdefault(ln, msg.split("'")[1])
        # Operations each warp issued (a warp pays for an operation when any of its lanes runs it;
        # see `_own_ops`), the active lanes summed over them, and the memory requests among them:
        # the divergence rules weigh idle lanes against this (kernlint/checks/divergence.py).
        self.warp_work = np.zeros((self.S, self.W), dtype=np.int64)
        self.lane_work = np.zeros((self.S, self.W), dtype=np.int64)
        self.mem_work = np.zeros((self.S, self.W), dtype=np.int64)
        # FP32 and FP64 operations summed over the lanes that ran them (eval/flops.py, the roofline).
        self.flop_lanes = np.zeros((2, self.S, self.W), dtype=np.int64)
        # Data-dependent conditions being evaluated as if every lane took them (pseudo-deps that
        # KernelResult.assumptions states on the accesses beneath them).
        self.data_guards: list[str] = []
        # Declared types to use instead of the source's for named shared arrays (KL201 re-evaluates
        # a kernel with a padded declaration); `shared_subtypes` maps each original sub-array type
        # (float[32] of float[32][32]) to the padded one, for the Index nodes that carry it.
        self.shared_types = dict(shared_types or {})
        self.shared_subtypes: dict[str, dict[ir.CType, ir.CType]] = {}
        # `__shared__` scalars hold one value per block (eval/shared_scalars.py), not one per lane.
        self.shared_scalars = SharedScalars(self.S)
        # Coverage: which sites produced an event, and why the others did not (eval/coverage.py).
        self.cov = cov.Recorder()
        self.nesting = 0  # exec/eval calls in progress (bounded by MAX_EVAL_NESTING)
        self.cov_shared = cov.shared_names(fn, tu)
        # Global loads nvcc combines (repeated addresses, fields of one vector): eval/load_reuse.py.
        self.recent_loads = RecentLoads()
        self.sample_overrides = dict(sample_overrides or {})
        self.ifs_taken: set[tuple[int, int, int, int]] = set()
        self.ifs_dead: dict[tuple[int, int, int, int], frozenset[str]] = {}
        self.ifs_targets: dict[tuple[int, int, int, int], dict[str, int]] = {}
        # Integers every lane of a warp loads from one address, and globals the kernel does not write:
        # sampled runtime values (eval/uniform_data.py).
        self.uniform_loads = uniform_data.UniformLoads(self.S, dict(defines), dict(sample_overrides or {}))
        self.global_values: dict[str, Val] = {}
        # Per-thread local arrays whose elements are known per lane (eval/local_arrays.py).
        self.local_arrays = local_arrays.LocalArrays()
        self._escaping: frozenset[str] | None = None

    # --- entry -------------------------------------------------------------------------------------

    def run(self) -> EvalResult:
        frame = Frame()
        frame.ret_mask = np.zeros_like(self.mask)
        self.frames.append(frame)
        for i, p in enumerate(self.fn.params):
            frame.env[p.name] = self.param_value(p, i)
            frame.decl_mask[p.name] = self.entry_mask
        for name, decl in self.tu.globals.items():
            if decl.shared:
                self.allocate_shared(name, decl.ctype)
                if is_shared_scalar_type(self.resolve(decl.ctype)):
                    self.shared_scalars.declare(name, self.resolve(decl.ctype))
        try:
            if self.fn.body is not None:
                self.exec_block(self.fn.body)
        except BudgetExceeded as exc:
            self.result.truncated = True
            if exc.args == ("time",):
                self.result.out_of_time = True
                self.result.notes.append(
                    f"analysis stopped when {deadline.describe()} ran out; later code was not evaluated")
            else:
                self.result.notes.append(
                    f"analysis stopped after its step budget ({self.budget} steps); later code was not evaluated")
        self.result.events.append(ev.Work(self.fn.span, self.warp_work.copy(), self.lane_work.copy(),
                                          self.mem_work.copy(), flops=self.flop_lanes.copy()))
        seen = cov.sites_of(self.fn.body, self.tu, self.cov_shared) if self.fn.body is not None else []
        self.result.coverage = cov.finish(self.cov, seen, "time" if self.result.out_of_time else self.result.truncated,
                                          self.unresolved_names)
        self.result.dead_regions = {k: v for k, v in self.ifs_dead.items() if k not in self.ifs_taken}
        self.result.block_targets = {k: v for k, v in self.ifs_targets.items() if k in self.result.dead_regions}
        self.result.regions_taken = frozenset(self.ifs_taken)
        return self.result

    def param_value(self, p: ir.Param, index: int, prefix: str = "") -> Val:
        name = prefix + p.name
        t = self.resolve(p.ctype)
        if t.kind == "pointer" or t.kind == "array":
            base = POINTER_SPACING * (index + 1 + len(self.param_bases))
            self.param_bases[name] = base
            return Val(np.full((1, 1, 1), base, dtype=np.int64), space="global", root=name)
        if t.kind in ("int", "bool"):
            if name in self.defines:
                return const(int(self.defines[name]))
            # Each integer parameter gets its own samples, decreasing in declaration order (sizes
            # usually come before indices and offsets), so `Size - t` is not 0 and `i < n` holds.
            k = self.sampled_params
            self.sampled_params += 1
            samples = tuple(max(1024, v - SIZE_STEP * k) for v in SIZE_SAMPLES)
            if name in self.iteration_params:
                samples = ITERATION_SAMPLES  # a count of time steps, not a size (eval/samples.py)
            if name in self.shift_params:
                samples = SHIFT_SAMPLES  # the log2 of a size (eval/samples.py)
            if name in self.sample_overrides:
                samples = self.sample_overrides[name]
            self.result.assumed[name] = samples
            return Val(np.array(samples, dtype=np.int64).reshape(self.S, 1, 1), frozenset([name]))
        if t.kind == "struct" and t.fields and not prefix:
            fields = []
            for j, f in enumerate(t.fields):
                fv = self.param_value(ir.Param(f.name, f.ctype), index * 64 + j + 1, prefix=name + ".")
                fields.append((f.name, fv))
            return Val(None, fields=tuple(fields))
        if t.kind == "float":
            return Val(None, why=("unmodelled", f"the floating-point value of `{name}`"), uniform=True)
        if t.kind == "unknown" and t.name and not prefix:
            # Its type is a name from a header kernlint did not find (frontend `_unresolved_param`).
            return Val(None, why=("missing_type", t.name), uniform=True)
        return Val(None, why=("param", name), uniform=True)

    def allocate_shared(self, name: str, ctype: ir.CType) -> int:
        if name in self.shared_bases:
            return self.shared_bases[name]
        if name in self.shared_types:
            self.shared_subtypes[name] = _subtype_map(ctype, self.shared_types[name])
            ctype = self.shared_types[name]
        size = ctype.size if ctype.size > 0 else 0
        base = self.shared_next
        # Align every array to 128 bytes: bank analysis is relative to each array anyway.
        self.shared_next = base + ((size + 127) // 128) * 128 + (128 if size == 0 else 0)
        self.shared_bases[name] = base
        self.result.shared_layout[name] = (base, ctype)
        return base

    # --- helpers -------------------------------------------------------------------------------------

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def tick(self, n: int = 1) -> None:
        self.cost += n
        if self.cost > self.budget:
            raise BudgetExceeded()
        if self.cost >= self._clock_at:
            self._clock_at = self.cost + CLOCK_EVERY
            if deadline.expired():
                raise BudgetExceeded("time")

    def resolve(self, t: ir.CType) -> ir.CType:
        """Substitute template type parameters bound for this evaluation (T -> float)."""
        if t.kind == "array" and t.size == 0 and t.pointee is not None:
            return self.sized_array(t)
        if t.kind == "template":
            arg = self.bindings.get(_template_param_name(t.name, self.fn))
            if arg is not None:
                return _builtin_type(arg) or self.tu.structs.get(" ".join(arg.replace("const", "").split())) \
                    or self.known_types.get(arg) or t
            if "::" in t.name:  # `typename vec4<T>::Type` with T bound (eval/dependent_types.py)
                return dependent_types.member_type(t.name, self.tu.member_types, self.bound_argument) or t
            return t
        if t.kind in ("pointer", "array") and t.pointee is not None and t.pointee.kind == "template":
            inner = self.resolve(t.pointee)
            if inner is not t.pointee:
                size = t.size if t.kind == "pointer" else inner.size * t.count
                return ir.CType(t.kind, size, t.signed, inner, t.count, t.name, t.fields, t.align, t.const)
        return t

    def bound_argument(self, text: str) -> ir.CType | str | None:
        """A template argument as bound here: its concrete type, the text of its integer value, or None."""
        text = " ".join(text.split())
        if re.fullmatch(r"-?\d+", text):
            return text
        if text in ("true", "false"):
            return text
        t = self.resolve(ir.CType("template", 0, name=text))
        if t.kind != "template" and t.size > 0:
            return t
        arg = self.bindings.get(text)
        if arg is not None:
            v = fold_bound(arg, {}, self.tu.macros)
            if v is not None:
                return str(v)
        return None

    def concrete_argument(self, text: str) -> str:
        """`text` (a template argument written in the caller) as a name that stays meaningful in a
        callee whose own parameters shadow the caller's (`SharedMemory<typename vec4<T>::Type>` ->
        `float4`); `text` itself when it names nothing the caller binds."""
        if text in self.bindings:
            return self.bindings[text]
        if "::" not in text:
            if re.search(r"[-+*/%()<>]", text) and re.search(r"[A-Za-z_]", text):
                # `strided<S - 1>(i)`: arithmetic over the caller's bound values, folded here (the
                # callee's own `S` would shadow the caller's).
                folded = fold_bound(text, self.bindings, {**self.tu.macros, **self.defines})
                if folded is not None:
                    return str(folded)
            return text
        t = self.resolve(ir.CType("template", 0, name=text))
        if t.kind == "template" or not t.name:
            return text
        self.known_types.setdefault(t.name, t)
        return t.name

    def sized_array(self, t: ir.CType) -> ir.CType:
        """Size a dependent array type (`T tile[TILE][TILE + 1]` in a template) from the bound arguments."""
        inner = self.resolve(t.pointee) if t.pointee is not None else t
        count = t.count
        if count <= 0:
            dims = re.findall(r"\[([^\[\]]*)\]", t.name)
            values = {k: v for k, v in self.bindings.items()}
            values.update({k: str(v) for k, v in self.defines.items()})
            count = _fold_dim(dims[0], values) if dims else 0
        if count <= 0 or inner.size <= 0:
            return t
        return ir.CType("array", inner.size * count, t.signed, inner, count, t.name, t.fields, t.align, t.const)

    def loop_context(self) -> tuple[tuple[int, ...], tuple[tuple[str, int | None], ...]]:
        iters = tuple(int(ls["iter"]) for ls in self.loop_stack)  # type: ignore[call-overload]
        vars_: list[tuple[str, int | None]] = []
        for ls in self.loop_stack:
            name = ls.get("var")
            if isinstance(name, str):
                v = self.frame.env.get(name)
                uv: int | None = None
                if v is not None and v.data is not None and v.data.size and np.all(v.data == v.data.flat[0]):
                    uv = int(v.data.flat[0])
                vars_.append((name, uv))
        return iters, tuple(vars_)

    def emit(self, event: ev.Event) -> None:
        if self.call_sites:
            event = self.attribute(event)
        key = (event.span.line, event.span.column, type(event).__name__ + getattr(event, "kind", ""),
               getattr(event, "via", ()))
        n = self.site_counts.get(key, 0)
        if n >= MAX_EVENTS_PER_SITE:
            return
        self.site_counts[key] = n + 1
        self.result.events.append(event)

    def site_key(self, span: ir.Span, kind: str) -> cov.SiteKey:
        """The coverage key of a site: code inlined from a helper is reported at the kernel's call site."""
        o = self.call_sites[0][0] if self.call_sites else span
        return (o.line, o.column, span.line, span.column, span.end_line, span.end_column, kind)

    def branch_unknown(self, span: ir.Span, c: Val) -> None:
        """A branch on an unknown condition: evaluated when the condition is proved warp-uniform (it
        cannot split a warp), else not, with the condition's cause."""
        key = self.site_key(span, cov.BRANCH)
        if c.uniform:
            self.cov.hit(key)
        else:
            self.cov.drop(key, c.why)

    def type_why(self, t: ir.CType, other: ir.CType | None = None, member: str = "") -> tuple[str, str]:
        """Why a type's size or layout is unknown: an unbound template value parameter in it (`T[N]`),
        else the dependent type itself."""
        text = " ".join(x.name for x in (t, t.pointee, other) if x is not None)
        names = set(re.findall(r"[A-Za-z_]\w*", text))
        for tp in self.fn.template_params:
            if not tp.is_type and tp.name in names and tp.name not in self.bindings and tp.name not in self.defines:
                return ("template", tp.name)
        shown = f"`{t.name or (other.name if other else '')}`"
        return ("type", shown + (f" (member `{member}`)" if member else ""))

    def mark_dead(self, node: object, deps: frozenset[str]) -> None:
        """Sites skipped by a condition that is a constant of this launch (no sampled value in it) are
        dead code here, not unevaluated; under a guessed shape they only count as not reached."""
        if deps or self.shape.guess or node is None:
            return
        outer = self.call_sites[0][0] if self.call_sites else None
        self.cov.dead.update(cov.sites_of(node, self.tu, self.cov_shared, outer, len(self.frames)))

    def attribute(self, event: ev.Event) -> ev.Event:
        """Place an event of inlined code at its own line in the helper, with the call lines in `via`:
        each (helper line, call site) is its own site (a helper called once strided and eight times
        unit-stride is not averaged). A helper from another file (a header) is reported at the
        innermost call in the kernel's file instead: a finding must point into the linted file."""
        k = len(self.call_sites)
        while k > 0 and not self.call_sites[k - 1][3]:
            k -= 1  # call_sites[k-1] calls a helper that lives in another file
        calls = self.call_sites[:k]
        changes: dict[str, object] = {"via": tuple(c[0].line for c in calls)}
        if k < len(self.call_sites):
            site, helper, inner, _same = self.call_sites[k]
            changes["span"] = site
            if getattr(event, "text", None) == "":
                changes["text"] = f"in {helper}() at line {inner.line}"
        elif getattr(event, "text", None) == "":
            changes["text"] = f"in {self.call_sites[-1][1]}() called from line {self.call_sites[-1][0].line}"
        if not hasattr(event, "via"):
            changes.pop("via")
        return dataclasses.replace(event, **changes)  # type: ignore[arg-type]

    # --- statements ------------------------------------------------------------------------------

    def exec_block(self, block: ir.Block) -> None:
        # C scoping: a declaration in this block hides an outer variable of the same name only until
        # the block ends (GPU Gems' scan redeclares `ai`/`bi` inside its loops).
        env = self.frame.env
        hidden: dict[str, tuple[Val, np.ndarray | None, ir.CType | None]] = {}
        try:
            for s in block.body:
                if not self.mask.any():
                    return
                if isinstance(s, ir.VarDecl) and s.name in env and s.name not in hidden:
                    hidden[s.name] = (env[s.name], self.frame.decl_mask.get(s.name), self.frame.ctype_of.get(s.name))
                self.exec(s)
        finally:
            for name, (v, dm, t) in hidden.items():
                env[name] = v
                if dm is not None:
                    self.frame.decl_mask[name] = dm
                if t is not None:
                    self.frame.ctype_of[name] = t

    _work_mask: np.ndarray | None = None  # the mask `_work_lanes` was counted from (see count_work)

    def count_work(self, ops: int) -> None:
        """Charge `ops` operations to every warp with an active lane (and the active lanes to lane_work)."""
        if self.mask is not self._work_mask:  # masks are replaced, never written in place: count once per mask
            self._work_mask = self.mask
            self._work_warps = self.mask.any(axis=-1)
            self._work_lanes = self.mask.sum(axis=-1)
        self.warp_work += self._work_warps * ops
        self.lane_work += self._work_lanes * ops

    def exec(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.OpaqueStmt) and s.reason == ir.TOO_DEEP:
            self.cov.drop(self.site_key(s.span, cov.BRANCH), ("deep", ""))
            return
        if self.nesting >= MAX_EVAL_NESTING:  # code inlined deep into deep code: reported, not a RecursionError
            self.cov.drop(self.site_key(s.span, cov.BRANCH), ("deep", ""))
            return
        self.nesting += 1
        try:
            self._exec(s)
        finally:
            self.nesting -= 1

    def _exec(self, s: ir.Stmt) -> None:
        self.tick()
        if not isinstance(s, ir.Block):
            self.count_work(_own_ops(s))
            f32, f64 = statement_flops(s)
            if f32 or f64:
                lanes = self._work_lanes  # the active lanes count_work just counted
                self.flop_lanes[0] += lanes * f32
                self.flop_lanes[1] += lanes * f64
        if isinstance(s, ir.Block):
            self.exec_block(s)
        elif isinstance(s, ir.ExprStmt):
            self.eval(s.expr)
        elif isinstance(s, ir.VarDecl):
            self.exec_decl(s)
        elif isinstance(s, ir.If):
            self.exec_if(s)
        elif isinstance(s, ir.For):
            if isinstance(s.init, ir.Block) and all(isinstance(d, ir.VarDecl) for d in s.init.body):
                # `for (int k = 0, i = row; ...)`: the declarators belong to the loop's scope, not to a
                # block that ends before the condition (as a block, an `i` declared by an earlier loop
                # came back and the loop ran with its stale value).
                for d in s.init.body:
                    self.exec(d)
            elif s.init is not None:
                self.exec(s.init)
            self.exec_loop(s, s.cond, s.body, s.step, do_while=False)
        elif isinstance(s, ir.While):
            self.exec_loop(s, s.cond, s.body, None, do_while=s.do_while)
        elif isinstance(s, ir.Return):
            self.exec_return(s)
        elif isinstance(s, ir.Break):
            if self.loop_stack:
                ls = self.loop_stack[-1]
                ls["break"] = ls["break"] | self.mask  # type: ignore[operator]
            self.mask = np.zeros_like(self.mask)
        elif isinstance(s, ir.Continue):
            if self.loop_stack:
                ls = self.loop_stack[-1]
                ls["continue"] = ls["continue"] | self.mask  # type: ignore[operator]
            self.mask = np.zeros_like(self.mask)
        elif isinstance(s, ir.Switch):
            self.exec_switch(s)
        # OpaqueStmt: nothing we can model; its effects on variables are unknown but rare.

    def exec_decl(self, d: ir.VarDecl) -> None:
        t = self.resolve(d.ctype)
        if d.shared and is_shared_scalar_type(t):
            self.allocate_shared(d.name, t)
            self.shared_scalars.declare(d.name, t)
            self.frame.env.pop(d.name, None)
            return
        if d.shared or (d.static and t.kind == "array" and d.name in self.shared_bases):
            base = self.allocate_shared(d.name, t)
            self.declare(d.name, Val(np.full((1, 1, 1), base, dtype=np.int64), space="shared", root=d.name), t)
            return
        if t.kind == "array":
            # A per-thread local array: registers or local memory. Its elements are tracked per lane
            # when it is small and only ever subscripted (eval/local_arrays.py); its initializer is
            # evaluated either way, for the loads in it.
            key = (id(self.frame), d.name)
            track = local_arrays.tracked_type(t) and d.name not in self.escaping_arrays()
            items: list[Val] | None = None
            if d.init is not None and isinstance(d.init, ir.InitList) and track and t.pointee is not None:
                el = t.pointee
                items = [self.convert(self.eval(it), el) if el.kind != "pointer" else self.eval(it)
                         for it in d.init.items]
                if len(items) > t.count:
                    track = False
            elif d.init is not None:
                self.eval(d.init)
            if track:
                self.local_arrays.declare(key, t.count, items)
                if d.init is not None and items is None:
                    self.local_arrays.forget([key])  # initialised by something other than a list
            else:
                self.local_arrays.untrack(key)
            self.declare(d.name, Val(None, space="local", root=d.name), t)
            return
        v = self.eval(d.init) if d.init is not None else UNINIT
        if d.init is None and d.span.line in self.unresolved_names:
            v = Val(None, why=("unresolved", self.unresolved_names[d.span.line]))  # its initializer did not parse
        if d.init is not None and t.kind in ("int", "bool", "float"):
            v = self.convert(v, t)
        self.declare(d.name, v, t)

    def escaping_arrays(self) -> frozenset[str]:
        """Names used other than as a plain subscript anywhere in the kernel or the file's functions:
        arrays by those names are not tracked (eval/local_arrays.py)."""
        if self._escaping is None:
            bodies = [self.fn.body] + [f.body for f in self.tu.functions.values() if f.body is not None]
            self._escaping = local_arrays.escaping_names(bodies)
        return self._escaping

    def tracked_array(self, e: ir.Expr) -> tuple[tuple[int, str], ir.Expr] | None:
        """The key of the tracked local array `e` (`name[i]`, `i` free of side effects) subscripts,
        and the index expression."""
        name = local_arrays.subscripted_name(e)
        if name is None:
            return None
        key = (id(self.frame), name)
        inner = e
        while isinstance(inner, ir.Cast):
            inner = inner.operand
        if key not in self.local_arrays or not isinstance(inner, ir.Index) or not _pure(inner.index):
            return None
        return key, inner.index

    def forget_arrays(self, node: object, why: tuple[str, str] | None) -> None:
        """Tracked arrays `node` writes become unknown (written where the evaluator lost track)."""
        names = local_arrays.stored_arrays(node)
        if names:
            self.local_arrays.forget([(id(self.frame), n) for n in names if (id(self.frame), n) in self.local_arrays],
                                     why)

    def declare(self, name: str, v: Val, t: ir.CType) -> None:
        self.frame.env[name] = v
        self.frame.decl_mask[name] = self.mask.copy()
        self.frame.ctype_of[name] = t

    def exec_if(self, s: ir.If) -> None:
        c = self.uniform_condition(self.eval(s.cond), sides=(s.then, s.other))
        parent = self.mask
        if c.data is None:
            # A data-dependent condition: both sides may run for any lane. Evaluate each under the
            # parent mask; what either side writes becomes unknown.
            # A `return`/`break`/`continue` in such a branch may remove some lanes, not all: the
            # lanes are assumed to go on (exits are restored), so what follows is still evaluated.
            written = _assigned_names(s.then) | (_assigned_names(s.other) if s.other else set())
            self.branch_unknown(s.span, c)
            exits = self.save_exits()
            start = self.data_region_start(s, c)
            exit_kind = _exit_kind(s.then) if s.other is None else ""
            if exit_kind == "return" and len(self.frames) > 1:
                exit_kind = ""  # a `return` in an inlined helper leaves the helper, not the kernel
            common = data_shape.validity_test(s) if start is not None else ""
            w_then: np.ndarray | None = None
            try:
                if common == "else":
                    self.exceptional_sides.append(s.span.line)
                try:
                    self.exec(s.then)
                finally:
                    if common == "else":
                        self.exceptional_sides.pop()
                w_then = self.warp_work.copy()
                self.restore_exits(exits)
                self.mask = parent & ~self.frame_ret() & ~self.loop_exits()
                if s.other is not None:
                    if common == "then":
                        self.exceptional_sides.append(s.span.line)
                    try:
                        self.exec(s.other)
                    finally:
                        if common == "then":
                            self.exceptional_sides.pop()
                    self.restore_exits(exits)
            finally:
                common_work = None
                if common and start is not None and w_then is not None:
                    w0 = start[0]
                    common_work = (w_then - w0) if common == "then" else (self.warp_work - w_then)
                loop = self.loop_stack[-1].get("stmt") if self.loop_stack else None
                self.data_region_end(start, s, "if", c, parent, _has_real_loop(s.then) or _has_real_loop(s.other),
                                     exit_kind, search=exit_kind == "break" and data_shape.is_search(loop, s.cond),
                                     common_work=common_work,
                                     role=data_shape.side_role(s.then, tuple(c.loads)) if s.other is None else "")
            self.mask = parent & ~self.frame_ret() & ~self.loop_exits()
            for name in written:
                if name in self.frame.env:
                    self.frame.env[name] = unknown(self.frame.env[name], c, uniform=False)
            self.shared_scalars.forget(written, why_of(c))
            self.forget_arrays(s, why_of(c))
            return
        cond = np.broadcast_to(c.data != 0, parent.shape)
        taken = parent & cond
        not_taken = parent & ~cond
        if self.regions_here() and c.deps:
            self.note_guard(s, c.deps, bool(taken.any()))
        iters, lvars = self.loop_context()
        cost_then = _stmt_cost(s.then)
        cost_else = _stmt_cost(s.other) if s.other is not None else 0
        w0 = self.warp_work.copy()
        self.cov.hit(self.site_key(s.span, cov.BRANCH))
        if taken.any():
            self.mask = taken
            self.exec(s.then)
        else:
            self.mark_dead(s.then, c.deps)
        w1 = self.warp_work.copy()
        if s.other is None and not self.call_sites and c.deps and len(self.frames) == 1:
            rest = resample.rest_after(self.fn.body, s)
            if rest is not None and (not_taken.any() or (taken.any() and not (self.mask & taken).any())):
                # An early exit every sampled thread takes leaves the rest of the kernel dead.
                self.note_region(resample.rest_key(s, rest), rest, c.deps, bool(not_taken.any()))
        if s.other is not None and self.regions_here() and c.deps:
            self.note_else(s, c.deps, bool(not_taken.any()))
        if s.other is not None and not_taken.any():
            self.mask = not_taken
            self.exec(s.other)
        elif s.other is not None:
            self.mark_dead(s.other, c.deps)
        # Emitted after both sides ran, so that it carries the work each warp did on each side.
        self.emit(ev.Branch(s.span, "if", cond.copy(), parent.copy(), c.deps, iters, lvars, cost_then, cost_else,
                            _has_loop(s.then), _has_loop(s.other) if s.other else False,
                            then_work=w1 - w0, else_work=self.warp_work - w1))
        self.mask = parent & ~self.frame_ret() & ~self.loop_exits()

    def uniform_condition(self, c: Val, sides: tuple[ir.Stmt | None, ir.Stmt | None] | None = None,
                          loop_body: ir.Stmt | None = None, first: bool = True) -> Val:
        """A condition on sampled loads alone (no thread index in it) cannot split a warp for any value:
        it stays a uniform unknown, so both of its sides are evaluated as before. So does one that every
        lane decides alike under the samples when that decision would leave code unevaluated: an `if`
        (`sides`: then, else) whose skipped side holds accesses or whose taken side leaves, a loop
        (`loop_body`) that no lane enters at its `first` test (eval/uniform_data.py)."""
        if uniform_data.block_uniform_condition(c.data, c.deps):
            return Val(None, c.deps, why=("loaded", ""), uniform=True)
        outcome = uniform_data.settled_outcome(c.data, c.deps, self.mask)
        if outcome is None:
            return c
        if sides is not None:
            taken, skipped = sides if outcome else sides[::-1]
            settled = resample.has_memory_access(skipped) or _has_exit(taken)
        else:
            settled = first and not outcome and resample.has_memory_access(loop_body)
        return Val(None, c.deps, why=("loaded", ""), uniform=True) if settled else c

    def regions_here(self) -> bool:
        """Whether dead regions are noted here: in the kernel, or in helpers inlined from its file."""
        return all(c[3] for c in self.call_sites)

    def _call_key(self, key: tuple[int, int, int, int]) -> tuple[int, int, int, int] | None:
        """For a region in an inlined helper, a second key that covers the kernel's call line:
        coverage puts the helper's sites at that line, so the re-sampled evaluation's coverage counts
        there, while its findings count on the helper's lines (the region's own key). One per region
        and call line (its first two numbers are the region's, the column made negative)."""
        if not self.call_sites:
            return None
        o = self.call_sites[0][0]
        return (key[0], -key[1] - CALL_KEY_OFFSET, o.line, o.line)

    def region_taken(self, key: tuple[int, int, int, int]) -> None:
        self.ifs_taken.add(key)
        ck = self._call_key(key)
        if ck is not None:
            self.ifs_taken.add(ck)

    def region_dead(self, key: tuple[int, int, int, int], params: frozenset[str]) -> None:
        self.ifs_dead[key] = params
        ck = self._call_key(key)
        if ck is not None:
            self.ifs_dead[ck] = params

    def region_targets(self, key: tuple[int, int, int, int], targets: dict[str, int]) -> None:
        self.ifs_targets[key] = targets
        ck = self._call_key(key)
        if ck is not None:
            self.ifs_targets[ck] = targets

    def note_guard(self, s: ir.If, deps: frozenset[str], ran: bool) -> None:
        """Remember an `if` over sampled parameters whose body never runs (eval/resample.py)."""
        then_span = getattr(s.then, "span", s.span)
        key = (s.span.line, s.span.column, then_span.line, max(then_span.end_line, then_span.line))
        if ran:
            self.region_taken(key)
            return
        if key in self.ifs_dead or not resample.has_memory_access(s.then):
            return
        params = resample.sampled_parameters(deps, self.result.assumed)
        targets = self.block_targets(s.cond) if resample.block_names(deps) else {}
        targets.update(self.param_targets(s.cond, params))
        if targets:
            params = params | frozenset(targets)
            self.region_targets(key, targets)
        if params:
            self.region_dead(key, params)

    def note_else(self, s: ir.If, deps: frozenset[str], ran: bool) -> None:
        """Remember an `else` that sampled parameters or blocks keep from running: `if (bx !=
        gridDim.x - 1) {...} else {last block}` is the then-branch of the negated comparison."""
        assert s.other is not None
        span = getattr(s.other, "span", s.span)
        key = (s.span.line, s.span.column, span.line, max(span.end_line, span.line))
        if ran:
            self.region_taken(key)
            return
        if key in self.ifs_dead or not resample.has_memory_access(s.other):
            return
        params = resample.sampled_parameters(deps, self.result.assumed)
        neg = resample.negated(s.cond)
        targets = self.block_targets(neg) if neg is not None and resample.block_names(deps) else {}
        if neg is not None:
            targets.update(self.param_targets(neg, params))
        if targets:
            params = params | frozenset(targets)
            self.region_targets(key, targets)
        if params:
            self.region_dead(key, params)

    def note_case(self, s: ir.Switch, labels: object, body: list[ir.Stmt], c: Val, ran: bool) -> None:
        """Remember a `case` of a switch over a sampled parameter that no sample selects (a size
        sampled in the thousands never equals `case 1:`): re-evaluated with the parameter set to
        the case's value (eval/resample.py)."""
        first, last = body[0].span, body[-1].span  # type: ignore[attr-defined]
        key = (s.span.line, s.span.column, first.line, max(last.end_line, last.line))
        block = ir.Block(tuple(body), ir.Span(first.line, first.column, max(last.end_line, last.line), 0))
        if ran:
            self.region_taken(key)
            return
        if key in self.ifs_dead or not resample.has_memory_access(block):
            return
        params = resample.sampled_parameters(c.deps, self.result.assumed)
        name = resample.switched_parameter(s.cond)
        values = [self.eval(lab) for lab in labels  # type: ignore[attr-defined]
                  if not (isinstance(lab, ir.Opaque) and lab.reason == "default")]
        consts = {int(np.asarray(v.data).ravel()[0]) for v in values if v.data is not None and not v.deps}
        if name is not None and name in params and len(consts) >= 1:
            self.region_targets(key, {name: min(consts)})
        if params:
            self.region_dead(key, params)

    def note_region(self, key: tuple[int, int, int, int], node: ir.Stmt, deps: frozenset[str], ran: bool) -> None:
        """Remember a region other than an `if` body (a loop body, the code after an early exit)
        that sampled parameters keep from running (eval/resample.py)."""
        if ran:
            self.region_taken(key)
            return
        if key in self.ifs_dead or not resample.has_memory_access(node):
            return
        params = resample.sampled_parameters(deps, self.result.assumed)
        if params:
            self.region_dead(key, params)

    def param_targets(self, cond: ir.Expr, params: frozenset[str]) -> dict[str, int]:
        """Values of sampled parameters that comparisons of `cond` with a constant ask for
        (`frame == 0` -> frame: 0, `n < 64` -> n: 63): a size sampled in the thousands never
        equals a mode flag, and small samples (1, 32) do not either (eval/resample.py)."""
        out: dict[str, int] = {}
        for n in ir.walk(cond):
            if not isinstance(n, ir.Binary) or n.op not in ("==", "<", ">", "<=", ">="):
                continue
            for e, other, swapped in ((n.lhs, n.rhs, False), (n.rhs, n.lhs, True)):
                name = _sampled_name(e)
                if name is None and n.op == "==" and _pure(e) and _pure(other):
                    solved = self.residue_target(e, other, params)
                    if solved is not None:
                        out.setdefault(*solved)
                        continue
                if name is None and _pure(e) and _pure(other):
                    solved = self.affine_target(e, other, n.op, swapped, params)
                    if solved is not None:
                        out.setdefault(*solved)
                    continue
                if name is None or name not in params or not _pure(other):
                    continue
                v = self.eval(other)
                if v.data is None or v.deps:
                    continue
                # return_index: NumPy's sorting path, the same values, and numpy.ma is never imported
                # (NumPy 2.3+'s default path asks np.ma.is_masked: ~10 ms of CPU per worker start-up)
                vals = np.unique(np.asarray(v.data), return_index=True)[0]
                if vals.size != 1:
                    continue
                t = resample.block_target(n.op, int(vals[0]), swapped)
                if t is not None:
                    out.setdefault(name, t)
        return out

    def residue_target(self, e: ir.Expr, other: ir.Expr, params: frozenset[str]) -> tuple[str, int] | None:
        """The value of a sampled parameter `p` that `p % m == c` asks for (every m-th step of a
        host loop: `if (frame % 10 == 0)`), m and c constants with 0 <= c < m: the smallest positive
        one, c (m when c is 0). None for other shapes."""
        while isinstance(e, ir.Cast):
            e = e.operand
        if not isinstance(e, ir.Binary) or e.op != "%":
            return None
        name = _sampled_name(e.lhs)
        if name is None or name not in params or not _pure(e.rhs):
            return None
        m, c = self.eval(e.rhs), self.eval(other)
        if m.data is None or c.data is None or m.deps or c.deps or m.is_float or c.is_float:
            return None
        ms, cs = np.unique(np.asarray(m.data)), np.unique(np.asarray(c.data))
        if ms.size != 1 or cs.size != 1 or not 0 <= int(cs[0]) < int(ms[0]):
            return None
        return name, int(cs[0]) or int(ms[0])

    def affine_target(self, e: ir.Expr, other: ir.Expr, op: str, swapped: bool,
                      params: frozenset[str]) -> tuple[str, int] | None:
        """The value of the one sampled parameter `p` that `e op other` asks for when `e` is a value
        computed from `p` alone, the same for every lane (`nf = 512 - (gridDim.x * 512 - n)`;
        `if (nf == 512)`), and `other` is one integer: `e` is taken as affine in `p` through its
        values under the two samples, and `p` is solved for exactly (None unless the solution is a
        non-negative integer). The re-evaluation under that value is an evaluation like any other: if
        `e` is not affine the guard just stays dead there."""
        v, o = self.eval(e), self.eval(other)
        if v.data is None or o.data is None or o.deps or v.is_float or o.is_float or v.fields:
            return None
        sampled = resample.sampled_parameters(v.deps, self.result.assumed) & params
        if len(sampled) != 1 or resample.block_names(v.deps) or any(uniform_data.is_loaded(d) for d in v.deps):
            return None
        p = next(iter(sampled))
        ps = self.result.assumed[p]
        ovals = np.unique(np.asarray(o.data))
        if len(ps) != self.S or self.S < 2 or ps[0] == ps[1] or ovals.size != 1:
            return None
        data = np.broadcast_to(np.asarray(v.data, dtype=np.int64), self.mask.shape)
        per_sample = []
        for k in range(self.S):
            vals = np.unique(data[k][self.entry_mask[k]]) if self.entry_mask[k].any() else np.unique(data[k])
            if vals.size != 1:
                return None
            per_sample.append(int(vals[0]))
        want = resample.block_target(op, int(ovals[0]), swapped)  # the value of `e` that satisfies it
        if want is None:
            return None
        l0, l1 = per_sample[0], per_sample[1]
        if l0 == l1:
            return None
        num, den = (want - l0) * (ps[1] - ps[0]), l1 - l0
        if num % den:
            return None
        target = ps[0] + num // den
        # The other samples must lie on the same line, or `e` is not affine in `p`.
        if any((per_sample[k] - l0) * (ps[1] - ps[0]) != (ps[k] - ps[0]) * den for k in range(2, self.S)):
            return None
        return (p, target) if target >= 0 else None

    def block_targets(self, cond: ir.Expr) -> dict[str, int]:
        """Block indices that the comparisons of `cond` with blockIdx ask for (`bx == 1` -> x: 1).

        Only a side that is exactly a blockIdx component (under every sample) compared with a side
        whose value is one integer (a constant, gridDim, a known size) counts; the target is clamped
        to the grid. Sides with loads, calls or side effects are not evaluated again.
        """
        out: dict[str, int] = {}
        for n in ir.walk(cond):
            if not isinstance(n, ir.Binary) or n.op not in ("==", "<", ">", "<=", ">=") \
                    or not _pure(n.lhs) or not _pure(n.rhs):
                continue
            lhs, rhs = self.eval(n.lhs), self.eval(n.rhs)
            for e, side, other, swapped in ((n.lhs, lhs, rhs, False), (n.rhs, rhs, lhs, True)):
                dim = self.block_component(e, side)
                if dim is None or other.data is None or resample.block_names(other.deps):
                    continue
                vals = np.unique(np.asarray(other.data), return_index=True)[0]
                if vals.size != 1:
                    continue
                t = resample.block_target(n.op, int(vals[0]), swapped)
                if t is not None:
                    i = "xyz".index(dim)
                    out.setdefault(f"blockIdx.{dim}", max(0, min(t, self.grid_dim[i] - 1)))
        return out

    def block_component(self, e: ir.Expr, v: Val) -> str | None:
        """'x' when `e` is blockIdx.x (`blockIdx.x`, `(int)blockIdx.x`, or a variable `bx` that only
        ever holds it) and its value `v` is blockIdx.x under every sample, else None."""
        dim = _block_member(e)
        if dim is None:
            while isinstance(e, ir.Cast):
                e = e.operand
            if not isinstance(e, ir.Ref) or self.fn.body is None:
                return None
            dim = _block_alias(self.fn.body, e.name)
        if dim is None or v.deps != frozenset([f"blockIdx.{dim}"]):
            return None
        names = resample.block_names(v.deps)
        if v.data is None or len(names) != 1 or v.deps != names:
            return None
        dim = next(iter(names))[-1]
        data = np.asarray(v.data)
        if data.ndim != 3 or data.shape[0] != self.S:
            return None
        return dim if bool(np.all(data == self.block_idx["xyz".index(dim)])) else None

    def _loop_over_budget(self, start_cost: int, iterations: int) -> bool:
        """Stop a costly loop early rather than exhaust the kernel's budget inside it.

        A loop may spend a third of what is left; cheap loops (reduction ladders, tiles) still run
        every iteration, while a long loop around an unrolled body stops after a few, its later
        iterations repeating the same access patterns, and what it writes becomes unknown.
        """
        per_iteration = (self.cost - start_cost) / iterations
        remaining = self.budget - self.cost
        return per_iteration * 3 > remaining

    def save_exits(self) -> tuple[np.ndarray | None, list[tuple[np.ndarray, np.ndarray]]]:
        ret = self.frame.ret_mask.copy() if self.frame.ret_mask is not None else None
        loops = [(ls["break"].copy(), ls["continue"].copy()) for ls in self.loop_stack]  # type: ignore[attr-defined]
        return ret, loops

    def restore_exits(self, saved: tuple[np.ndarray | None, list[tuple[np.ndarray, np.ndarray]]]) -> None:
        ret, loops = saved
        self.frame.ret_mask = ret
        for ls, (brk, cont) in zip(self.loop_stack, loops):
            ls["break"] = brk
            ls["continue"] = cont

    def frame_ret(self) -> np.ndarray:
        r = self.frame.ret_mask
        return r if r is not None else np.zeros_like(self.mask)

    def loop_exits(self) -> np.ndarray:
        if not self.loop_stack:
            return np.zeros_like(self.mask)
        ls = self.loop_stack[-1]
        return ls["break"] | ls["continue"]  # type: ignore[operator,return-value]

    def exec_return(self, s: ir.Return) -> None:
        if s.value is not None:
            v = self.eval(s.value)
            old = self.frame.ret_val
            if old is None:
                self.frame.ret_val = v
            else:
                self.frame.ret_val = self.merge(old, v, self.mask)
        iters, lvars = self.loop_context()
        if len(self.frames) == 1:
            live = self.entry_mask & ~self.frame_ret()
            # An early `return` in the kernel splits a warp like a branch does.
            self.emit(ev.Branch(s.span, "return", self.mask.copy(), live.copy(), frozenset(), iters, lvars,
                                then_work=self.warp_work.copy()))
        self.frame.ret_mask = self.frame_ret() | self.mask
        for ls in self.loop_stack:
            if ls.get("frame") is self.frame:
                ls["break"] = ls["break"] | self.mask  # type: ignore[operator]
        self.mask = np.zeros_like(self.mask)

    def exec_loop(self, s: ir.Stmt, cond: ir.Expr | None, body: ir.Stmt, step: ir.Expr | None,
                  do_while: bool) -> None:
        entry = self.mask.copy()
        written = _assigned_names(body) | (_assigned_names_expr(step) if step is not None else set())
        ls: dict[str, object] = {"iter": 0, "break": np.zeros_like(entry), "continue": np.zeros_like(entry),
                                 "var": _loop_var(s), "frame": self.frame, "stmt": s}
        self.loop_stack.append(ls)
        trips = np.zeros(entry.shape, dtype=np.int64)
        active = entry.copy()
        truncated = False
        deps: frozenset[str] = frozenset()
        data_dependent = False
        cond_why: tuple[str, str] | None = None
        cond_uniform = True
        w0 = self.warp_work.copy()
        per_iteration_ops = max(1, _ops(cond) + _ops(step))
        region: tuple[object, ...] | None = None
        data_cond: Val | None = None
        tracker = fast_forward.Tracker(cond, body, written, do_while)  # eval/fast_forward.py
        try:
            k = 0
            loop_start_cost = self.cost
            while True:
                self.mask = active
                if cond is not None and not (do_while and k == 0):
                    c = self.uniform_condition(self.eval(cond), loop_body=body, first=k == 0)
                    deps |= c.deps
                    if c.data is None:
                        data_dependent = True
                        cond_why = cond_why or c.why
                        cond_uniform = cond_uniform and c.uniform
                        c_lanes = np.ones_like(active)
                        if region is None and c.loads:
                            # The trip count is data: the body is evaluated once for every lane.
                            data_cond = c
                            region = self.data_region_start(s, c, before=(w0, entry))
                    else:
                        c_lanes = np.broadcast_to(c.data != 0, active.shape)
                    active = active & c_lanes
                if not active.any():
                    break
                if k >= MAX_LOOP_ITERATIONS or (data_dependent and k >= 1) or (
                        self.loop_cap is not None and k >= self.loop_cap and deps) or (
                        k >= 2 and self._loop_over_budget(loop_start_cost, k)):
                    truncated = True
                    break
                trips += active
                self.count_work(per_iteration_ops)  # the condition and step of this iteration
                ls["iter"] = k
                ls["continue"] = np.zeros_like(entry)
                self.mask = active
                self.exec(body)
                self.mask = active & ~ls["break"] & ~self.frame_ret()  # type: ignore[operator]
                if step is not None and self.mask.any():
                    self.eval(step)
                active = self.mask
                k += 1
                tracker.record(self.frame.env)
        finally:
            self.loop_stack.pop()
            if region is not None and data_cond is not None:
                self.mask = entry
                self.data_region_end(region, s, "loop", data_cond, entry, True, "",
                                     search=data_shape.is_search(s, cond))
        if cond is not None:
            key = self.site_key(s.span, cov.BRANCH)
            if data_dependent and not cond_uniform:
                self.cov.drop(key, cond_why)
            elif data_dependent:
                self.cov.hit(key)  # unknown trip count, but the same for every lane of a warp
            else:
                self.cov.hit(key)
                if self.regions_here() and deps:
                    self.note_region(resample.dead_loop_key(s, body), body, deps, k > 0 or do_while)
                if k == 0 and not do_while:
                    self.mark_dead(body, deps)  # the loop runs no iteration under this launch
                    if step is not None:
                        self.mark_dead(step, deps)
        if truncated:
            why = cond_why if data_dependent else ("loop", str(s.span.line))
            ahead = {} if data_dependent else fast_forward.fast_forward(self, tracker, active)
            for name, v in ahead.items():
                self.frame.env[name] = v  # where the loop leaves it: it advances by a constant step
            written = written - set(ahead)
            for name in written:
                if name in self.frame.env:
                    self.frame.env[name] = (unknown(self.frame.env[name], data_cond, why=why, uniform=False)
                                            if data_cond is not None
                                            else unknown(self.frame.env[name], why=why, uniform=False))
            self.shared_scalars.forget(written, why)
            self.forget_arrays(s, why)
        self.emit(ev.Loop(s.span, trips, entry, truncated, deps, _stmt_cost(body),
                          work=self.warp_work - w0))
        self.mask = entry & ~self.frame_ret() & ~self.loop_exits()

    def exec_switch(self, s: ir.Switch) -> None:
        c = self.eval(s.cond)
        parent = self.mask
        # Each case runs for the lanes whose value matches (fall-through approximated by case order).
        remaining = parent.copy()
        written: set[str] = set()
        arms = np.full(parent.shape, -1, dtype=np.int64)  # the case each lane runs; -1: none
        w0 = self.warp_work.copy()
        region = self.data_region_start(s, c) if c.data is None else None
        for arm, (labels, body) in enumerate(s.cases):
            if c.data is None:
                lane_sel = parent
            else:
                sel = np.zeros(parent.shape, dtype=bool)
                is_default = False
                for lab in labels:
                    if isinstance(lab, ir.Opaque) and lab.reason == "default":
                        is_default = True
                        continue
                    lv = self.eval(lab)
                    if lv.data is not None:
                        sel |= np.broadcast_to(c.data == lv.data, parent.shape)
                lane_sel = parent & (sel | (remaining if is_default else False))
            remaining = remaining & ~lane_sel
            arms[lane_sel & (arms < 0)] = arm
            if not lane_sel.any():
                self.mark_dead(ir.Block(tuple(body), s.span), c.deps)
            if c.data is not None and c.deps and self.regions_here() and body:
                self.note_case(s, labels, body, c, bool(lane_sel.any()))
            if lane_sel.any():
                self.mask = lane_sel
                for st in body:
                    if isinstance(st, ir.Break):
                        break
                    if not self.mask.any():
                        break
                    self.exec(st)
                    written |= _assigned_names(st)
        if region is not None:
            self.mask = parent
            self.data_region_end(region, s, "switch", c, parent, _has_real_loop(s.cases), "")
        if c.data is not None:
            self.cov.hit(self.site_key(s.span, cov.BRANCH))
        else:
            self.branch_unknown(s.span, c)
        if c.data is not None:
            iters, lvars = self.loop_context()
            self.emit(ev.Branch(s.span, "switch", arms >= 0, parent.copy(), c.deps, iters, lvars,
                                _stmt_cost(s.cases), 0, _has_loop(s.cases), False,
                                then_work=self.warp_work - w0, else_work=np.zeros_like(w0), arms=arms))
        self.mask = parent & ~self.frame_ret() & ~self.loop_exits()
        if c.data is None:
            for name in written:
                if name in self.frame.env:
                    self.frame.env[name] = unknown(self.frame.env[name], c, uniform=False)
            self.shared_scalars.forget(written, why_of(c))
            self.forget_arrays(s, why_of(c))

    # --- expressions ------------------------------------------------------------------------------

    def eval(self, e: ir.Expr) -> Val:
        if (isinstance(e, ir.Opaque) and e.reason == ir.TOO_DEEP) or self.nesting >= MAX_EVAL_NESTING:
            self.cov.drop(self.site_key(e.span, cov.BRANCH), ("deep", ""))
            return Val(None, why=("deep", ""))
        self.nesting += 1
        try:
            return self._eval(e)
        finally:
            self.nesting -= 1

    def _eval(self, e: ir.Expr) -> Val:
        self.tick()
        handler = _EVAL_BY_TYPE.get(type(e))  # the common node classes in one lookup (see below the class)
        if handler is not None:
            return handler(self, e)  # type: ignore[operator]
        if isinstance(e, ir.Lit):
            return const(e.value)
        if isinstance(e, ir.Cast):
            return self.eval_cast(e)
        if isinstance(e, ir.Ref):
            return self.eval_ref(e)
        if isinstance(e, ir.Binary):
            return self.eval_binary(e)
        if isinstance(e, ir.Unary):
            return self.eval_unary(e)
        if isinstance(e, (ir.Index, ir.Member)):
            return self.eval_memory_read(e)
        if isinstance(e, ir.Cond):
            return self.eval_cond(e)
        if isinstance(e, ir.Call):
            return self.eval_call(e)
        if isinstance(e, ir.InitList):
            for item in e.items:
                self.eval(item)
            return Val(None, why=("unmodelled", "an initializer list"))
        if isinstance(e, ir.Opaque):
            for ch in e.children:
                self.eval(ch)
            return Val(None, why=("unmodelled", f"an expression ({e.reason})"))
        if isinstance(e, ir.SizeOf):
            t = self.resolve(e.of)
            if t.kind == "reference" and t.pointee is not None:
                t = self.resolve(t.pointee)  # sizeof of a reference is that of the referenced type
            n = (t.align or (t.size if t.kind in ("int", "float", "bool", "pointer") else 0)) if e.align else t.size
            return const(n) if n > 0 else Val(None, why=self.type_why(t), uniform=True)
        return UNKNOWN

    def eval_ref(self, e: ir.Ref) -> Val:
        if e.kind == "template":
            arg = self.bindings.get(e.name)
            if arg is not None:
                folded = fold_bound(arg, {}, self.tu.macros)
                if folded is not None:
                    return const(folded)
            if e.name in self.defines:
                return const(int(self.defines[e.name]))
            # An unbound template value parameter is usually a tile or block size: sampling it as a
            # runtime size would be a guess (BLOCK = 4096), so it stays unknown.
            return Val(None, frozenset([e.name]), why=("template", e.name), uniform=True)
        if e.kind == "builtin" and e.name == "warpSize":
            return const(WARP)
        for frame in reversed(self.frames[-1:]):
            if e.name in frame.env:
                return frame.env[e.name]
        if e.name in self.shared_scalars:
            return self.shared_scalars.read(e.name)
        if e.kind == "shared" or (e.name in self.shared_bases):
            base = self.allocate_shared(e.name, self.resolve(e.ctype))
            return Val(np.full((1, 1, 1), base, dtype=np.int64), space="shared", root=e.name)
        if e.kind in ("global", "constant"):
            decl = self.tu.globals.get(e.name)
            if decl is not None and decl.shared:
                base = self.allocate_shared(e.name, self.resolve(decl.ctype))
                return Val(np.full((1, 1, 1), base, dtype=np.int64), space="shared", root=e.name)
            t = self.resolve(e.ctype)
            if t.kind == "array":
                base = self.param_bases.setdefault("::" + e.name, POINTER_SPACING * (100 + len(self.param_bases)))
                return Val(np.full((1, 1, 1), base, dtype=np.int64), space=e.kind, root=e.name)
            if decl is not None and decl.init is not None and decl.ctype.const:
                return self.eval(decl.init)
            if e.name in self.defines:
                return const(int(self.defines[e.name]))
            sampled = self.global_value(e.name, t)
            if sampled is not None:
                return sampled
            return Val(None, why=("global", e.name), uniform=True)
        if e.name in self.defines:
            return const(int(self.defines[e.name]))
        if e.kind == "unknown":
            return Val(None, why=("unresolved", e.name), uniform=True)
        return UNKNOWN

    def builtin_member(self, base: ir.Expr, fieldname: str) -> Val | None:
        inner = base.operand if isinstance(base, ir.Cast) else base
        if not isinstance(inner, ir.Ref) or inner.kind != "builtin" or fieldname not in ("x", "y", "z"):
            return None
        i = "xyz".index(fieldname)
        if inner.name == "threadIdx":
            return Val(self.tid[i])
        if inner.name == "blockDim":
            return const(self.shape.block[i])
        if inner.name == "blockIdx":
            name = f"blockIdx.{fieldname}"
            if self.grid_known and self.grid_dim[i] == 1:
                return const(0)
            self.result.assumed[name] = tuple(int(x) for x in self.block_idx[i].ravel())
            return Val(self.block_idx[i], frozenset([name]))
        if inner.name == "gridDim":
            if self.grid_known:
                return const(self.grid_dim[i])
            name = f"gridDim.{fieldname}"
            self.result.assumed[name] = (self.grid_dim[i],)
            return Val(np.full((1, 1, 1), self.grid_dim[i], dtype=np.int64), frozenset([name]))
        return None

    def eval_cast(self, e: ir.Cast) -> Val:
        v = self.eval(e.operand)
        t = self.resolve(e.ctype)
        if t.kind in ("int", "bool", "float"):
            return self.convert(v, t)
        return v

    def convert(self, v: Val, t: ir.CType) -> Val:
        if v.data is None:
            return v
        if t.kind == "float":
            return Val(v.data.astype(np.float64), v.deps, is_float=True)
        data = v.data
        if v.is_float or data.dtype.kind == "f":
            with np.errstate(invalid="ignore", over="ignore"):
                if not np.all(np.isfinite(data)):
                    return unknown(v, why=("unmodelled", "a conversion of a non-finite value"))
                data = np.trunc(data).astype(np.int64)
        return Val(wrap_int(data.astype(np.int64), t) if not v.deps else data.astype(np.int64), v.deps)

    def eval_cond(self, e: ir.Cond) -> Val:
        c = self.eval(e.cond)
        parent = self.mask
        branch = cov.has_side_effects(e.then) or cov.has_side_effects(e.other)
        if c.data is None:
            a = self.eval(e.then)
            b = self.eval(e.other)
            self.forget_arrays(e, why_of(c))  # either side's writes may or may not have happened
            if branch:
                self.branch_unknown(e.span, c)
            return unknown(a, b, c)
        cond = np.broadcast_to(c.data != 0, parent.shape)
        self.mask = parent & cond
        a = self.eval(e.then) if self.mask.any() else UNKNOWN
        if not self.mask.any():
            self.mark_dead(e.then, c.deps)
        self.mask = parent & ~cond
        b = self.eval(e.other) if self.mask.any() else UNKNOWN
        if not self.mask.any():
            self.mark_dead(e.other, c.deps)
        self.mask = parent
        if branch:
            self.cov.hit(self.site_key(e.span, cov.BRANCH))
            # `?:` with side effects is a branch the compiler cannot turn into a select.
            iters, lvars = self.loop_context()
            ct, ce = _stmt_cost(e.then), _stmt_cost(e.other)
            self.emit(ev.Branch(e.span, "ternary", cond.copy(), parent.copy(), c.deps, iters, lvars, ct, ce,
                                then_work=(parent & cond).any(axis=-1) * ct,
                                else_work=(parent & ~cond).any(axis=-1) * ce))
        if not (parent & cond).any():
            return b
        if not (parent & ~cond).any():
            return a
        if a.data is None or b.data is None:
            return unknown(a, b, c)
        is_float = a.is_float or b.is_float
        data = np.where(cond, a.data, b.data)
        return Val(data, a.deps | b.deps | c.deps, a.space or b.space, a.root if a.root == b.root else "",
                   is_float=is_float)

    def eval_unary(self, e: ir.Unary) -> Val:
        op = e.op
        if op == "*":
            return self.eval_memory_read(e)
        if op == "&":
            target = _target_name(e.operand)
            if target in self.frame.shared_refs and _strip_implicit(e.operand) is not None \
                    and isinstance(_strip_implicit(e.operand), ir.Ref):
                # `atomicExch(&flag, 0)` on a reference parameter bound to the caller's `__shared__`
                # scalar: that scalar's address. Its value is unknown from here on (the write-back of
                # the parameter's copy must not restore the old one).
                shared = self.frame.shared_refs[target]  # type: ignore[index]
                self.frame.env[target] = Val(None, why=("unmodelled", f"`{shared}`, a __shared__ variable "
                                                                      "whose address is taken (an atomic?)"))
                self.shared_scalars.forget([shared], ("unmodelled", f"`{shared}`, a __shared__ variable whose "
                                                      "address is taken (an atomic?)"))
                base = self.allocate_shared(shared, self.shared_scalars.types[shared])
                return Val(np.full((1, 1, 1), base, dtype=np.int64), space="shared", root=shared)
            if target in self.shared_scalars and target not in self.frame.env:
                # The address escapes (an atomic, a helper): the block's value is no longer known.
                self.shared_scalars.forget([target], ("unmodelled", f"`{target}`, a __shared__ variable whose "
                                                            "address is taken (an atomic?)"))
                base = self.allocate_shared(target, self.shared_scalars.types[target])
                return Val(np.full((1, 1, 1), base, dtype=np.int64), space="shared", root=target)
            lv = self.lvalue(e.operand)
            if lv is None:
                target = _strip_implicit(e.operand)
                if isinstance(target, ir.Ref) and target.kind in ("local", "param") and target.name not in self.cov_shared:
                    # The address of a variable held by the thread (a local scalar or struct).
                    return Val(None, space="local", root=target.name)
                if isinstance(target, ir.Ref) and target.kind in ("global", "constant") \
                        and not (target.name in self.tu.globals and self.tu.globals[target.name].shared):
                    # `&counter` of a `__device__` variable (an atomic's target): its own address in
                    # its space, the same for every thread.
                    base = self.param_bases.setdefault("::" + target.name,
                                                       POINTER_SPACING * (100 + len(self.param_bases)))
                    return Val(np.full((1, 1, 1), base, dtype=np.int64), space=target.kind, root=target.name)
                return Val(None, why=("unmodelled", "the address of a variable"))
            return lv[0]
        if op in ("pre++", "pre--", "post++", "post--"):
            old = self.eval(e.operand)
            delta = 1 if "++" in op else -1
            t = self.resolve(e.operand.ctype)
            if old.data is None:
                new = old
            elif t.kind == "pointer" and t.pointee is not None:
                size = self.resolve(t.pointee).size
                new = Val(old.data + delta * size, old.deps, old.space, old.root) if size else unknown(old)
            else:
                new = Val(wrap_int(old.data + delta, t), old.deps, is_float=old.is_float)
            self.store(e.operand, new, e.span)
            return new if op.startswith("pre") else old
        v = self.eval(e.operand)
        if v.data is None:
            return v
        if op == "-":
            return Val(wrap_int(-v.data, self.resolve(e.ctype)) if not v.is_float else -v.data, v.deps,
                       is_float=v.is_float)
        if op == "+":
            return v
        if op == "!":
            return Val((v.data == 0).astype(np.int64), v.deps)
        if op == "~":
            if v.is_float:
                return unknown(v)
            return Val(wrap_int(~v.data, self.resolve(e.ctype)), v.deps)
        return unknown(v)

    def eval_binary(self, e: ir.Binary) -> Val:
        op = e.op
        if op == "=":
            v = self.eval(e.rhs)
            t = self.resolve(e.lhs.ctype)
            if t.kind in ("int", "bool", "float"):
                v = self.convert(v, t)
            self.store(e.lhs, v, e.span)
            return v
        if op.endswith("=") and op not in ("==", "!=", "<=", ">="):
            rhs = self.eval(e.rhs)
            old = self.eval(e.lhs)
            new = self.arith(op[:-1], old, rhs, self.resolve(e.lhs.ctype), e.lhs.ctype, e.rhs.ctype)
            self.store(e.lhs, new, e.span)
            return new
        if op == ",":
            self.eval(e.lhs)
            return self.eval(e.rhs)
        if op in ("&&", "||"):
            a = self.eval(e.lhs)
            parent = self.mask
            if a.data is not None:
                av = np.broadcast_to(a.data != 0, parent.shape)
                self.mask = parent & (av if op == "&&" else ~av)
            b = self.eval(e.rhs) if self.mask.any() else const(0 if op == "&&" else 1)
            if not self.mask.any():
                self.mark_dead(e.rhs, a.deps)
            if a.data is None:
                self.forget_arrays(e.rhs, why_of(a))  # the right side ran for lanes that may skip it
            self.mask = parent
            if a.data is None or b.data is None:
                # `false && unknown` is still false; `true || unknown` still true.
                if a.data is not None:
                    av = a.data != 0
                    if op == "&&" and not np.any(av):
                        return Val(np.zeros_like(a.data), a.deps)
                    if op == "||" and np.all(av):
                        return Val(np.ones_like(a.data), a.deps)
                return unknown(a, b)
            if op == "&&":
                return Val(((a.data != 0) & (b.data != 0)).astype(np.int64), a.deps | b.deps)
            return Val(((a.data != 0) | (b.data != 0)).astype(np.int64), a.deps | b.deps)
        a = self.eval(e.lhs)
        b = self.eval(e.rhs)
        ltype, btype = e.lhs.ctype, e.rhs.ctype
        if op in ("+", "-") and (a.space or b.space):
            # `out + a + b` in a template: clang types the inner sum as a dependent type, so the
            # pointer's element type is taken from the pointer the chain starts at.
            if a.space and self.resolve(ltype).kind not in ("pointer", "array"):
                ltype = _pointer_chain_type(e.lhs, self.resolve) or ltype
            elif b.space and self.resolve(btype).kind not in ("pointer", "array"):
                btype = _pointer_chain_type(e.rhs, self.resolve) or btype
        return self.arith(op, a, b, self.resolve(e.ctype), ltype, btype)

    def arith(self, op: str, a: Val, b: Val, rtype: ir.CType, ltype: ir.CType, btype: ir.CType) -> Val:
        r = self._arith(op, a, b, rtype, ltype, btype)
        if r.data is None and r.why is None and a.data is not None and b.data is not None:
            lt, bt = self.resolve(ltype), self.resolve(btype)
            if op in ("+", "-") and (lt.kind in ("pointer", "array") or bt.kind in ("pointer", "array")):
                pointee = (lt if lt.kind in ("pointer", "array") else bt).pointee
                r = Val(None, r.deps, why=("type", f"`{pointee.name if pointee else ''}`"))
            else:
                r = Val(None, r.deps, why=("unmodelled", f"operator '{op}' on these values"))
        return r

    def _arith(self, op: str, a: Val, b: Val, rtype: ir.CType, ltype: ir.CType, btype: ir.CType) -> Val:
        if a.data is None or b.data is None:
            return unknown(a, b)
        deps = a.deps | b.deps
        lt = self.resolve(ltype)
        bt = self.resolve(btype)
        # Pointer arithmetic: scale by the element size.
        if lt.kind in ("pointer", "array") and op in ("+", "-") and bt.kind in ("int", "bool"):
            size = self.resolve(lt.pointee).size if lt.pointee is not None else 0
            if size <= 0:
                return unknown(a, b)
            data = a.data + b.data * size if op == "+" else a.data - b.data * size
            return Val(data, deps, a.space, a.root)
        if bt.kind in ("pointer", "array") and op == "+" and lt.kind in ("int", "bool"):
            size = self.resolve(bt.pointee).size if bt.pointee is not None else 0
            if size <= 0:
                return unknown(a, b)
            return Val(b.data + a.data * size, deps, b.space, b.root)
        if lt.kind == "pointer" and bt.kind == "pointer" and op == "-":
            size = self.resolve(lt.pointee).size if lt.pointee is not None else 0
            if size <= 0 or a.root != b.root:
                return unknown(a, b)
            return Val(c_div(a.data - b.data, np.int64(size)), deps)
        is_float = a.is_float or b.is_float or rtype.kind == "float"
        x, y = a.data, b.data
        if is_float:
            x = x.astype(np.float64)
            y = y.astype(np.float64)
        try:
            with np.errstate(all="ignore"):
                if op == "+":
                    r = x + y
                elif op == "-":
                    r = x - y
                elif op == "*":
                    r = x * y
                elif op == "/":
                    if np.any(y == 0):
                        return unknown(a, b)
                    r = x / y if is_float else c_div(x, y)
                elif op == "%":
                    if is_float or np.any(y == 0):
                        return unknown(a, b)
                    r = c_mod(x, y)
                elif op in ("<", ">", "<=", ">=", "==", "!="):
                    r = {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y, "!=": x != y}[op]
                    return Val(r.astype(np.int64), deps)
                elif is_float:
                    return unknown(a, b)
                elif op == "&":
                    r = x & y
                elif op == "|":
                    r = x | y
                elif op == "^":
                    r = x ^ y
                elif op == "<<":
                    if np.any((y < 0) | (y > 62)):
                        return unknown(a, b)
                    r = x << y
                elif op == ">>":
                    if np.any((y < 0) | (y > 62)):
                        return unknown(a, b)
                    r = x >> y
                else:
                    return unknown(a, b)
        except (OverflowError, ValueError, TypeError):
            return unknown(a, b)
        if is_float:
            return Val(r, deps, is_float=True)
        if rtype.kind == "bool" or (rtype.kind == "int" and not deps):
            # Values built from sampled sizes are not wrapped at 32 bits: `B*T*C` with every size
            # sampled near 4096 would overflow to 0, which real (smaller) sizes do not.
            r = wrap_int(r, rtype)
        return Val(r, deps)

    # --- memory ---------------------------------------------------------------------------------

    def lvalue(self, e: ir.Expr) -> tuple[Val, ir.CType] | None:
        """The address of an lvalue expression that lives in memory, with its type; None otherwise."""
        if isinstance(e, ir.Cast) and not e.explicit:
            return self.lvalue(e.operand)
        if isinstance(e, ir.Index):
            base = self.eval(e.base)
            idx = self.eval(e.index)
            t = self.resolve(e.ctype)
            if t.size <= 0 and t.kind == "template":
                # `out[f<S>(i) + j]` in a template: the index is dependent, so clang types the whole
                # subscript as dependent; the element is the (known) pointer's or array's.
                bt = self.resolve(e.base.ctype)
                if bt.kind in ("pointer", "array") and bt.pointee is not None \
                        and self.resolve(bt.pointee).size > 0:
                    t = self.resolve(bt.pointee)
            if base.root in self.shared_subtypes:
                t = self.shared_subtypes[base.root].get(t, t)
            if base.space == "local" or (base.data is None and cov.is_local_storage(e.base, self.cov_shared)):
                return (Val(None, base.deps | idx.deps, "local", base.root), t)  # thread-local storage
            if base.data is None or not base.space:
                return (unknown(base, idx, why=("unknown", "")), t)
            if idx.data is None or t.size <= 0:
                why = why_of(idx) if idx.data is None else self.type_why(t, e.ctype)
                return (Val(None, base.deps | idx.deps, base.space, base.root, loads=base.loads | idx.loads,
                            why=why), t)
            if idx.is_float:
                return (Val(None, base.deps | idx.deps, base.space, base.root, loads=base.loads | idx.loads,
                            why=("unmodelled", "a floating-point index")), t)
            return (Val(base.data + idx.data * t.size, base.deps | idx.deps, base.space, base.root), t)
        if isinstance(e, ir.Unary) and e.op == "*":
            p = self.eval(e.operand)
            if p.data is None and cov.is_local_method_ref(e.operand, self.cov_shared):
                p = Val(None, p.deps, "local")  # a register object's element (`packed[k]`)
            t = self.resolve(e.ctype)
            if t.size <= 0 and isinstance(e.operand, ir.Call):
                t = self.returned_element_type(e.operand) or t
            if t.size <= 0 and t.kind == "template":
                # `*pointx` on a `const Real *` in a template: clang types the dereference as dependent;
                # the element is the (bound) pointee.
                pt = self.resolve(e.operand.ctype)
                if pt.kind == "pointer" and pt.pointee is not None and self.resolve(pt.pointee).size > 0:
                    t = self.resolve(pt.pointee)
            return (p, t)
        if isinstance(e, ir.Member):
            t = self.resolve(e.ctype)
            if e.arrow:
                p = self.eval(e.base)
                pt = self.resolve(e.base.ctype)
                offset = self.field_offset(e, pt.pointee if pt.kind == "pointer" else None)
                if t.kind == "template" and offset >= 0 and pt.pointee is not None:
                    t = self.field_type(e, pt.pointee) or t
                if p.data is None or offset < 0 or not p.space:
                    why = why_of(p) if p.data is None else self.type_why(pt, e.ctype, e.field)
                    return (Val(None, p.deps, p.space, p.root, loads=p.loads, why=why), t)
                return (Val(p.data + offset, p.deps, p.space, p.root), t)
            inner = self.lvalue(e.base)
            if inner is None:
                return None
            addr, bt = inner
            offset = self.field_offset(e, bt)
            if t.kind == "template":
                t = self.field_type(e, bt) or t
            if addr.data is None or offset < 0:
                why = why_of(addr) if addr.data is None else self.type_why(bt, e.ctype, e.field)
                return (Val(None, addr.deps, addr.space, addr.root, loads=addr.loads, why=why), t)
            return (Val(addr.data + offset, addr.deps, addr.space, addr.root), t)
        if isinstance(e, ir.Ref):
            t = self.resolve(e.ctype)
            if t.kind == "array":
                v = self.eval_ref(e)
                if v.space and v.space != "local":
                    return (v, t)
            return None
        return None

    def field_offset(self, e: ir.Member, record: ir.CType | None) -> int:
        """The member's byte offset: from clang, or from the bound struct when the record is a template type."""
        if e.offset >= 0:
            return e.offset
        if record is None:
            return -1
        f = self.resolve(record).field(e.field)
        return f.offset if f is not None else -1

    def field_type(self, e: ir.Member, record: ir.CType) -> ir.CType | None:
        f = self.resolve(record).field(e.field)
        return f.ctype if f is not None else None

    def eval_memory_read(self, e: ir.Expr) -> Val:
        if isinstance(e, ir.Member):
            bm = self.builtin_member(e.base, e.field)
            if bm is not None:
                return bm
            if not e.arrow:
                # Member of a value (a struct parameter, a local struct): look it up.
                base_v = self.eval_struct_value(e.base)
                if base_v is not None:
                    fv = base_v.field(e.field)
                    return fv if fv is not None else unknown(base_v, why=("unmodelled", f"member `{e.field}`"))
        lv = self.lvalue(e)
        if lv is None:
            if isinstance(e, ir.Member):
                # A member of a value that is not in memory (`make_float4(...).x`): still evaluate the
                # value, for the accesses in it.
                return unknown(self.eval(e.base), why=("unmodelled", f"member `{e.field}`"))
            if isinstance(e, ir.Index):
                self.eval(e.index)
            return UNKNOWN
        addr, t = lv
        if t.kind == "array":
            return addr  # an array lvalue decays to its address: no access
        self.access(e, addr, t, "load")
        if addr.space == "local":
            tracked = self.tracked_array(e)
            if tracked is not None:
                return self.local_arrays.load(tracked[0], self.eval(tracked[1]), self.mask)
            return Val(None, addr.deps, why=("unmodelled", "a value kept in a thread-local array"))
        return self.loaded(e, addr, t)

    def eval_struct_value(self, e: ir.Expr) -> Val | None:
        inner = e.operand if isinstance(e, ir.Cast) and not e.explicit else e
        if isinstance(inner, ir.Call):
            v = self.eval(inner)  # `block.group_index().x`, `make_int2(a, b).y`
            return v if v.fields else None
        if isinstance(inner, ir.Ref) and inner.kind in ("param", "local"):
            v = self.frame.env.get(inner.name)
            if v is not None and v.fields:
                return v
            if v is not None:
                return v
        if isinstance(inner, ir.Ref) and inner.kind in ("global", "constant") and inner.name not in self.frame.env:
            decl = self.tu.globals.get(inner.name)
            if decl is not None and not decl.shared:
                return self.global_value(inner.name, self.resolve(inner.ctype))
        if isinstance(inner, ir.Member) and not inner.arrow:
            # A struct held in a field of a struct value (`data.deviceRank` in a method, `data` a
            # member of `this` bound to a struct parameter): the field's own value, when it has fields.
            outer = self.eval_struct_value(inner.base)
            sub = outer.field(inner.field) if outer is not None else None
            return sub if sub is not None and sub.fields else None
        return None

    def global_value(self, name: str, t: ir.CType) -> Val | None:
        """A `__constant__`/`__device__` integer or struct the kernel does not write: one runtime value
        for every thread, sampled as a kernel parameter of the same type is (eval/uniform_data.py)."""
        if name in self.global_values:
            return self.global_values[name]
        if t.kind not in ("int", "struct") or (t.kind == "int" and t.size < 4) or \
                (t.kind == "struct" and not t.fields) or uniform_data.writes_global(self.fn, name, self.tu):
            return None
        v = self.param_value(ir.Param(name, t), 1000 + len(self.global_values))
        if v.data is None and not v.fields:
            return None
        self.global_values[name] = v
        return v

    def access(self, e: ir.Expr, addr: Val, t: ir.CType, kind: str, span: ir.Span | None = None,
               text: str = "") -> None:
        if kind != "load" and addr.space != "local":
            self.recent_loads.forget()  # a store may alias anything loaded before it
            self.uniform_loads.forget(addr.root if addr.data is not None else "")
        key = self.site_key(span or e.span, cov.ACCESS)
        if addr.space == "local" or (not addr.space and addr.why is not None and addr.why[0] == "local"):
            self.cov.local.add(key)
            return
        if not addr.space:
            self.cov.drop(key, addr.why)  # the pointer itself is unknown
            return
        width = t.size
        if t.kind == "struct":
            # Whole-struct copies: vector types (8/16 bytes, naturally aligned) are one access;
            # other structs are copied field by field (one load or store instruction per scalar
            # field, as ptxas emits them), each a warp request of its own at the same site.
            if width not in (1, 2, 4, 8, 16) or (t.align and t.align < width):
                if addr.data is None:
                    self.cov.drop(key, addr.why)
                    return
                for offset, ft in _vector_chunks(t) or _scalar_fields(t):
                    shifted = Val(addr.data + offset, addr.deps, addr.space, addr.root)
                    self.access(e, shifted, ft, kind, span, text=".struct")
                return
        if addr.data is None:
            self.cov.drop(key, addr.why)
            return
        if width <= 0:
            self.cov.drop(key, self.type_why(t, e.ctype))
            return
        self.cov.hit(key)
        iters, lvars = self.loop_context()
        address = np.broadcast_to(addr.data, self.mask.shape).astype(np.int64)
        vec = 1
        if t.kind == "struct" and t.fields:
            vec = len(t.fields)
        # A struct field (`p[i].vx`) is marked so rules can tell a record stride from a plain one.
        text = text or (f".{e.field}" if isinstance(e, ir.Member) else "")
        ret = self.frames[0].ret_mask
        live = self.entry_mask & ~ret if ret is not None else self.entry_mask
        self.mem_work += self.mask.any(axis=-1)
        deps = addr.deps | frozenset(self.data_guards) if self.data_guards else addr.deps
        event = ev.MemoryAccess(span or e.span, addr.space, kind, width, address, self.mask.copy(), addr.root,
                                deps, iters, lvars, vec, text, live.copy())
        if self.recent_loads.seen(event):
            return  # the compiler reuses the register of the same load earlier in this straight-line run
        element, align, offset = self.vector_element(e, address, kind)
        if element is not None and self.recent_loads.merge(event, element, align, offset, e.field,  # type: ignore[attr-defined]
                                                           self.result.events):
            return
        n = len(self.result.events)
        self.emit(event)
        if len(self.result.events) > n:
            self.recent_loads.record(n, self.result.events[n], element, align, offset,
                                     e.field if element is not None else "")  # type: ignore[attr-defined]

    def vector_element(self, e: ir.Expr, address: np.ndarray, kind: str
                       ) -> tuple[np.ndarray | None, int, int]:
        """For a global load of a field of a naturally aligned 8/16-byte element (`p[i].x` on float2*):
        the element's address per lane, its alignment and the field's offset; (None, 0, 0) otherwise."""
        if kind != "load" or not isinstance(e, ir.Member):
            return None, 0, 0
        bt = self.resolve(e.base.ctype)
        if e.arrow:
            bt = self.resolve(bt.pointee) if bt.kind == "pointer" and bt.pointee is not None else bt
        offset = self.field_offset(e, bt)
        if bt.kind != "struct" or offset < 0 or bt.size not in (8, 16) or bt.align != bt.size:
            return None, 0, 0
        return address - offset, bt.align, offset

    def store(self, target: ir.Expr, v: Val, span: ir.Span) -> None:
        inner = target
        while isinstance(inner, ir.Cast) and not inner.explicit:
            inner = inner.operand
        if isinstance(inner, ir.Ref) and inner.name in self.shared_scalars and inner.name not in self.frame.env:
            self.shared_scalars.write(inner.name, v, self.mask)
            return
        if isinstance(inner, ir.Ref) and inner.kind in ("local", "param"):
            self.assign_var(inner.name, v)
            return
        if isinstance(inner, ir.Member) and not inner.arrow:
            path = [inner.field]  # `a.b.c = v`: the fields from the variable down, ["b", "c"]
            base = _strip_implicit(inner.base)
            while isinstance(base, ir.Member) and not base.arrow:
                path.insert(0, base.field)
                base = _strip_implicit(base.base)
            if isinstance(base, ir.Ref) and base.kind in ("local", "param"):
                old = self.frame.env.get(base.name)
                if old is not None and old.space == "":
                    self.frame.env[base.name] = _with_field(old, path, v)
                    return
        lv = self.lvalue(inner)
        if lv is None:
            return
        addr, t = lv
        self.access(inner, addr, t, "store")
        if addr.space == "local":
            name = local_arrays.subscripted_name(inner)
            key = (id(self.frame), name)
            if name is not None and key in self.local_arrays:
                tracked = self.tracked_array(inner)
                if tracked is not None:
                    self.local_arrays.store(key, self.eval(tracked[1]), v, self.mask, self.merge)
                else:
                    self.local_arrays.forget([key])

    def assign_var(self, name: str, v: Val) -> None:
        env = self.frame.env
        old = env.get(name)
        dm = self.frame.decl_mask.get(name)
        if old is None or dm is None or np.array_equal(self.mask, dm) or not (dm & ~self.mask).any():
            env[name] = v
            return
        env[name] = self.merge(old, v, self.mask)

    def loaded(self, e: ir.Expr, addr: Val, t: ir.CType | None = None) -> Val:
        """The value a load returns: unknown, tagged with the load when lanes of a warp read it at
        different addresses (or through addresses computed from such data) — KL305 follows the tag.
        An integer every active lane reads at one address is a sampled runtime value instead
        (eval/uniform_data.py)."""
        loads = addr.loads
        if addr.space in ("global", "shared", "constant") and (loads or self.lane_varying(addr)):
            sp = e.span
            loads = loads | {(sp.line, sp.column, sp.end_line, sp.end_column, addr.root)}
        uniform = addr.data is not None and not loads and not self.lane_varying(addr)
        if uniform and t is not None and self.mask.any() and (
                uniform_data.eligible(t, addr.space) or uniform_data.eligible_pointer(self.resolve(t), addr.space)):
            sampled = self.sample_load(e, addr, pointer=t.kind == "pointer")
            if sampled is not None:
                return sampled
        return Val(None, addr.deps, loads=loads, why=("loaded", ""), uniform=uniform)

    def sample_load(self, e: ir.Expr, addr: Val, pointer: bool = False) -> Val | None:
        """The sampled value of a uniform load at `addr` (eval/uniform_data.py), named by its site."""
        span, helper = e.span, ""
        k = len(self.call_sites)
        while k > 0 and not self.call_sites[k - 1][3]:
            k -= 1  # inside a helper from another file: name the load by the call in this file
        if k < len(self.call_sites):
            span, helper = self.call_sites[k][0], self.call_sites[k][1]
        assert addr.data is not None
        a = np.broadcast_to(addr.data, self.mask.shape)
        if a.shape[-1] > 1:
            # The address must not depend on the lane at all, not just agree among the lanes active
            # here: `if (lane == k) v = p[lane];` has one active lane, but p[lane] is per-lane data.
            big = np.iinfo(np.int64).max
            live = self.entry_mask
            if np.any(np.where(live, a, -big).max(axis=-1) > np.where(live, a, big).min(axis=-1)):
                return None
        # The address of the first active lane of each warp: the one every active lane shares.
        first = np.where(self.mask.any(axis=-1), a[np.arange(a.shape[0])[:, None], np.arange(a.shape[1])[None, :],
                                                   self.mask.argmax(axis=-1)], -1)
        if pointer:
            ptr = self.uniform_loads.pointer(uniform_data.PTR_PREFIX + uniform_data.symbol(span, helper)[
                len(uniform_data.PREFIX):], addr.root, first)
            if ptr is None:
                return None
            pname, slot = ptr
            self.result.load_sites[uniform_data.symbol(span, helper)] = pname
            return Val(np.full((1, 1, 1), POINTER_SPACING * slot, dtype=np.int64), frozenset([pname]),
                       space="global", root=pname)
        got = self.uniform_loads.value(uniform_data.symbol(span, helper), addr.root, first)
        if got is None:
            return None
        name, vals = got
        self.result.assumed[name] = vals
        self.result.load_sites[uniform_data.symbol(span, helper)] = name
        return Val(np.array(vals, dtype=np.int64).reshape(self.S, 1, 1), frozenset([name]))

    def lane_varying(self, v: Val) -> bool:
        """Whether the active lanes of some warp hold different values of `v` (known values only)."""
        if v.data is None or v.data.shape[-1] == 1:
            return False
        d = np.broadcast_to(v.data, self.mask.shape)
        m = self.mask
        big = np.iinfo(np.int64).max
        lo = np.where(m, d, big).min(axis=-1)
        hi = np.where(m, d, -big).max(axis=-1)
        return bool(np.any((hi > lo) & m.any(axis=-1)))

    def data_region_start(self, s: ir.Stmt, c: Val,
                          before: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[object, ...] | None:
        """Enter code under a condition decided by lane-varying data: its accesses are evaluated for
        every lane that reaches it, and say so (KernelResult.assumptions renders the guard)."""
        if not c.loads:
            return None
        self.data_guards.append(f"?data:{s.span.line}")
        w0 = before[0] if before is not None else self.warp_work.copy()
        return (w0, self.lane_work.copy(), self.mem_work.copy(), self.loop_context())

    def data_region_end(self, start: tuple[object, ...] | None, s: ir.Stmt, kind: str, c: Val,
                        reached: np.ndarray, has_loop: bool, exit_kind: str, search: bool = False,
                        common_work: np.ndarray | None = None, role: str = "") -> None:
        if start is None:
            return
        self.data_guards.pop()
        w0, _l0, m0, (iters, lvars) = start
        self.emit(ev.DataBranch(
            s.span, kind, reached.copy(), tuple(sorted(c.loads)), c.deps, iters, lvars,  # type: ignore[arg-type]
            work=self.warp_work - w0, memory=self.mem_work - m0, has_loop=has_loop,  # type: ignore[operator]
            exit=exit_kind, work_before=self.warp_work.copy() if exit_kind else None,
            memory_before=self.mem_work.copy() if exit_kind else None, search=search,
            common_work=common_work, exceptional=self.exceptional_sides[-1] if self.exceptional_sides else 0,
            role=role))

    def merge(self, old: Val, new: Val, mask: np.ndarray) -> Val:
        if old is new:
            return new
        if old.fields and new.fields and old.data is None and new.data is None:
            # A struct value (an object a method wrote back in a loop, `peer_group`): field by field;
            # a field only one side knows is unknown after the merge (left out).
            names = dict.fromkeys([k for k, _ in old.fields] + [k for k, _ in new.fields])
            merged = []
            for k in names:
                a, b = old.field(k), new.field(k)
                if a is not None and b is not None:
                    merged.append((k, self.merge(a, b, mask)))
            return Val(None, old.deps | new.deps, fields=tuple(merged))
        if old.data is None or new.data is None:
            if old.uninit and new.data is not None:
                # `int x; if (c) x = a; else x = b;`: lanes outside `mask` have no value yet, and
                # reading one before assigning it is undefined, so the new value stands for all.
                return new
            # Loaded data in the other lanes: the merged value is unknown.
            return Val(None, old.deps | new.deps, new.space or old.space, new.root or old.root,
                       loads=old.loads | new.loads, why=why_of(old, new))
        is_float = old.is_float or new.is_float
        data = np.where(mask, new.data, old.data)
        root = new.root if new.root == old.root else ""
        return Val(data, old.deps | new.deps, new.space or old.space, root, is_float=is_float)

    # --- calls ---------------------------------------------------------------------------------------

    def eval_call(self, e: ir.Call) -> Val:
        name = e.name
        if name == "__kernlint_assert" and len(e.args) == 1:
            # Release builds (-DNDEBUG) drop asserts: their condition is read, never reported on.
            n_events = len(self.result.events)
            c = self.eval(e.args[0])
            for builtin, dim, other in asserted_shape.pinned_sides(e.args[0]):
                ov = self.eval(other)  # what the assert asks the launch for (eval/asserted_shape.py)
                vals = (np.unique(np.asarray(ov.data), return_index=True)[0]
                        if ov.data is not None and not ov.deps else ())
                if len(vals) == 1:
                    self.result.pins.setdefault((builtin, dim), (int(vals[0]), e.span.line))
            del self.result.events[n_events:]
            if (c.data is not None and not self.result.contradiction and self.mask.any()
                    and not (np.broadcast_to(c.data != 0, self.mask.shape) & self.mask).any()):
                self.result.contradiction = f"the assert at line {e.span.line} fails for every thread that reaches it"
            return UNKNOWN
        cg = coop_groups.eval_call(self, e)
        if cg is not None:
            if cg.data is None and cg.why is None and not cg.fields:
                return dataclasses.replace(cg, why=("call", name))
            return cg
        if name in _BARRIERS or (name == "sync" and e.receiver is not None) or name == "sync" and e.args:
            for a in e.args:
                self.eval(a)
            self.barrier(e, name, "block", None)
            return Val(None, why=("call", name), uniform=True)  # a block-wide result
        if name in ("__syncwarp",) or (name.endswith("_sync") and name.startswith("__")):
            args = [self.eval(a) for a in e.args]
            member = None
            if args and args[0].data is not None and np.all(args[0].data == args[0].data.flat[0]):
                member = int(args[0].data.flat[0]) & 0xFFFFFFFF
            elif not args and name == "__syncwarp":
                member = 0xFFFFFFFF
            self.barrier(e, name, "warp", member, frozenset().union(*[a.deps for a in args]) if args else frozenset())
            return Val(None, why=("call", name), uniform=name in ("__ballot_sync", "__any_sync", "__all_sync"))
        if e.receiver is None and name in ("min", "max", "umin", "umax", "fminf", "fmaxf", "fmin", "fmax", "__mul24",
                                           "__umul24", "abs", "llabs"):
            args = [self.eval(a) for a in e.args]
            if any(a.data is None for a in args):
                return unknown(*args)
            deps = frozenset().union(*[a.deps for a in args])
            is_float = any(a.is_float for a in args)
            if name in ("min", "umin", "fminf", "fmin") and len(args) == 2:
                return Val(np.minimum(args[0].data, args[1].data), deps, is_float=is_float)
            if name in ("max", "umax", "fmaxf", "fmax") and len(args) == 2:
                return Val(np.maximum(args[0].data, args[1].data), deps, is_float=is_float)
            if name in ("__mul24", "__umul24") and len(args) == 2:
                return Val(args[0].data * args[1].data, deps)
            if name in ("abs", "llabs") and len(args) == 1:
                return Val(np.abs(args[0].data), deps, is_float=is_float)
            return unknown(*args)
        if name in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv") and e.args:
            p = self.eval(e.args[0])
            pt = self.resolve(e.args[0].ctype)
            if pt.kind == "pointer" and pt.pointee is not None:
                self.access(e, p, self.resolve(pt.pointee), "load")
                return self.loaded(e, p, self.resolve(pt.pointee))
            return self.loaded(e, p)
        if name in ("__stcg", "__stcs", "__stwt", "__stwb") and len(e.args) >= 2:
            p = self.eval(e.args[0])
            self.eval(e.args[1])
            pt = self.resolve(e.args[0].ctype)
            if pt.kind == "pointer" and pt.pointee is not None:
                self.access(e, p, self.resolve(pt.pointee), "store")
            return UNKNOWN
        if name == "__builtin_assume_aligned" and e.args:
            v = self.eval(e.args[0])  # the pointer itself (the alignment is a promise to the compiler)
            for a in e.args[1:]:
                self.eval(a)
            return v
        if name == "operator=" and e.receiver is None and len(e.args) >= 2:
            # A struct assignment (`v[t] = in[i]` on float4) is one store of the whole value; the
            # front end lists the callee between the operands.
            v = self.eval(e.args[-1])
            self.store(e.args[0], v, e.span)
            return v
        callee = self.find_callee(e)
        if callee is not None and len(self.frames) <= MAX_INLINE_DEPTH:
            return self.inline(callee, e)
        if callee is None and e.receiver is None:
            vec = self.make_vector(e)
            if vec is not None:
                return vec
        if callee is None and e.receiver is None:
            if atomics.is_atomic(name) and e.args:
                return atomics.eval_atomic(self, e)
            if builtins_math.is_pure(name):
                margs = [self.eval(a) for a in e.args]
                r = builtins_math.fold(name, margs)
                if r is None or (r.data is None and r.why is None):
                    return unknown(*margs, why=("call", name))  # (the why says what made it unknown)
                return r
        if e.receiver is not None:
            self.eval(e.receiver)
        args = [self.eval(a) for a in e.args]
        if not _PURE_CALL.match(name):
            self.recent_loads.forget()  # a call the evaluator does not see into may write memory
            self.uniform_loads.forget("")
        if callee is not None:
            # Not inlined (too deep): the accesses and branches in its body are not evaluated.
            outer = self.call_sites[0][0] if self.call_sites else e.span
            for key in cov.sites_of(callee.body, self.tu, self.cov_shared, outer, len(self.frames) + 1):
                self.cov.drop(key, ("depth", callee.name))
            return Val(None, why=("depth", callee.name))
        missing = [p.ctype.name for p in self.fn.params if p.ctype.kind == "unknown" and p.ctype.name]
        if missing and name.startswith("operator") and not e.target:
            # An operator clang could not resolve, in a kernel whose parameter types are names from a
            # missing header (`a[i]` on `cufftComplex *a`): those names are why.
            return unknown(*args, why=("missing_type", missing[0]), uniform=False)
        return unknown(*args, why=("call", name), uniform=False)

    def make_vector(self, e: ir.Call) -> Val | None:
        """`make_float3(a, b, c)` (a CUDA vector constructor, one scalar per component): a value whose
        fields are the arguments converted to the component type; None for any other call."""
        m = _MAKE_VECTOR.fullmatch(e.name)
        t = self.resolve(e.ctype)
        if m is None or int(m.group(1)) != len(e.args) or t.kind != "struct" \
                or any(self.resolve(a.ctype).kind not in ("int", "float", "bool") for a in e.args):
            return None
        fields = []
        for f, a in zip("xyzw", e.args):
            ft = t.field(f)
            v = self.eval(a)
            fields.append((f, self.convert(v, ft.ctype) if ft is not None else v))
        return Val(None, fields=tuple(fields))

    def find_callee(self, e: ir.Call) -> ir.Function | None:
        """The device function a call reaches: by clang's reference, else by name and arity.

        libclang gives no definition for an implicit specialization of a function template
        (`ld(p, i)` calling `template <class T> T ld(const T*, int)`), so fall back to the one
        device function of that name and parameter count in the file, when it is unambiguous.
        """
        fn = cov.find_callee(self.tu, e)
        if fn is None and e.receiver is not None and cov.target_function(self.tu, e) is None:
            return self.find_method(e)
        return fn

    def returned_element_type(self, call: ir.Call) -> ir.CType | None:
        """The element type behind a reference-returning method called in a template (`sdata[i]` with
        `T& operator[]`): the call's own type is dependent, the bound specialization's is not."""
        fn = self.find_callee(call)
        if fn is None or fn.body is None:
            return None
        for n in ir.walk(fn.body):
            if isinstance(n, ir.Return) and isinstance(n.value, ir.Unary) and n.value.op == "&":
                t = self.resolve(n.value.operand.ctype)
                if t.size > 0:
                    return t
        return None

    def find_method(self, e: ir.Call) -> ir.Function | None:
        """A member called on an object of a dependent type (`smem.getPointer()` on `SharedMemory<T>`):
        the method of the specialization for the bound arguments, else of the class template."""
        assert e.receiver is not None
        t = e.receiver.ctype
        if t.kind == "reference" and t.pointee is not None:
            t = t.pointee
        name = " ".join(t.name.replace("const ", "").split())
        if "<" not in name:
            return None
        base, _, rest = name.partition("<")
        args = [" ".join(self.concrete_argument(a.strip()).split())
                for a in dependent_types.split_args(rest[:rest.rfind(">")] if ">" in rest else rest)]
        for owner in (f"{base}<{', '.join(args)}>", base):
            matches = [f for f in self.tu.functions.values() if f.name == f"{owner}::{e.name}"
                       and len(f.params) == len(e.args) and f.body is not None]
            if len(matches) == 1:
                return matches[0]
        return None

    def barrier(self, e: ir.Call, name: str, scope: str, member: int | None,
                deps: frozenset[str] = frozenset()) -> None:
        live = self.entry_mask & ~self.frames[0].ret_mask if self.frames[0].ret_mask is not None else self.entry_mask
        iters, _ = self.loop_context()
        self.recent_loads.forget()
        self.emit(ev.Barrier(e.span, name, scope, self.mask.copy(), live.copy(), member, deps, iters))

    def note_shared_ref(self, frame: Frame, param: str, arg: ir.Expr) -> None:
        """Remember that reference parameter `param` of the callee's `frame` names the caller's
        `__shared__` scalar `arg` (directly, or through the caller's own such parameter)."""
        target = _strip_implicit(arg)
        if not isinstance(target, ir.Ref):
            return
        if target.name in self.frame.shared_refs:
            frame.shared_refs[param] = self.frame.shared_refs[target.name]
        elif target.name in self.shared_scalars and target.name not in self.frame.env:
            frame.shared_refs[param] = target.name

    def ref_target(self, arg: ir.Expr) -> ir.Expr | None:
        """The variable an argument names when a reference parameter can alias it (a local, a
        parameter, a `__shared__` scalar), else None."""
        inner = arg
        while isinstance(inner, ir.Cast) and not inner.explicit:
            inner = inner.operand
        if isinstance(inner, ir.Ref) and (inner.kind in ("local", "param") and inner.name in self.frame.env
                                          or inner.name in self.shared_scalars and inner.name not in self.frame.env):
            return inner
        return None

    def inline(self, callee: ir.Function, e: ir.Call) -> Val:
        method = "::" in callee.name
        this = self.eval(e.receiver) if e.receiver is not None else Val(None)
        args = [self.eval(a) for a in e.args]
        frame = Frame()
        if method:
            # The object a method runs on: its known fields are `this`'s (written back afterwards).
            frame.env["this"] = this if this.space == "" else Val(None)
            frame.decl_mask["this"] = self.mask.copy()
        frame.ret_mask = np.zeros_like(self.mask)
        saved_bindings = self.bindings
        write_back: list[tuple[str, ir.Expr]] = []
        for i, p in enumerate(callee.params):
            v = args[i] if i < len(args) else UNKNOWN
            t = self.resolve(p.ctype)
            if t.kind in ("int", "bool", "float"):
                v = self.convert(v, t)
            if t.kind == "reference" and not v.field("__cg"):
                pointee = self.resolve(t.pointee) if t.pointee is not None else None
                if pointee is not None and (pointee.const or t.name.startswith("const ")):
                    # A const reference reads like a value (the callee cannot write through it).
                    if pointee.kind in ("int", "bool", "float"):
                        v = self.convert(v, pointee)
                elif i < len(e.args) and (lv := _local_lvalue(e.args[i])) is not None \
                        and sum(_local_lvalue(a) == lv for a in e.args) == 1:
                    # A caller's variable (or a member of one) bound to a reference: copied in and, on
                    # return, out (the same as a reference: nothing else can name a local).
                    write_back.append((p.name, e.args[i]))
                    self.note_shared_ref(frame, p.name, e.args[i])
                elif i < len(e.args) and self.ref_target(e.args[i]) is not None:
                    # A `__shared__` scalar passed by reference: copied in and written back the same way.
                    target = self.ref_target(e.args[i])
                    write_back.append((p.name, target))  # type: ignore[arg-type]
                    self.note_shared_ref(frame, p.name, target)  # type: ignore[arg-type]
                else:
                    # (a cooperative group's handle is immutable: passed by reference it is the same group)
                    v = Val(None, why=("unmodelled", f"reference parameter `{p.name}` of {callee.name}()"))
            frame.env[p.name] = v
            frame.decl_mask[p.name] = self.mask.copy()
            frame.ctype_of[p.name] = t
        # Bind the callee's template type parameters from the argument types where they are plain.
        if callee.template_params:
            new_b = dict(self.bindings)
            for i, p in enumerate(callee.params):
                if i < len(e.args):
                    pt = p.ctype
                    at = self.resolve(e.args[i].ctype)
                    if pt.kind == "pointer" and pt.pointee is not None and pt.pointee.kind == "template" \
                            and at.kind == "pointer" and at.pointee is not None:
                        new_b[pt.pointee.name] = at.pointee.name
                        # (by its type too: `unsigned short` is no name _builtin_type knows)
                        self.known_types.setdefault(at.pointee.name, self.resolve(at.pointee))
                    elif pt.kind == "template" and at.kind in ("int", "float"):
                        new_b[pt.name] = at.name
                        self.known_types.setdefault(at.name, at)
            for tp, targ in zip(callee.template_params, e.template_args):
                # An argument naming the caller's own parameter (`loadChunk<isNP2>`) is its bound value.
                new_b[tp.name] = self.concrete_argument(targ)
            self.bindings = new_b
        entry = self.mask.copy()
        saved_loops = self.loop_stack
        self.frames.append(frame)
        same_file = callee.key[callee.key.rfind("@"):].rsplit(":", 1)[0] == \
            self.fn.key[self.fn.key.rfind("@"):].rsplit(":", 1)[0]
        self.call_sites.append((e.span, callee.name, callee.span, same_file))
        try:
            assert callee.body is not None
            self.exec_block(callee.body)
        finally:
            self.call_sites.pop()
            self.frames.pop()
            self.bindings = saved_bindings
            self.loop_stack = saved_loops
        self.mask = entry
        for pname, target in write_back:
            self.store(target, frame.env.get(pname, UNKNOWN), e.span)
        rv = frame.ret_val
        if method:
            obj = frame.env.get("this", UNKNOWN)
            target = e.receiver
            while isinstance(target, ir.Cast) and not target.explicit:
                target = target.operand
            if isinstance(target, ir.Ref) and target.kind in ("local", "param") and obj.fields:
                self.assign_var(target.name, obj)  # `acc.add(v)` updated acc's fields
            if e.receiver is None and rv is None:
                return obj  # a constructor: the call's value is the object it built
        return rv if rv is not None else Val(None, why=("call", callee.name))


# `Interpreter._eval`'s dispatch: the IR expression classes are final (no subclasses), so a lookup of
# type(e) picks the same handler as the isinstance chain it short-cuts (which still handles the rest).
_EVAL_BY_TYPE: dict[type, object] = {
    ir.Lit: lambda self, e: const(e.value),
    ir.Cast: Interpreter.eval_cast,
    ir.Ref: Interpreter.eval_ref,
    ir.Binary: Interpreter.eval_binary,
    ir.Unary: Interpreter.eval_unary,
    ir.Index: Interpreter.eval_memory_read,
    ir.Member: Interpreter.eval_memory_read,
    ir.Cond: Interpreter.eval_cond,
    ir.Call: Interpreter.eval_call,
}

# Math and conversion intrinsics that read no memory and write none (a load before them can be reused).
_PURE_CALL = re.compile(r"(__)?(sqrt|rsqrt|cbrt|exp|exp2|exp10|log|log2|log10|sin|cos|tan|sincos|pow|fabs|abs|"
                        r"min|max|fmin|fmax|floor|ceil|fma|fmaf|tanh|erf|erfc|round|rint|trunc|fdividef|frcp|"
                        r"fdiv|fadd|fmul|fsub|saturate|expf|logf|powf)\w*$|make_\w+$|__(float|half|int|uint|"
                        r"double|bfloat|ll|ull)\w*$|__(float2half|half2float|shfl)\w*$")

_MAKE_VECTOR = re.compile(r"make_(?:u?char|u?short|u?int|u?long|u?longlong|float|double)([1-4])")

_BARRIERS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}

_BUILTIN_TYPES = {
    "float": ir.CType("float", 4, name="float"), "double": ir.CType("float", 8, name="double"),
    "int": ir.CType("int", 4, True, name="int"), "unsigned": ir.CType("int", 4, False, name="unsigned int"),
    "unsigned int": ir.CType("int", 4, False, name="unsigned int"), "uint32_t": ir.CType("int", 4, False, name="uint32_t"),
    "int32_t": ir.CType("int", 4, True, name="int32_t"), "long": ir.CType("int", 8, True, name="long"),
    "long long": ir.CType("int", 8, True, name="long long"), "int64_t": ir.CType("int", 8, True, name="int64_t"),
    "unsigned long long": ir.CType("int", 8, False, name="unsigned long long"),
    "short": ir.CType("int", 2, True, name="short"), "char": ir.CType("int", 1, True, name="char"),
    "unsigned char": ir.CType("int", 1, False, name="unsigned char"), "uint8_t": ir.CType("int", 1, False, name="uint8_t"),
    "int8_t": ir.CType("int", 1, True, name="int8_t"), "bool": ir.CType("bool", 1, False, name="bool"),
    "half": ir.CType("float", 2, name="half"), "__half": ir.CType("float", 2, name="__half"),
    "__nv_bfloat16": ir.CType("float", 2, name="__nv_bfloat16"), "nv_bfloat16": ir.CType("float", 2, name="nv_bfloat16"),
    "float2": ir.CType("struct", 8, name="float2", align=8, fields=(ir.Field("x", 0, ir.CType("float", 4)), ir.Field("y", 4, ir.CType("float", 4)))),
    "float4": ir.CType("struct", 16, name="float4", align=16, fields=tuple(ir.Field(n, 4 * i, ir.CType("float", 4)) for i, n in enumerate("xyzw"))),
    "int2": ir.CType("struct", 8, name="int2", align=8, fields=(ir.Field("x", 0, ir.CType("int", 4)), ir.Field("y", 4, ir.CType("int", 4)))),
    "int4": ir.CType("struct", 16, name="int4", align=16, fields=tuple(ir.Field(n, 4 * i, ir.CType("int", 4)) for i, n in enumerate("xyzw"))),
    "double2": ir.CType("struct", 16, name="double2", align=16, fields=(ir.Field("x", 0, ir.CType("float", 8)), ir.Field("y", 8, ir.CType("float", 8)))),
}


def _local_lvalue(e: ir.Expr) -> tuple[str, str] | None:
    """(variable, member) when `e` names a local variable or parameter, or a member of one held by
    value (`x`, `acc.sum`): an lvalue a reference parameter can be bound to by copy-in/copy-out."""
    while isinstance(e, ir.Cast) and not e.explicit:
        e = e.operand
    if isinstance(e, ir.Ref) and e.kind in ("local", "param") and e.ctype.kind in ("int", "float", "bool", "struct",
                                                                                  "pointer"):
        return e.name, ""
    if isinstance(e, ir.Member) and not e.arrow and e.ctype.kind in ("int", "float", "bool", "pointer"):
        base = e.base
        while isinstance(base, ir.Cast) and not base.explicit:
            base = base.operand
        if isinstance(base, ir.Ref) and base.kind in ("local", "param") and base.ctype.kind == "struct":
            return base.name, e.field
    return None


def _sampled_name(e: ir.Expr) -> str | None:
    """The name a sampled runtime value goes by: a parameter (`n`), or a field of a struct parameter
    or of a `__constant__`/`__device__` struct (`d_common.frame_no`, as `param_value` names it)."""
    while isinstance(e, ir.Cast):
        e = e.operand
    if isinstance(e, ir.Ref) and e.kind == "param":
        return e.name
    if isinstance(e, ir.Member) and not e.arrow:
        base = e.base
        while isinstance(base, ir.Cast):
            base = base.operand
        if isinstance(base, ir.Ref) and base.kind in ("param", "global", "constant"):
            return f"{base.name}.{e.field}"
    return None


def _with_field(old: Val, path: list[str], v: Val) -> Val:
    """The struct value `old` with the field at `path` (`["b", "c"]` for `.b.c`) set to `v`; a struct
    field along the path that held no known fields gets only this one (its others stay unknown)."""
    fields = dict(old.fields)
    if len(path) == 1:
        fields[path[0]] = v
    else:
        sub = fields.get(path[0])
        fields[path[0]] = _with_field(sub if sub is not None and sub.space == "" else Val(None), path[1:], v)
    return Val(None, old.deps, fields=tuple(fields.items()))


def _template_param_name(name: str, fn: ir.Function) -> str:
    """Map clang's spelling of a dependent type (`type-parameter-0-1`) to the parameter's name."""
    m = re.fullmatch(r"type-parameter-0-(\d+)", name)
    if m and int(m.group(1)) < len(fn.template_params):
        return fn.template_params[int(m.group(1))].name
    return name


def _fold_dim(text: str, values: dict[str, str]) -> int:
    """Evaluate an array dimension such as `TILE + 1` with bound template arguments; 0 when unknown."""
    expr = re.sub(r"\b([A-Za-z_]\w*)\b", lambda m: values.get(m.group(1), m.group(1)), text)
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)
    if not re.fullmatch(r"[0-9\s+\-*/%()<>]*[0-9][0-9\s+\-*/%()<>]*", expr):
        return 0
    try:
        value = eval(expr.replace("/", "//"), {"__builtins__": {}}, {})  # noqa: S307 - digits and operators only
    except (SyntaxError, ZeroDivisionError, TypeError, ValueError):
        return 0
    return int(value) if isinstance(value, int) and value > 0 else 0


def _subtype_map(old: ir.CType, new: ir.CType) -> dict[ir.CType, ir.CType]:
    """Pair the nested array types of `old` with those of `new` (same depth), outermost first."""
    out: dict[ir.CType, ir.CType] = {}
    while old.kind == "array" and new.kind == "array" and old.pointee is not None and new.pointee is not None:
        out[old] = new
        old, new = old.pointee, new.pointee
    return out


def _vector_chunks(t: ir.CType) -> list[tuple[int, ir.CType]]:
    """The 16-byte pieces a whole copy of a wide, 16-byte-aligned struct of one scalar type moves.

    A struct over 16 bytes whose fields are one scalar type back to back (no padding) and whose
    alignment is at least 16 (`double4`, `longlong4`, `struct __align__(16) { float v[8]; }`) is
    copied in 16-byte vector instructions, not one per field: nvcc 13 for sm_80 emits two
    `ld.global.nc.v4.u32` and two `st.global.v4.u32` for `o[i] = a[i]` on `double4*` (checked in
    PTX). 16 bytes is the widest vector access before sm_100. Empty when the struct is not of that
    shape (it is then copied field by field, as a struct aligned to 8 is)."""
    if t.align < 16 or t.size <= 16 or t.size % 16:
        return []
    fields = _scalar_fields(t)
    if not fields:
        return []
    size = fields[0][1].size
    kind = fields[0][1].kind
    if size <= 0 or 16 % size or any(ft.kind not in ("int", "float") or ft.kind != kind or ft.size != size
                                     or off != k * size for k, (off, ft) in enumerate(fields)):
        return []
    if len(fields) * size != t.size:
        return []
    per = 16 // size
    return [(base, ir.CType("struct", size=16, align=16, name=f"{t.name} (16-byte piece)",
                            fields=tuple(ir.Field(f"[{k}]", k * size, fields[0][1]) for k in range(per))))
            for base in range(0, t.size, 16)]


def _scalar_fields(t: ir.CType, base: int = 0, depth: int = 0) -> list[tuple[int, ir.CType]]:
    """(offset, type) of every scalar (or naturally aligned vector) field of a struct, flattened."""
    out: list[tuple[int, ir.CType]] = []
    if depth > 3:
        return out
    for f in t.fields:
        if f.offset < 0 or f.ctype.size <= 0:
            continue
        ft = f.ctype
        if ft.kind == "struct" and (ft.size not in (1, 2, 4, 8, 16) or (ft.align and ft.align < ft.size)):
            out.extend(_scalar_fields(ft, base + f.offset, depth + 1))
        elif ft.kind == "array" and ft.pointee is not None and ft.count and ft.pointee.size > 0:
            for i in range(min(ft.count, 16)):
                out.append((base + f.offset + i * ft.pointee.size, ft.pointee))
        elif ft.kind in ("int", "float", "bool", "pointer", "struct"):
            out.append((base + f.offset, ft))
    return out


def _pointer_chain_type(e: ir.Expr, resolve) -> ir.CType | None:  # type: ignore[no-untyped-def]
    """The pointer type a `p + a + b` chain starts from, when clang left the sums dependent."""
    for _ in range(16):
        while isinstance(e, ir.Cast) and not e.explicit:
            e = e.operand
        t = resolve(e.ctype)
        if t.kind in ("pointer", "array") and t.pointee is not None and resolve(t.pointee).size > 0:
            return t
        if not (isinstance(e, ir.Binary) and e.op in ("+", "-")):
            return None
        rt = resolve(e.rhs.ctype)
        if e.op == "+" and rt.kind in ("pointer", "array") and rt.pointee is not None:
            e = e.rhs
        else:
            e = e.lhs
    return None


def _builtin_type(name: str) -> ir.CType | None:
    return _BUILTIN_TYPES.get(" ".join(name.replace("const", "").split()))


def _strip_implicit(e: ir.Expr) -> ir.Expr:
    while isinstance(e, ir.Cast) and not e.explicit:
        e = e.operand
    return e


def _target_name(e: ir.Expr) -> str | None:
    while isinstance(e, ir.Cast):
        e = e.operand
    if isinstance(e, ir.Ref):
        return e.name
    if isinstance(e, ir.Member) and not e.arrow:
        return _target_name(e.base)
    return None


def _memo_by_identity(fn):  # type: ignore[no-untyped-def]
    """Cache a pure function of an IR node by the node's identity.

    IR nodes are immutable, and the cache holds a reference to each node it keys, so an id is
    never reused while cached; the static questions asked at every branch and loop iteration
    (what does this body assign, how costly is it) are then answered once per node.
    """
    cache: dict[int, tuple[object, object]] = {}

    def wrapper(node):  # type: ignore[no-untyped-def]
        hit = cache.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        value = fn(node)
        if len(cache) > 20000:
            cache.clear()
        cache[id(node)] = (node, value)
        return value

    return wrapper


@_memo_by_identity
def _assigned_names_expr(e: object) -> frozenset[str]:
    out: set[str] = set()
    for n in ir.walk(e):
        if isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">="):
            t = _target_name(n.lhs)
            if t:
                out.add(t)
        elif isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--"):
            t = _target_name(n.operand)
            if t:
                out.add(t)
    return frozenset(out)


def _assigned_names(s: object) -> frozenset[str]:
    return _assigned_names_expr(s)


def _ops(e: object) -> int:
    """Operations in an expression (the instruction proxy the divergence rules weigh work by): each
    arithmetic or logical operator, memory access, call and `?:` counts one; plain assignments,
    casts, names and literals count nothing."""
    if e is None:
        return 0
    return _expr_ops(e)


@_memo_by_identity
def _expr_ops(e: object) -> int:
    total = 0
    for n in ir.walk(e):
        if isinstance(n, ir.Binary):
            total += n.op not in ("=", ",")
        elif isinstance(n, ir.Unary):
            total += n.op != "&"
        elif isinstance(n, ir.Member):
            total += bool(n.arrow)
        elif isinstance(n, (ir.Index, ir.Call, ir.Cond)):
            total += 1
    return total


@_memo_by_identity
def _own_ops(s: object) -> int:
    """Operations a statement issues itself (at least one); nested statements are charged when they run,
    a loop's condition and step once per iteration (exec_loop)."""
    if isinstance(s, (ir.ExprStmt,)):
        return max(1, _ops(s.expr))
    if isinstance(s, ir.VarDecl):
        return max(1, _ops(s.init))
    if isinstance(s, ir.Return):
        return max(1, _ops(s.value))
    if isinstance(s, (ir.If, ir.Switch)):
        return max(1, _ops(s.cond))
    return 1


@_memo_by_identity
def _has_real_loop(s: object) -> bool:
    """A loop other than `do { } while (0)` (the statement-macro idiom) under `s`."""
    for n in ir.walk(s):
        if isinstance(n, (ir.For, ir.While)):
            c = n.cond
            while isinstance(c, ir.Cast):
                c = c.operand
            if not (isinstance(n, ir.While) and n.do_while and isinstance(c, ir.Lit) and not c.value):
                return True
    return False


def _has_exit(s: object) -> bool:
    """Whether a `return`, `break` or `continue` appears anywhere in `s`."""
    return s is not None and any(isinstance(n, (ir.Return, ir.Break, ir.Continue)) for n in ir.walk(s))


def _exit_kind(s: object) -> str:
    """'return', 'break' or 'continue' when a branch side ends by leaving; '' otherwise."""
    while isinstance(s, ir.Block) and s.body:
        s = s.body[-1]
    if isinstance(s, ir.Return):
        return "return"
    if isinstance(s, ir.Break):
        return "break"
    if isinstance(s, ir.Continue):
        return "continue"
    return ""


@_memo_by_identity
def _stmt_cost(s: object) -> int:
    """A rough instruction proxy: expression nodes in the statement, loops weighted by 8."""
    if s is None:
        return 0
    total = 0
    for n in ir.walk(s):
        if isinstance(n, (ir.Binary, ir.Unary, ir.Index, ir.Call, ir.Cond)):
            total += 1
        elif isinstance(n, (ir.For, ir.While)):
            total += 8
    return total


@_memo_by_identity
def _has_loop(s: object) -> bool:
    return any(isinstance(n, (ir.For, ir.While)) for n in ir.walk(s))


def _loop_var(s: ir.Stmt) -> str | None:
    if isinstance(s, ir.For):
        if isinstance(s.init, ir.VarDecl):
            return s.init.name
        if isinstance(s.init, ir.ExprStmt):
            return _target_name(s.init.expr.lhs) if isinstance(s.init.expr, ir.Binary) else None
        if s.step is not None:
            names = _assigned_names_expr(s.step)
            if len(names) == 1:
                return next(iter(names))
    return None
