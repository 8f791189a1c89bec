"""The project index's folding: a launch's template arguments, grid, block and scalar arguments turned into
values with the macros and constants its file sees, and a host function template's bindings from its calls
(a mixin of ProjectIndex, kernlint/project/index.py, which holds the facts and the include graph)."""
from __future__ import annotations

import os
import re
from pathlib import Path

from kernlint.base.frozen import frozen
from kernlint.project.facts import FileFacts, RawLaunch
from kernlint.project.fold import fold

MAX_HOST_BINDINGS = 32  # per host template; the engine evaluates at most launch.MAX_BINDINGS of them


@frozen
class ProjectLaunch:
    """A launch found somewhere in the project, folded with that file's macros and constants."""

    kernel: str
    template_args: tuple[str | None, ...]  # None: depends on something the scan could not bind
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    shared_bytes: int | None
    args: tuple[int | None, ...]
    path: str
    line: int
    via: str = ""  # "run<float> at main.cu:12" when bound through a host function template
    block_text: str = ""
    in_template: bool = False  # inside a host function template
    arg_offsets: tuple[str, ...] = ()  # per argument, a pointer offset it passes (frontend/pointer_offsets.py)
    # per argument naming a host variable, its declared type with the host's binding and the file's
    # type aliases applied (`__nv_bfloat16 *`; "" unknown): template type arguments are deduced from it
    arg_types: tuple[str, ...] = ()
    block_dims: tuple[str, ...] = ()  # an unfolded block per component (ir.Launch.block_dims)
    dim_values: tuple[tuple[str, tuple[int, ...]], ...] = ()  # (ir.Launch.dim_values)

    def site(self, root: Path | None = None) -> str:
        return f"{_rel(self.path, root)}:{self.line}"


def _rel(path: str, root: Path | None) -> str:
    if root is not None:
        try:
            return os.path.relpath(path, root)
        except ValueError:
            return path
    return os.path.basename(path)


