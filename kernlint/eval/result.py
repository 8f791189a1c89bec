"""What rules receive: one kernel evaluated under one launch shape."""
from __future__ import annotations

from dataclasses import field

from kernlint.ir import nodes as ir
from kernlint.eval import roles, uniform_data
from kernlint.eval.coverage import SiteStatus
from kernlint.eval.events import Event
from kernlint.base.frozen import frozen
from kernlint.project.launch import LaunchShape


@frozen
class KernelResult:
    path: str
    kernel: ir.Function
    shape: LaunchShape
    events: tuple[Event, ...]
    assumed: tuple[tuple[str, tuple[int, ...]], ...]  # sampled unknowns: name -> values
    defines: tuple[tuple[str, int], ...]
    notes: tuple[str, ...]
    source_lines: tuple[str, ...]
    shared_layout: tuple[tuple[str, int, ir.CType], ...] = ()
    # The parsed file, so a rule can re-evaluate the kernel under a changed declaration (KL201's
    # padding search); None when a result is built by hand.
    unit: ir.TranslationUnit | None = field(default=None, compare=False, repr=False)
    # Every access and branch site of the kernel: evaluated, or why not (eval/coverage.py).
    coverage: tuple[SiteStatus, ...] = field(default=(), compare=False, repr=False)
    # A re-evaluation with small samples for regions the first samples made dead (eval/resample.py):
    # only its findings inside `regions` count, and each carries `resampled` as an assumption.
    regions: tuple[tuple[int, int, int, int], ...] = ()
    resampled: str = ""
    # An extra evaluation with one additive-offset parameter set odd (eval/samples.py): only the
    # conditional KL103 findings it adds are reported.
    odd_offset: tuple[str, int] | None = None
    # The template kernel that `kernel` instantiates (engine: textual instantiation), None otherwise;
    # confirmation launches `template<args>` from the real source, so it needs the template's parameters.
    template: ir.Function | None = field(default=None, compare=False, repr=False)
    # Each uniform load's site symbol -> the sampled symbol it took (EvalResult.load_sites).
    load_sites: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    # The `__shared__` arrays every element access of which subscripted its innermost dimension within
    # its length (EvalResult.out_of_row), with the events of the evaluation that found it: a result made
    # from this one with other events (another define, measured events) holds nothing of it. None when not
    # recorded (a result built by hand, a re-evaluation).
    in_row: tuple[tuple[Event, ...], frozenset[str]] | None = field(default=None, compare=False, repr=False)

    def arrays_in_row(self) -> frozenset[str]:
        """`in_row`'s arrays where it holds for these events; none otherwise."""
        if self.in_row is None or self.in_row[0] is not self.events:
            return frozenset()
        return self.in_row[1]

    def assumptions(self, deps: frozenset[str] | None = None) -> tuple[str, ...]:
        """Human-readable assumptions; with `deps`, only the sampled symbols that matter."""
        out = [self.shape.describe()]
        if self.shape.bindings:
            binds = ", ".join(f"{k} = {v}" for k, v in self.shape.bindings)
            out.append(f"template arguments {binds} ({self.shape.binding_source})")
        for name, values in self.assumed:
            if deps is not None and name not in deps:
                continue
            if uniform_data.is_load_symbol(name):
                out.append(uniform_data.describe(name, values, self.source_lines))
            elif name.startswith("blockIdx") or name.startswith("gridDim"):
                out.append(f"{name} sampled as {_shown(values)}")
            else:
                out.append(f"{name} = {_shown(values)} ({roles.sampled_as(self.kernel, name, self.unit)}; "
                           f"set with --define {name}=VALUE)")
        if deps is not None:
            for d in sorted(x for x in deps if x.startswith(uniform_data.PTR_PREFIX)):
                out.append(uniform_data.describe_pointer(d, self.source_lines))
            # Accesses under a condition decided by lane-varying data were evaluated for every lane.
            for line in sorted({int(d.split(":")[1]) for d in deps if d.startswith("?data:")}):
                out.append(f"assuming every lane may take the data-dependent branch at line {line} "
                           f"(`{self.line_text(line)}`)")
        launch_args = dict(self.shape.arg_values)
        if launch_args:
            shown = ", ".join(f"{k} = {v}" for k, v in launch_args.items())
            host = [k for k, _v in self.shape.arg_samples if k in launch_args]
            how = f"; {', '.join(host)} from the loops and conditions around it" if host else ""
            out.append(f"kernel arguments {shown} (from the {self.shape.source}{how})")
        # Defined values are constants to the evaluator (no deps), so they are always listed.
        names = {p.name for p in self.kernel.params} | {t.name for t in self.kernel.template_params}
        defined = [f"{k} = {v}" for k, v in self.defines if k in names and launch_args.get(k) != v]
        if defined:
            out.append(f"{', '.join(defined)} (--define, annotation or config)")
        return tuple(out)

    def line_text(self, line: int) -> str:
        if 1 <= line <= len(self.source_lines):
            return self.source_lines[line - 1].strip()
        return ""


def _shown(values: tuple[int, ...]) -> str:
    """The distinct sampled values in order ("1024 and 4096"; one value once, never "1024 and 1024")."""
    return " and ".join(str(v) for v in dict.fromkeys(values))
