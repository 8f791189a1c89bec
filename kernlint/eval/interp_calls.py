"""Calls: device functions inlined, builtins, vector constructors, methods and barriers. Part of the Interpreter (kernlint/eval/interp.py)."""
from __future__ import annotations


import re

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval import coverage as cov
from kernlint.eval import asm_memory, async_copy, atomics, builtins_math, closures, coop_groups, library_calls
from kernlint.eval import events as ev
from kernlint.eval import asserted_shape
from kernlint.ir import dependent_types
from kernlint.eval.values import UNKNOWN, Frame, Val, unknown
from kernlint.ir.function_table import key_file
from kernlint.eval.limits import MAX_INLINE_DEPTH
from kernlint.ir.substitute import replace_refs
from kernlint.frontend import memory_refs
from kernlint.eval.stmt_facts import _PURE_CALL, _MAKE_VECTOR, _BARRIERS, _local_lvalue, reference_use


class CallsMixin:
    """Interpreter methods: calls."""

    def eval_call(self, e: ir.Call) -> Val:
        if e.written and cov.unread_callee(self.tu, e) or library_calls.indirect_call(e):
            # A body kernlint does not have (coverage counted an access there): dropped when the call falls
            # through to the end of _eval_call, else (found as a method of the bound class: find_method) not one.
            key = self.site_key(e.span, cov.ACCESS)
            v = self._eval_call(e)
            if key not in self.cov.drops:
                self.cov.local.add(key)
            return v
        if not e.scope or not library_calls.is_library_transfer(e):
            return self._eval_call(e)
        # A library copy/MMA (eval/library_calls.py): seen and not evaluated, unless a model here took it.
        key = self.site_key(e.span, cov.ACCESS)
        v = self._eval_call(e)
        if key not in self.cov.drops:
            self.cov.local.add(key)  # modelled (cooperative groups, ...): not a library access
        return v

    def _eval_call(self, e: ir.Call) -> Val:
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
                return cg._replace(why=("call", name))
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
        if library_calls.is_asm_access(e):
            # Not run: its operands are not evaluated either (no work of it is counted as evaluated).
            self.recent_loads.forget()  # (it may write memory)
            self.uniform_loads.forget("")
            if self.any_active():
                self.cov.drop(self.site_key(e.span, cov.ACCESS), ("asm", library_calls.asm_instruction(e)))
                self.unmeasured_requests += 1
            return UNKNOWN
        if library_calls.is_asm_ld_st(e):
            return asm_memory.eval_ld_st(self, e)  # a plain inline-PTX ld/st (eval/asm_memory.py)
        if library_calls.is_asm_loaded(e):
            return asm_memory.eval_loaded(self, e)
        if library_calls.is_async_copy(e):
            return async_copy.eval_async_copy(self, e)  # cp.async and its C++ spellings (eval/async_copy.py)
        if name in ("__cvta_generic_to_shared", "__cvta_generic_to_global") and len(e.args) == 1 and e.receiver is None:
            # The address in the shared (global) window of what the generic pointer points to (CUDA C++
            # Programming Guide, "Address Space Conversion Functions"): kernlint's addresses are already
            # per-space offsets, so the value is the pointer's, and an integer converted from it keeps
            # pointing there (interp_expressions.convert) until an inline-asm operand uses it.
            return self.eval(e.args[0])
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
        if e.via and e.name == e.via and e.receiver is None and len(self.frames) <= MAX_INLINE_DEPTH:
            called = self.function_object_call(e)
            if called is not None:
                return self.inline(*called)
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
        unread = cov.unread_callee(self.tu, e) if e.written else ""
        if unread:
            self.cov.drop(self.site_key(e.span, cov.ACCESS), ("unread_body", unread))
        elif library_calls.indirect_call(e) or e.via and e.receiver is None and self.holds_object(e.via):
            # (an object's call reads and writes through what it holds, a lambda's captures: given a pointer or not)
            self.cov.drop(self.site_key(e.span, cov.ACCESS), ("indirect_call", e.via))
        if e.scope and library_calls.is_library_transfer(e):
            # (a group's memcpy_async is a collective copy: its reason says so, ir/known_pipeline.py)
            kind = "collective_copy" if e.name == "memcpy_async" else "library"
            self.cov.drop(self.site_key(e.span, cov.ACCESS), (kind, library_calls.qualified(e)))
        return unknown(*args, why=("fnptr", e.via) if e.via and not name else ("call", name), uniform=False)

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

    def function_object_call(self, e: ir.Call) -> tuple[ir.Function, ir.Call] | None:
        """`f(p, i)` in a template helper, with `f` a parameter the caller bound to an object of a class with one
        `operator()` of that arity, or to a lambda (kernlint's lowered call operator, found by the closure
        type's place): that operator, and the call as a call of it on `f`. None otherwise (the call stays
        unknown: eval/library_calls.indirect_call)."""
        t = self.frame.callable_types.get(e.via) or self.closure_variable(e.via)
        if t is None:
            return None
        fn = None
        m = _CLOSURE.search(t.name)
        if m is not None:
            fn = cov.target_function(self.tu, ir.Call("operator()", (), t, e.span, target=f"operator()@{m.group(1)}"))
        else:
            owner = " ".join(t.name.replace("const ", "").replace("struct ", "").replace("class ", "").split())
            matches = [f for f in self.tu.functions.named(f"{owner}::operator()")
                       if len(f.params) == len(e.args) and f.body is not None]
            fn = matches[0] if len(matches) == 1 else None
        if fn is None or fn.body is None or len(fn.params) != len(e.args):
            return None
        return fn, ir.Call("operator()", e.args, e.ctype, e.span, ir.Ref(e.via, "param", t, e.span), fn.key)

    def holds_object(self, name: str) -> bool:
        """Whether variable `name`, called as a function, holds an object (a lambda, a class with members)
        rather than a function pointer: its call may read or write what the object holds."""
        v = self.frame.env.get(name)
        t = self.frame.callable_types.get(name) or self.closure_variable(name)
        return bool(v is not None and v.fields) or t is not None and (bool(t.fields) or bool(_CLOSURE.search(t.name)))

    def closure_variable(self, name: str) -> ir.CType | None:
        """The closure type of local `name` when it holds a lambda (`auto st = [&](int j) {...}` called `st(i)` in
        a template's pattern, where clang leaves the call's callee dependent), else None."""
        t = self.frame.ctype_of.get(name)
        return t if t is not None and _CLOSURE.search(t.name) else None

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
            matches = [f for f in self.tu.functions.named(f"{owner}::{e.name}")
                       if len(f.params) == len(e.args) and f.body is not None]
            if len(matches) == 1:
                return matches[0]
        return None

    def barrier(self, e: ir.Call, name: str, scope: str, member: int | None,
                deps: frozenset[str] = frozenset()) -> None:
        live = self.entry_mask & ~self.frames[0].ret_mask if self.frames[0].ret_mask is not None else self.entry_mask
        iters, _ = self.loop_context()
        self.recent_loads.forget()
        self.emit(ev.Barrier(e.span, name, scope, self.mask.copy(), live.copy(), member, deps, iters))

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

    def _object_reference(self, p: ir.Param, arg: ir.Expr) -> bool:
        """Whether `arg` is an element of memory (`ps[i]`, `*p`, `s->node`) bound to `p`, a reference to a
        class type."""
        t = self.resolve(p.ctype)
        if t.kind != "reference" or t.pointee is None:
            return False
        pointee = self.resolve(t.pointee)
        if pointee.kind != "struct" or memory_refs.vector_like(pointee.size, pointee.align):
            return False  # (a vector-like element is read whole, at the call, as before)
        return self._memory_element(arg)

    def _memory_element(self, arg: ir.Expr) -> bool:
        """Whether `arg` names an element of memory (`out[i]`, `*p`, `s->x`), not a thread's own variable."""
        inner = arg
        while isinstance(inner, ir.Cast) and not inner.explicit:
            inner = inner.operand
        if not (isinstance(inner, ir.Index) or isinstance(inner, ir.Unary) and inner.op == "*"
                or isinstance(inner, ir.Member) and inner.arrow):
            return False
        return _local_lvalue(arg) is None and self.ref_target(arg) is None

    def _memory_reference(self, p: ir.Param, arg: ir.Expr) -> bool:
        """Whether `arg` is a scalar element of global or shared memory (`out[i]`, `*p`, `s->x`)
        bound to `p`, a non-const reference parameter."""
        t = self.resolve(p.ctype)
        if t.kind != "reference" or t.pointee is None:
            return False
        pointee = self.resolve(t.pointee)
        if pointee.const or t.name.startswith("const ") or pointee.kind not in ("int", "bool", "float"):
            return False
        return self._memory_element(arg)

    def inline(self, callee: ir.Function, e: ir.Call) -> Val:
        # (a lambda's call operator runs on its object, `this`, whose members are its copies: eval/closures.py)
        method = "::" in callee.name and callee.name != ir.LAMBDA_CALL
        this = self.eval(e.receiver) if e.receiver is not None else Val(None)
        # A memory element bound to a non-const reference parameter (`op(out[i], x)` with
        # `operator()(float& dst, float src)`): a load when the callee reads it, a store (after the
        # call) when it writes it, both when both.
        element_refs = {i: reference_use(callee, p.name) for i, p in enumerate(callee.params)
                        if i < len(e.args) and self._memory_reference(p, e.args[i])}
        # An element of memory bound to a reference parameter of class type (`advance(ps[i])` with
        # `void advance(Particle &p)`): the call reads nothing by itself; the callee's `p` is that
        # element (its address, below), so each field it reads or writes is an access there.
        object_refs = {i: lv[0] for i, p in enumerate(callee.params)
                       if i < len(e.args) and self._object_reference(p, e.args[i])
                       and (lv := self.lvalue(e.args[i])) is not None and lv[0].space not in ("", "local")}
        for i in object_refs:  # (the argument's own site makes no access: it is not counted as one)
            site = e.args[i]
            while isinstance(site, ir.Cast) and not site.explicit:
                site = site.operand
            self.cov.local.add(self.site_key(site.span, cov.ACCESS))  # type: ignore[attr-defined]
        args = [object_refs[i] if i in object_refs else
                Val(None, why=("unmodelled", f"written through reference parameter `{callee.params[i].name}`"))
                if i in element_refs and not element_refs[i][0] else self.eval(a) for i, a in enumerate(e.args)]
        bound = closures.bind(self, callee, this) if callee.captures else None
        if isinstance(bound, str):
            return closures.not_followed(self, callee, e, this, bound)
        frame = Frame()
        if bound is not None:
            closures.enter(self, callee.key, frame, bound)
        if method:
            # The object a method runs on: its known fields are `this`'s (written back afterwards).
            frame.env["this"] = this if this.space == "" else Val(None)
            frame.decl_mask["this"] = self.mask
        frame.ret_mask = np.zeros_like(self.mask)
        saved_bindings = self.bindings
        write_back: list[tuple[str, ir.Expr]] = []
        for i, p in enumerate(callee.params):
            v = args[i] if i < len(args) else UNKNOWN
            t = self.resolve(p.ctype)
            if t.kind in ("int", "bool", "float"):
                v = self.convert(v, t)
            if i in object_refs:
                # (the callee's `p` reads as `*&p`: eval/interp_calls.object_body)
                frame.env["&" + p.name] = v
                frame.decl_mask["&" + p.name] = self.mask
                frame.ctype_of["&" + p.name] = ir.CType("pointer", 8, False, pointee=t.pointee)
                continue
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
                elif i in element_refs:
                    # An element of global or shared memory: the callee's reads see the loaded value
                    # (unknown when it never reads it), its writes are stored back after the call.
                    if element_refs[i][1]:
                        write_back.append((p.name, e.args[i]))
                    if t.pointee is not None and self.resolve(t.pointee).kind in ("int", "bool", "float"):
                        v = self.convert(v, self.resolve(t.pointee))
                elif i < len(e.args) and self.ref_target(e.args[i]) is not None:
                    # A `__shared__` scalar passed by reference: copied in and written back the same way.
                    target = self.ref_target(e.args[i])
                    write_back.append((p.name, target))  # type: ignore[arg-type]
                    self.note_shared_ref(frame, p.name, target)  # type: ignore[arg-type]
                elif i < len(e.args) and _CLOSURE.search(self.resolve(e.args[i].ctype).name):
                    pass  # a lambda made for the call (`apply(n, [&](int k) {...})` with `F&& f`): nothing else names it
                else:
                    # (a cooperative group's handle is immutable: passed by reference it is the same group)
                    v = Val(None, why=("unmodelled", f"reference parameter `{p.name}` of {callee.name}()"))
            frame.env[p.name] = v
            frame.decl_mask[p.name] = self.mask
            frame.ctype_of[p.name] = t
            held = self.resolve(t.pointee) if t.kind == "reference" and t.pointee is not None else t
            if held.kind in ("template", "unknown") and i < len(e.args):  # (`F f`, `const F& f`, `F&& f`)
                at = self.resolve(e.args[i].ctype)
                if at.kind == "struct" and at.name:
                    frame.callable_types[p.name] = at
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
        entry = self.mask  # (restored after the call: masks are replaced, never written in place)
        saved_loops = self.loop_stack
        # (a run to reach regions may stop in a helper the kernel's own code calls: Interpreter.helper_watch)
        from_kernel = bool(self.goal) and len(self.frames) == 1 and not self.loop_stack
        self.frames.append(frame)
        self.inlined_fns.append(callee)
        same_file = key_file(callee.key) == key_file(self.fn.key)
        self.call_sites.append((e.span, callee.name, callee.span, same_file, key_file(callee.key)))
        try:
            assert callee.body is not None
            body = object_body(callee, frozenset(callee.params[i].name for i in object_refs), e.span) \
                if object_refs else callee.body
            self.exec_block(body, self.helper_watch(e, body) if from_kernel else None)
        finally:
            self.call_sites.pop()
            self.inlined_fns.pop()
            self.frames.pop()
            self.closures.forget(frame)
            self.bindings = saved_bindings
            self.loop_stack = saved_loops
        self.mask = entry
        if bound is not None:
            closures.leave(self, callee, e, frame, bound, this)
        for pname, target in write_back:
            self.store(target, frame.env.get(pname, UNKNOWN), e.span)
            lv = _local_lvalue(target) if self.closures.watching else None
            if lv is not None:  # (a branch on unknown data, a loop stopped early: no assignment in its text shows it)
                self.closures.log.append((id(self.frame), lv[0]))
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