class Folding:
    """What ProjectIndex folds (its attributes and queries are the index's own)."""

    root: Path
    facts: dict[str, FileFacts]
    _launch_memo: dict[str, list["ProjectLaunch"]]

    def _host_bindings(self, host: str, params: tuple[tuple[str, bool, str], ...],
                       defined_in: str, depth: int = 0) -> list[tuple[dict[str, str], str]]:
        """Bindings of a host function template's parameters from the calls `host<...>(...)` in the
        project files that can see its definition (C++ needs it visible where it is instantiated).

        A call inside another function template that passes that template's own parameters
        (`template <class T> void outer() { host<32, T>(); }`) is bound through outer's calls and
        explicit instantiations in turn (`template void outer<float>();`), up to 3 levels."""
        out: list[tuple[dict[str, str], str]] = []
        seen = set()
        for p in self._files_naming("template_calls", host):
            facts = self.facts[p]
            if p != defined_in and defined_in not in self.closure(p):
                continue
            for name, args, line in facts.template_calls:
                if name != host or len(args) > len(params):
                    continue
                b: dict[str, str] = {}
                for i, (pname, _is_type, default) in enumerate(params):
                    if i < len(args):
                        b[pname] = args[i]
                    elif default:
                        b[pname] = default
                if len(b) < len(params):
                    continue
                env = self.env(p)
                b = {k: _fold_arg(v, env) for k, v in b.items()}
                for b2, via in self._outer_bindings(b, facts, p, line, depth):
                    key = tuple(sorted(b2.items()))
                    if key in seen:
                        continue
                    seen.add(key)
                    out.append((b2, f"{host}<{', '.join(args)}> at {_rel(p, self.root)}:{line}{via}"))
                    if len(out) >= MAX_HOST_BINDINGS:
                        return out
        return out

    def _outer_bindings(self, b: dict[str, str], facts: FileFacts, path: str, line: int,
                        depth: int) -> list[tuple[dict[str, str], str]]:
        """`b` (a call's binding) with the values that name a parameter of the function template holding
        the call (at `line` of `path`) bound by that template's own bindings: one per outer binding;
        [(b, "")] when no value names one (or none of the outer template's calls binds it)."""
        names = {v.strip() for v in b.values() if v.strip().isidentifier()}
        outer = next((t for t in facts.function_templates if t[2] <= line <= t[3]), None) if names else None
        if outer is None or depth >= 2 or not names & {n for n, _t, _d in outer[1]}:
            return [(b, "")]
        found = self._host_bindings(outer[0], outer[1], path, depth + 1)
        if not found:
            return [(b, "")]
        return [({k: ob.get(v.strip(), v) for k, v in b.items()}, f", in {via}") for ob, via in found]

    def _deduced_host_bindings(self, host: str, params: tuple[tuple[str, bool, str], ...],
                               param_types: tuple[str, ...], defined_in: str) -> list[tuple[dict[str, str], str]]:
        """Bindings of a host function template's type parameters deduced, as C++ does, from calls
        `host(a, b, ...)` without template arguments whose arguments' declared types the scan saw
        (`adamw_update(param_ptr, ...)` with `floatX* param_ptr` and a parameter `Tp* params`):
        only when every parameter is deduced (or has a default) and the arguments agree."""
        out: list[tuple[dict[str, str], str]] = []
        seen = set()
        names = {n for n, is_type, _d in params if is_type}
        if not param_types or len(names) != len(params):
            return out
        for p in self._files_naming("typed_calls", host):
            facts = self.facts[p]
            if p != defined_in and defined_in not in self.closure(p):
                continue
            env = self.env(p)
            for name, types, line in facts.typed_calls:
                if name != host or len(types) != len(param_types):
                    continue
                b = _deduce_from_types(names, param_types, types)
                if b is None:
                    continue
                for n, _t, default in params:
                    if n not in b and default:
                        b[n] = default
                if set(b) != names:
                    continue
                b = {k: self.dealias(v, p, env) for k, v in b.items()}
                key = tuple(sorted(b.items()))
                if key in seen:
                    continue
                seen.add(key)
                shown = ", ".join(b[n] for n, _t, _d in params)
                out.append((b, f"{host}(...) at {_rel(p, self.root)}:{line}, deducing {shown}"))
                if len(out) >= MAX_HOST_BINDINGS:
                    return out
        return out

    def _arg_type(self, text: str, binding: dict[str, str], unbound: set[str], path: str,
                  env: dict[str, str | int]) -> str:
        got = _arg_type_of(text, binding, unbound)
        if got is None:
            return ""
        base, stars = got
        return (self.dealias(base, path, env) + (" " + stars if stars else "")).strip()

    def _resolve(self, path: str, ln: RawLaunch) -> list[ProjectLaunch]:
        key = f"{path}:{ln.line}:{ln.kernel}:{ln.template_args}"  # a macro's copies share a line
        hit = self._launch_memo.get(key)
        if hit is not None:
            return hit
        env = dict(self.env(path))
        for name in ln.host_args:
            env.pop(name, None)  # a host function parameter hides a macro-free constant of that name
        for name, value in ln.locals:
            env[name] = value
        host_names = {n for n, _t, _d in ln.host_params}
        variants: list[tuple[dict[str, str], str]] = [({}, "")]
        if host_names:
            found = self._host_bindings(ln.host, ln.host_params, path) \
                or self._deduced_host_bindings(ln.host, ln.host_params, ln.host_arg_types, path)
            variants = found or [({}, "")]
        out = []
        for binding, via in variants:
            e = dict(env)
            e.update(binding)
            unbound = host_names - set(binding)
            targs = tuple(_subst_arg(a, binding, unbound, e) for a in ln.template_args)
            targs = tuple(self.dealias(a, path, e) if a is not None else None for a in targs)
            grid = ln.grid_value or (_fold_dim3(ln.config[0], e, unbound) if ln.config else None)
            block = ln.block_value or (_fold_dim3(ln.config[1], e, unbound) if len(ln.config) > 1 else None)
            shared = ln.shared_value if ln.shared_value is not None else \
                _fold_int(ln.config[2], e, unbound) if len(ln.config) > 2 else None
            args = tuple(_fold_int(a, e, unbound | set(ln.host_args)) for a in ln.args)
            types = tuple(self._arg_type(t, binding, unbound, path, e) for t in ln.arg_types)
            # (clang's components where its callers fix them: the text cannot tell an int parameter from a dim3)
            dims = ((ln.block_dims if ln.dim_values else None) or _partial_dim3(ln.config[1], e, unbound)) \
                if block is None and len(ln.config) > 1 else None
            out.append(ProjectLaunch(ln.kernel, targs, grid, block, shared, args, path, ln.line, via,
                                     ln.config[1] if len(ln.config) > 1 else "", bool(host_names), ln.arg_offsets,
                                     types, dims or (), ln.dim_values))
        self._launch_memo[key] = out
        return out


