"""Behaving like trusted linters: bad values are errors, missing tools are said, config found per file."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.cli.command import main

STRIDED = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


def run(args: list[str], ptxas: bool = False) -> tuple[int, str, str]:
    extra = [] if ptxas else ["--no-ptxas"]
    result = CliRunner().invoke(main, args + extra, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def bad(tmp_path: Path) -> Path:
    p = tmp_path / "bad.cu"
    p.write_text(STRIDED)
    return p


@pytest.mark.parametrize("flag,value,hint", [
    ("--select", "KL999", None),
    ("--select", "KL1O1", "KL101"),
    ("--ignore", "NOPE", None),
    ("--ignore", "shared-bank-conflicts", "shared-bank-conflict"),
])
def test_unknown_selectors_exit_2_with_a_suggestion(bad: Path, flag: str, value: str, hint: str | None) -> None:
    code, out, err = run([str(bad), flag, value])
    assert code == 2 and out == ""
    assert f"{flag}: {value!r} matches no rule" in err
    if hint:
        assert f"did you mean {hint!r}" in err


@pytest.mark.parametrize("value", ["KL1", "KL1xx", "KL101,KL102", "uncoalesced-global-load", "ALL"])
def test_known_selectors_and_prefixes_stay_valid(bad: Path, value: str) -> None:
    code, _, err = run([str(bad), "--select", value])
    assert code == 1, err


@pytest.mark.parametrize("args", [
    ["--block", "33,x"], ["--block", "32,,8"], ["--block", "x"], ["--block", "32,8,2,1"], ["--block", "0"],
    ["--define", "w=x"], ["--define", "=3"], ["--define", "w"],
])
def test_malformed_block_and_define_exit_2(bad: Path, args: list[str]) -> None:
    code, out, err = run([str(bad), *args])
    assert code == 2 and out == "", err
    assert "error" in err and "Traceback" not in err


@pytest.mark.parametrize("value,dims", [("32,8", "(32, 8, 1)"), ("32x8", "(32, 8, 1)"), ("(16, 16)", "(16, 16, 1)")])
def test_wellformed_block_spellings(bad: Path, value: str, dims: str) -> None:
    code, out, err = run([str(bad), "--block", value, "--format", "json"])
    assert code == 1, err
    assumptions = json.loads(out)["diagnostics"][0]["assumptions"]
    assert any(dims in a for a in assumptions), assumptions


def test_unsupported_arch_exits_2_listing_supported(bad: Path) -> None:
    from kernlint.model.occupancy import ARCHS

    code, out, err = run([str(bad), "--arch", "sm_61"])
    assert code == 2 and out == ""
    assert "sm_61" in err and all(a in err for a in ARCHS)
    for arch in ARCHS:
        code, _, err = run([str(bad), "--arch", arch])
        assert code == 1, (arch, err)


def test_unsupported_arch_in_config_is_an_error_too(bad: Path) -> None:
    (bad.parent / "kernlint.toml").write_text('arch = "sm_61"\n')
    code, _, err = run([str(bad), "--config", str(bad.parent / "kernlint.toml")])
    assert code == 2 and "kernlint.toml:1" in err and "sm_75" in err


def test_missing_nvcc_is_said_once_per_run(tmp_path: Path, bad: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other.cu"
    other.write_text(STRIDED)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _, err = run([str(bad), str(other)], ptxas=True)
    assert code == 1
    assert err.count("KL402 (register-spill) was skipped: nvcc was not found") == 1
    code, out, err = run([str(bad), "--format", "json"], ptxas=True)
    assert "KL402" not in err
    assert any("KL402" in n and "nvcc" in n for n in json.loads(out)["notes"])
    # Not asked for: not said.
    code, _, err = run([str(bad), "--ignore", "KL402"], ptxas=True)
    assert "KL402" not in err


def test_sarif_defines_srcroot_and_records_failed_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_reporters import SCHEMA

    (tmp_path / "bad.cu").write_text(STRIDED)
    (tmp_path / "broken.cu").write_bytes(b"\x00\x01binary")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["bad.cu", "broken.cu", "--format", "sarif"])
    assert code == 2
    log = json.loads(out)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(log)
    run_ = log["runs"][0]
    base = run_["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file://") and base.endswith("/")
    assert Path(base.removeprefix("file://")).resolve() == tmp_path.resolve()
    loc = run_["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "bad.cu", "uriBaseId": "%SRCROOT%"}
    inv = run_["invocations"][0]
    assert inv["executionSuccessful"] is False
    failed = [n for n in inv["toolExecutionNotifications"] if n["level"] == "error"]
    assert len(failed) == 1 and "binary" in failed[0]["message"]["text"]
    assert failed[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.cu"


# --------------------------------------------------------------------------- config resolution


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src" / "third_party").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "pyproject.toml").write_text(
        '[tool.kernlint]\nexclude = ["build/**"]\n\n[tool.kernlint.per-file-ignores]\n"src/third_party/**" = ["KL101"]\n')
    for rel in ("src/a.cu", "src/third_party/v.cu", "build/x.cu"):
        (root / rel).write_text(STRIDED)
    return root


def spellings(target: Path, cwd: Path) -> list[str]:
    rel = os.path.relpath(target, cwd)
    return [str(target), rel, "./" + rel if rel != "." else "./"]


def flagged(out: str) -> set[str]:
    return {Path(os.path.abspath(d["path"])).resolve().relative_to(Path.cwd().resolve().anchor).as_posix()
            for d in json.loads(out)["diagnostics"] if d["code"] == "KL101"}


@pytest.mark.parametrize("where", ["proj", "proj/src", "/"])
def test_config_applies_the_same_from_any_directory_and_spelling(project: Path, where: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = project.parent / where if where != "/" else Path("/")
    monkeypatch.chdir(cwd)
    expected = {(project / "src" / "a.cu").resolve().relative_to("/").as_posix()}
    for spelled in spellings(project, cwd):
        code, out, err = run([spelled, "--format", "json"])
        assert code == 1, (spelled, err)
        assert flagged(out) == expected, (where, spelled)
    for spelled in spellings(project / "src", cwd):  # `cd src && kernlint .` keeps src/third_party/** ignored
        code, out, _ = run([spelled, "--format", "json"])
        assert flagged(out) == expected, (where, spelled)
    for spelled in spellings(project / "src" / "third_party" / "v.cu", cwd):
        code, out, _ = run([spelled, "--format", "json"])
        assert code == 0 and flagged(out) == set(), (where, spelled)
    for spelled in spellings(project / "build" / "x.cu", cwd):
        # Named explicitly: linted, as ruff does; excluded only with --force-exclude.
        code, out, _ = run([spelled, "--format", "json"])
        assert code == 1 and len(flagged(out)) == 1, (where, spelled)
        code, out, _ = run([spelled, "--format", "json", "--force-exclude"])
        assert code == 0 and flagged(out) == set(), (where, spelled)


def test_command_line_exclude_is_relative_to_the_working_directory(project: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`--exclude` globs are matched against paths relative to where the command runs (the config's
    own `exclude` stays relative to the config): `cd src && kernlint . --exclude 'gen/**'` skips src/gen."""
    (project / "src" / "gen").mkdir()
    (project / "src" / "gen" / "g.cu").write_text(STRIDED)
    gen = (project / "src" / "gen" / "g.cu").resolve().relative_to("/").as_posix()
    mine = (project / "src" / "a.cu").resolve().relative_to("/").as_posix()
    monkeypatch.chdir(project / "src")
    for spelled in spellings(project / "src", project / "src"):
        _code, out, _ = run([spelled, "--format", "json"])
        assert flagged(out) == {mine, gen}, spelled
        _code, out, _ = run([spelled, "--format", "json", "--exclude", "gen/**"])
        assert flagged(out) == {mine}, spelled
    monkeypatch.chdir(project)  # from the project root the same glob names nothing
    _code, out, _ = run(["src", "--format", "json", "--exclude", "gen/**"])
    assert flagged(out) == {mine, gen}
    _code, out, _ = run(["src", "--format", "json", "--exclude", "src/gen/**"])
    assert flagged(out) == {mine}


