"""How one file is parsed in its project: alone or through its includer, and its template instances.

The engine asks `parse_in_project` for a file's TranslationUnit and launches found elsewhere, then
`Unit.instance(fn, binding)` for a template kernel made concrete (`frontend.instantiate`), parsed once
per (file text, binding) and reused.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir
from kernlint.frontend import FrontendError, parse_source
from kernlint.frontend.instantiate import dependent_lines, instantiate_region
from kernlint.ir.known_torch import binding_headers
from kernlint.model.occupancy import DEFAULT_ARCH

if TYPE_CHECKING:
    from kernlint.base.options import LintOptions
    from kernlint.project.index import ProjectIndex

_INSTANCES: dict[str, tuple[ir.TranslationUnit, ir.Function] | None] = {}
_MAX_INSTANCES = 512
MAX_INCLUDERS = 4  # includers of one fragment tried as its context


@dataclass
class Unit:
    """A parsed file: `text` at `path`, parsed alone or (`includer` set) through the file including it."""

    path: str
    text: str
    options: "LintOptions"
    includer: str | None = None
    includer_text: str = ""
    notes: list[str] = field(default_factory=list)
    # Names a binding's own declaration could not resolve (`at` of `at::BFloat16` without c10's
    # headers): a later binding naming one is passed over without parsing it (engine._usable_bindings).
    unknown_names: set[str] = field(default_factory=set)

    def parse(self, text: str | None = None, kernel: str | None = None,
              instance_region: tuple[int, int] | None = None,
              pre_includes: tuple[str, ...] = ()) -> ir.TranslationUnit:
        """The file parsed (`text` in place of its own); `kernel`, `instance_region`: only that kernel is
        wanted, made concrete in that part of `text`; `pre_includes`: headers read first (parse_source)."""
        text = self.text if text is None else text
        o = self.options
        arch = o.arch or DEFAULT_ARCH
        if self.includer:
            return parse_source(self.includer_text, self.includer, include_dirs=o.include_dirs, defines=o.macros,
                                arch=arch, fragment=self.path, fragment_text=text, kernel=kernel,
                                instance_region=instance_region, pre_includes=pre_includes)
        return parse_source(text, self.path, include_dirs=o.include_dirs, defines=o.macros, arch=arch, kernel=kernel,
                            instance_region=instance_region, pre_includes=pre_includes)

    def instance(self, fn: ir.Function, binding: tuple[tuple[str, str], ...]) -> tuple[ir.TranslationUnit, ir.Function] | None:
        """`fn` with `binding` substituted textually, lowered as an ordinary kernel; None if that fails."""
        key = hashlib.sha256(repr((self.path, self.text, self.includer, self.includer_text, fn.key, binding,
                                   self.options.include_dirs, self.options.macros, self.options.arch)).encode()
                             ).hexdigest()
        if key in _INSTANCES:
            hit = _INSTANCES[key]
            if hit is None or not hit[0].functions.released:
                return hit  # (a released parse, from an earlier lint, lowers nothing more: parsed again)
        out = None
        made = instantiate_region(self.text, fn.span.line, fn.name, dict(binding))
        if made is not None:
            new_text, region = made
            try:
                tu = self.parse(new_text, kernel=fn.key, instance_region=region,
                                pre_includes=binding_headers(binding))
            except FrontendError:
                tu = None
            if tu is not None:
                inst = next((k for k in tu.kernels if k.key == fn.key and not k.template_params), None)
                # An instance whose body no longer parses cleanly (an argument that means nothing in
                # this file) is not used: the template is evaluated as before.
                if inst is not None and inst.body is not None and len(inst.parse_errors) <= len(fn.parse_errors) \
                        and _loses_nothing(self.text, new_text, fn, inst, tu):
                    out = (tu, inst)
                else:
                    self.unknown_names.update(_binding_problems(new_text, tu))
        if len(_INSTANCES) > _MAX_INSTANCES:
            _INSTANCES.clear()
        _INSTANCES[key] = out
        return out


def _decl_line(new_text: str) -> int:
    """The line holding an instance's binding declarations (`namespace __kl_inst_0 { using T = ...;`)."""
    return new_text.count("\n", 0, max(0, new_text.find("namespace __kl_inst_"))) + 1


_QUOTED = lazy_compile(r"'([A-Za-z_]\w*)'")


def _binding_problems(new_text: str, tu: ir.TranslationUnit) -> set[str]:
    """The names clang could not resolve in the binding's declarations ('at', 'complex_t')."""
    line = _decl_line(new_text)
    return {n for p in tu.problems if p.line == line and not p.message.startswith("/")
            and ("undeclared" in p.message or "unknown type" in p.message) for n in _QUOTED.findall(p.message)}


def _loses_nothing(text: str, new_text: str, fn: ir.Function, inst: ir.Function, tu: ir.TranslationUnit) -> bool:
    """Whether the instance `inst` of the template `fn` keeps every line the template could evaluate: each
    name clang cannot resolve in it is one the template could not resolve either, or sits on a line
    that depends on the binding (`typename Ktraits::BlockLoadT::TempStorage` of a traits class whose
    member comes from a missing header: the template had only the dependent name there)."""
    # The binding's own declarations (`using Ktraits = Traits<32, float, complex_t>;`, on the template
    # header's line): an argument that means nothing here makes every line "dependent": not used.
    decl_line = _decl_line(new_text)
    if any(p.line == decl_line for p in tu.problems if not p.message.startswith("/")):
        return False
    extra = {ln for ln, _c, _m in inst.unresolved} - {ln for ln, _c, _m in fn.unresolved}
    if not extra:
        return True
    end = fn.span.end_line or max(extra)
    params = tuple(p.name for p in fn.template_params)
    return extra <= dependent_lines(text, fn.span.line, end, params)


