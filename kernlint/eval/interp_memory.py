"""Memory: lvalues, fields, loads and stores, and the access events they emit. Part of the Interpreter (kernlint/eval/interp.py)."""
from __future__ import annotations


import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval import coverage as cov
from kernlint.eval import events as ev
from kernlint.eval import uniform_data
from kernlint.eval import local_arrays
from kernlint.eval import bounded_index
from kernlint.eval.values import UNKNOWN, Val, any_set, spread, unknown, why_of
from kernlint.eval.limits import POINTER_SPACING
from kernlint.eval.stmt_facts import _with_field, _vector_chunks, _scalar_fields, _strip_implicit


_BIG = int(np.iinfo(np.int64).max)
# Kinds of types `resolve` may change (interp.py): others it returns as they are.
_RESOLVED_KINDS = frozenset(("array", "template", "pointer"))
_SCALAR_KINDS = frozenset(("int", "float", "bool", "pointer"))  # elements a bounded-index read may reach


class MemoryMixin:
    """Interpreter methods: memory."""

    _full_mask: tuple[np.ndarray | None, bool] = (None, False)  # (a mask, whether all its lanes are active)
    _live_of: tuple[np.ndarray | None, np.ndarray | None] = (None, None)  # (the kernel's return mask, live lanes)

    def lvalue(self, e: ir.Expr, read: bool = False) -> tuple[Val, ir.CType] | None:
        """The address of an lvalue expression that lives in memory, with its type; None otherwise.
        `read`: the lvalue is only read here (a table read at a bounded index gets stand-in
        addresses, eval/bounded_index.py)."""
        if isinstance(e, ir.Cast) and not e.explicit:
            return self.lvalue(e.operand, read)
        if isinstance(e, ir.Index):
            base = self.eval(e.base)
            idx = self.eval(e.index)
            t = e.ctype
            if t.kind in _RESOLVED_KINDS:
                t = self.resolve(t)
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
            if base.space == "shared" and t.kind != "array":
                self.note_row(e, base.root, idx)
            if read and idx.bound is not None and idx.data is None and t.kind in _SCALAR_KINDS and not idx.is_float:
                stand_in = bounded_index.window_address(base, idx, t.size, self.mask)
                if stand_in is not None:
                    address, same = stand_in
                    sp = e.span
                    site = frozenset() if same else frozenset([(sp.line, sp.column, sp.end_line, sp.end_column,
                                                                 base.root)])
                    return (Val(address, base.deps | idx.deps, base.space, base.root,
                                loads=base.loads | idx.loads | site, uniform=same, bound=idx.bound), t)
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

    def note_row(self, e: ir.Index, root: str, idx: Val) -> None:
        """For an element access of a `__shared__` array: record `root` in `out_of_row` unless the
        subscript is known and within the length of the array dimension it indexes on every active lane."""
        out = self.result.out_of_row
        if root in out:
            return
        b = e.base
        while isinstance(b, ir.Cast) and not b.explicit:
            b = b.operand
        bt = b.ctype
        if bt.kind == "array":
            bt = self.resolve(bt)
        d = idx.data
        if bt.kind != "array" or bt.count <= 0 or d is None or idx.is_float:
            out.add(root)
        elif d.size and (int(d.min()) < 0 or int(d.max()) >= bt.count) and any_set(
                ((d < 0) | (d >= bt.count)) & self.mask):
            out.add(root)

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
        lv = self.lvalue(e, read=True)
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
                v = self.local_arrays.load(tracked[0], self.eval(tracked[1]), self.mask)
            else:
                v = Val(None, addr.deps, why=("unmodelled", "a value kept in a thread-local array"))
        elif addr.bound is not None:
            v = bounded_index.read_value(addr)  # a read at stand-in addresses (eval/bounded_index.py)
        else:
            v = self.loaded(e, addr, t)
        if v.data is None and t.kind in ("int", "bool") and 0 < t.size <= 2:
            v = bounded_index.with_bound(v, bounded_index.type_bound(t))  # whatever is stored there
        return v

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
            self.unmeasured_requests += self.any_active()
            return
        width = t.size
        if t.kind == "struct":
            # Whole-struct copies: vector types (8/16 bytes, naturally aligned) are one access;
            # other structs are copied field by field (one load or store instruction per scalar
            # field, as ptxas emits them), each a warp request of its own at the same site.
            if width not in (1, 2, 4, 8, 16) or (t.align and t.align < width):
                if addr.data is None:
                    self.cov.drop(key, addr.why)
                    self.unmeasured_requests += self.any_active()
                    return
                for offset, ft in _vector_chunks(t) or _scalar_fields(t):
                    shifted = Val(addr.data + offset, addr.deps, addr.space, addr.root)
                    self.access(e, shifted, ft, kind, span, text=".struct")
                return
        if addr.data is None:
            self.cov.drop(key, addr.why)
            self.unmeasured_requests += self.any_active()
            return
        if width <= 0:
            self.cov.drop(key, self.type_why(t, e.ctype))
            self.unmeasured_requests += self.any_active()
            return
        address = spread(addr.data, self.mask.shape, np.int64)
        # (`address & (width - 1)`: the same lanes as `address % width != 0` for these powers of two,
        # in two's complement too; the active ones counted in C, not through a boolean index)
        if width in (2, 4, 8, 16) and addr.bound is None and any_set(np.logical_and(address & (width - 1), self.mask)):
            # A 4-byte access at an odd address faults on a GPU ("misaligned address"): the model is wrong
            # there (clang's size of a class whose base or member it could not resolve, 1 byte for an empty
            # one), so nothing measured from it can be reported.
            self.cov.drop(key, ("misaligned", str(width)))
            self.unmeasured_requests += self.any_active()
            return
        self.cov.hit(key)
        iters, lvars = self.loop_context()
        vec = 1
        if t.kind == "struct" and t.fields:
            vec = len(t.fields)
        # A struct field (`p[i].vx`) is marked so rules can tell a record stride from a plain one.
        text = text or (f".{e.field}" if isinstance(e, ir.Member) else "")
        ret = self.frames[0].ret_mask
        if ret is not self._live_of[0]:  # (return masks too are replaced, never written in place)
            self._live_of = (ret, self.entry_mask & ~ret if ret is not None else self.entry_mask)
        live = self._live_of[1]
        self.count_request()
        deps = addr.deps | frozenset(self.data_guards) if self.data_guards else addr.deps
        event = ev.MemoryAccess(span or e.span, addr.space, kind, width, address, self.mask.copy(), addr.root,
                                deps, iters, lvars, vec, text, live.copy())
        if addr.bound is not None:
            self.emit(event)  # stand-in addresses of a bounded-index read: never one load reused
            return
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
        # (lanes declared outside the mask: a merge; none when the variable was declared under this very mask.
        # On boolean masks `dm > mask` is `dm & ~mask` in one operation.)
        if old is None or dm is None or dm is self.mask or not any_set(np.greater(dm, self.mask)):
            env[name] = v
            return
        env[name] = self.merge(old, v, self.mask)

    def loaded(self, e: ir.Expr, addr: Val, t: ir.CType | None = None) -> Val:
        """The value a load returns: unknown, tagged with the load when lanes of a warp read it at
        different addresses (or through addresses computed from such data) — KL305 follows the tag.
        An integer every active lane reads at one address is a sampled runtime value instead
        (eval/uniform_data.py)."""
        loads = addr.loads
        varying = None if loads else self.lane_varying(addr)
        if addr.space in ("global", "shared", "constant") and (loads or varying):
            sp = e.span
            loads = loads | {(sp.line, sp.column, sp.end_line, sp.end_column, addr.root)}
        uniform = addr.data is not None and not loads and not varying
        if uniform and t is not None and self.any_active() and (
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
        d = v.data
        if d is None or d.shape[-1] == 1:
            return False
        m = self.mask
        if m is not self._full_mask[0]:
            self._full_mask = (m, np.count_nonzero(m) == m.size)
        if self._full_mask[1] and d.dtype == np.int64:
            return any_set(d != d[..., :1])  # every lane active: some lane differs from lane 0 of its warp
        if d.dtype == np.int64 and d.shape == m.shape:
            # Some active lane differs from the smallest value among its warp's active lanes (a warp with
            # none has lo = big, and its lanes are masked out): the reduction reads only active lanes.
            lo = np.minimum.reduce(d, axis=-1, where=m, initial=_BIG, keepdims=True)
            return any_set((d != lo) & m)
        # Per warp, the largest and smallest value among the active lanes (a warp with none has
        # lo = big > hi = -big, so it never counts).
        lo = np.minimum.reduce(np.where(m, d, _BIG), axis=-1)  # (`.min(axis=-1)` without its Python wrapper)
        hi = np.maximum.reduce(np.where(m, d, -_BIG), axis=-1)
        return any_set(hi > lo)

    def data_region_start(self, s: ir.Stmt, c: Val,
                          before: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[object, ...] | None:
        """Enter code under a condition decided by lane-varying data: its accesses are evaluated for
        every lane that reaches it, and say so (KernelResult.assumptions renders the guard)."""
        if not c.loads:
            return None
        self.data_guards.append(f"?data:{s.span.line}")
        w0 = before[0] if before is not None else self.warp_work.copy()
        return (w0, self.lane_work.copy(), self.mem_work.copy(), self.loop_context(), self.unmeasured_requests)

    def data_region_end(self, start: tuple[object, ...] | None, s: ir.Stmt, kind: str, c: Val,
                        reached: np.ndarray, has_loop: bool, exit_kind: str, search: bool = False,
                        common_work: np.ndarray | None = None, role: str = "", body_ran: bool = True, opaque: int = 0) -> None:
        if start is None:
            return
        self.data_guards.pop()
        w0, _l0, m0, (iters, lvars), u0 = start
        self.emit(ev.DataBranch(
            s.span, kind, reached.copy(), tuple(sorted(c.loads)), c.deps, iters, lvars,  # type: ignore[arg-type]
            work=self.warp_work - w0, memory=self.mem_work - m0, has_loop=has_loop,  # type: ignore[operator]
            exit=exit_kind, work_before=self.warp_work.copy() if exit_kind else None,
            memory_before=self.mem_work.copy() if exit_kind else None, search=search,
            common_work=common_work, exceptional=self.exceptional_sides[-1] if self.exceptional_sides else 0,
            role=role, unmeasured=self.unmeasured_requests - u0, body_ran=body_ran, opaque=opaque))  # type: ignore[operator]

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


