"""Statements: blocks, declarations, `if`, loops, `switch`, `return` and the lane masks they split and merge. Part of the Interpreter (kernlint/eval/interp.py)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval import closures
from kernlint.eval import coverage as cov
from kernlint.eval import data_shape
from kernlint.eval import events as ev
from kernlint.eval import fast_forward, resample
from kernlint.eval.flops import statement_flops
from kernlint.eval.shared_scalars import is_shared_scalar_type
from kernlint.eval import uniform_data
from kernlint.eval import local_arrays, liveness
from kernlint.eval.values import UNINIT, Val, any_set, spread, unknown, why_of
from kernlint.eval.limits import MAX_LOOP_ITERATIONS, MAX_EVAL_NESTING, _pure
from kernlint.eval.stmt_facts import _block_member, _block_alias, _sampled_name, _assigned_names_expr, _assigned_names, _ops, _own_ops, _has_real_loop, _has_exit, _exit_kind, _stmt_cost, _has_loop, _loop_var, _counter_branches, opaque_statements


# id(statement) -> (the statement, its own operations (_own_ops), its FP32 and FP64 operations
# (statement_flops)): asked at every statement executed. The entry holds the statement, so its id is its own.
_STMT_FACTS: dict[int, tuple[ir.Stmt, int, int, int]] = {}


class StatementsMixin:
    """Interpreter methods: statements."""

    def exec_block(self, block: ir.Block, watch: Callable[[ir.Stmt], None] | None = None) -> None:
        """Run `block`'s statements; `watch`, when given, after each (the kernel's body: Interpreter `_watch_goal`)."""
        # C scoping: a declaration in this block hides an outer variable of the same name only until
        # the block ends (GPU Gems' scan redeclares `ai`/`bi` inside its loops).
        env = self.frame.env
        hidden: dict[str, tuple[Val, np.ndarray | None, ir.CType | None]] = {}
        try:
            for s in block.body:
                if not self.any_active():
                    return
                if block.scope and isinstance(s, ir.VarDecl) and s.name in env and s.name not in hidden:
                    hidden[s.name] = (env[s.name], self.frame.decl_mask.get(s.name), self.frame.ctype_of.get(s.name))
                self.exec(s)
                if watch is not None:
                    watch(s)
        finally:
            for name, (v, dm, t) in hidden.items():
                env[name] = v
                if dm is not None:
                    self.frame.decl_mask[name] = dm
                if t is not None:
                    self.frame.ctype_of[name] = t

    def exec(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.OpaqueStmt) and s.reason in ir.UNREAD:
            self.cov.drop(self.site_key(s.span, cov.BRANCH), ("deep", "") if s.reason == ir.TOO_DEEP
                          else ("time", "") if s.reason == ir.OUT_OF_BUDGET
                          else ("large", f"{s.span.line}-{s.span.end_line}"))
            return
        if self.nesting >= MAX_EVAL_NESTING:  # code inlined deep into deep code: reported, not a RecursionError
            self.cov.drop(self.site_key(s.span, cov.BRANCH), ("deep", ""))
            return
        self.nesting += 1
        try:
            self.cost += 1  # self.tick(), inlined (as in `eval`)
            if self.cost >= self._clock_at:  # (also past the step budget: see `_clock_at`)
                self.tick(0)
            self._exec(s)
        finally:
            self.nesting -= 1

    def _exec(self, s: ir.Stmt) -> None:
        if type(s) is ir.Block:  # (IR classes are final)
            self.exec_block(s)
            return
        # The statement's own operations and FLOPs, in one look-up (by identity, as their memos do).
        facts = _STMT_FACTS.get(id(s))
        if facts is None or facts[0] is not s:
            facts = (s, _own_ops(s), *statement_flops(s))
            if len(_STMT_FACTS) >= 20000:
                _STMT_FACTS.clear()
            _STMT_FACTS[id(s)] = facts
        _s, ops, f32, f64 = facts
        if self.mask is not self._work_mask:  # self.count_work(ops), inlined
            self._use_mask()
        self._work_pending += ops
        if f32 or f64:
            lanes = self._work_lanes  # the active lanes count_work just counted
            self.flop_lanes[0] += lanes * f32
            self.flop_lanes[1] += lanes * f64
        if isinstance(s, ir.ExprStmt):
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

    def exec_decl(self, d: ir.VarDecl) -> None:
        t = self.resolve(d.ctype)
        if d.shared and self.call_sites:
            self.result.out_of_row.add(d.name)  # declared in a helper, whose uses of it KL201 does not read
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

    def declare(self, name: str, v: Val, t: ir.CType) -> None:
        self.frame.env[name] = v
        self.frame.decl_mask[name] = self.mask  # (masks are replaced, never written in place)
        self.frame.ctype_of[name] = t

    def exec_if(self, s: ir.If) -> None:
        raw = self.eval(s.cond)
        c = self.uniform_condition(raw, sides=(s.then, s.other))
        parent = self.mask
        if c.data is None:
            # A data-dependent condition: both sides may run for any lane. Evaluate each under the
            # parent mask; what either side writes becomes unknown.
            # A `return`/`break`/`continue` in such a branch may remove some lanes, not all: the
            # lanes are assumed to go on (exits are restored), so what follows is still evaluated.
            written = _assigned_names(s.then) | (_assigned_names(s.other) if s.other else set())
            watch = self.closures.mark()  # (what lambda calls write back: eval/closures.py)
            self.branch_unknown(s.span, c)
            exits = self.save_exits()
            start = self.data_region_start(s, c)
            exit_kind = _exit_kind(s.then) if s.other is None else ""
            if exit_kind == "return" and len(self.frames) > 1:
                exit_kind = ""  # a `return` in an inlined helper leaves the helper, not the kernel
            common = data_shape.validity_test(s) if start is not None else ""
            w_then: np.ndarray | None = None
            # A warp-uniform condition on loaded values that the samples decide (uniform_condition made it
            # unknown so that its side is evaluated whatever the samples say), with no `else`: what the side
            # writes keeps, per sample, the value the sampled condition selects (`if (id >= vocab) id = 0;`
            # after `id = ids[blockIdx.x]`), as `?:` on the same values does.
            before = ({n: self.frame.env.get(n) for n in written}
                      if raw.data is not None and c.uniform and s.other is None else None)
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
                self.mask = self.after_exits(parent)
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
            self.mask = self.after_exits(parent)
            for name in written:
                if name in self.frame.env:
                    old, new = (before or {}).get(name), self.frame.env[name]
                    if old is not None and old.data is not None and new.data is not None \
                            and old.is_float == new.is_float and not old.space and not new.space:
                        chosen = spread(raw.data != 0, np.broadcast_shapes(raw.data.shape, old.data.shape,
                                                                           new.data.shape))
                        merged = self.merge(old, new, chosen)
                        self.frame.env[name] = Val(merged.data, merged.deps | c.deps, is_float=merged.is_float)
                        continue
                    self.frame.env[name] = unknown(self.frame.env[name], c, uniform=False)
            closures.lose_written(self, watch, lambda v: unknown(v, c, uniform=False))
            self.shared_scalars.forget(written, why_of(c))
            self.forget_arrays(s, why_of(c))
            return
        cond = spread(c.data != 0, parent.shape)
        taken = parent & cond
        not_taken = np.greater(parent, cond)  # (`parent & ~cond` on boolean masks, in one operation)
        any_taken, any_not_taken = any_set(taken), any_set(not_taken)  # (masks are never written in place)
        if self.regions_here() and c.deps:
            self.note_guard(s, c.deps, any_taken)
        iters, lvars = self.loop_context()
        cost_then = _stmt_cost(s.then)
        cost_else = _stmt_cost(s.other) if s.other is not None else 0
        w0 = self.warp_work.copy()
        self.cov.hit(self.site_key(s.span, cov.BRANCH))
        if not any_taken or (s.other is not None and not any_not_taken):
            self.one_sided.add(id(s))  # a side no lane took (exec_loop: a second iteration)
        if any_taken:
            self.mask = taken
            self.exec(s.then)
        else:
            self.mark_dead(s.then, c.deps)
        w1 = self.warp_work.copy()
        if s.other is None and not self.call_sites and c.deps and len(self.frames) == 1:
            rest = resample.rest_after(self.fn.body, s)
            if rest is not None and (any_not_taken or (any_taken and not any_set(self.mask & taken))):
                # An early exit every sampled thread takes leaves the rest of the kernel dead.
                self.note_region(resample.rest_key(s, rest), rest, c.deps, any_not_taken)
        if s.other is not None and self.regions_here() and c.deps:
            self.note_else(s, c.deps, any_not_taken)
        if s.other is not None and any_not_taken:
            self.mask = not_taken
            self.exec(s.other)
        elif s.other is not None:
            self.mark_dead(s.other, c.deps)
        # Emitted after both sides ran, so that it carries the work each warp did on each side.
        self.emit(ev.Branch(s.span, "if", cond.copy(), parent.copy(), c.deps, iters, lvars, cost_then, cost_else,
                            _has_loop(s.then), _has_loop(s.other) if s.other else False,
                            then_work=w1 - w0, else_work=self.warp_work - w1))
        self.mask = self.after_exits(parent)

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

    def note_guard(self, s: ir.If, deps: frozenset[str], ran: bool) -> None:
        """Remember an `if` over sampled parameters whose body never runs (eval/resample.py)."""
        then_span = getattr(s.then, "span", s.span)
        key = (s.span.line, s.span.column, then_span.line, max(then_span.end_line, then_span.line))
        if ran:
            self.region_taken(key)
            return
        if self.region_noted(key) or not resample.has_memory_access(s.then):
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
        if self.region_noted(key) or not resample.has_memory_access(s.other):
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
        if self.region_noted(key) or not resample.has_memory_access(block):
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
        if self.region_noted(key) or not resample.has_memory_access(node):
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
        # The arrays themselves: exit masks, like every mask, are replaced, never written in place.
        return self.frame.ret_mask, [(ls["break"], ls["continue"]) for ls in self.loop_stack]  # type: ignore[misc]

    def restore_exits(self, saved: tuple[np.ndarray | None, list[tuple[np.ndarray, np.ndarray]]]) -> None:
        ret, loops = saved
        self.frame.ret_mask = ret
        for ls, (brk, cont) in zip(self.loop_stack, loops):
            ls["break"] = brk
            ls["continue"] = cont

    def after_exits(self, parent: np.ndarray) -> np.ndarray:
        """`parent & ~self.frame_ret() & ~self.loop_exits()`: the lanes of `parent` that have not returned
        nor left the innermost loop; `parent` itself when none has (masks are replaced, never written in
        place), without the five array operations that asked at the end of every branch and loop."""
        ret = self.frame.ret_mask
        out = parent if ret is None or not any_set(ret) else np.greater(parent, ret)  # (`a > b`: `a & ~b` on booleans)
        if self.loop_stack:
            ls = self.loop_stack[-1]
            brk, cont = ls["break"], ls["continue"]
            if any_set(brk) or any_set(cont):  # type: ignore[arg-type]
                out = np.greater(out, brk | cont)  # type: ignore[operator]
        return out

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
        no_lanes = np.zeros_like(entry)
        ls: dict[str, object] = {"iter": 0, "break": np.zeros_like(entry), "continue": no_lanes,
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
        watch = self.closures.mark()  # (what lambda calls write back: eval/closures.py)
        body_work = 0  # most operations a warp's body evaluated while a data-dependent trip count is evaluated
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
                        c_lanes = c.data != 0  # (broadcast by the `&` below to the mask's shape, as spread would)
                    active = active & c_lanes
                if not any_set(active):
                    break
                # A data-dependent trip count: the body is evaluated once, twice when a guard on a
                # counter of the loop left a side untaken (`if (k == 0) {...} else {...}`).
                if k >= MAX_LOOP_ITERATIONS or (data_dependent and k >= 1 + (k == 1 and any(
                        id(n) in self.one_sided for n in _counter_branches(s)))) or (
                        self.loop_cap is not None and k >= self.loop_cap and deps) or (
                        k >= 2 and self._loop_over_budget(loop_start_cost, k)):
                    truncated = True
                    break
                trips += active
                self.count_work(per_iteration_ops)  # the condition and step of this iteration
                ls["iter"] = k
                ls["continue"] = no_lanes  # (replaced, never written in place: one array serves every iteration)
                self.mask = active
                if region is not None:
                    b0, u0 = self.warp_work.copy(), self.unmeasured_requests
                    self.exec(body)
                    # Operations of accesses whose address was not evaluated are not evaluated work.
                    body_work = max(body_work, int((self.warp_work - b0).max())
                                    - (self.unmeasured_requests - u0))
                else:
                    self.exec(body)
                ret = self.frame.ret_mask
                brk = ls["break"]
                if any_set(brk):  # type: ignore[arg-type]
                    active = np.greater(active, brk)  # (`active & ~brk`: boolean masks)  # type: ignore[operator]
                self.mask = np.greater(active, ret) if ret is not None and any_set(ret) else active
                if step is not None and self.any_active():
                    self.eval(step)
                active = self.mask
                k += 1
                tracker.record(self.frame.env)
        finally:
            self.loop_stack.pop()
            if region is not None and data_cond is not None:
                self.mask = entry
                self.data_region_end(region, s, "loop", data_cond, entry, True, "",
                                     search=data_shape.is_search(s, cond),
                                     body_ran=(body_work > 0 or _stmt_cost(body) == 0)
                                     and (opaque_statements(body)[1] > 0 or not opaque_statements(body)[0]),
                                     opaque=opaque_statements(body)[0])
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
            stale = written
            if len(self.frames) == 1:
                # Names every later path assigns before reading keep no value anything reads
                # (eval/liveness.py): the next loop's counter is not made unknown.
                stale = liveness.names_read_after(self.fn.body, s, written)
            for name in stale:
                if name in self.frame.env:
                    self.frame.env[name] = (unknown(self.frame.env[name], data_cond, why=why, uniform=False)
                                            if data_cond is not None
                                            else unknown(self.frame.env[name], why=why, uniform=False))
            closures.lose_written(self, watch, lambda v: unknown(v, *([data_cond] if data_cond is not None else []),
                                                                 why=why, uniform=False))
            self.shared_scalars.forget(written, why)
            self.forget_arrays(s, why)
        else:
            closures.end_watch(self)
        self.emit(ev.Loop(s.span, trips, entry, truncated, deps, _stmt_cost(body),
                          work=self.warp_work - w0))
        self.mask = self.after_exits(entry)

    def exec_switch(self, s: ir.Switch) -> None:
        c = self.eval(s.cond)
        parent = self.mask
        # Each case runs for the lanes whose value matches (fall-through approximated by case order).
        remaining = parent.copy()
        written: set[str] = set()
        arms = np.full(parent.shape, -1, dtype=np.int64)  # the case each lane runs; -1: none
        w0 = self.warp_work.copy()
        region = self.data_region_start(s, c) if c.data is None else None
        watch = self.closures.mark() if c.data is None else -1  # (what lambda calls write back: eval/closures.py)
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
            if not any_set(lane_sel):
                self.mark_dead(ir.Block(tuple(body), s.span), c.deps)
            if c.data is not None and c.deps and self.regions_here() and body:
                self.note_case(s, labels, body, c, any_set(lane_sel))
            if any_set(lane_sel):
                self.mask = lane_sel
                for st in body:
                    if isinstance(st, ir.Break):
                        break
                    if not any_set(self.mask):
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
        self.mask = self.after_exits(parent)
        if c.data is None:
            for name in written:
                if name in self.frame.env:
                    self.frame.env[name] = unknown(self.frame.env[name], c, uniform=False)
            closures.lose_written(self, watch, lambda v: unknown(v, c, uniform=False))
            self.shared_scalars.forget(written, why_of(c))
            self.forget_arrays(s, why_of(c))

