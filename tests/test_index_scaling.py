"""The project index's text scan is linear on the shapes issue 30 found quadratic (bench/index_scaling.py
measures the curve): a 200,000-character parameter list and a host function with 10,000 launches."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from index_scaling import shapes  # noqa: E402

from kernlint.project.index import ProjectIndex  # noqa: E402
from kernlint.project.scan import scan_text  # noqa: E402


def _index_seconds(tmp_path: Path, text: str) -> tuple[float, ProjectIndex]:
    (tmp_path / "big.cu").write_text(text)
    t0 = time.process_time()
    idx = ProjectIndex.build(tmp_path)
    idx.ready()
    return time.process_time() - t0, idx


def _cpu(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        scan_text(text)
        best = min(best, time.process_time() - t0)
    return best


def test_a_200k_character_parameter_list_is_indexed_in_a_second(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNLINT_NO_CACHE", "1")
    _unit, make = shapes()["parameter list"]
    seconds, idx = _index_seconds(tmp_path, make(200_000))  # type: ignore[operator]
    assert seconds < 2.0, seconds  # was quadratic: 20,000 characters took 18 s
    assert idx.scanned == 1 and not idx.notes


def test_a_host_function_with_10000_launches_is_indexed_in_a_second_or_two(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNLINT_NO_CACHE", "1")
    _unit, make = shapes()["launches"]
    seconds, idx = _index_seconds(tmp_path, make(10_000))  # type: ignore[operator]
    assert seconds < 2.5, seconds  # was quadratic: 4,000 launches took 35 s
    launches = idx.launches_of("k", str(tmp_path / "big.cu"))
    assert len(launches) == 10_000
    # What each launch reads of the text before it is still its own: `m` is 8 at the first launch,
    # reassigned before the second; the offset of `src` and the plain dim3 hold for every one.
    first, second, last = (idx.facts[str(tmp_path / "big.cu")].launches[i] for i in (0, 1, -1))
    assert ("m", "8") in first.locals and all(name != "m" for name, _v in second.locals)
    assert ("grid", "dim3(4, 1, 1)") in last.locals and last.arg_offsets == ("src = buf + 16", "")
    assert last.arg_types == ("float *", "int")


@pytest.mark.parametrize("shape", ["parameter list", "template member name", "launches", "unclosed comments",
                                   "unclosed launches"])
def test_doubling_the_input_at_most_doubles_the_scan(shape: str) -> None:
    unit, make = shapes()[shape]
    n = 2_500 if unit == "launches" else 50_000
    small, large = _cpu(make(n)), _cpu(make(2 * n))  # type: ignore[operator]
    # Linear: about 2 (quadratic: 4). The slack (and the floor, under which a time is noise) is for a
    # loaded machine; the best of three runs is taken for each size.
    assert large <= 3.0 * max(small, 0.02), (small, large)


# --- the one-pass readings give what the regexes and walks they replace gave -----------------------

def _random_texts(alphabet: list[str], n: int, seed: int, longest: int = 14) -> list[str]:
    import random

    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(n)]


def test_parameter_name_is_the_regex_it_replaces() -> None:
    import re

    from kernlint.project.one_pass import parameter_name

    regex = re.compile(r"([A-Za-z_]\w*)\s*(?:=[^,]*)?$")
    alphabet = ["a", "b_", "1", " ", "=", ",", "*", "&", "<", ">", "(", ")", "9", "é", "²", "\t"]
    for t in _random_texts(alphabet, 5_000, 1):
        found = regex.findall(t)
        assert parameter_name(t) == (found[0] if found else ""), repr(t)


def test_class_member_is_the_regex_it_replaces() -> None:
    import re

    from kernlint.project.one_pass import class_member

    regex = re.compile(r"([A-Za-z_]\w*)\s*<[^<>]*(?:<[^<>]*>[^<>]*)*>\s*::\s*~?[A-Za-z_]\w*\s*$")
    for t in _random_texts(["a", "b1", "_", " ", "<", ">", "::", ":", "~", "9", "é"], 8_000, 2):
        m = regex.search(t)
        assert class_member(t) == (m.group(1) if m else None), repr(t)


def test_angle_closes_is_the_walk_it_replaces() -> None:
    from kernlint.project.one_pass import angle_closes
    from kernlint.project.scan import _angle_forward

    for t in _random_texts(list("a<>();{} ,<"), 4_000, 3, 25) + ["a<" + "x" * 3996 + ">", "a<" + "x" * 4100 + ">"]:
        table = angle_closes(t)
        for i, ch in enumerate(t):
            if ch == "<" and not t.startswith("<<", i):
                assert table.get(i, -1) == _angle_forward(t, i), (t, i)


def test_blank_is_the_substitution_it_replaces() -> None:
    from kernlint.project.scan import _COMMENT_OR_STRING, blank

    def spaces(s: str) -> str:
        return "\n".join(" " * len(x) for x in s.split("\n"))

    def repl(m: object) -> str:
        s = m.group(0)  # type: ignore[attr-defined]
        if s[:1] in "\"'":
            return s[0] + spaces(s[1:-1]) + s[-1] if len(s) >= 2 else s
        return spaces(s)

    for t in _random_texts(list("/*\"'\\\nab "), 5_000, 4, 20):
        assert blank(t) == _COMMENT_OR_STRING.sub(repl, t), repr(t)


def test_clang_reads_a_launch_file_of_ordinary_size_but_not_a_generated_one(tmp_path: Path) -> None:
    """The project index's clang reader (project/clang_scan.py) costs ~0.7 ms of CPU per launch: a file
    past MAX_CLANG_LAUNCHES keeps the text scan's values, so the cold index stays linear and fast."""
    from kernlint.project import clang_scan

    _unit, make = shapes()["launches"]
    small, big = make(10), make(clang_scan.MAX_CLANG_LAUNCHES + 1)  # type: ignore[operator]
    assert clang_scan.wanted(scan_text(small), small)
    assert not clang_scan.wanted(scan_text(big), big)
