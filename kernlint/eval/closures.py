"""Lambdas that capture: the object a lambda expression makes, and the captured variables its calls read and write.

C++ semantics ([expr.prim.lambda.capture]): a variable captured by copy is a member of the closure object,
initialised when the lambda expression is evaluated, so a call sees its value at the making, whatever the
variable holds by then (a `mutable` lambda's call may write the member, never the variable). A variable
captured by reference is the enclosing function's variable itself: each call reads what it holds at the call,
and what the call writes is there afterwards.

The evaluator keeps a closure object as a struct value (values.Val `fields`): one member per copy, and, when it
captures by reference, a member MADE naming its making (a token of this table: the frame it was made in, and
each such variable's declaration at the making). A call (`inline`, eval/interp_calls.py) binds each captured
name in the callee's frame: a copy to the member, a reference to the variable as it is now in the making frame
(or in a lambda call still running that holds it: nested calls), written back after the call under the call's
mask. A call it cannot bind that way (made in a frame that has returned, a variable hidden by another of the
same name where it is called, an object that reached the call through code kernlint does not model) is not
evaluated and says so (coverage reason `lambda_captures`), never guessed.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval import coverage as cov
from kernlint.eval.values import Frame, Interp, Val, any_set, unknown

MADE = "(made)"  # the member of a closure value naming its making (no C++ member can be spelled so)
COPY, REF = "copy", "ref"  # (as frontend/lambdas.py records them in ir.Function.captures)


class _Made(NamedTuple):
    frame: Frame
    masks: dict[str, object]  # each variable captured by reference -> its declaration mask at the making


class ClosureTable:
    """The makings of the run's closure objects that capture by reference, and the lambda calls running."""

    def __init__(self) -> None:
        self.made: dict[int, _Made] = {}
        self.tokens: dict[tuple[int, ...], int] = {}
        self.counter = 0
        # Lambda calls running: (the call's frame, a name it captures by reference, the frame that declares it).
        self.active: list[tuple[Frame, str, Frame]] = []
        # The variables calls wrote back (id of the frame, name) while a statement watches (`mark`), a lambda's
        # captured by reference or a caller's variable bound to a reference parameter (interp_calls.inline): a
        # branch on unknown data, a loop stopped early, make unknown what they wrote, which no assignment in
        # their text shows (eval/interp_statements.py's `_assigned_names`).
        self.log: list[tuple[int, str]] = []
        self.watching = 0
        # (lambda's key, captured name) -> the variable's declared type where a lambda was made: a captured lambda
        # called in the lambda's body is found by it (Interpreter.closure_variable).
        self.types: dict[tuple[str, str], ir.CType] = {}

    def mark(self) -> int:
        """Start watching the write-backs of lambda calls: where the log stands (for `lose_written`)."""
        self.watching += 1
        return len(self.log)

    def register(self, frame: Frame, e: ir.Closure, masks: dict[str, object]) -> int:
        """The token of `e`'s making in `frame` with these declarations (the same token for the same making:
        a lambda made at each iteration of a loop is one entry)."""
        key = (id(frame), id(e), *(id(m) for m in masks.values()))
        token = self.tokens.get(key)
        if token is None or self.made[token].frame is not frame:
            # (never a token given before: an object that outlived its making must not name a later one)
            self.counter += 1
            token = self.counter
            self.tokens[key] = token
            self.made[token] = _Made(frame, masks)
        return token

    def forget(self, frame: Frame) -> None:
        """`frame` has returned: its makings can no longer be called with their references."""
        if not self.made:
            return
        gone = {t for t, m in self.made.items() if m.frame is frame}
        if gone:
            for t in gone:
                del self.made[t]
            for k in [k for k, t in self.tokens.items() if t in gone]:
                del self.tokens[k]


