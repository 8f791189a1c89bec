"""`kernlint compare`'s model: two `--format json` reports, kernels matched by name and binding, what got worse.

Pure functions over the decoded documents; the command (reading files, printing, the exit status) is
`kernlint.cli.compare_command`. A kernel is matched by its file, its name and the template arguments it was
evaluated with, never by its line, so an edit above it does not unmatch it. A kernel evaluated under
several launches counts its worst figure of each cost.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kernlint.base.frozen import frozen


@frozen
class Cost:
    """One modelled cost of a kernel: its key in a kernel record, its label, and which way is worse."""

    key: str
    label: str
    higher_is_worse: bool


COSTS = (
    Cost("bytes_per_thread", "global bytes per thread", True),
    Cost("shared_wavefronts_per_warp", "shared-memory wavefronts per warp", True),
    Cost("active_lanes", "active lanes per warp operation", False),
    Cost("occupancy", "theoretical occupancy", False),
)


@frozen
class Change:
    """One cost of one kernel that got worse: its figures before and after, and the relative rise."""

    cost: Cost
    base: float
    head: float

    @property
    def rise(self) -> float:
        """How much worse, as a fraction of the base figure (inf when the base was 0)."""
        worse = self.head - self.base if self.cost.higher_is_worse else self.base - self.head
        if self.base == 0:
            return float("inf") if worse > 0 else 0.0
        return worse / abs(self.base)


@frozen
class KernelDiff:
    """A kernel present in both reports: the costs that got worse and the findings it gained."""

    path: str
    name: str
    binding: tuple[tuple[str, str], ...]
    changes: tuple[Change, ...]
    new_findings: tuple[tuple[str, int], ...]  # (code, how many more) per rule
    coverage: tuple[str, str]  # status in base and head (full, partial, none)

    def regressed(self, threshold: float) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.rise > threshold)


@frozen
class Comparison:
    diffs: tuple[KernelDiff, ...]
    added: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]  # kernels only in head
    removed: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]  # kernels only in base


class ReportError(ValueError):
    """The document is not a kernlint `--format json` report with per-kernel records."""


Key = tuple[str, str, tuple[tuple[str, str], ...]]


def kernel_figures(doc: Any) -> dict[Key, dict[str, Any]]:
    """Per kernel key: the worst figure of each cost over its launches, its coverage and finding counts."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("diagnostics"), list):
        raise ReportError("not a kernlint --format json report (no \"diagnostics\" list)")
    kernels = doc.get("kernels")
    if not isinstance(kernels, list):
        raise ReportError("the report has no \"kernels\" list (made by kernlint --format json on source files)")
    out: dict[Key, dict[str, Any]] = {}
    for k in kernels:
        if not isinstance(k, Mapping) or not isinstance(k.get("name"), str) or not isinstance(k.get("path"), str):
            raise ReportError("a \"kernels\" entry without a name and a path")
        launches = k.get("launches") if isinstance(k.get("launches"), list) else [k]
        for launch in launches:
            binding = tuple(sorted((str(a), str(b)) for a, b in dict(launch.get("binding") or {}).items()))
            key = (k["path"], k["name"], binding)
            entry = out.setdefault(key, {"coverage": str((k.get("coverage") or {}).get("status", "")),
                                         "findings": {}})
            for cost in COSTS:
                value = launch.get(cost.key)
                if isinstance(value, (int, float)):
                    entry[cost.key] = _worse(cost, entry.get(cost.key), float(value))
    by_kernel: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (path, name, _binding), entry in out.items():
        by_kernel.setdefault((path, name), []).append(entry)
    for d in doc["diagnostics"]:
        if not isinstance(d, Mapping):
            continue
        # A finding names its kernel, not the binding: it counts for every binding of that kernel.
        for entry in by_kernel.get((d.get("path"), d.get("kernel")), ()):  # type: ignore[arg-type]
            findings = entry["findings"]
            findings[d.get("code")] = findings.get(d.get("code"), 0) + 1
            occ = (d.get("metrics") or {}).get("occupancy")
            if isinstance(occ, (int, float)):  # KL401-KL405 carry the kernel's theoretical occupancy
                entry["occupancy"] = _worse(COSTS[3], entry.get("occupancy"), float(occ))
    return out


