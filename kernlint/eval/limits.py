"""The evaluator's limits, sampled values, control-flow exceptions and result record."""
from __future__ import annotations

from dataclasses import dataclass, field


from kernlint.ir import nodes as ir
from kernlint.eval import coverage as cov
from kernlint.eval import events as ev


WARP = 32
MAX_LOOP_ITERATIONS = 48
MAX_EVENTS_PER_SITE = 48
MAX_INLINE_DEPTH = 6
MAX_EVAL_NESTING = 200  # statements + expressions being evaluated, nested (helpers inlined included)
DEFAULT_BUDGET = 60_000
CALL_KEY_OFFSET = 100_000  # region keys of kernel call lines for helper regions: column -(col + this)
CLOCK_EVERY = 500  # steps between charges to the file's work budget (kernlint/base/deadline.py)
# Sampled values for unknowns. Sizes are multiples of 1024 elements (aligned rows, as allocations
# from cudaMalloc/cudaMallocPitch usually are) and large enough that tail guards keep every lane.
SIZE_SAMPLES = (4096, 6144)
SIZE_STEP = 256  # later integer parameters are sampled 256 lower each (rows stay 1 KB-aligned)
BLOCK_SAMPLES = ((0, 0, 0), (3, 2, 1))
GRID_SAMPLE = (64, 64, 4)
POINTER_SPACING = 1 << 36  # byte distance between the sampled bases of distinct pointer params
_pure = ir.is_pure  # `e` reads no memory, calls nothing and changes nothing (kernlint/ir/nodes.py)


class BudgetExceeded(Exception):
    """The per-kernel step budget ran out (or, with the argument "work", the file's work budget)."""


class _LoopExit(Exception):
    pass


class GoalUnreachable(Exception):
    """The regions an evaluation was run to reach (its `goal`) were all found dead where nothing that is
    left to run can reach them again (Interpreter `_watch_goal`): the rest of the run is skipped."""


@dataclass
class EvalResult:
    events: list[ev.Event] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    assumed: dict[str, tuple[int, ...]] = field(default_factory=dict)  # symbol -> sampled values
    # Each uniform load's own site symbol -> the symbol it took (another site's, when it read words an
    # earlier load read): what --confirm substitutes at that site (kernlint/confirm/seeding.py).
    load_sites: dict[str, str] = field(default_factory=dict)
    truncated: bool = False
    out_of_time: bool = False  # truncated by the file's work budget (kernlint/base/deadline.py), not the step budget
    steps: int = 0  # evaluation steps taken: what a cache reusing this result must charge (deadline.py)
    shared_layout: dict[str, tuple[int, ir.CType]] = field(default_factory=dict)  # name -> (base, type)
    coverage: tuple[cov.SiteStatus, ...] = ()  # every access and branch site: evaluated, or why not
    # `if`s with memory accesses that never ran under any sample because of sampled parameters:
    # (line, column, first line, last line) of the region -> those parameters (eval/resample.py).
    dead_regions: dict[tuple[int, int, int, int], frozenset[str]] = field(default_factory=dict)
    # For dead regions whose guard picks out blocks the samples miss: blockIdx.x -> a block that enters.
    block_targets: dict[tuple[int, int, int, int], dict[str, int]] = field(default_factory=dict)
    # The regions (keys as in `dead_regions`) that ran for some sample: a re-sampled evaluation
    # reached a region when it is here (one inside other dead code is in neither).
    regions_taken: frozenset[tuple[int, int, int, int]] = frozenset()
    # An `assert` that fails for every thread reaching it: the launch shape evaluated is one the
    # kernel itself rules out (`assert(blockDim.x == 4)` under a guessed (32, 8)).
    contradiction: str = ""
    # What the kernel's asserts ask of the launch: (blockDim|gridDim, dim) -> (value, assert line).
    pins: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    # Stopped early: every region of the evaluation's `goal` was found dead for good (GoalUnreachable);
    # the rest of the kernel was not evaluated, so nothing here but that verdict may be used.
    goal_unreachable: bool = False
    # `__shared__` arrays one of whose element accesses subscripted the innermost dimension outside its
    # length on an active lane, or with an index the evaluator did not know (MemoryMixin.lvalue): the
    # others' addresses split into (row, column) exactly, which KL201's padding search relies on.
    out_of_row: set[str] = field(default_factory=set)
