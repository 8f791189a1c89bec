"""Expressions: references, casts, conditions, unary and binary arithmetic on per-lane values. Part of the Interpreter (kernlint/eval/interp.py)."""
from __future__ import annotations


import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval import coverage as cov
from kernlint.eval import events as ev
from kernlint.eval import bounded_index, closures, library_calls, unknown_float
from kernlint.eval.values import UNKNOWN, Val, any_set, c_div, c_mod, const, spread, unknown, why_of, wrap_int
from kernlint.project.launch import fold_bound
from kernlint.eval.limits import WARP, MAX_EVAL_NESTING, POINTER_SPACING
from kernlint.eval.stmt_facts import _pointer_chain_type, _strip_implicit, _target_name, _stmt_cost
from kernlint.eval.interp_memory import MemoryMixin
from kernlint.eval.interp_calls import CallsMixin


class ExpressionsMixin:
    """Interpreter methods: expressions."""

    # Whether `eval_binary` answers floating-point arithmetic on unknown values from a plan
    # (eval/unknown_float.py); tests turn it off to compare with the per-node path.
    float_fast: bool = True

    def eval(self, e: ir.Expr) -> Val:
        # The evaluator's hottest call (once per expression node per evaluation): the nesting bound,
        # `tick` and the dispatch are written out here rather than in three nested calls.
        if self.nesting >= MAX_EVAL_NESTING or (type(e) is ir.Opaque and e.reason == ir.TOO_DEEP):
            self.cov.drop(self.site_key(e.span, cov.BRANCH), ("deep", ""))
            return Val(None, why=("deep", ""))
        self.nesting += 1
        try:
            self.cost += 1  # self.tick(), inlined
            if self.cost >= self._clock_at:  # (also past the step budget: see `_clock_at`)
                self.tick(0)
            handler = _EVAL_BY_TYPE.get(type(e))  # the common node classes in one lookup (the table at the end of this module)
            if handler is not None:
                return handler(self, e)  # type: ignore[operator]
            return self._eval(e)
        finally:
            self.nesting -= 1

    def _eval(self, e: ir.Expr) -> Val:
        """The node classes `_EVAL_BY_TYPE` does not list (and any subclass)."""
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
            if library_calls.unresolved_call(e):  # an access seen, not evaluated (eval/library_calls.py)
                fn = self.inlined_fns[-1] if self.inlined_fns else self.fn  # (the function the call is in)
                at = [m.split("'")[1] for ln, col, m in fn.unresolved
                      if (ln, col) == (e.span.line, e.span.column) and m.count("'") >= 2]
                name = at[0] if at else self.unresolved_names.get(e.span.line, "?")
                self.cov.drop(self.site_key(e.span, cov.ACCESS), ("unresolved_call", name))
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
        env = self.frames[-1].env  # the innermost frame only: an inlined helper sees its own names
        if e.name in env:
            return env[e.name]
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
            if "<" in e.name and "::" in e.name:
                # `Opt<Real>::Put`: a member of a class template that is not instantiated here.
                return Val(None, why=("type", f"`{e.name}`"), uniform=True)
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
            assumed = self._block_assumed[i]
            if assumed is None:  # (once per dimension: read at every use of blockIdx)
                assumed = self._block_assumed[i] = (tuple(int(x) for x in self.block_idx[i].ravel()),
                                                    frozenset([name]))
            self.result.assumed[name] = assumed[0]
            return Val(self.block_idx[i], assumed[1])
        if inner.name == "gridDim":
            if self.grid_known:
                return const(self.grid_dim[i])
            name = f"gridDim.{fieldname}"
            self.result.assumed[name] = (self.grid_dim[i],)
            return Val(np.full((1, 1, 1), self.grid_dim[i], dtype=np.int64), frozenset([name]))
        return None

    def eval_cast(self, e: ir.Cast) -> Val:
        o = e.operand
        v = None
        if type(o) is ir.Ref and o.kind != "template" and o.kind != "builtin" and self.nesting < MAX_EVAL_NESTING:
            # The commonest operand (a variable or array read): what `self.eval(o)` returns for a name
            # bound in the innermost frame (eval_ref), with its step counted, without the dispatch.
            v = self.frames[-1].env.get(o.name)
            if v is not None:
                self.cost += 1
                if self.cost >= self._clock_at:  # (also past the step budget: see `_clock_at`)
                    self.tick(0)
        if v is None:
            v = self.eval(o)
        t = e.ctype
        if t.kind == "template":  # (resolve keeps the kind of any other type: only a template can become a number)
            t = self.resolve(t)
        if t.kind in ("int", "bool", "float"):
            return self.convert(v, t)
        return v

    def convert(self, v: Val, t: ir.CType) -> Val:
        data = v.data
        if data is None:
            if t.kind == "float":
                return bounded_index.with_bound(v, None)
            if v.bound is not None or t.size <= 2:
                return bounded_index.fit(v, t)  # a narrow type keeps only its range
            return v
        # Value arrays are never written in place, so a conversion that changes nothing shares its input's.
        if t.kind == "float":
            return Val(data.astype(np.float64, copy=False), v.deps, is_float=True)
        # The same array converted to the same integer type again (a variable read at every use, every
        # iteration): the result is remembered by the array's identity (recent ones only).
        key = (id(data), t.kind, t.size, t.signed, not v.deps, v.is_float)
        hit = self._converted.get(key)
        if hit is not None and hit[0] is data:
            space = v.space  # (`_as_address`, written out: the commonest conversion is of a plain integer)
            if space and space != "local" and t.size >= 4:
                return Val(hit[1], v.deps, space, v.root)
            return Val(hit[1], v.deps)
        source = data
        if v.is_float or data.dtype.kind == "f":
            with np.errstate(invalid="ignore", over="ignore"):
                if not np.all(np.isfinite(data)):
                    return unknown(v, why=("unmodelled", "a conversion of a non-finite value"))
                data = np.trunc(data).astype(np.int64)
        data = data.astype(np.int64, copy=False)
        out = wrap_int(data, t) if not v.deps else data
        if len(self._converted) >= 256:
            self._converted.clear()
        self._converted[key] = (source, out)
        return self._as_address(Val(out, v.deps), v, t)

    @staticmethod
    def _as_address(r: Val, v: Val, t: ir.CType) -> Val:
        """`r`, the integer `v` converted to `t`, still pointing where `v` does when `v` is an address and `t`
        wide enough to hold it (`unsigned s = __cvta_generic_to_shared(p)`, then an inline-asm operand)."""
        if v.space and v.space != "local" and t.size >= 4:
            return Val(r.data, r.deps, v.space, v.root)
        return r

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
        cond = spread(c.data != 0, parent.shape)
        self.mask = parent & cond
        a = self.eval(e.then) if self.any_active() else UNKNOWN
        if not self.any_active():
            self.mark_dead(e.then, c.deps)
        self.mask = parent & ~cond
        b = self.eval(e.other) if self.any_active() else UNKNOWN
        if not self.any_active():
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
        if not any_set(parent & cond):
            return b
        if not any_set(parent & ~cond):
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
            if e.ctype.kind == "function":
                return self.eval(e.operand)  # `*op` for a function pointer names code: nothing is read
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
        if (op in _FLOAT_OPS and e.ctype.kind in _FLOAT_KINDS or op in _COMPARISONS
                and (e.lhs.ctype.kind in _FLOAT_KINDS or e.rhs.ctype.kind in _FLOAT_KINDS)) and self.float_fast:
            # (floating-point arithmetic and comparisons: what `unknown_float.plan` may plan)
            v = self.unknown_float(e)
            if v is not None:
                return v
        if op == "=":
            v = self.eval(e.rhs)
            t = e.lhs.ctype
            if t.kind == "template":  # (as in eval_cast)
                t = self.resolve(t)
            if t.kind in ("int", "bool", "float"):
                v = self.convert(v, t)
            self.store(e.lhs, v, e.span)
            return v
        if op.endswith("=") and op not in ("==", "!=", "<=", ">="):
            rhs = self.eval(e.rhs)
            old = self.eval(e.lhs)
            lt = e.lhs.ctype
            new = self.arith(op[:-1], old, rhs, lt if lt.kind not in _RESOLVED_KINDS else self.resolve(lt), lt, e.rhs.ctype)
            self.store(e.lhs, new, e.span)
            return new
        if op == ",":
            self.eval(e.lhs)
            return self.eval(e.rhs)
        if op in ("&&", "||"):
            a = self.eval(e.lhs)
            parent = self.mask
            if a.data is not None:
                av = spread(a.data != 0, parent.shape)
                self.mask = parent & (av if op == "&&" else ~av)
            b = self.eval(e.rhs) if self.any_active() else const(0 if op == "&&" else 1)
            if not self.any_active():
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
        rtype = e.ctype
        return self.arith(op, a, b, rtype if rtype.kind not in _RESOLVED_KINDS else self.resolve(rtype), ltype, btype)

    def unknown_float(self, e: ir.Binary) -> Val | None:
        """What the rest of `eval_binary` returns for `e`, when it is certainly the unknown fold of the
        variables it reads (eval/unknown_float.py); None where it may not be, with nothing done."""
        p = unknown_float.plan(e)
        if p is None:
            return None
        # `eval` charged the root's step: the others, one per node, provided none of them would have
        # reached `tick` (the clock, the step budget) or the nesting bound (the root is at `nesting - 1`).
        more = p.nodes - 1
        if self.cost + more >= self._clock_at or self.nesting - 1 + p.depth >= MAX_EVAL_NESTING:
            return None
        if p.templates and not unknown_float.applies(p, self.resolve):
            return None
        v = unknown_float.run(p, self.frames[-1].env)
        if v is not None:
            self.cost += more
        return v

    def arith(self, op: str, a: Val, b: Val, rtype: ir.CType, ltype: ir.CType, btype: ir.CType) -> Val:
        r = self._arith(op, a, b, rtype, ltype, btype)
        if (a.space or b.space) and not r.space and r.data is not None and op in ("+", "-") \
                and (not a.space or not b.space) and (a.space or op == "+"):
            # An address held as an integer (`smem + 16` after `__cvta_generic_to_shared`: convert) moved by
            # a byte count still points into the same memory.
            base = a if a.space else b
            r = Val(r.data, r.deps, base.space, base.root)
        if r.data is None and (a.data is None) is not (b.data is None) and rtype.kind in ("int", "bool"):
            bound = bounded_index.arith(op, a, b)  # `code & 7`: unknown, but within a range
            if bound is not None:
                r = bounded_index.fit(bounded_index.with_bound(r, bound), rtype)
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
        lt = ltype if ltype.kind not in _RESOLVED_KINDS else self.resolve(ltype)
        bt = btype if btype.kind not in _RESOLVED_KINDS else self.resolve(btype)
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
        if not is_float:
            ufunc = _INT_UFUNCS.get(op)
            if ufunc is not None and x.dtype.kind in "iu" and y.dtype.kind in "iu":
                # Integer arrays: these operations raise no floating-point error, so no errstate.
                r = ufunc(x, y)
                if op in _COMPARISONS:
                    return Val(r.astype(np.int64), deps)
                if rtype.kind == "bool" or (rtype.kind == "int" and not deps):
                    r = wrap_int(r, rtype)  # as below
                return Val(r, deps)
        if is_float:
            x = x.astype(np.float64, copy=False)  # (read only: every result below is a new array)
            y = y.astype(np.float64, copy=False)
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


