"""KL201 verdicts that hang on a sampled value: a bank conflict whose lanes' spacing scales with a runtime value.

kernlint samples a runtime value it does not know as a size (thousands, a multiple of 1024: eval/interp.py).
For a shared-memory index that scales a lane's position by such a value (`t[threadIdx.x * ld + c]`, a
pitch passed in, or used inside a helper), every sample is a multiple of the 32 banks, so every sample
gives the worst conflict: the verdict is the guess's, not the code's. With the value odd (`ld = 33`, the
padded pitch such code is usually given) the same lanes fall in 32 different banks. A warning must hold
for every plausible value (issue 28), and an odd value is as plausible as an even one, so the site is
evaluated again with the value one above its first sample: when the conflict is milder there, the finding
is an info that says it depends on the value and how to supply it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kernlint.eval import resample
from kernlint.eval.events import MemoryAccess
from kernlint.checks.reevaluate import evaluated_with
from kernlint.eval.uniform_data import is_load_symbol

if TYPE_CHECKING:
    from kernlint.checks.bank_sites import SiteBanks
    from kernlint.eval.result import KernelResult

MAX_NAMES = 2  # sampled values tried per site (each is one more evaluation of the kernel, shared by its sites)


def sampled_names(result: "KernelResult", site: "SiteBanks") -> list[str]:
    """The runtime values the site's addresses depend on that were sampled as sizes (not given by a
    launch, a `--define` or the data)."""
    assumed = dict(result.assumed)
    given = {k for k, _v in result.defines} | {k for k, _v in result.shape.arg_samples}
    return sorted(n for n in resample.sampled_parameters(site.deps, assumed)
                  if n not in given and assumed[n] and not is_load_symbol(n))[:MAX_NAMES]


def _shared_events_with(result: "KernelResult", name: str, value: int) -> list[MemoryAccess]:
    run = evaluated_with(result, name, value)
    return [] if run.truncated else [e for e in run.events if isinstance(e, MemoryAccess) and e.space == "shared"]


def milder_at(result: "KernelResult", site: "SiteBanks") -> tuple[str, tuple[int, ...], int, int] | None:
    """(name, its samples, the odd value, the site's worst ways there) for the first sampled value at which
    the site's conflict is milder than under the samples; None when it is not (or cannot be evaluated)."""
    from kernlint.checks.bank_sites import measure_site

    if result.unit is None:
        return None
    assumed = dict(result.assumed)
    key = (site.first.span.line, site.first.span.column, site.root, site.first.via)
    for name in sampled_names(result, site):
        samples = tuple(int(x) for x in assumed[name])
        value = samples[0] + 1 if samples[0] % 2 == 0 else samples[0] + 2
        same = [e for e in _shared_events_with(result, name, value)
                if (e.span.line, e.span.column, e.root, e.via) == key]
        again = measure_site(same) if same else None
        if again is not None and again.ways < site.ways:
            return name, samples, value, again.ways
    return None
