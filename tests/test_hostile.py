"""Hostile input: bounded folding, depth budgets, special files, linear scanning, loud syntax errors."""
from __future__ import annotations

import resource
import time

import pytest
from click.testing import CliRunner

from kernlint.ir import intfold
from kernlint.cli.command import main
from kernlint.engine.lint import LintOptions, lint_source
from kernlint.frontend.clang_frontend import fold_tokens
from kernlint.project.launch import fold_bound
from kernlint.project.fold import fold

STRIDED = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


def codes(text: str, path: str = "t.cu") -> dict[str, list]:
    out: dict[str, list] = {}
    for d in lint_source(text, path, LintOptions(resources=False)).diagnostics:
        out.setdefault(d.code, []).append(d)
    return out


def run(args: list[str], stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "--no-ptxas"], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# --- bounded integer folding ----------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("2*(3+4)<<2", 56), ("(1<<62)/(1<<61)", 2), ("-7/2", -3), ("-7%2", -1), ("256u", 256),
    ("0x10 + 1", 17), ("(((1)))", 1),
    ("1<<20000000000", None), ("1<<1100", None), ("(1<<63)*(1<<63)", None), ("1/0", None),
    ("9" * 20000, None), ("-" * 5000 + "1", None), ("1<<-1", None), ("(1", None), ("1 2", None),
])
def test_folding_is_bounded_and_exact(text: str, value: int | None) -> None:
    import re
    toks = re.findall(r"0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|\w+|<<|>>|\S", text)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    assert intfold.evaluate(toks) == value
    assert fold_tokens(toks, {}) == value
    assert fold_bound(text, {}, {}) == value
    if len(text) <= 400:
        assert fold(text, {}) == value
    assert time.monotonic() - t0 < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: no GB-sized ints


def test_hostile_macros_and_launch_bounds_do_not_lose_the_file() -> None:
    src = ("#define A 1<<20000000000\n#define B ((1<<4000)/(1<<3999))\n"
           f"#define C {'9' * 20000}\n#define D {'-' * 5000}1\n"
           "__global__ void __launch_bounds__(1<<1100) h(float* o) { o[threadIdx.x] = 0; }\n" + STRIDED)
    t0 = time.monotonic()
    found = codes(src)
    assert time.monotonic() - t0 < 60
    assert "KL101" in found, found  # the strided kernel is still analysed
    assert "KL905" not in found, found


# --- depth budgets ------------------------------------------------------------------------------------

def _deep_kernel(arms: int) -> str:
    chain = "".join(f"    else if (i == {k}) o[i] = {k};\n" for k in range(1, arms))
    terms = " + ".join(f"a[i + {k}]" for k in range(arms))
    return ("__global__ void deep(const float* a, float* o) {\n    int i = threadIdx.x;\n"
            f"    if (i == 0) o[i] = 0;\n{chain}    o[i] = {terms};\n}}\n")


@pytest.mark.parametrize("arms", [1200])
def test_deep_code_is_reported_not_a_crash(arms: int) -> None:
    found = codes(_deep_kernel(arms) + STRIDED)
    assert "KL905" not in found and "KL900" not in found, {k: [d.message for d in v][:2] for k, v in found.items()}
    assert "KL101" in found  # the other kernel is analysed
    kl904 = [d for d in found.get("KL904", []) if "too deeply nested" in (d.message + str(d.notes))]
    assert kl904, {k: [d.message for d in v][:2] for k, v in found.items()}


# --- only regular files, with a size cap ------------------------------------------------------------

def test_special_files_and_bad_names_are_one_message_each_and_the_rest_is_linted(tmp_path, monkeypatch) -> None:
    import os
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.cu").write_text(STRIDED)
    os.mkfifo(tmp_path / "pipe.cu")
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / "p.cuh")  # found by the walk: must not block either
    (tmp_path / "big.cu").write_text("// x\n" * 100)
    monkeypatch.setenv("KERNLINT_MAX_FILE_BYTES", "400")
    long_name = "a" * 300 + ".cu"
    code, out, err = run(["good.cu", "pipe.cu", "sub", "", long_name, "big.cu", "/dev/null.cu"])
    assert code == 2
    assert "pipe.cu: error: is a FIFO" in err
    assert "sub/p.cuh: error: is a FIFO" in err
    assert "'': error: empty path argument" in err
    assert f"{long_name}: error: cannot access" in err
    assert "big.cu: error: larger than the size limit of 400 bytes" in err
    assert "good.cu:1:" in out and "KL101" in out
    assert "Traceback" not in err + out


def test_stdin_is_read_up_to_the_cap() -> None:
    import io

    from kernlint.base.inputs import ReadProblem, read_capped

    class Endless(io.RawIOBase):
        reads = 0

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
            Endless.reads += len(b)
            b[:] = b" " * len(b)
            return len(b)

    with pytest.raises(ReadProblem, match="size limit of 1000 bytes"):
        read_capped(Endless(), cap=1000)
    assert Endless.reads <= 1001
    assert read_capped(io.BytesIO(b"x" * 1000), cap=1000) == b"x" * 1000


