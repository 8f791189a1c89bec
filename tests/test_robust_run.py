"""Robustness around the analysis (issue 30): the project scan's share of --timeout, unreadable
directories, cache entries, workers outliving their parent, output channels, interrupts, --define."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.cli.command import main
from kernlint.project.index import ProjectIndex

ROOT = Path(__file__).resolve().parent.parent
GOOD = "__global__ void good(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"
OTHER = "__global__ void other(const float* a, float* o) { o[threadIdx.x * 4] = a[threadIdx.x]; }\n"
LAUNCHES = ("__global__ void k(float* p, int n) { p[threadIdx.x * 8] = n; }\nvoid host(float* buf, int n) {\n"
            + "".join(f"  k<<<4, 32>>>(buf + {i}, n);\n" for i in range(10_000)) + "}\n")


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0", **extra}


def _kernlint(args: list[str], cwd: Path, timeout: float = 300, **kwargs: object) -> subprocess.CompletedProcess:
    env = kwargs.pop("env", _env())
    return subprocess.run([sys.executable, "-m", "kernlint", "--no-ptxas", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=env, **kwargs)  # type: ignore[call-overload]


def _hostile_neighbours(d: Path) -> None:
    """A project (a marker) whose index holds the issue's quadratic shapes beside the good file."""
    (d / ".git").mkdir(parents=True)
    (d / "good.cu").write_text(GOOD)
    (d / "params.cu").write_text("void host(int " + "a" * 200_000 + " b) { }\n" + OTHER)
    (d / "launches.cu").write_text(LAUNCHES)


# --- the project scan's share of --timeout ------------------------------------------------------


def test_a_scan_cut_short_is_named_and_costs_only_its_own_file(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNLINT_NO_CACHE", raising=False)
    root = tmp_path / "p"
    _hostile_neighbours(root)
    # A limit so small that only a scan long enough to read its clock (every few hundred steps) runs past
    # it: the file of 10,000 launches; the others end before their first look.
    cut = ProjectIndex.build(root, scan_limit_s=1e-9)
    [note] = cut.notes
    assert note == "project index: skipped 1 file(s): launches.cu (its scan was cut short at 1e-09 s of CPU time, " \
                   "its share of --timeout)"
    assert set(cut.facts) == {str(root / "good.cu"), str(root / "params.cu")}
    assert cut.kernels_in(str(root / "params.cu")) == ["other"]
    # A scan cut short is not cached: the next build, without the limit, scans the file and keeps it.
    whole = ProjectIndex.build(root)
    assert str(root / "launches.cu") in whole.facts and not whole.notes and whole.scanned == 1


@pytest.mark.slow
def test_j1_and_j2_give_the_same_bytes_with_and_without_hostile_neighbours(tmp_path: Path) -> None:
    alone, crowded = tmp_path / "alone", tmp_path / "crowded"
    (alone / ".git").mkdir(parents=True)
    (alone / "good.cu").write_text(GOOD)
    _hostile_neighbours(crowded)
    for d in (alone, crowded):
        runs = [_kernlint(["--no-cache", "--format", "concise", "-j", j, "."], d) for j in ("1", "2")]
        assert runs[0].returncode in (0, 1) and "KL101" in runs[0].stdout
        assert (runs[0].stdout, runs[0].stderr, runs[0].returncode) == (runs[1].stdout, runs[1].stderr,
                                                                         runs[1].returncode)
        good = [x for x in runs[0].stdout.splitlines() if x.startswith("good.cu")]
        assert good and not any("KL900" in x or "KL904" in x for x in good)  # analysed, whatever its neighbours
    def good_lines(d: Path) -> list[str]:
        out = _kernlint(["--no-cache", "--format", "concise", "-j", "2", "."], d).stdout
        return [x for x in out.splitlines() if x.startswith("good.cu")]

    good_alone, good_crowded = good_lines(alone), good_lines(crowded)
    assert good_alone == good_crowded and good_alone  # the neighbours change nothing of the good file


# --- an unreadable subdirectory ------------------------------------------------------------------


def test_an_unreadable_subdirectory_is_reported_and_the_rest_is_linted(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A mode-000 `sub/` (simulated: the tests may run as root, whom modes do not stop): listing it and
    looking at anything in it fail with EACCES."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "good.cu").write_text(GOOD)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "x.cu").write_text(GOOD)
    inside = str(sub) + os.sep
    real_stat, real_scandir = os.stat, os.scandir

    def denied(path: object) -> None:
        p = os.fspath(path) if not isinstance(path, int) else ""
        if isinstance(p, str) and (os.path.abspath(p) + os.sep).startswith(inside) and os.path.abspath(p) != str(sub):
            raise PermissionError(13, "Permission denied", p)

    def stat(path: object, *a: object, **k: object) -> os.stat_result:
        denied(path)
        return real_stat(path, *a, **k)  # type: ignore[arg-type]

    def scandir(path: object = ".") -> object:
        p = os.fspath(path) if not isinstance(path, int) else ""
        if isinstance(p, str) and os.path.abspath(p) == str(sub):
            raise PermissionError(13, "Permission denied", p)
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--no-ptxas", "--format", "concise", ".", "good.cu"])
    assert "internal error" not in result.output and result.exception is None or isinstance(result.exception,
                                                                                             SystemExit)
    assert result.exit_code == 2, result.output
    assert "good.cu:1:67: KL101" in result.output
    assert "sub: error: cannot read directory: Permission denied" in result.output


# --- cache entries ---------------------------------------------------------------------------------


def _lint_cached(d: Path, cache: Path) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["--no-ptxas", "--format", "concise", "--cache-dir", str(cache), "a.cu", "b.cu"])
    return r.exit_code, r.output


@pytest.fixture()
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, tuple[int, str]]:
    d = tmp_path / "p"
    (d / ".git").mkdir(parents=True)
    (d / "a.cu").write_text(GOOD)
    (d / "b.cu").write_text(OTHER)
    monkeypatch.chdir(d)
    cache = tmp_path / "cache"
    first = _lint_cached(d, cache)
    assert first[0] == 1 and "a.cu:1:67: KL101" in first[1] and "b.cu:" in first[1]
    return d, cache, first


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "results-v1").glob("*.pkl"))


