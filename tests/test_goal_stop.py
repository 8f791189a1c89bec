"""An evaluation run only to reach some dead regions (engine `_reversed_resample`) stops once none of them can
be reached any more (Interpreter `goal`, eval/resample.py `may_note_again`), and never earlier: a region found
dead and taken on a later visit (a later loop iteration, a later call of its helper, a second statement a macro
spells at the same place) is reached, as without the goal."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernlint.engine import lint as engine
from kernlint.eval import resample
from kernlint.eval.interp import Interpreter
from kernlint.eval.limits import CALL_KEY_OFFSET, EvalResult
from kernlint.frontend import parse_source
from kernlint.ir import nodes as ir
from kernlint.project.launch import LaunchShape

SHAPE = LaunchShape(block=(64, 1, 1), source="test")


def _runs(src: str, goal_lines: tuple[int, ...] | None = None,
          goal: frozenset | None = None) -> tuple[EvalResult, EvalResult, frozenset]:
    """The kernel of `src` evaluated to the end, and again with `goal` (default: the keys of the regions
    under the guards on `goal_lines` in the full run, dead or taken)."""
    tu = parse_source(src, "goal.cu")
    fn = tu.kernels[0]
    full = Interpreter(tu, fn, SHAPE, {}).run()
    if goal is None:
        keys = set(full.dead_regions) | set(full.regions_taken)
        goal = frozenset(k for k in keys if k[0] in (goal_lines or ())
                         and not -CALL_KEY_OFFSET < k[1] < 0)  # (not the code after the `if`: a rest_key)
    assert goal, "the test's region was not noted at all"
    watched = Interpreter(tu, fn, SHAPE, {}, goal=goal).run()
    return full, watched, goal


def _reached(r: EvalResult, goal: frozenset) -> set:
    return {k for k in goal if engine._region_ran(r, k)}


LOOP = """
__global__ void k(float *a, int n)
{
    for (int it = 0; it < 3; it++) {
        if (it * 2048 >= n) {
            a[threadIdx.x + it] = 0;
        }
    }
    for (int i = 0; i < 20; i++) a[threadIdx.x * 2 + i] = 1;
}
"""


def test_a_region_dead_in_the_first_iterations_and_taken_in_a_later_one_is_reached() -> None:
    # n is sampled 4096 and 6144: `it * 2048 >= n` holds for no sample at it = 0 and 1 (the guard is noted
    # dead there), and for n = 4096 at it = 2. A stop at the first dead visit would drop the region.
    full, watched, goal = _runs(LOOP, (5,))
    assert _reached(full, goal) == set(goal)
    assert not watched.goal_unreachable
    assert _reached(watched, goal) == set(goal)


HELPER_TWICE = """
__device__ void h(float *a, int m, int n)
{
    if (m >= n) {
        a[threadIdx.x] = 0;
    }
}
__global__ void k(float *a, int n)
{
    h(a, 0, n);
    a[threadIdx.x * 4] = 1;
    h(a, 8192, n);
}
"""


def test_a_helper_region_dead_in_one_call_and_taken_in_a_later_call_is_reached() -> None:
    # The helper's own region key (line 4) is dead in the first call (0 >= n for no sample) and taken in the
    # second (8192 >= n): the kernel's statements left after the first call call the helper again.
    tu = parse_source(HELPER_TWICE, "goal.cu")
    fn = tu.kernels[0]
    full = Interpreter(tu, fn, SHAPE, {}).run()
    own = next(k for k in full.regions_taken if k[0] == 4 and k[1] > 0)
    full, watched, goal = _runs(HELPER_TWICE, goal=frozenset({own}))
    assert _reached(full, goal) == {own}
    assert not watched.goal_unreachable
    assert _reached(watched, goal) == {own}


MACRO = """
#define TWO_GUARDS(m) if ((m) >= n) { a[threadIdx.x] = 0; } if ((m) + 8192 >= n) { a[threadIdx.x] = 0; }
__global__ void k(float *a, int n)
{
    TWO_GUARDS(0)
    for (int i = 0; i < 20; i++) a[threadIdx.x * 2 + i] = 1;
}
"""


def test_a_second_guard_a_macro_spells_at_the_same_place_is_reached() -> None:
    tu = parse_source(MACRO, "goal.cu")
    fn = tu.kernels[0]
    assert fn.body is not None
    ifs = [s for s in fn.body.body if isinstance(s, ir.If)]
    # (the premise: both `if`s carry the macro's place, so they note one region key)
    assert len(ifs) == 2 and (ifs[0].span.line, ifs[0].span.column) == (ifs[1].span.line, ifs[1].span.column)
    full, watched, goal = _runs(MACRO, (5,))
    assert _reached(full, goal) == set(goal)
    assert not watched.goal_unreachable
    assert _reached(watched, goal) == set(goal)


STRAIGHT = """
__device__ float g(float x) { return x * 2.0f; }
__global__ void k(float *a, int n, int m)
{
    if (n < m) {
        a[threadIdx.x] = 0;
    }
    for (int i = 0; i < 40; i++) a[threadIdx.x * 2 + i] = g(a[i]);
}
"""


def test_a_guard_dead_where_nothing_left_can_run_it_again_stops_the_run() -> None:
    # n and m are sampled (4096, 6144) and (3840, 5888): `n < m` never holds. The statements left cannot run
    # the kernel's own `if` again (the helper they call has its own statements, elsewhere in the file).
    full, watched, goal = _runs(STRAIGHT, (5,))
    assert not _reached(full, goal)
    assert watched.goal_unreachable
    assert watched.steps < full.steps / 4


HELPER_ONCE = """
__device__ void h(float *a, int n, int m)
{
    if (n < m) {
        a[threadIdx.x] = 0;
    }
    for (int i = 0; i < 40; i++) a[threadIdx.x * 2 + i] = 1;
}
__global__ void k(float *a, int n, int m)
{
    h(a, n, m);
    a[threadIdx.x] = 2;
}
"""


def test_a_helper_called_once_stops_inside_the_helper() -> None:
    full, watched, goal = _runs(HELPER_ONCE, (4,))
    assert len(goal) == 2  # the helper's own key and the key of its call line
    assert not _reached(full, goal)
    assert watched.goal_unreachable
    assert watched.steps < full.steps / 4


def test_a_helper_region_is_not_given_up_while_a_call_is_left() -> None:
    # The same helper, then another call: what it calls is not known before it runs, so no stop.
    src = HELPER_ONCE.replace("a[threadIdx.x] = 2;", "h(a, n, n + 1);")
    full, _watched, keys = _runs(src, (4,))
    # (the region and the key of the first call's line: what an evaluation that found both dead asks for)
    goal = frozenset(k for k in keys if k[1] > 0 or k[2] == 11)
    full, watched, goal = _runs(src, goal=goal)
    own = {k for k in goal if k[1] > 0}
    assert _reached(full, own) == own  # the second call takes it
    assert not watched.goal_unreachable
    assert _reached(watched, own) == own


LOCAL_CLASS = """
#define BOTH struct L { __device__ static void f(float *a, int m, int n) { if (m >= n) { a[threadIdx.x] = 0; } } }; \\
    if (0 >= n) { a[threadIdx.x] = 0; }
