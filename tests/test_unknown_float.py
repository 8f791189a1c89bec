"""Floating-point arithmetic on unknown values answered from a plan (eval/unknown_float.py): every
variable, condition, step count and result the same as the per-node evaluator's."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kernlint.eval import bounded_index, unknown_float
from kernlint.eval.interp import Interpreter
from kernlint.eval.limits import MAX_EVAL_NESTING
from kernlint.eval.values import Val
from kernlint.frontend import parse_source
from kernlint.ir import nodes as ir
from kernlint.project.launch import LaunchShape

# A Mandelbrot-like template helper (T deduced from the call), loads at per-lane addresses (deps on the
# sampled `n`, load tags), float parameters (uniform, each with its own cause), a branch on the result.
ESCAPE = """
template <typename T> __device__ int escape(const T xPos, const T yPos, const T scale, int crunch) {
    T y = yPos;
    T x = xPos;
    T yy = y * y;
    T xx = x * x;
    int i = crunch;
    do {
        y = x * y * T(2.0) + yPos;
        x = xx - yy + xPos * scale;
        yy = y * y;
        xx = -x * -x;
        if (xx + yy > T(4.0)) return i;
        if (4 < xx * scale) return i + 1;
        if (xx == yy) return 0;
    } while (--i);
    return -1;
}
__global__ void k(int* out, const float* in, float xOff, float yOff, float scale, int n) {
    float x = in[threadIdx.x * n] + xOff;
    float y = (yOff + xOff) * 0.5f - in[n + threadIdx.x];
    float z = x * 2.0 / (double)y;
    int m = escape(x, y, scale, 6);
    int q = escape(xOff, yOff * scale, scale, 3);
    if (z * xOff < 1.0) out[threadIdx.x] = m;
    out[m + q] = 1;
}
"""

# Members of struct values (an n-body interaction): fields known, unknown, and a struct without fields;
# known floats mixed in (the accumulator starts at zero). A template helper instantiated for `int` (a
# bounded product: not planned) and for `float`.
BODIES = """
struct V3 { float x, y, z; };
struct Opaque { float a, b; };
__device__ V3 interact(V3 ai, V3 bi, V3 bj, float eps) {
    V3 r;
    r.x = bj.x - bi.x;
    r.y = bj.y - bi.y;
    r.z = bj.z - bi.z;
    float d = r.x * r.x + r.y * r.y + r.z * r.z + eps;
    float s = -d * d * 2.0f;
    ai.x += r.x * s;
    ai.y += r.y * s;
    ai.z = ai.z + r.z * s;
    return ai;
}
template <typename T> __device__ T scaled(T a) {
    T r = a * T(4);  // for int: bounded (0..1020), as `b` is
    return r + a;
}
__global__ void k(float* out, const float* pos, int n, float eps, Opaque o, const unsigned char* bytes) {
    int b = bytes[threadIdx.x];
    out[scaled(b)] = scaled(eps);
    V3 me = {pos[3 * threadIdx.x], pos[3 * threadIdx.x + 1], pos[3 * threadIdx.x + 2]};
    V3 acc;
    acc.x = 0.0f;
    acc.y = 1.0f;
    acc.z = eps;
    float w = acc.x * 3.0f + acc.y;  // known fields: the per-node path computes 1.0
    V3 part;
    part.x = eps;
    float g = part.y * eps;  // a member never assigned: unknown for its own cause
    float u = o.a * o.b + eps;
    for (int j = 0; j < n; j++) {
        V3 other = {pos[3 * j], pos[3 * j + 1], pos[3 * j + 2]};
        acc = interact(acc, me, other, eps);
        if (acc.x > eps) out[j] = acc.y * w;
        if (acc.y + u <= 0.5f) break;
    }
    out[threadIdx.x] = acc.x * eps + acc.z * u + g;
}
"""


def _canon(x: object) -> object:
    """A comparable form of evaluator state: arrays by dtype, shape and bytes; sets in iteration order
    (a union built in another order may iterate otherwise)."""
    if isinstance(x, np.ndarray):
        return ("nd", str(x.dtype), x.shape, x.tobytes())
    if isinstance(x, Val):
        return ("Val",) + tuple(_canon(f) for f in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__,) + tuple(_canon(getattr(x, f.name)) for f in dataclasses.fields(x))
    if isinstance(x, dict):
        return ("dict",) + tuple((_canon(k), _canon(v)) for k, v in x.items())
    if isinstance(x, (tuple, list, set, frozenset)):
        return (type(x).__name__,) + tuple(_canon(v) for v in x)
    return x


def _evaluate(src: str, fast: bool, budget: int | None = None, block: tuple[int, int, int] = (64, 1, 1)):
    """(the result, the innermost frame's variables and the step count after each statement, every
    condition's value, how many expressions the plan answered)."""
    tu = parse_source(src, "t.cu")
    assert tu.kernels, tu.problems
    kw = {} if budget is None else {"budget": budget}
    interp = Interpreter(tu, tu.kernels[0], LaunchShape(block=block, source="test"), {"n": 5}, **kw)
    interp.float_fast = fast
    states: list[object] = []
    conditions: list[object] = []
    answered = [0]
    exec_, condition, planned = interp.exec, interp.uniform_condition, interp.unknown_float

    def exec_recorded(s: ir.Stmt) -> None:
        exec_(s)
        states.append((s.span, interp.cost, _canon(interp.frames[-1].env)))

    def condition_recorded(c: Val, *a: object, **kw: object) -> Val:
        conditions.append(_canon(c))
        return condition(c, *a, **kw)

    def planned_counted(e: ir.Binary) -> Val | None:
        v = planned(e)
        answered[0] += v is not None
        return v

    interp.exec = exec_recorded  # type: ignore[method-assign]
    interp.uniform_condition = condition_recorded  # type: ignore[method-assign]
    interp.unknown_float = planned_counted  # type: ignore[method-assign]
    result = interp.run()
    return _canon(result), states, conditions, answered[0]


@pytest.mark.parametrize("src", [ESCAPE, BODIES], ids=["escape", "bodies"])
def test_plan_gives_the_per_node_evaluation(src: str) -> None:
    fast = _evaluate(src, True)
    slow = _evaluate(src, False)
    assert fast[3] > 20 and slow[3] == 0  # the plan answered (the comparison is not vacuous)
    assert len(fast[1]) == len(slow[1])
    for a, b in zip(fast[1], slow[1]):
        assert a == b
    assert fast[2] == slow[2]
    assert fast[0] == slow[0]


def test_causes_and_loads_come_out_as_the_per_node_path_builds_them() -> None:
    # What the comparison above guards, seen directly: the first of equally telling causes (the float
    # parameter read first), the loads of both operands, and a floating comparison's result.
    src = """
    __global__ void k(int* out, const float* in, float a, float b, int p, int q) {
        float x = in[threadIdx.x * p] * 2.0f;
        float v = in[threadIdx.x * 2 * q];
        float y = b * a;
        float z = a * b - (x + v);
        if (y * a > 1.0f) out[0] = 1;
    }
    """
    fast = _evaluate(src, True)
    env = dict(fast[1][-1][2][1:])  # (the variables at the end, as `_canon` writes them)
    y, z, x = env["y"], env["z"], env["x"]
    assert sorted(z[2][1:]) == ["p", "q"]  # (deps: the sampled strides of both loads)
    assert y[9] == ("tuple", "unmodelled", "the floating-point value of `b`") and y[10] is True  # (why, uniform)
    assert z[9] == ("tuple", "loaded", "") and z[10] is False  # (a load is the more telling cause)
    assert len(x[8]) == 2 and len(z[8]) == 3  # (loads: the load of `x`, and those of `x` and `v`)
    assert fast[3] == 3  # `b * a`, `a * b - (x + v)`, `y * a > 1.0f` (not the loads)
    assert fast[1:3] == _evaluate(src, False)[1:3]


def test_a_known_float_operand_takes_the_per_node_path() -> None:
    src = """
    __global__ void k(float* out, float p) {
        float c = 3.0f;
        float d = c * 2.0f + c;
        float e = p * 2.0f;
        float f = d * p;
        out[(int)d] = e + f;
    }
    """
    fast = _evaluate(src, True)
    env = dict(fast[1][-1][2][1:])
    assert env["d"][1] is not None and env["f"][1] is None  # `d` known (9.0), `f` not
    assert fast[3] == 2  # `p * 2.0f` and `e + f`; not `d * p`, with a known read
    assert fast[:3] == _evaluate(src, False)[:3]


@pytest.mark.parametrize("blocks", [30, 35])
def test_nesting_bound_reached_inside_a_planned_expression(blocks: int) -> None:
    # Helpers inlined into helpers, each body under nested blocks: the evaluator's nesting bound
    # (statements and expressions, helpers included) falls inside the innermost sum, where the per-node
    # path reports "deep" (coverage); the plan must neither skip that nor charge other steps. (The front
    # end cuts an expression or a statement nested that deep within one function first.)
    def wrap(body: str) -> str:
        return "{" * blocks + body + "}" * blocks

    terms = " + ".join(["x * y"] * 60)
    helpers = [f"__device__ float h4(float x, float y) {wrap(f'return {terms};')}"]
    helpers += [f"__device__ float h{i}(float x, float y) {wrap(f'return h{i + 1}(x, y);')}" for i in range(3, -1, -1)]
    src = "\n".join(helpers) + """
    __global__ void k(float* out, const float* in) {
        float x = in[threadIdx.x], y = in[0];
        out[threadIdx.x] = h0(x, y);
    }
    """
    fast = _evaluate(src, True)
    slow = _evaluate(src, False)
    assert "'deep'" in repr(slow[0]) and fast[3] > 0
    assert fast[:3] == slow[:3]


def test_no_comparison_is_bounded() -> None:
    # What the plan of a comparison relies on: `arith` bounds the result of an operator with one operand
    # unknown only through bounded_index.arith, which bounds none of them.
    byte = Val(None, bound=(0, 255))
    four = Val(np.full((1, 1, 1), 4, dtype=np.int64))
    assert bounded_index.arith("+", byte, four) == (4, 259)  # (an operator it does bound)
    for op in unknown_float.COMPARISONS:
        assert bounded_index.arith(op, byte, four) is None and bounded_index.arith(op, four, byte) is None


def test_every_step_budget_stops_at_the_same_place() -> None:
    # The step budget (and the clock) checked at each node: a plan never crosses either.
    src = """
    __global__ void k(float* out, const float* in, float s) {
        float x = in[threadIdx.x];
        float y = x * s + x * x * 2.0f - s;
        for (int i = 0; i < 3; i++)
            y = y * y - x * s + 1.0f;
        out[threadIdx.x] = y;
    }
    """
    total = _evaluate(src, False)[1][-1][1]
    assert total > 20
    for budget in range(1, total + 3):
        fast, slow = _evaluate(src, True, budget), _evaluate(src, False, budget)
        assert fast[:3] == slow[:3], budget


def test_plans_are_per_node_and_refuse_what_they_cannot_answer() -> None:
    # Built by hand: a float product of two reads plans to two reads and one fold; the same product
    # over an integer type, or an assignment, does not plan.
    f = ir.CType("float", 4)
    i = ir.CType("int", 4)
    sp = ir.Span(1, 1, 1, 1)
    x, y = ir.Ref("x", "local", f, sp), ir.Ref("y", "local", f, sp)
    prod = ir.Binary("*", x, ir.Cast(y, f, False, sp), f, sp)
    p = unknown_float.plan(prod)
    assert p is not None and p.nodes == 4 and p.depth == 2 and p.templates == ()
    assert unknown_float.plan(prod) is p  # remembered
    assert unknown_float.plan(ir.Binary("*", x, y, i, sp)) is None
    assert unknown_float.plan(ir.Binary("=", x, y, f, sp)) is None
    two = ir.Binary("+", ir.Lit(1.0, f, sp), ir.Lit(2.0, f, sp), f, sp)
    assert unknown_float.plan(two) is None  # no read: known
    # A comparison of integers is left to the per-node path; one with a floating operand is planned.
    b = ir.CType("bool", 1)
    assert unknown_float.plan(ir.Binary("<", ir.Cast(x, i, False, sp), ir.Lit(4, i, sp), b, sp)) is None
    assert unknown_float.plan(ir.Binary("<", x, ir.Lit(4.0, f, sp), b, sp)) is not None
    # Reads that are known, or addresses, leave the plan unanswered.
    unk = Val(None, why=("loaded", ""))
    assert unknown_float.run(p, {"x": unk, "y": unk}) is not None
    assert unknown_float.run(p, {"x": unk, "y": Val(np.zeros((1, 1, 1)))}) is None
    assert unknown_float.run(p, {"x": unk, "y": Val(None, space="local", root="y")}) is None
    assert unknown_float.run(p, {"x": unk}) is None