_CLOSURE = re.compile(r"\(lambda at (.+:\d+):\d+\)")  # clang's name of a closure type: its file, line, column

_OBJECT_BODIES: dict[tuple[int, frozenset[str], ir.Span], tuple[ir.Function, ir.Block]] = {}


def object_body(callee: ir.Function, names: frozenset[str], at: ir.Span) -> ir.Block:
    """`callee`'s body with each reference parameter in `names` read through its address: `p` becomes
    `*(&p)`, the pointer the caller bound (frame name `&p`); the access sites without a place of their own
    are at the call `at`. Kept per callee, names and call (the callee outlives the run's calls)."""
    key = (id(callee), names, at)
    kept = _OBJECT_BODIES.get(key)
    if kept is not None and kept[0] is callee:
        return kept[1]

    def replace(r: ir.Ref) -> ir.Expr | None:
        if r.kind != "param" or r.name not in names:
            return None
        pointer = ir.CType("pointer", 8, False, pointee=r.ctype)
        return ir.Unary("*", ir.Ref("&" + r.name, "local", pointer, r.span), r.ctype,
                        r.span if r.span != ir.NO_SPAN else at)

    body = replace_refs(callee.body, replace)
    if len(_OBJECT_BODIES) > 256:
        _OBJECT_BODIES.clear()
    _OBJECT_BODIES[key] = (callee, body)  # type: ignore[assignment]
    return body  # type: ignore[return-value]