__global__ void k(float *a, int n)
{
    BOTH
    a[threadIdx.x * 2] = 1;
    L::f(a, 8192, n);
}
"""


def test_a_local_class_method_spelled_at_a_kernel_guard_s_place() -> None:
    # The one way a call could run a statement at a place in the kernel's own body (may_note_again's
    # premise): a method of a class defined in the kernel, spelled by the same macro as a kernel `if`. Such
    # methods are not inlined today; if they ever are, the run with the goal must still agree with the full run.
    full, watched, goal = _runs(LOCAL_CLASS, (6,))
    assert not (watched.goal_unreachable and _reached(full, goal))
    assert _reached(watched, goal) == _reached(full, goal)


def test_may_note_again() -> None:
    body = ir.Span(10, 1, 30, 1)
    here = (12, 5, 12, 14)  # a region of the kernel's own body
    helper = (40, 5, 40, 44)  # a region of a helper defined after the kernel
    call_line = (40, -5 - CALL_KEY_OFFSET, 20, 20)  # the same, at a call line of the kernel
    tu = parse_source("__device__ void f() {}\n__global__ void k(int *a) { a[0] = 1; f(); }", "t.cu")
    stmts = tu.kernels[0].body.body  # type: ignore[union-attr]
    store, call = stmts
    assert not resample.may_note_again([here, helper, call_line], (store,), body)
    assert not resample.may_note_again([here], (store, call), body)  # a call cannot run the kernel's code
    assert resample.may_note_again([helper], (store, call), body)
    assert resample.may_note_again([call_line], (call,), body)
    at = (store.span.line, store.span.column)  # a statement left at the region's own place
    assert resample.may_note_again([(at[0], at[1], 0, 0)], (store,), body)
    assert resample.key_position((7, -3, 8, 9)) == ((7, 3), False)  # a rest_key
    assert resample.key_position(call_line) == ((40, 5), True)


def _fixture_kernels() -> list[Path]:
    root = Path(__file__).resolve().parent.parent / "fixtures"
    return sorted(root.glob("*.cu"))


@pytest.mark.slow
@pytest.mark.parametrize("path", _fixture_kernels(), ids=lambda p: p.name)
def test_a_stopped_run_reaches_nothing_its_full_run_reaches(path: Path) -> None:
    # Every fixture kernel with dead regions: each re-sampling _reversed_resample would try, with and
    # without the goal. A run that stops reaches nothing when run to the end; one that does not stop is
    # the same run.
    try:
        tu = parse_source(path.read_text(), str(path))
    except Exception:  # noqa: BLE001 - fixtures of bad input
        pytest.skip("not parsed")
    for fn in tu.kernels:
        res = Interpreter(tu, fn, SHAPE, {}).run()
        if not res.dead_regions or res.truncated:
            continue
        goal = frozenset(res.dead_regions)
        for overrides, _why in resample.other_overrides(res.dead_regions, res.assumed):
            full = Interpreter(tu, fn, SHAPE, {}, sample_overrides=overrides).run()
            watched = Interpreter(tu, fn, SHAPE, {}, sample_overrides=overrides, goal=goal).run()
            if watched.goal_unreachable:
                assert not _reached(full, goal), (fn.name, overrides)
            else:
                assert (watched.steps, watched.dead_regions, watched.regions_taken) == \
                    (full.steps, full.dead_regions, full.regions_taken)