def test_a_flipped_bit_in_a_result_entry_is_a_miss_and_the_entry_is_rewritten(cached: tuple) -> None:
    d, cache, first = cached
    entries = _entries(cache)
    assert len(entries) == 2
    sound = {p: p.read_bytes() for p in entries}
    for p, data in sound.items():
        at = data.index(b"uncoalesced") if b"uncoalesced" in data else len(data) - 10
        p.write_bytes(data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:])  # `u` -> `t`: "tncoalesced"
    assert _lint_cached(d, cache) == first
    assert {p: p.read_bytes() for p in _entries(cache)} == sound  # linted again and stored again


def test_entries_swapped_between_keys_are_misses(cached: tuple) -> None:
    d, cache, first = cached
    a, b = _entries(cache)
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)
    b.write_bytes(da)
    assert _lint_cached(d, cache) == first
    assert (a.read_bytes(), b.read_bytes()) == (da, db)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "sparse"])
def test_a_result_entry_that_is_no_sane_regular_file_is_not_read(cached: tuple, kind: str) -> None:
    d, cache, first = cached
    for p in _entries(cache):
        p.unlink()
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "dev-zero":
            p.symlink_to("/dev/zero")
        else:
            with open(p, "wb") as fh:
                fh.truncate(300 << 20)  # 300 MB, sparse
    signal.alarm(60)  # a hang fails the test instead of stalling the suite
    try:
        t0 = time.monotonic()
        assert _lint_cached(d, cache) == first
        assert time.monotonic() - t0 < 30
    finally:
        signal.alarm(0)


def test_a_damaged_index_entry_is_rescanned_never_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNLINT_NO_CACHE", raising=False)
    root = tmp_path / "p"
    (root / ".git").mkdir(parents=True)
    (root / "a.cu").write_text(GOOD + "void h(float* a, float* o) { good<<<2, 64>>>(a, o); }\n")
    fresh = ProjectIndex.build(root)
    want = fresh.launches_of("good", str(root / "a.cu"))
    [cache_file] = list((tmp_path / "cache").rglob("index-v*/*.json"))
    data = json.loads(cache_file.read_text())
    facts = data["files"][str(root / "a.cu")]["facts"]
    facts["launches"][0]["config"] = ["2", "1024"]  # well-formed, wrong: the checksum catches it
    cache_file.write_text(json.dumps(data))
    again = ProjectIndex.build(root)
    assert again.launches_of("good", str(root / "a.cu")) == want and again.scanned == 1


# --- workers die with their parent; the next run removes leftovers of dead processes ----------------