_FLOAT_OPS, _FLOAT_KINDS = unknown_float.FLOAT_OPS, unknown_float.FLOAT_KINDS


# Kinds of types `resolve` may change (a dependent array, a template parameter, a pointer to one): others it returns as they are.
_RESOLVED_KINDS = frozenset(("array", "template", "pointer"))


# `_arith`'s integer operations that need no check of their operands (`/`, `%`, shifts do), and comparisons.
_INT_UFUNCS = {"+": np.add, "-": np.subtract, "*": np.multiply, "&": np.bitwise_and, "|": np.bitwise_or,
               "^": np.bitwise_xor, "<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal,
               "==": np.equal, "!=": np.not_equal}
_COMPARISONS = frozenset(("<", ">", "<=", ">=", "==", "!="))


# `ExpressionsMixin._eval`'s dispatch: the IR expression classes are final (no subclasses), so a lookup of
# type(e) picks the same handler as the isinstance chain it short-cuts (which still handles the rest).
_EVAL_BY_TYPE: dict[type, object] = {
    ir.Lit: lambda self, e: const(e.value),
    ir.Cast: ExpressionsMixin.eval_cast,
    ir.Ref: ExpressionsMixin.eval_ref,
    ir.Binary: ExpressionsMixin.eval_binary,
    ir.Unary: ExpressionsMixin.eval_unary,
    ir.Index: MemoryMixin.eval_memory_read,
    ir.Member: MemoryMixin.eval_memory_read,
    ir.Cond: ExpressionsMixin.eval_cond,
    ir.Call: CallsMixin.eval_call,
    ir.Closure: closures.make,
}
