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

import os

import re
import dataclasses
from collections.abc import Callable

import numpy as np

from kernlint.base import deadline
from kernlint.ir import nodes as ir
from kernlint.eval import closures
from kernlint.eval import coverage as cov
from kernlint.eval import events as ev
from kernlint.eval import resample
from kernlint.eval.load_reuse import RecentLoads
from kernlint.eval.samples import DIVISOR_SAMPLES, FLAG_SAMPLES, ITERATION_SAMPLES, SHIFT_SAMPLES, divisor_parameters, iteration_parameters, shift_parameters
from kernlint.eval.shared_scalars import SharedScalars, is_shared_scalar_type
from kernlint.ir import dependent_types
from kernlint.eval import uniform_data
from kernlint.eval import local_arrays
from kernlint.eval.values import UNKNOWN, any_set, Frame, Val, const
from kernlint.project.launch import LaunchShape, fold_bound
from kernlint.eval.limits import WARP, MAX_LOOP_ITERATIONS, MAX_EVENTS_PER_SITE, MAX_INLINE_DEPTH, MAX_EVAL_NESTING, DEFAULT_BUDGET, CALL_KEY_OFFSET, CLOCK_EVERY, SIZE_SAMPLES, SIZE_STEP, BLOCK_SAMPLES, GRID_SAMPLE, POINTER_SPACING, _pure, BudgetExceeded, GoalUnreachable, _LoopExit, EvalResult  # noqa: F401 (re-exported)
from kernlint.eval.stmt_facts import _sampled_name, _template_param_name, _fold_dim, _subtype_map, _builtin_type, _strip_implicit
from kernlint.eval.interp_statements import StatementsMixin
from kernlint.eval.interp_expressions import ExpressionsMixin
from kernlint.eval.interp_memory import MemoryMixin
from kernlint.eval.interp_calls import CallsMixin


_INIT_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _replace(obj: ev.Event, changes: dict[str, object]) -> ev.Event:
    """`dataclasses.replace(obj, **changes)` for the event classes (every field an __init__ argument),
    without its per-call look at the class's fields: an event of inlined code is re-placed at each emit."""
    cls = type(obj)
    names = _INIT_FIELDS.get(cls, ())
    if names == ():
        fields = dataclasses.fields(obj)  # type: ignore[arg-type]
        names = _INIT_FIELDS[cls] = tuple(f.name for f in fields) if all(f.init for f in fields) else None
    if names is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    # (positionally: every field is an __init__ argument, in this order)
    return cls(*[changes[n] if n in changes else getattr(obj, n) for n in names])