def test_a_newline_in_a_file_name_cannot_forge_a_line(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a\nb.cu:9:9: KL999 forged.cu").write_text(STRIDED)
    for fmt in ("text", "concise"):
        code, out, _err = run(["--format", fmt, "a\nb.cu:9:9: KL999 forged.cu"])
        assert code == 1
        assert "a\\x0ab.cu" in out
        assert not any(line.startswith("b.cu:9:9") for line in out.splitlines())


def test_includes_of_special_files_are_stubbed(tmp_path) -> None:
    import os
    os.mkfifo(tmp_path / "fifo.h")
    src = (f'#include "/dev/zero"\n#include "{tmp_path}/fifo.h"\n' + STRIDED)
    t0 = time.monotonic()
    found = codes(src, str(tmp_path / "inc.cu"))
    assert time.monotonic() - t0 < 60
    assert "KL101" in found


# --- linear scanning ----------------------------------------------------------------------------------

def _linear(fn, make, small: int) -> None:  # type: ignore[no-untyped-def]
    """`fn(make(10 * small))` takes well under 100x `fn(make(small))` (linear: ~10x; quadratic: ~100x)."""
    def timed(n: int) -> float:
        best = float("inf")
        for _ in range(3):
            arg = make(n)
            t0 = time.process_time()  # CPU time: a loaded machine does not make the scan look quadratic
            fn(arg)
            best = min(best, time.process_time() - t0)
        return best
    small_t, big_t = timed(small), timed(10 * small)
    assert big_t < 40 * max(small_t, 1e-4), (small_t, big_t)


def test_include_and_instantiation_scans_are_linear_in_blank_lines() -> None:
    from kernlint.frontend.clang_frontend import _text_instantiations
    from kernlint.ir.includes import INCLUDE_RE

    make = lambda n: "\n" * n + '#include "a.h"\ntemplate __global__ void k<128>(float*);\n'  # noqa: E731
    assert INCLUDE_RE.findall(make(10)) == [('"', "a.h")]
    assert _text_instantiations(make(10)) == (("k", ("128",)),)
    _linear(lambda t: INCLUDE_RE.findall(t), make, 20_000)
    _linear(_text_instantiations, make, 20_000)
    t0 = time.process_time()
    INCLUDE_RE.findall(make(200_000)), _text_instantiations(make(200_000))
    assert time.process_time() - t0 < 10


@pytest.mark.slow
def test_suppression_parsing_is_linear() -> None:
    from kernlint.engine.suppress import parse_suppressions

    make = lambda n: "".join(f"// kernlint: disable-next-line=KL101\nx{i} = 1;\n" for i in range(n))  # noqa: E731
    sups = parse_suppressions(make(3))
    assert [s.lines for s in sups][:1] and len(sups) == 3
    _linear(parse_suppressions, make, 4_000)


# --- a syntax error that swallows a kernel is never silent ---------------------------------------------

@pytest.mark.parametrize("opener, what", [("/* oops", "unterminated /* comment"),
                                          ("#if 0", "unterminated conditional directive")])
def test_a_kernel_lost_to_an_unterminated_comment_or_conditional_is_an_error(opener: str, what: str) -> None:
    src = STRIDED + opener + "\n" + STRIDED.replace("void k(", "void lost(")
    found = codes(src)
    assert "KL101" in found  # the kernel before it is still analysed
    errors = [d for d in found.get("KL900", []) if d.severity.label == "error"]
    assert len(errors) == 1 and what in errors[0].message and errors[0].line == 2, found.get("KL900")


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github"])
def test_a_non_utf8_file_name_is_linted_in_every_format(tmp_path, fmt: str) -> None:
    import os
    import subprocess
    import sys
    name = b"bad\xff.cu"
    (tmp_path / os.fsdecode(name)).write_text(STRIDED)
    proc = subprocess.run([sys.executable, "-m", "kernlint", "--no-ptxas", "--format", fmt, os.fsdecode(name)],
                          cwd=tmp_path, capture_output=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-2000:]
    assert b"KL101" in out and b"internal error" not in out


# --- file names cannot forge output lines -----------------------------------------------------------

@pytest.mark.parametrize("fmt", ["text", "concise", "github", "json", "sarif"])
def test_a_newline_in_a_file_name_forges_no_line_in_any_format(tmp_path, fmt: str) -> None:
    import json as _json

    forged = "a\nb.cu:9:9: KL999 [error] forged.cu"
    (tmp_path / forged).write_text(STRIDED)
    (tmp_path / "c\nd.cu: error: forged.cu").write_bytes(b"\x00\x01binary")
    code, out, err = run(["--format", fmt, str(tmp_path)])
    assert code == 2  # the binary file is an input error
    for line in (out + err).splitlines():
        assert not line.startswith(("b.cu:9:9", "d.cu: error")), line
    if fmt in ("json", "sarif"):
        data = _json.loads(out)
        text = _json.dumps(data)
        assert "KL101" in text  # the finding is there, its path intact (JSON) or percent-encoded (SARIF URI)
        assert ("a\\nb.cu" in text) if fmt == "json" else ("a%0Ab.cu" in text)
    else:
        assert "KL101" in out and ("a\\x0ab.cu" in out or "a%0Ab.cu" in out)