def make(interp: Interp, e: ir.Closure) -> Val:
    """The closure object lambda `e` makes here: its copies read now, and its making when it captures by
    reference. An object whose captures are not all variables of this frame has no members: its calls are
    not evaluated (`bind`)."""
    frame = interp.frame
    env = frame.env
    types = interp.closures.types
    for name in (*(r.name for r in e.copies), *e.refs):
        t = frame.ctype_of.get(name)
        if t is not None and (e.key, name) not in types:
            types[(e.key, name)] = t
    fields: list[tuple[str, Val]] = []
    for r in e.copies:
        if r.name not in env:  # (a parameter read through its address: interp_calls.object_body)
            return Val(None, why=("unmodelled", "a lambda object"), uniform=True)
        fields.append((r.name, interp.eval(r)))
    if e.refs:
        masks = {}
        for name in e.refs:
            dm = frame.decl_mask.get(name)
            if name not in env or dm is None:
                return Val(None, why=("unmodelled", "a lambda object"), uniform=True)
            masks[name] = dm
        token = interp.closures.register(frame, e, masks)
        fields.append((MADE, Val(np.full((1, 1, 1), token, dtype=np.int64), uniform=True)))
    return Val(None, fields=tuple(fields), why=("unmodelled", "a lambda object"), uniform=True)


class Bound(NamedTuple):
    """What a lambda call binds: each captured name's value on entry, and where each one captured by reference
    is written back (the frame that declares it, or a lambda call running that holds it)."""

    values: dict[str, Val]
    back: list[tuple[str, Frame]]
    owner: Frame | None  # the frame that made the object (None: it captures nothing by reference)


def bind(interp: Interp, callee: ir.Function, closure: Val) -> Bound | str:
    """The captured names of lambda `callee` called on `closure`, or why they cannot be bound (see the module)."""
    made = None
    if any(mode == REF for _, mode in callee.captures):
        tag = closure.field(MADE)
        if tag is None or tag.data is None:
            return "its object reached the call through code kernlint does not follow"
        tokens = np.unique(tag.data)
        made = interp.closures.made.get(int(tokens[0])) if len(tokens) == 1 else None
        if made is None or not any(f is made.frame for f in interp.frames):
            return "called where the function that made it has returned"
    values: dict[str, Val] = {}
    back: list[tuple[str, Frame]] = []
    for name, mode in callee.captures:
        if mode == COPY:
            v = closure.field(name)
            if v is None:
                return "its object reached the call through code kernlint does not follow"
            values[name] = v
            continue
        assert made is not None
        target = made.frame
        for running, n, owner in reversed(interp.closures.active):
            if n == name and owner is made.frame:
                target = running  # (a lambda call running holds the variable: its value is the current one)
                break
        else:
            if made.frame.decl_mask.get(name) is not made.masks.get(name):
                return f"`{name}`, which it captures by reference, is hidden by another variable of that name there"
        v = target.env.get(name)
        if v is None:
            return f"`{name}`, which it captures by reference, is not a variable kernlint follows there"
        values[name] = v
        back.append((name, target))
    return Bound(values, back, made.frame if made is not None else None)


def enter(interp: Interp, callee_key: str, frame: Frame, bound: Bound) -> None:
    """Bind the captured names in `frame`, the call's (before its body runs), with their declared types."""
    types = interp.closures.types
    for name, v in bound.values.items():
        frame.env[name] = v
        frame.decl_mask[name] = interp.mask
        t = types.get((callee_key, name))
        if t is not None:
            frame.ctype_of[name] = t
    for name, _ in bound.back:
        interp.closures.active.append((frame, name, bound.owner))


def leave(interp: Interp, callee: ir.Function, e: ir.Call, frame: Frame, bound: Bound, closure: Val) -> None:
    """After the call (its frame popped, the caller's mask back): the variables captured by reference written
    back where they live, and a `mutable` lambda's copies into its object."""
    active = interp.closures.active
    active[:] = [a for a in active if a[0] is not frame]
    for name, target in bound.back:
        assign_in(interp, target, name, frame.env.get(name, unknown(why=("call", "a lambda"))))
    if callee.mutable:
        copies = {name for name, mode in callee.captures if mode == COPY}
        if copies:
            fields = tuple((k, frame.env.get(k, v) if k in copies else v) for k, v in closure.fields)
            _store_object(interp, e, closure._replace(fields=fields))


