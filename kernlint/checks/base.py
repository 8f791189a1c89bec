"""The shape every rule shares: two names, a default severity, and a pure check function."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.base.frozen import frozen

if TYPE_CHECKING:
    from kernlint.eval.result import KernelResult


def call_chain_notes(via: tuple[int, ...]) -> list[str]:
    """The note for a finding inside an inlined helper: the calls that reached it, outermost first."""
    if not via:
        return []
    return ["inlined from the call" + ("s" if len(via) > 1 else "") + " at line "
            + " -> ".join(str(v) for v in via) + "; each call site is reported on its own"]


def helper_site(text: str) -> str:
    """' in pick() at helper.cuh:3, inlined by the call on this line' for an event of a helper from another
    file (reported at the call in the linted file, eval/interp.py `attribute`), else ''."""
    if text.startswith("in ") and "() at " in text and " called from line " not in text:
        return f" {text}, inlined by the call on this line"
    return ""


@frozen
class Rule:
    """One rule: `code` for machines (KL101), `name` for people (uncoalesced-global-load)."""

    code: str
    name: str
    summary: str
    severity: Severity
    check: Callable[["KernelResult"], Iterable[Diagnostic]] | None = None
    category: str = "memory"
    # Optional: the findings of `check` as (draft, finish) pairs, for a rule whose findings are costly
    # to complete (KL201's fix search): a draft agrees with its finding on place, code, severity and
    # metrics["ways"] and is never reported; finish() (None: the draft is the finding) gives the
    # finding. engine.combine finishes only the findings it keeps of several launch shapes.
    deferred: Callable[["KernelResult"], Iterable[tuple[Diagnostic, Callable[[], Diagnostic] | None]]] | None = None

    @property
    def doc_filename(self) -> str:
        return f"{self.code}-{self.name}.md"