class Interpreter(StatementsMixin, ExpressionsMixin, MemoryMixin, CallsMixin):
    """Evaluate one kernel under one launch shape."""

    _work_mask: np.ndarray | None = None  # the mask `_work_lanes` was counted from (see count_work)
    # The inline-asm access evaluated last, its address and its address operand's value, for the outputs
    # assigned next and the statement's next instruction (eval/asm_memory.py).
    asm_address: tuple[ir.Call | None, Val, Val] = (None, UNKNOWN, UNKNOWN)
    _any_of: tuple[np.ndarray | None, bool] = (None, False)  # (a mask, whether a lane is active): any_active

    def __init__(self, tu: ir.TranslationUnit, fn: ir.Function, shape: LaunchShape,
                 defines: dict[str, int], budget: int = DEFAULT_BUDGET,
                 shared_types: dict[str, ir.CType] | None = None,
                 sample_overrides: dict[str, tuple[int, ...]] | None = None,
                 loop_cap: int | None = None,
                 goal: frozenset[tuple[int, int, int, int]] | None = None) -> None:
        self.tu = tu
        # The regions (keys as in EvalResult.dead_regions) this evaluation is run to reach, when reaching
        # them is all it is for (engine `_reversed_resample`): it stops once none of them can be reached
        # any more (`_watch_goal`), its result then marked `goal_unreachable`. It charges the file's work
        # budget the steps it took (the same input stops at the same statement), and the helpers only the
        # rest would have called are not lowered by it.
        self.goal = goal
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
        # Per dimension: (blockIdx's samples, its deps) once read (builtin_member).
        self._block_assumed: list[tuple[tuple[int, ...], frozenset[str]] | None] = [None, None, None]
        self.mask = self.entry_mask.copy()
        self.frames: list[Frame] = []
        self.closures = closures.ClosureTable()  # lambda objects that capture by reference (eval/closures.py)
        # (call span, helper, helper span, helper in the kernel's file)
        # (call span, callee name, callee span, whether the callee is in the kernel's file, the callee's file)
        self.call_sites: list[tuple[ir.Span, str, ir.Span, bool, str]] = []
        self.loop_stack: list[dict[str, object]] = []
        self.exceptional_sides: list[int] = []  # index-validity tests whose exceptional side is running (KL305)
        self.site_counts: dict[tuple[int, int, str], int] = {}
        self.shared_next = 0
        self.shared_bases: dict[str, int] = {}
        self.param_bases: dict[str, int] = {}
        self.cost = 0
        # The cost at which `tick` must look: the next charge to the file's work budget, or one past the step
        # budget, whichever comes first (one comparison per evaluated node decides both).
        self._clock_at = min(CLOCK_EVERY, budget + 1)
        self._charged = 0  # the steps already charged to the file's work budget (`_charge`)
        self.sampled_params = 0
        self.iteration_params = iteration_parameters(fn)
        self.shift_params = shift_parameters(fn)
        self.divisor_params = divisor_parameters(fn)
        self.unresolved_lines = {ln for ln, _c, _m in fn.unresolved}
        # The first unresolved name on each line: an initializer clang dropped because of it leaves
        # the variable unknown for that reason (coverage names it).
        self.unresolved_names: dict[int, str] = {}
        self.inlined_fns: list[ir.Function] = []  # the helpers being run, innermost last (their unresolved names)
        for ln, _c, msg in fn.unresolved:
            if msg.count("'") >= 2:
                self.unresolved_names.setdefault(ln, msg.split("'")[1])
        # Operations each warp issued (a warp pays for an operation when any of its lanes runs it;
        # see `_own_ops`), the active lanes summed over them, and the memory requests among them:
        # the divergence rules weigh idle lanes against this (kernlint/checks/divergence.py).
        # (both in one array, [warp operations, lane operations], so that `_flush_work` adds them in one
        # NumPy operation: `_warp_work` and `_lane_work` are its rows)
        self._ops_work = np.zeros((2, self.S, self.W), dtype=np.int64)
        self._warp_work, self._lane_work = self._ops_work
        self._work_pending = 0  # operations charged to `_work_mask` and not added yet (count_work)
        self._mem_work = np.zeros((self.S, self.W), dtype=np.int64)
        self._mem_pending = 0  # memory requests issued under `_work_mask` and not added yet (count_work)
        # Memory accesses executed (some lane active) whose address could not be evaluated: requests
        # all the same, of unknown cost (KL305 counts them beside `mem_work`, and says so).
        self.unmeasured_requests = 0
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
        # id() of the `if`s a run left with a side no lane took (a loop may run them again).
        self.one_sided: set[int] = set()
        self.ifs_dead: dict[tuple[int, int, int, int], frozenset[str]] = {}
        self.ifs_targets: dict[tuple[int, int, int, int], dict[str, int]] = {}
        # Integers every lane of a warp loads from one address, and globals the kernel does not write:
        # sampled runtime values (eval/uniform_data.py).
        self.uniform_loads = uniform_data.UniformLoads(self.S, dict(defines), dict(sample_overrides or {}))
        self.global_values: dict[str, Val] = {}
        # Per-thread local arrays whose elements are known per lane (eval/local_arrays.py).
        self.local_arrays = local_arrays.LocalArrays()
        self._escaping: frozenset[str] | None = None
        # Integer conversions of value arrays (convert): (id(array), type kind, size, signedness, wrapped,
        # from float) -> (the array, the converted array).
        self._converted: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._single_values: dict[int, tuple[Val, int | None]] = {}  # id(value) -> (value, loop_context's view)
        self._resolved: dict[tuple[int, int, int], tuple[ir.CType, dict[str, str], ir.CType]] = {}  # (resolve)

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
                self.exec_block(self.fn.body, self._watch_goal if self.goal else None)
        except GoalUnreachable:
            self.result.goal_unreachable = True
        except BudgetExceeded as exc:
            self.result.truncated = True
            if exc.args == ("work",):
                self.result.out_of_time = True
                self.result.notes.append(
                    f"analysis stopped when {deadline.describe()} ran out; later code was not evaluated")
            else:
                self.result.notes.append(
                    f"analysis stopped after its step budget ({self.budget} steps); later code was not evaluated")
        self._charge()
        self.result.steps = self.cost
        self.result.events.append(ev.Work(self.fn.span, self.warp_work.copy(), self.lane_work.copy(),
                                          self.mem_work.copy(), flops=self.flop_lanes.copy()))
        seen = cov.sites_of(self.fn.body, self.tu, self.cov_shared) if self.fn.body is not None else []
        self.result.coverage = cov.finish(self.cov, seen, "time" if self.result.out_of_time else self.result.truncated,
                                          self.unresolved_names)
        self.result.dead_regions = {k: v for k, v in self.ifs_dead.items() if k not in self.ifs_taken}
        self.result.block_targets = {k: v for k, v in self.ifs_targets.items() if k in self.result.dead_regions}
        self.result.regions_taken = frozenset(self.ifs_taken)
        return self.result

    def _watch_goal(self, s: ir.Stmt) -> None:
        """After each statement of the kernel's body (no loop around it, no helper running): stop the
        evaluation (GoalUnreachable) when every region of `goal` was found dead (and never taken) and the
        statements left cannot note any of them again (eval/resample.py `may_note_again`). A region once
        dead and never taken again is not reached (engine `_region_ran`): whatever the rest would show,
        the evaluation's only use, reaching a goal region, is decided."""
        if self._goal_open():
            return
        body = self.fn.body
        assert body is not None
        rest = body.body[next(i for i, st in enumerate(body.body) if st is s) + 1:]
        if not resample.may_note_again(self.goal, rest, body.span):  # type: ignore[arg-type]
            raise GoalUnreachable()

    def _goal_open(self) -> bool:
        """Whether some region of `goal` was taken, or not found dead yet."""
        dead, taken = self.ifs_dead, self.ifs_taken
        return any(k not in dead or k in taken for k in self.goal)  # type: ignore[union-attr]

    def helper_watch(self, e: ir.Call, helper: ir.Block) -> Callable[[ir.Stmt], None] | None:
        """`_watch_goal` for the body of a helper the kernel's own code calls (`e`, under no loop), when a
        statement of the kernel's body is that call and nothing else (`f(a, b);`, eval/resample.py
        `call_statements`): after each statement of `helper`, what is left is the rest of the helper, then
        the kernel's statements after that one. None otherwise (no early stop in this helper)."""
        body = self.fn.body
        if not self.goal or body is None:
            return None
        i = resample.call_statements(body).get(id(e))
        if i is None:
            return None
        entered, after = body.body[i], body.body[i + 1:]

        def watch(s: ir.Stmt) -> None:
            if self._goal_open():
                return
            rest = helper.body[next(j for j, st in enumerate(helper.body) if st is s) + 1:]
            if not resample.may_note_again(self.goal, (*rest, *after), body.span, entered):  # type: ignore[arg-type]
                raise GoalUnreachable()
        return watch

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
            if t.kind == "bool":
                samples = FLAG_SAMPLES[:self.S]  # true in one sample, false in the other (eval/samples.py)
            if name in self.iteration_params:
                samples = ITERATION_SAMPLES  # a count of time steps, not a size (eval/samples.py)
            if name in self.shift_params:
                samples = SHIFT_SAMPLES  # the log2 of a size (eval/samples.py)
            if name in self.divisor_params:
                samples = DIVISOR_SAMPLES[:self.S]  # divides a size: the quotient is a size (eval/samples.py)
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

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def tick(self, n: int = 1) -> None:
        self.cost += n
        if self.cost > self.budget:
            self._charge()
            raise BudgetExceeded()
        if self.cost >= self._clock_at:
            self._clock_at = min(self.cost + CLOCK_EVERY, self.budget + 1)
            self._charge()
            if deadline.expired():
                raise BudgetExceeded("work")

    def _charge(self) -> None:
        """Charge the steps taken since the last charge to the file's work budget (kernlint/base/deadline.py)."""
        deadline.charge(self.cost - self._charged)
        self._charged = self.cost

    def resolve(self, t: ir.CType) -> ir.CType:
        """Substitute template type parameters bound for this evaluation (T -> float)."""
        kind = t.kind
        if kind == "template" or (kind == "array" or kind == "pointer") and t.pointee is not None and (
                t.pointee.kind == "template" or kind == "array" and t.size == 0):
            # A type `_resolve` may change (about 45% of the calls over the speed bench): remembered per
            # type object, bindings object and number of known types, all that it reads that changes
            # during a run (an inlined template helper binds a new dict, and restores the old one;
            # `known_types` only grows). The entry holds the type and the dict, so their ids stay theirs.
            key = (id(t), id(self.bindings), len(self.known_types))
            hit = self._resolved.get(key)
            if hit is not None and hit[0] is t and hit[1] is self.bindings:
                return hit[2]
            out = self._resolve(t)
            if len(self._resolved) >= 4096:
                self._resolved.clear()
            self._resolved[key] = (t, self.bindings, out)
            return out
        return t

    def _resolve(self, t: ir.CType) -> ir.CType:
        if t.kind == "array" and t.size == 0 and t.pointee is not None:
            return self.sized_array(t)
        if t.kind == "template":
            arg = self.bindings.get(_template_param_name(t.name, self.fn))
            if arg is not None:
                return _builtin_type(arg) or self.tu.structs.get(" ".join(arg.replace("const", "").split())) \
                    or self.known_types.get(arg) or t
            if "::" in t.name:  # `typename vec4<T>::Type` with T bound (ir/dependent_types.py)
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
        stack = self.loop_stack
        if not stack:
            return (), ()
        # (asked at every access and branch: "iter" is the int exec_loop counts, "var" a name or None)
        iters = tuple([ls["iter"] for ls in stack])  # type: ignore[misc]
        vars_: list[tuple[str, int | None]] = []
        env = self.frames[-1].env
        for ls in stack:
            name = ls["var"]
            if name is not None:
                v = env.get(name)  # type: ignore[call-overload]
                vars_.append((name, self._single_value(v) if v is not None and v.data is not None else None))  # type: ignore[arg-type]
        return iters, tuple(vars_)

    def _single_value(self, v: Val) -> int | None:
        """The one value every sample and lane of `v` holds, else None; remembered per value object (a
        loop variable is asked at every access of an iteration)."""
        hit = self._single_values.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
        d = v.data
        uv = int(d.flat[0]) if d is not None and d.size and not any_set(d != d.flat[0]) else None
        if len(self._single_values) >= 1024:
            self._single_values.clear()
        self._single_values[id(v)] = (v, uv)
        return uv

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
        rec = next((x for x in (t, t.pointee, other) if x is not None and x.kind == "struct"), None)
        if rec is not None and (rec.size == 0 or not rec.fields) and rec.name and "<" not in rec.name and "type-parameter" not in rec.name:
            # Not a template: a struct whose layout clang could not compute (a member of a type from a
            # missing header, `XMFLOAT3 position;` without DirectXMath.h). The header is what is missing.
            return ("missing_type", rec.name)
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
        changes: dict[str, object] = {"via": tuple([c[0].line for c in calls])}
        if k < len(self.call_sites):
            site, helper, _inner, _same, where = self.call_sites[k]
            changes["span"] = site
            if getattr(event, "text", None) == "":
                # The event's own line in the helper's file: the finding's line (the call) has no
                # branch or access on it, so the message names where the code is.
                inner_name, where = self.call_sites[-1][1], self.call_sites[-1][4]
                at = f"{os.path.basename(where)}:{event.span.line}" if where else f"line {event.span.line}"
                changes["text"] = (f"in {inner_name}() at {at}" if inner_name == helper
                                   else f"in {inner_name}() at {at}, reached through {helper}()")
        elif getattr(event, "text", None) == "":
            changes["text"] = f"in {self.call_sites[-1][1]}() called from line {self.call_sites[-1][0].line}"
        if not hasattr(event, "via"):
            changes.pop("via")
        return _replace(event, changes)

    def any_active(self) -> bool:
        """`self.mask.any()`, remembered per mask (masks are replaced, never written in place)."""
        m = self.mask
        if m is not self._any_of[0]:
            self._any_of = (m, any_set(m))
        return self._any_of[1]

    def count_work(self, ops: int) -> None:
        """Charge `ops` operations to every warp with an active lane (and the active lanes to lane_work).

        Masks are replaced, never written in place: the warps and lanes are counted once per mask, and
        the operations charged under one mask are summed and added when the mask changes or the totals
        are read (`warp_work`, `lane_work`)."""
        if self.mask is not self._work_mask:
            self._use_mask()
        self._work_pending += ops

    def count_request(self) -> None:
        """Charge one memory request to every warp with an active lane (`mem_work`), as count_work does."""
        if self.mask is not self._work_mask:
            self._use_mask()
        self._mem_pending += 1

    def _use_mask(self) -> None:
        self._flush_work()
        self._work_mask = self.mask
        # The ufuncs' reductions, called directly: `.any(axis=-1)` and `.sum(axis=-1)` are Python-level
        # wrappers around these same calls (bool summed as the default integer, as `.sum` does).
        # [warps with an active lane (0/1), active lanes per warp], (2, S, W): the rows are `_work_warps`
        # and `_work_lanes`, the second reduced straight into its row.
        both = np.empty((2,) + self.mask.shape[:-1], dtype=np.int64)
        np.add.reduce(self.mask, axis=-1, out=both[1])
        np.greater(both[1], 0, out=both[0])
        self._work_both = both
        self._work_warps, self._work_lanes = both

    def _flush_work(self) -> None:
        if self._work_pending:
            self._ops_work += self._work_both * self._work_pending  # (both rows: warp_work, lane_work)
            self._work_pending = 0
        if self._mem_pending:
            self._mem_work += self._work_warps * self._mem_pending
            self._mem_pending = 0

    @property
    def warp_work(self) -> np.ndarray:
        """Operations each warp issued so far (S, W): the array itself, written in place as work is counted."""
        self._flush_work()
        return self._warp_work

    @property
    def mem_work(self) -> np.ndarray:
        """Memory requests each warp issued so far (S, W)."""
        self._flush_work()
        return self._mem_work

    @property
    def lane_work(self) -> np.ndarray:
        """Active lanes summed over the operations each warp issued so far (S, W)."""
        self._flush_work()
        return self._lane_work

    def escaping_arrays(self) -> frozenset[str]:
        """Names used other than as a plain subscript anywhere in the kernel, the file's functions or the
        functions they can call: arrays by those names are not tracked (eval/local_arrays.py)."""
        if self._escaping is None:
            reach = self.tu.functions.reachable((self.fn, *self.tu.functions.in_file()))
            bodies = [self.fn.body] + [f.body for f in reach if f.body is not None]
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

    def region_noted(self, key: tuple[int, int, int, int]) -> bool:
        """Whether a dead region is noted already: its own key and, in a helper, the key of this
        call line (a helper called from several lines is dead at each of them)."""
        if key not in self.ifs_dead:
            return False
        ck = self._call_key(key)
        return ck is None or ck in self.ifs_dead

    def region_dead(self, key: tuple[int, int, int, int], params: frozenset[str]) -> None:
        self.ifs_dead.setdefault(key, params)  # the first call that noted it keeps its own key's entry
        ck = self._call_key(key)
        if ck is not None:
            self.ifs_dead[ck] = params

    def region_targets(self, key: tuple[int, int, int, int], targets: dict[str, int]) -> None:
        self.ifs_targets.setdefault(key, targets)
        ck = self._call_key(key)
        if ck is not None:
            self.ifs_targets[ck] = targets

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
        ms = np.unique(np.asarray(m.data), return_index=True)[0]
        cs = np.unique(np.asarray(c.data), return_index=True)[0]
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
        ovals = np.unique(np.asarray(o.data), return_index=True)[0]
        if len(ps) != self.S or self.S < 2 or ps[0] == ps[1] or ovals.size != 1:
            return None
        data = np.broadcast_to(np.asarray(v.data, dtype=np.int64), self.mask.shape)
        per_sample = []
        for k in range(self.S):
            lanes = data[k][self.entry_mask[k]] if any_set(self.entry_mask[k]) else data[k]
            vals = np.unique(lanes, return_index=True)[0]
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