def test_nearest_config_wins_per_file(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "src" / "third_party" / "kernlint.toml").write_text('select = ["KL2"]\n')
    (project / "src" / "third_party" / "w.cu").write_text(STRIDED)
    monkeypatch.chdir(project)
    code, out, _ = run([".", "--format", "json"])
    paths = {Path(d["path"]).name for d in json.loads(out)["diagnostics"]}
    assert paths == {"a.cu"}  # the nested config selects only KL2xx, so neither vendored file is flagged for KL101


def test_baseline_works_from_any_directory(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    baseline = tmp_path / "baseline.json"
    monkeypatch.chdir(project)
    assert run(["src", "--write-baseline", str(baseline)])[0] == 0
    for cwd, target in ((project / "src", "."), (Path("/"), str(project / "src")), (project, "./src/a.cu")):
        monkeypatch.chdir(cwd)
        code, out, err = run([target, "--baseline", str(baseline), "--format", "json"])
        assert code == 0 and json.loads(out)["diagnostics"] == [], (cwd, target, err)


def test_sarif_uris_are_project_relative_from_a_subdirectory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project / "src")
    log = json.loads(run(["a.cu", "--format", "sarif"])[1])
    run_ = log["runs"][0]
    assert run_["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/a.cu"
    assert Path(run_["originalUriBaseIds"]["%SRCROOT%"]["uri"].removeprefix("file://")) == project


# --------------------------------------------------------------------------- directory walks


def test_walk_skips_hidden_venvs_build_outputs_and_gitignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import subprocess

    from kernlint.cli.command import collect_paths

    for rel in ("k.cu", ".hidden/h.cu", "env/lib/v.cu", "build/b.cu", "dist/d.cu", "node_modules/n.cu",
                "__pycache__/p.cu", "lib/site-packages/s.cu", "vendor/g.cu", "sub/ok.cu"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(STRIDED)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    names = lambda files: sorted(Path(os.path.abspath(f)).relative_to(tmp_path).as_posix() for f in files)  # noqa: E731
    files, problems = collect_paths((str(tmp_path),))
    assert not problems and names(files) == ["k.cu", "sub/ok.cu", "vendor/g.cu"]
    if shutil.which("git") is None:
        pytest.skip("git is not installed: .gitignore handling degrades to none")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("vendor/\n")
    assert names(collect_paths((str(tmp_path),))[0]) == ["k.cu", "sub/ok.cu"]
    assert names(collect_paths((str(tmp_path),), respect_gitignore=False)[0]) == ["k.cu", "sub/ok.cu", "vendor/g.cu"]
    monkeypatch.chdir(tmp_path / "sub")
    assert names(collect_paths(("..",))[0]) == ["k.cu", "sub/ok.cu"]
    # The CLI flag, and an explicitly named hidden directory or ignored file is still linted.
    code, out, _ = run([str(tmp_path), "--format", "json", "--no-respect-gitignore"])
    assert "vendor/g.cu" in out
    code, out, _ = run([str(tmp_path / "vendor" / "g.cu"), str(tmp_path / ".hidden"), "--format", "json"])
    assert code == 1 and "vendor/g.cu" in out and "h.cu" in out


def test_named_non_cuda_file_gets_one_note_and_is_skipped(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Kernels\n\n```cuda\n__global__ void k() {}\n```\n")
    code, out, err = run([str(readme), str(tmp_path / "README.md")])
    assert code == 0
    assert err.count("not a CUDA or C/C++ source") == 2 and "error" not in err  # once per named file
    (tmp_path / "k.cu").write_text(STRIDED)
    code, out, err = run([str(readme), str(tmp_path / "k.cu")])
    assert code == 1 and "KL101" in out and err.count("README.md: note:") == 1


# --------------------------------------------------------------------------- output


def test_github_multiline_spans_carry_no_columns_and_errors_come_first() -> None:
    from kernlint.base.diagnostics import Diagnostic, Severity
    from kernlint.reporters.github import render as gh

    warn = Diagnostic("a.cu", 3, 5, "KL101", "uncoalesced-global-load", Severity.WARNING, "w", end_line=3, end_column=9)
    multi = Diagnostic("a.cu", 7, 2, "KL301", "divergent-barrier", Severity.ERROR, "e", end_line=9, end_column=4)
    lines = gh([warn, multi], None).splitlines()  # type: ignore[arg-type]
    assert lines[0].startswith("::error file=a.cu,line=7,endLine=9,title=")
    assert "col=" not in lines[0] and "endColumn=" not in lines[0]
    assert lines[1].startswith("::warning file=a.cu,line=3,col=5,endLine=3,endColumn=9,")


@pytest.mark.parametrize("env,flag,expect", [
    ({}, None, False), ({}, "--color", True), ({"FORCE_COLOR": "1"}, None, True), ({"FORCE_COLOR": "0"}, None, False),
    ({"NO_COLOR": "1"}, "--color", True), ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, None, False),
    ({"FORCE_COLOR": "1"}, "--no-color", False),
])
def test_colour_flags_and_environment(bad: Path, monkeypatch: pytest.MonkeyPatch, env: dict, flag: str | None,
                                      expect: bool) -> None:
    for var in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    _, out, _ = run([str(bad)] + ([flag] if flag else []))  # CliRunner's stdout is not a terminal
    assert ("\x1b[" in out) is expect


def test_text_ends_with_a_found_line_counting_by_severity(tmp_path: Path, bad: Path) -> None:
    clean = tmp_path / "clean.cu"
    clean.write_text("__global__ void k(float* o) { o[blockIdx.x * blockDim.x + threadIdx.x] = 0; }\n")
    _, out, _ = run([str(bad), str(clean)])
    assert out.rstrip("\n").splitlines()[-1] == "Found 1 warning in 1 file (2 checked)"
    _, out, _ = run([str(clean)])
    assert out.rstrip("\n").splitlines()[-1] == "No findings (1 file checked)"


# --------------------------------------------------------------------------- directive look-alikes

LOOKALIKES = '''__global__ void k(const float* a, float* o) {
  o[threadIdx.x] = a[threadIdx.x * 32];  // kernlint: disable[KL101]
  o[threadIdx.x] = a[threadIdx.x * 32];  // kernlint ignore KL101
  o[threadIdx.x] = a[threadIdx.x * 32];  // kernlint: Ignore[KL101]
  o[threadIdx.x] = a[threadIdx.x * 32];  // NOLINT(KL101)
  o[threadIdx.x] = a[threadIdx.x * 32];  // kernlint: ignore[KL101] measured, fine
  // kernlint: block=(32,8) is an annotation; the kernlint docs say more
}
'''


def test_directive_lookalikes_are_kl902_and_silence_nothing(tmp_path: Path) -> None:
    p = tmp_path / "k.cu"
    p.write_text(LOOKALIKES)
    code, out, _ = run([str(p), "--format", "json"])
    diags = json.loads(out)["diagnostics"]
    by_line = {}
    for d in diags:
        by_line.setdefault(d["line"], set()).add(d["code"])
        # The five identical loads are one finding (one cause), the others its related locations;
        # the real suppression on line 6 silences that site only.
        for r in d["metrics"].get("related_locations", ()):
            by_line.setdefault(r["line"], set()).add(d["code"])
    for line in (2, 3, 4, 5):
        assert by_line[line] == {"KL101", "KL902"}, (line, by_line)
    assert 6 not in by_line and 7 not in by_line
    kl902 = [d for d in diags if d["code"] == "KL902"]
    assert all("kernlint: ignore[KL101]" in d["message"] for d in kl902)


# --------------------------------------------------------------------------- one finding per root cause

ROOT = Path(__file__).resolve().parent.parent
TILE_16_17 = '''__global__ void k(const float* in, float* out) {
    __shared__ float tile[16][17];
    tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * 16 + threadIdx.x];
    __syncthreads();
    out[threadIdx.y * 16 + threadIdx.x] = tile[threadIdx.y][threadIdx.x];
}
'''
TWO_LINES = '''__global__ void k(const float* in, float* out) {
    __shared__ float
        tile[32]
            [32];
    tile[threadIdx.x][threadIdx.y] = in[threadIdx.y * 32 + threadIdx.x];
    __syncthreads();
    out[threadIdx.y * 32 + threadIdx.x] = tile[threadIdx.y][threadIdx.x];
}
'''


def kl201(path: Path, *args: str) -> list[dict]:
    code, out, err = run([str(path), "--select", "KL201", "--format", "json", *args])
    return json.loads(out)["diagnostics"]


def test_accesses_one_padding_fixes_are_one_finding_with_related_locations() -> None:
    diags = kl201(ROOT / "fixtures" / "KL201_stride.cu")
    grouped = [d for d in diags if d["metrics"].get("related_locations")]
    assert grouped, diags
    first = grouped[0]
    related = [r["line"] for r in first["metrics"]["related_locations"]]
    assert first["line"] not in related and len(related) >= 2
    # One diagnostic per site: each other line is its own finding, naming the worst site and the
    # shared fix (the same padding edit), so an editor or a code-scanning view annotates every line.
    sites = [d for d in diags if d["metrics"].get("grouped_with") == {"line": first["line"], "column": first["column"]}]
    assert sorted(d["line"] for d in sites) == sorted(related)
    assert all(d["fixes"] == first["fixes"] for d in sites) and first["fixes"]
    assert all(first["line"] in [r["line"] for r in d["metrics"]["related_locations"]] for d in sites)
    assert any("the same padding also fixes" in n for n in first["notes"])
    code, out, _ = run([str(ROOT / "fixtures" / "KL201_stride.cu"), "--select", "KL201", "--format", "sarif"])
    from test_reporters import SCHEMA

    log = json.loads(out)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(log)
    res = next(r for r in log["runs"][0]["results"] if r.get("relatedLocations"))
    assert [loc["physicalLocation"]["region"]["startLine"] for loc in res["relatedLocations"]] == related


def test_padding_search_removes_existing_padding_when_that_is_cheapest(tmp_path: Path) -> None:
    p = tmp_path / "t.cu"
    p.write_text(TILE_16_17)
    diags = kl201(p, "--block", "16,16")
    # The store (line 3) and the load (line 5) collide alike: one root cause, a finding per site.
    assert sorted(x["line"] for x in diags) == [3, 5]
    (d,) = [x for x in diags if "grouped_with" not in x["metrics"]]
    assert d["metrics"]["suggested_declaration"] == "tile[16][16]"
    assert d["metrics"]["padding_removes_all_conflicts"] is True
    assert d["fixes"][0]["text"] == "16" and d["fixes"][0]["line"] == 2


def test_declaration_over_two_lines_still_gets_its_edit(tmp_path: Path) -> None:
    p = tmp_path / "t.cu"
    p.write_text(TWO_LINES)
    diags = kl201(p, "--block", "32,32")
    assert diags and diags[0]["fixes"]
    edit = diags[0]["fixes"][0]
    assert (edit["line"], edit["text"]) == (4, "33")
    assert TWO_LINES.split("\n")[3][edit["column"] - 1:edit["end_column"] - 1] == "32"


# --------------------------------------------------------------------------- --fix / --diff


def test_fix_round_trip_on_a_transpose(tmp_path: Path) -> None:
    import shutil
    import subprocess

    src = (ROOT / "fixtures" / "KL201_transpose.cu").read_text()
    p = tmp_path / "transpose.cu"
    p.write_text(src)
    before = kl201(p)
    assert before and all(d["fixes"] for d in before)
    code, out, err = run([str(p), "--diff"])
    assert code == 1 and p.read_text() == src  # --diff writes nothing
    assert "-    __shared__ float tile[32][32];" in out and "+    __shared__ float tile[32][33];" in out
    code, out, err = run([str(p), "--fix", "--select", "KL201"])
    assert code == 0 and f"fixed {len(before)} finding" in err
    fixed = p.read_text()
    assert "tile[32][33]" in fixed and "tile[TILE][TILE + 1]" in fixed
    assert len(fixed.split("\n")) == len(src.split("\n"))
    assert kl201(p) == []  # re-lints clean
    assert run([str(p), "--diff"])[0] == 0  # nothing left to fix
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed: the fixed file's compilation is not checked")
    proc = subprocess.run([nvcc, "-c", "-o", str(tmp_path / "t.o"), str(p)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_fix_applies_only_proven_edits(tmp_path: Path) -> None:
    from kernlint.base.diagnostics import Diagnostic, Edit, Severity
    from kernlint.engine.fix import fix_file

    text = "int a[4];\nint b[4];\n"
    good = Diagnostic("x.cu", 1, 1, "KL201", "shared-bank-conflict", Severity.WARNING, "m",
                      fixes=(Edit(1, 7, 1, 8, "5"),))
    bad = Diagnostic("x.cu", 2, 1, "KL201", "shared-bank-conflict", Severity.WARNING, "m",
                     fixes=(Edit(2, 7, 2, 8, "9"),))

    def relint(new: str) -> list:
        out = []
        if "a[5]" not in new:
            out.append(good)
        out.append(bad)  # its edit does not make it go away
        if "b[9]" in new:
            out.append(Diagnostic("x.cu", 2, 1, "KL405", "shared-memory-exceeds-limit", Severity.ERROR, "new"))
        return out

    outcome = fix_file("x.cu", text, [good, bad], relint)
    assert outcome.text == "int a[5];\nint b[4];\n"
    assert outcome.fixed == (good,) and outcome.remaining == (bad,)


def test_list_rules_says_which_rules_can_fix() -> None:
    code, out, _ = run(["--list-rules"])
    header = out.splitlines()[0].split()
    assert "fix" in header
    rows = {line.split()[0]: line.split()[header.index("fix")] for line in out.splitlines()[1:]}
    assert rows["KL201"] == "yes" and rows["KL101"] == "-"



# --------------------------------------------------------------------------- KL301's fix text

REDUCTIONS = """__global__ void seq(const float* in, float* out) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
__global__ void inter(const float* in, float* out) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (unsigned k = 1; k < blockDim.x; k *= 2) {
        if (tid % (2 * k) == 0) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
"""


def test_kl301_fix_does_not_suggest_what_the_code_already_does(tmp_path: Path) -> None:
    p = tmp_path / "red.cu"
    p.write_text(REDUCTIONS)
    code, out, _ = run([str(p), "--block", "256", "--select", "KL301", "--format", "json"])
    by_line = {d["line"]: d for d in json.loads(out)["diagnostics"]}
    sequential, interleaved = by_line[7], by_line[18]
    fix_seq = next(n for n in sequential["notes"] if n.startswith("fix:"))
    assert "sequential addressing" not in fix_seq and "already contiguous" in fix_seq
    fix_int = next(n for n in interleaved["notes"] if n.startswith("fix:"))
    assert "sequential addressing" in fix_int