def _worse(cost: Cost, old: float | None, new: float) -> float:
    if old is None:
        return new
    return max(old, new) if cost.higher_is_worse else min(old, new)


def compare(base: Any, head: Any) -> Comparison:
    """What got worse from `base` to `head` (both decoded `--format json` reports)."""
    before, after = kernel_figures(base), kernel_figures(head)
    diffs = []
    for key in sorted(before.keys() & after.keys()):
        b, h = before[key], after[key]
        changes = tuple(Change(c, b[c.key], h[c.key]) for c in COSTS
                        if c.key in b and c.key in h and Change(c, b[c.key], h[c.key]).rise > 0)
        new = tuple(sorted((code, n - b["findings"].get(code, 0)) for code, n in h["findings"].items()
                           if n > b["findings"].get(code, 0)))
        diffs.append(KernelDiff(key[0], key[1], key[2], changes, new, (b["coverage"], h["coverage"])))
    return Comparison(tuple(diffs), tuple(sorted(after.keys() - before.keys())),
                      tuple(sorted(before.keys() - after.keys())))


def parse_threshold(text: str) -> float:
    """`5%`, `5` (both five per cent) or `0.5%` -> a fraction; ValueError for anything else."""
    t = text.strip()
    number = t[:-1].strip() if t.endswith("%") else t
    value = float(number)
    if not value >= 0 or value == float("inf"):
        raise ValueError(text)
    return value / 100


def _name(path: str, name: str, binding: Sequence[tuple[str, str]]) -> str:
    args = ", ".join(f"{a} = {v}" for a, v in binding)
    return f"{path}: {name}" + (f" ({args})" if args else "")


def _figure(cost: Cost, value: float) -> str:
    if cost.key == "occupancy":
        return f"{100 * value:.1f} %"
    return f"{round(value, 2):g}"


def _rise(change: Change) -> str:
    if change.rise == float("inf"):
        return "new"
    sign = "+" if change.cost.higher_is_worse else "-"
    return f"{sign}{100 * change.rise:.1f} %"


def render(result: Comparison, threshold: float, markdown: bool = False) -> str:
    """The comparison as text (one line per worse figure) or as a Markdown table for a pull request."""
    rows = []  # (kernel, what, base, head, change, over the threshold)
    for d in result.diffs:
        who = _name(d.path, d.name, d.binding)
        for c in d.changes:
            rows.append((who, c.cost.label, _figure(c.cost, c.base), _figure(c.cost, c.head), _rise(c),
                         c.rise > threshold))
        if d.new_findings:
            rows.append((who, "new findings", "", ", ".join(f"{code} x{n}" for code, n in d.new_findings), "",
                         False))
        if d.coverage[0] != d.coverage[1]:
            rows.append((who, "analysis", d.coverage[0], d.coverage[1], "", False))
    regressed = sum(1 for d in result.diffs if d.regressed(threshold))
    summary = (f"{regressed} of {len(result.diffs)} kernel{'s' if len(result.diffs) != 1 else ''} compared "
               f"got worse by more than {100 * threshold:g} %"
               + (f"; {len(result.added)} new" if result.added else "")
               + (f"; {len(result.removed)} gone" if result.removed else ""))
    lines = []
    if markdown:
        lines.append("### kernlint: modelled cost, base -> head")
        if rows:
            lines += ["", "| kernel | figure | base | head | change |", "|---|---|---|---|---|"]
            lines += [f"| `{k}` | {w} | {b} | {h} | {'**' + c + '**' if over else c} |"
                      for k, w, b, h, c, over in rows]
        lines += ["", summary]
    else:
        for k, w, b, h, c, over in rows:
            tail = f" ({c})" if c else ""
            mark = "  [over the threshold]" if over else ""
            lines.append(f"{k}: {w} {b} -> {h}{tail}{mark}" if b else f"{k}: {w}: {h}{mark}")
        lines.append(summary)
    for path, name, binding in result.added:
        lines.append(("- " if markdown else "") + f"new kernel {_name(path, name, binding)}")
    for path, name, binding in result.removed:
        lines.append(("- " if markdown else "") + f"kernel gone {_name(path, name, binding)}")
    return "\n".join(lines) + "\n"