def not_followed(interp: Interp, callee: ir.Function, e: ir.Call, closure: Val, why: str) -> Val:
    """A lambda call `bind` cannot bind (`why`): its body's accesses and branches not evaluated, and what it may
    write (the variables it captures by reference that are still there, a `mutable` lambda's copies) unknown."""
    place = callee.key[callee.key.rfind("@") + 1:].rpartition("/")[2]
    outer = interp.call_sites[0][0] if interp.call_sites else e.span
    assert callee.body is not None
    for key in cov.sites_of(callee.body, interp.tu, interp.cov_shared, outer, len(interp.frames) + 1):
        interp.cov.drop(key, ("lambda_captures", f"{place} ({why})"))
    interp.recent_loads.forget()
    interp.uniform_loads.forget("")
    lost = unknown(why=("call", "a lambda kernlint did not follow"))
    tag = closure.field(MADE)
    if tag is not None and tag.data is not None and len(np.unique(tag.data)) == 1:
        made = interp.closures.made.get(int(np.unique(tag.data)[0]))
        if made is not None and any(f is made.frame for f in interp.frames):
            for name, mode in callee.captures:
                if mode == REF and name in made.frame.env and made.frame.decl_mask.get(name) is made.masks.get(name):
                    assign_in(interp, made.frame, name, lost)
    if callee.mutable and closure.fields:
        copies = {name for name, mode in callee.captures if mode == COPY}
        _store_object(interp, e, closure._replace(fields=tuple((k, lost if k in copies else v)
                                                               for k, v in closure.fields)))
    return Val(None, why=("call", "a lambda kernlint did not follow"))


def lose_written(interp: Interp, at: int, lose: Callable[[Val], Val]) -> None:
    """End the watch begun at `at` (ClosureTable.mark) with the variables lambda calls wrote back since then
    made `lose(value)`, in each frame still running that holds them (a statement's own assignments are the
    caller's to lose)."""
    table = interp.closures
    table.watching = max(0, table.watching - 1)
    if len(table.log) > at:
        frames = {id(f): f for f in interp.frames}
        for fid, name in set(table.log[at:]):
            f = frames.get(fid)
            if f is not None and name in f.env:
                f.env[name] = lose(f.env[name])
    if not table.watching:
        table.log.clear()


def end_watch(interp: Interp) -> None:
    """End a watch whose write-backs need not be lost (the statement ran as evaluated)."""
    table = interp.closures
    table.watching = max(0, table.watching - 1)
    if not table.watching:
        table.log.clear()


def assign_in(interp: Interp, frame: Frame, name: str, v: Val) -> None:
    """`name = v` in `frame` (not necessarily the running one) for the active lanes: Interpreter.assign_var's
    merge with the lanes the variable was declared for."""
    if interp.closures.watching:
        interp.closures.log.append((id(frame), name))
    old = frame.env.get(name)
    dm = frame.decl_mask.get(name)
    mask = interp.mask
    if old is None or dm is None or dm is mask or not any_set(np.greater(dm, mask)):
        frame.env[name] = v
    else:
        frame.env[name] = interp.merge(old, v, mask)


def _store_object(interp: Interp, e: ir.Call, obj: Val) -> None:
    """The lambda object a call ran on, written back to the variable that holds it (a `mutable` lambda's copies)."""
    target = ir.strip_casts(e.receiver) if e.receiver is not None else None
    if isinstance(target, ir.Ref) and target.kind in ("local", "param") and target.name in interp.frame.env:
        interp.assign_var(target.name, obj)