_ORPHAN = r"""
import os, sys, time
sys.path.insert(0, {root!r})
from kernlint.system.isolation import Limits, run_isolated

def forever(_task):
    while True:
        time.sleep(0.05)

print(os.getpid(), flush=True)
for _ in run_isolated(forever, [0, 1], workers=2, limits=Limits(timeout_s=None, memory_mb=None)):
    pass
"""


def _children(pid: int) -> list[int]:
    from kernlint.system.leftovers import process_tree

    return process_tree(pid)


def test_workers_die_with_a_killed_parent(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN.format(root=str(ROOT))], stdout=subprocess.PIPE,
                            text=True, env=_env())
    workers: list[int] = []
    try:
        pid = int(proc.stdout.readline())  # type: ignore[union-attr]
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = _children(pid)
            time.sleep(0.1)
        assert len(workers) >= 2
        os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(w) for w in workers)
        # and nothing holds the pipe the parent's stdout was: a reader gets its end
        assert proc.stdout.read() == ""  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
        for w in workers:  # (a failed test leaves no orphan behind)
            if _alive(w):
                os.kill(w, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_next_run_removes_what_dead_processes_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernlint.system import leftovers

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNLINT_NO_CACHE", raising=False)
    dead = subprocess.Popen(["true"])
    dead.wait()
    for prefix in (leftovers.NVCC_DIR, leftovers.PCH_DIR):
        (tmp / f"{prefix}{dead.pid}-abc").mkdir()
        (tmp / f"{prefix}{dead.pid}-abc" / "k.cu").write_text("x")
        (tmp / f"{prefix}{os.getpid()}-live").mkdir()  # a running process's: kept
    (tmp_path / "cache" / leftovers.CACHE_TEMP_DIR).mkdir(parents=True)
    (tmp_path / "cache" / leftovers.CACHE_TEMP_DIR / f".tmp-{dead.pid}-x.tmp").write_text("half")
    (tmp_path / "cache" / leftovers.CACHE_TEMP_DIR / f".tmp-{os.getpid()}-y.tmp").write_text("live")  # kept
    (tmp / "kernlint-nvcc-notapid").mkdir()  # not named by kernlint: kept
    (tmp / f".tmp-{dead.pid}-other").write_text("another program's")  # kernlint's only in its cache: kept
    removed = leftovers.remove_dead()
    assert sorted(os.path.basename(p) for p in removed) == sorted(
        [f"{leftovers.NVCC_DIR}{dead.pid}-abc", f"{leftovers.PCH_DIR}{dead.pid}-abc", f".tmp-{dead.pid}-x.tmp"])
    assert sorted(p.name for p in tmp.iterdir()) == sorted(
        [f"{leftovers.NVCC_DIR}{os.getpid()}-live", f"{leftovers.PCH_DIR}{os.getpid()}-live", "kernlint-nvcc-notapid",
         f".tmp-{dead.pid}-other"])

    # The cache's own directories are not listed (their size would be every run's cost): only CACHE_TEMP_DIR.
    (tmp_path / "cache" / "results-v1").mkdir()
    listed: list[str] = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda p: listed.append(os.path.basename(p)) or real_scandir(p))
    leftovers.remove_dead()
    assert sorted(listed) == sorted(["tmp", leftovers.CACHE_TEMP_DIR])


def test_cache_writes_go_through_the_cache_temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """atomic_write makes its temporary file in the cache's CACHE_TEMP_DIR and renames it into place; where that
    rename crosses file systems it writes beside the target instead; nothing is left behind."""
    import errno

    from kernlint.system import leftovers

    cache = tmp_path / "cache"
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(cache))
    monkeypatch.delenv("KERNLINT_NO_CACHE", raising=False)
    moves: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        moves.append((os.path.basename(os.path.dirname(src)), os.path.basename(os.path.dirname(dst))))
        if len(moves) == 2:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    assert leftovers.atomic_write(cache / "index-v1" / "a.json", b"one")
    assert leftovers.atomic_write(cache / "index-v1" / "b.json", b"two")  # first try: EXDEV
    assert moves == [(leftovers.CACHE_TEMP_DIR, "index-v1")] * 2 + [("index-v1", "index-v1")]
    assert (cache / "index-v1" / "a.json").read_bytes() == b"one" and (cache / "index-v1" / "b.json").read_bytes() == b"two"
    assert list((cache / leftovers.CACHE_TEMP_DIR).iterdir()) == []
    assert sorted(p.name for p in (cache / "index-v1").iterdir()) == ["a.json", "b.json"]