def _problems_in(tu: ir.TranslationUnit) -> int:
    return len(tu.problems) + sum(len(k.unresolved) + len(k.parse_errors) for k in tu.kernels)


def _badness(tu: ir.TranslationUnit) -> tuple[int, int]:
    """Problems in the kernels first (what the analysis loses), then all of them: an includer whose
    own headers (stubbed or not) leave problems elsewhere is still the better context."""
    return sum(len(k.unresolved) + len(k.parse_errors) for k in tu.kernels), _problems_in(tu)


def parse_in_project(text: str, path: str, options: "LintOptions",
                     index: "ProjectIndex | None") -> tuple[ir.TranslationUnit, Unit]:
    """Parse `text`; a fragment (a file another project file #includes) that does not parse cleanly
    alone is parsed through its includer, whose preceding definitions and macros it relies on."""
    unit = Unit(path, text, options)
    tu = unit.parse()
    if index is None or path in ("", "<stdin>", "-"):
        return tu, unit
    if not _problems_in(tu):
        return tu, unit
    best: tuple[ir.TranslationUnit, Unit] | None = None
    # A file can have several includers (a runner, a leftover header listing every kernel): the one
    # that leaves the fewest problems is its context.
    for includer in index.includers_of(path)[:MAX_INCLUDERS]:
        try:
            with open(includer, encoding="utf-8", errors="replace") as fh:
                inc_text = fh.read()
        except OSError:
            continue
        ctx = Unit(path, text, options, includer, inc_text)
        try:
            ctx_tu = ctx.parse()
        except FrontendError:
            continue
        if _badness(ctx_tu) < _badness(best[0] if best else tu) and len(ctx_tu.kernels) >= len(tu.kernels):
            rel = os.path.relpath(includer, os.path.dirname(os.path.abspath(path)))
            ctx.notes.append(f"parsed through its includer {rel} (the definitions and macros before its #include)")
            best = (ctx_tu, ctx)
            if not _problems_in(ctx_tu):
                break
    return best if best is not None else (tu, unit)


def project_launches(index: "ProjectIndex", fn: ir.Function, path: str) -> tuple[ir.Launch, ...]:
    """Launches of `fn` found by the index, as IR launches; this file's own plain launches are left to
    clang (more exact), except those inside host function templates (bound through their calls)."""
    ap = os.path.abspath(path)
    out = []
    for pl in index.launches_of(fn.name, ap):
        same = pl.path == ap
        in_template = pl.via or any(a is None for a in pl.template_args) or pl.in_template
        if same and not in_template:
            continue
        site = "" if same else pl.site(index.root)
        targs = deduce_template_args(fn, pl.template_args, pl.arg_types)
        out.append(ir.Launch(pl.kernel, tuple(a or "" for a in targs), pl.grid, pl.block,
                             pl.shared_bytes, ir.Span(pl.line, 1, pl.line, 1), pl.block_text, pl.args, "",
                             site, pl.via, arg_offsets=pl.arg_offsets, block_dims=pl.block_dims,
                             dim_values=pl.dim_values))
    return tuple(out)


def deduce_template_args(fn: ir.Function, explicit: tuple[str | None, ...],
                         arg_types: tuple[str, ...]) -> tuple[str | None, ...]:
    """The launch's template arguments, completed as C++ deduces them from the arguments' declared
    types ([temp.deduct.call]): a kernel parameter `T*` / `const T*` given a `float *` gives T = float,
    a parameter `T` given a `float` the same. Only type parameters after the explicit ones are
    deduced, only from arguments whose declared type the index saw, and only when every such
    parameter is deduced, consistently; otherwise the explicit arguments are returned unchanged."""
    params = fn.template_params
    if len(explicit) >= len(params) or not arg_types or any(a is None for a in explicit):
        return explicit
    wanted = {tp.name for tp in params[len(explicit):]}
    if not all(tp.is_type for tp in params[len(explicit):]):
        return explicit
    got: dict[str, str] = {}
    for p, at in zip(fn.params, arg_types):
        t = p.ctype
        stars = 0
        while t.kind == "pointer" and t.pointee is not None:
            t, stars = t.pointee, stars + 1
        name = t.name.replace("const ", "").replace("volatile ", "").strip() if t.kind == "template" else ""
        if name not in wanted or not at:
            continue
        base = at.replace("*", "").strip()
        if at.count("*") != stars or not base:
            continue
        if got.setdefault(name, base) != base:
            return explicit  # two arguments disagree: leave it to the user
    if set(got) != wanted:
        return explicit
    return tuple(explicit) + tuple(got[tp.name] for tp in params[len(explicit):])


def project_instantiations(index: "ProjectIndex", fn: ir.Function, path: str) -> tuple[tuple[tuple[str, ...], str], ...]:
    ap = os.path.abspath(path)
    return tuple((args, f"{os.path.relpath(p, index.root)}:{line}")
                 for args, p, line in index.instantiations_of(fn.name, ap) if p != ap)