def _arg_type_of(text: str, binding: dict[str, str], unbound: set[str]) -> tuple[str, str] | None:
    """(base type, pointer stars) of a declared argument type with the host binding applied; None
    when it names an unbound host template parameter or is not a plain (pointer to a) type."""
    if not text or _names(text) & unbound:
        return None
    t = re.sub(r"[A-Za-z_]\w*", lambda m: binding.get(m.group(0), m.group(0)), text)
    t = " ".join(re.sub(r"\bconst\b", " ", t).split())
    stars = t.count("*")
    base = t.replace("*", "").strip()
    if "&" in base or not re.fullmatch(r"[A-Za-z_][\w :<>,]*", base):
        return None
    return base, "*" * stars


def _deduce_from_types(names: set[str], param_types: tuple[str, ...], arg_types: tuple[str, ...]
                       ) -> dict[str, str] | None:
    """Type parameters deduced from (declared parameter type, declared argument type) pairs of the
    forms `T *`/`const T *` against a pointer of the same depth; None when two arguments disagree."""
    got: dict[str, str] = {}
    for pt, at in zip(param_types, arg_types):
        if not pt or not at:
            continue
        base = " ".join(re.sub(r"\bconst\b", " ", pt).replace("*", " ").split())
        if base not in names or "*" not in pt:
            continue
        abase = " ".join(re.sub(r"\bconst\b", " ", at).replace("*", " ").split())
        if at.count("*") != pt.count("*") or not re.fullmatch(r"[A-Za-z_][\w :<>,]*", abase):
            continue
        if got.setdefault(base, abase) != abase:
            return None
    return got


def _names(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def _fold_arg(text: str, env: dict[str, str | int]) -> str:
    v = fold(text, env)
    return str(v) if v is not None else text


def _subst_arg(text: str, binding: dict[str, str], unbound: set[str], env: dict[str, str | int]) -> str | None:
    if _names(text) & unbound:
        return None
    v = fold(text, env)
    if v is not None:
        return str(v)
    if binding:
        return re.sub(r"[A-Za-z_]\w*", lambda m: binding.get(m.group(0), m.group(0)), text)
    return text


def _fold_int(text: str, env: dict[str, str | int], unbound: set[str]) -> int | None:
    if _names(text) & unbound:
        return None
    return fold(text, {k: v for k, v in env.items() if k not in unbound})


def _dim3_components(text: str, env: dict[str, str | int],
                     depth: int = 0) -> tuple[list[str], bool] | None:
    """The component expressions of a launch's grid or block as written, after following the dim3
    variables of `env`: (the parts of `dim3(a, b)` or `{a, b}` as split_top gives them, True), or
    ([text], False) for a scalar; None past four variables or for empty text."""
    t = text.strip()
    if depth > 4 or not t:
        return None
    if t in env and isinstance(env[t], str) and str(env[t]).startswith("dim3"):
        return _dim3_components(str(env[t]), env, depth + 1)
    from kernlint.project.scan import split_top

    m = re.fullmatch(r"(?:dim3\s*)?[({](.*)[)}]", t, re.S)
    if m and (t.startswith("dim3") or t.startswith("{")):
        return split_top(m.group(1)), True
    return [t], False


def _fold_dim3(text: str, env: dict[str, str | int], unbound: set[str]) -> tuple[int, int, int] | None:
    got = _dim3_components(text, env)
    if got is None:
        return None
    parts, listed = got
    if not listed:
        v = _fold_int(parts[0], env, unbound)
        return (v, 1, 1) if v is not None else None
    parts = [p for p in parts if p]
    if not 1 <= len(parts) <= 3:
        return None
    vals = [_fold_int(p, env, unbound) for p in parts]
    if any(v is None for v in vals):
        return None
    dims = [int(v) for v in vals if v is not None] + [1, 1]
    return (dims[0], dims[1], dims[2])


def _partial_dim3(text: str, env: dict[str, str | int], unbound: set[str]) -> tuple[str, str, str] | None:
    """An unfolded block per component: decimal where it folds, else the expression as written
    (`dim3(ne13, ne12)` -> ("ne13", "ne12", "1")); None when its components are not known."""
    got = _dim3_components(text, env)
    if got is None:
        return None
    parts, listed = got
    if not listed:
        t = parts[0]
        if re.fullmatch(r"[A-Za-z_]\w*", t):
            return None  # a dim3 variable the scan did not see declared: its components are unknown
        v = _fold_int(t, env, unbound)
        return (str(v) if v is not None else t, "1", "1")
    parts = [p.strip() for p in parts if p.strip()]
    if not 1 <= len(parts) <= 3:
        return None
    vals = [_fold_int(p, env, unbound) for p in parts]
    dims = [str(v) if v is not None else p for v, p in zip(vals, parts)] + ["1", "1"]
    return (dims[0], dims[1], dims[2])