# --- foreseeable conditions: one message naming the file or channel, exit 2 -------------------------


def test_fix_on_a_file_that_cannot_be_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_swizzle_fix import TYPEDEF_TRANSPOSE

    from kernlint.runner import parallel

    src = tmp_path / "transpose.cu"
    src.write_text(TYPEDEF_TRANSPOSE)
    real_access = os.access
    # A read-only file (simulated: the tests may run as root, whom modes do not stop).
    monkeypatch.setattr(parallel.os, "access", lambda p, m, **k: False if os.path.samefile(p, src) and m == os.W_OK
                        else real_access(p, m, **k))
    r = CliRunner().invoke(main, ["--no-ptxas", "--format", "concise", "--fix", "--select", "KL201", str(src)])
    assert "internal error" not in r.output
    assert r.exit_code == 2, r.output
    assert f"{src}: error: cannot write the fixes: Permission denied; the file was left as it was" in r.output
    assert "KL201" in r.output  # the finding is still reported
    assert src.read_text() == TYPEDEF_TRANSPOSE


def test_write_fixed_replaces_the_file_whole_and_keeps_its_mode(tmp_path: Path) -> None:
    from kernlint.runner.parallel import write_fixed

    p = tmp_path / "k.cu"
    p.write_text("old")
    p.chmod(0o640)
    write_fixed(str(p), "new text")
    assert p.read_text() == "new text" and (p.stat().st_mode & 0o777) == 0o640
    assert [x.name for x in tmp_path.iterdir()] == ["k.cu"]


def test_a_full_standard_output_is_one_message_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(GOOD)
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "kernlint", "--no-ptxas", "--no-cache", "k.cu"], cwd=tmp_path,
                           stdout=full, stderr=subprocess.PIPE, text=True, env=_env(), timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == ("kernlint: error: cannot write the report to standard output: "
                                                "No space left on device"), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


def test_a_closed_standard_output_is_one_message_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(GOOD)
    r = subprocess.run(["bash", "-c", f'"{sys.executable}" -m kernlint --no-ptxas --no-cache k.cu >&-'],
                       cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip() == "kernlint: error: cannot write the report: standard output is closed", r.stderr


# --- interrupts ------------------------------------------------------------------------------------


def test_an_interrupted_run_exits_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kernlint.runner.parallel as rc

    (tmp_path / "k.cu").write_text(GOOD)

    def interrupted(*_a: object, **_k: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(rc, "lint_files_cached", interrupted)
    r = CliRunner().invoke(main, ["--no-ptxas", str(tmp_path / "k.cu")])
    assert r.exit_code == 130 and "kernlint: interrupted" in r.output and "Aborted" not in r.output


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_to_a_real_run_is_its_status_and_leaves_no_worker(tmp_path: Path, sig: int, code: int) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from fuzzgen import hostile

    (tmp_path / "slow.cu").write_bytes(hostile(1.0)["h_findings.cu"])
    proc = subprocess.Popen([sys.executable, "-m", "kernlint", "--no-ptxas", "--no-cache", "-j", "2", "--timeout",
                             "120", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), cwd=tmp_path)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while not workers and time.monotonic() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        time.sleep(0.2)
    if proc.poll() is not None:
        pytest.skip("the run ended before it could be interrupted")
    time.sleep(0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Aborted" not in err and "Traceback" not in err
    assert ("kernlint: interrupted" in err) == (sig == signal.SIGINT)
    time.sleep(0.5)
    assert not any(_alive(w) for w in workers)


# --- --define --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["99999999999999999999999999999999", "-9223372036854775809", "18446744073709551616"])
def test_a_define_outside_every_integer_type_is_exit_2(tmp_path: Path, value: str) -> None:
    (tmp_path / "k.cu").write_text(GOOD)
    r = CliRunner().invoke(main, ["--no-ptxas", "--define", f"n={value}", str(tmp_path / "k.cu")])
    assert r.exit_code == 2
    assert f"--define: n: {int(value)} is out of the range of every integer type" in r.output


def test_a_define_at_the_edge_of_64_bits_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(GOOD)
    for value in ("18446744073709551615", "-9223372036854775808"):
        r = CliRunner().invoke(main, ["--no-ptxas", "--define", f"n={value}", str(tmp_path / "k.cu")])
        assert r.exit_code == 1, r.output
