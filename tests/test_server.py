"""`kernlint server` end to end: a pytest-lsp client with VS Code's capabilities drives the server over stdio.

Spec warnings (a message the client's stated capabilities do not allow) are errors here. One server
serves the module (starting libclang costs seconds); tests open their own documents and never save,
so the fixtures on disk are never changed. `test_shutdown_is_clean` starts its own server.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402  (after the skip: both come with the dev extra)
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# The servers' caches (results, project index, ptxas figures) live in a directory of this module's own.
CACHE = tempfile.mkdtemp(prefix="kernlint-test-server-")
ENV = {**{k: v for k, v in os.environ.items() if k != "KERNLINT_NO_CACHE"}, "PYTHONPATH": str(ROOT),
       "KERNLINT_CACHE_DIR": CACHE}
SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "kernlint", "server"], server_env=ENV)
TIMEOUT_S = 60

pytestmark = [pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")]


@pytest.fixture(scope="module", autouse=True)
def _cache_dir():
    yield
    shutil.rmtree(CACHE, ignore_errors=True)


REGISTERED: list[types.Registration] = []


def _accept_registrations(client: LanguageClient) -> None:
    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:  # as editors accept the server's file watchers
        REGISTERED.extend(params.registrations)


async def _start(client: LanguageClient) -> None:
    _accept_registrations(client)
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=ROOT.as_uri(), workspace_folders=[types.WorkspaceFolder(uri=ROOT.as_uri(), name="kernlint")]))


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient):
    await _start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def _published(client: LanguageClient, uri: str, action) -> list[types.Diagnostic]:
    """Do `action()`, then wait for the next diagnostics of `uri`."""
    client.diagnostics.pop(uri, None)
    action()
    loop = asyncio.get_running_loop()
    end = loop.time() + TIMEOUT_S
    while uri not in client.diagnostics:
        assert loop.time() < end, f"no diagnostics for {uri} within {TIMEOUT_S} s"
        await asyncio.sleep(0.02)
    return list(client.diagnostics[uri])


_opened: set[str] = set()


async def _open(client: LanguageClient, path: Path, text: str | None = None, name: str | None = None
                ) -> tuple[str, list[types.Diagnostic]]:
    """Open `path` (with `text` instead of its contents; under another `name` beside it, so tests do not
    share a document) and wait for its diagnostics."""
    target = path.with_name(name) if name else path
    uri = target.as_uri()
    assert uri not in _opened, "each test opens its own document"
    _opened.add(uri)
    text = path.read_text(encoding="utf-8") if text is None else text
    diags = await _published(client, uri, lambda: client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="cuda-cpp", version=1, text=text))))
    return uri, diags


async def _replace(client: LanguageClient, uri: str, version: int, text: str) -> list[types.Diagnostic]:
    """Replace the whole unsaved text of `uri` and wait for the new diagnostics."""
    return await _published(client, uri, lambda: client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)])))


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """`text` with LSP `edits` applied (ASCII text: characters are UTF-16 units)."""
    lines = text.split("\n")

    def offset(p: types.Position) -> int:
        return sum(len(x) + 1 for x in lines[: p.line]) + p.character

    out = text
    for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        out = out[: offset(e.range.start)] + e.new_text + out[offset(e.range.end):]
    return out


def _sites(diags: list[types.Diagnostic]) -> list[tuple[int, str]]:
    return sorted((d.range.start.line + 1, str(d.code)) for d in diags)


# ------------------------------------------------------------------------------------------ diagnostics


@pytest.mark.asyncio(loop_scope="module")
async def test_open_publishes_ranges_codes_and_doc_links(client: LanguageClient) -> None:
    uri, diags = await _open(client, FIXTURES / "KL201_transpose.cu", name="open_transpose.cu")
    assert _sites(diags) == [(17, "KL201"), (45, "KL201")]
    first = min(diags, key=lambda d: d.range.start.line)
    # `out[y * h + x] = tile[threadIdx.x][threadIdx.y];`: the access spans columns 22..52 (1-based, end exclusive)
    assert (first.range.start.line, first.range.start.character, first.range.end.character) == (16, 21, 51)
    assert first.severity == types.DiagnosticSeverity.Warning and first.source == "kernlint"
    assert first.code_description is not None and first.code_description.href.endswith("KL201-shared-bank-conflict.md")
    assert Path(first.code_description.href.removeprefix("file://")).is_file()


@pytest.mark.asyncio(loop_scope="module")
async def test_every_site_of_a_pattern_is_its_own_diagnostic_with_related_information(client: LanguageClient) -> None:
    uri, diags = await _open(client, FIXTURES / "grouping_root_cause.cu", name="open_grouping.cu")
    kl201 = [d for d in diags if d.code == "KL201" and d.range.start.line < 20]
    assert sorted(d.range.start.line + 1 for d in kl201) == [10, 11, 13, 14, 15]
    line13 = next(d for d in kl201 if d.range.start.line == 12)
    related = sorted(r.location.range.start.line + 1 for r in line13.related_information or ())
    assert related == [10, 11, 14, 15]
    assert all(r.location.uri == uri for r in line13.related_information or ())


@pytest.mark.asyncio(loop_scope="module")
async def test_related_information_names_the_launch_in_another_file(client: LanguageClient) -> None:
    header = FIXTURES / "projects" / "host_template" / "kernels.cuh"
    uri, diags = await _open(client, header)
    (d,) = [d for d in diags if d.code == "KL101"]
    launches = [r for r in d.related_information or () if "launch shape" in r.message]
    assert launches and launches[0].location.uri == (header.parent / "runner.cu").as_uri()
    assert launches[0].location.range.start.line == 4  # runner.cu:5


@pytest.mark.asyncio(loop_scope="module")
async def test_unsaved_edit_gets_new_diagnostics(client: LanguageClient) -> None:
    path = FIXTURES / "KL201_transpose.cu"
    text = path.read_text(encoding="utf-8")
    uri, diags = await _open(client, path, name="edit_transpose.cu")
    assert (17, "KL201") in _sites(diags)
    padded = text.replace("__shared__ float tile[32][32];", "__shared__ float tile[32][33];", 1)
    assert padded != text
    diags = await _replace(client, uri, 2, padded)
    assert _sites(diags) == [(45, "KL201")]  # the edit was never saved: the buffer is what is linted
    assert path.read_text(encoding="utf-8") == text


@pytest.mark.asyncio(loop_scope="module")
async def test_syntax_error_mid_edit_is_one_diagnostic(client: LanguageClient) -> None:
    path = FIXTURES / "KL201_transpose.cu"
    text = path.read_text(encoding="utf-8")
    uri, _ = await _open(client, path, name="typing_transpose.cu")
    half_typed = text.replace("    __syncthreads();\n", "    __syncthreads();\n    int z = x +;\n", 1)
    diags = await _replace(client, uri, 2, half_typed)
    errors = [d for d in diags if d.severity == types.DiagnosticSeverity.Error]
    assert len(errors) == 1 and errors[0].code == "KL900", [(d.code, d.message) for d in diags]
    assert errors[0].range.start.line + 1 in range(8, 19)  # in the kernel being edited
    # The other kernels are still analysed.
    assert (46, "KL201") in _sites(diags)


@pytest.mark.asyncio(loop_scope="module")
async def test_did_change_configuration_changes_what_is_reported(client: LanguageClient) -> None:
    uri, diags = await _open(client, FIXTURES / "grouping_root_cause.cu", name="config_grouping.cu")
    codes = {d.code for d in diags}
    assert {"KL101", "KL201"} <= codes
    diags = await _published(client, uri, lambda: client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"kernlint": {"ignore": ["KL2"]}})))
    assert "KL201" not in {d.code for d in diags} and "KL101" in {d.code for d in diags}
    diags = await _published(client, uri, lambda: client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"kernlint": {"select": ["KL201"]}})))
    assert {d.code for d in diags} == {"KL201"}
    # A setting that names no rule is refused with a message; the settings before it stay.
    client.messages.clear()
    diags = await _published(client, uri, lambda: client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"kernlint": {"select": ["KL999"]}})))
    assert {d.code for d in diags} == {"KL201"}
    assert any("KL999" in m.message for m in client.messages)
    await _published(client, uri, lambda: client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"kernlint": {}})))


@pytest.mark.asyncio(loop_scope="module")
async def test_a_launch_changed_on_disk_is_seen_by_the_open_header(client: LanguageClient, tmp_path: Path) -> None:
    project = tmp_path / "host_template"
    shutil.copytree(FIXTURES / "projects" / "host_template", project)
    uri, diags = await _open(client, project / "kernels.cuh")
    assert [d.code for d in diags] == ["KL101"]  # in[i * stride] with stride 16 from runner.cu's launch
    runner = project / "runner.cu"
    runner.write_text(runner.read_text(encoding="utf-8").replace("(out, in, 16)", "(out, in, 1)"), encoding="utf-8")
    diags = await _published(client, uri, lambda: client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=runner.as_uri(),
                                                                   type=types.FileChangeType.Changed)])))
    assert diags == []  # stride 1: coalesced
    # What makes an editor send that notification: the server's watchers, registered at start.
    assert any(r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in REGISTERED)


# ------------------------------------------------------------------------------------------ code actions


async def _actions(client: LanguageClient, uri: str, line: int, diags: list[types.Diagnostic]) -> list[types.CodeAction]:
    on_line = [d for d in diags if d.range.start.line == line - 1]
    rng = on_line[0].range
    got = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
        context=types.CodeActionContext(diagnostics=on_line)))
    return [a for a in got or () if isinstance(a, types.CodeAction)]


@pytest.mark.asyncio(loop_scope="module")
async def test_code_action_applies_the_padding_and_kl201_goes(client: LanguageClient) -> None:
    path = FIXTURES / "KL201_transpose.cu"
    text = path.read_text(encoding="utf-8")
    uri, diags = await _open(client, path, name="fix_transpose.cu")
    acts = await _actions(client, uri, 17, diags)
    fix = next(a for a in acts if a.kind == types.CodeActionKind.QuickFix and a.is_preferred)
    assert fix.edit is not None and fix.edit.changes is not None
    (edit,) = fix.edit.changes[uri]
    assert (edit.range.start.line, edit.new_text) == (8, "33")  # tile[32][32] -> tile[32][33], line 9
    fixed = _apply(text, list(fix.edit.changes[uri]))
    assert "__shared__ float tile[32][33];" in fixed.split("\n")[8]
    diags = await _replace(client, uri, 2, fixed)
    assert (17, "KL201") not in _sites(diags) and (45, "KL201") in _sites(diags)


@pytest.mark.asyncio(loop_scope="module")
async def test_fix_all_applies_only_proven_edits(client: LanguageClient) -> None:
    path = FIXTURES / "KL201_transpose.cu"
    text = path.read_text(encoding="utf-8")
    uri, diags = await _open(client, path, name="fixall_transpose.cu")
    acts = await _actions(client, uri, 17, diags)
    (fix_all,) = [a for a in acts if a.kind == types.CodeActionKind.SourceFixAll]
    resolved = await client.code_action_resolve_async(fix_all)
    assert resolved.edit is not None and resolved.edit.changes is not None
    fixed = _apply(text, list(resolved.edit.changes[uri]))
    assert "__shared__ float tile[32][33];" in fixed
    assert fixed.count("__shared__ float tile[TILE][TILE + 1];") == text.count("__shared__ float tile[TILE][TILE + 1];") + 1
    diags = await _replace(client, uri, 2, fixed)
    assert "KL201" not in {d.code for d in diags}


@pytest.mark.asyncio(loop_scope="module")
async def test_suppression_action_adds_the_comment(client: LanguageClient) -> None:
    path = FIXTURES / "KL201_transpose.cu"
    text = path.read_text(encoding="utf-8")
    uri, diags = await _open(client, path, name="suppress_transpose.cu")
    acts = await _actions(client, uri, 17, diags)
    sup = next(a for a in acts if a.title.startswith("kernlint: suppress KL201"))
    new = _apply(text, list(sup.edit.changes[uri]))
    assert new.split("\n")[16] == "    out[y * h + x] = tile[threadIdx.x][threadIdx.y];  // kernlint: ignore[KL201]"
    diags = await _replace(client, uri, 2, new)
    assert _sites(diags) == [(45, "KL201")]  # silenced there, and the suppression is used (no KL901)


# ------------------------------------------------------------------------------------------ hover


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_shows_the_lane_table(client: LanguageClient) -> None:
    uri, diags = await _open(client, FIXTURES / "KL201_transpose.cu", name="hover_transpose.cu")
    got = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=16, character=30)))
    assert got is not None and isinstance(got.contents, types.MarkupContent)
    md = got.contents.value
    assert "| lane | word | bank |" in md
    # tile[threadIdx.x][threadIdx.y] with 32 floats a row: lane k reads word 32k, all in bank 0.
    assert "| 1 | 32 | 0 |" in md and "| 31 | 992 | 0 |" in md
    assert "blockDim = (32, 32, 1)" in md  # the assumptions


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_on_a_global_access_shows_offsets_and_sectors(client: LanguageClient) -> None:
    path = FIXTURES / "grouping_root_cause.cu"
    uri, diags = await _open(client, path, name="hover_grouping.cu")
    store = next(d for d in diags if d.code == "KL102")
    got = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=store.range.start))
    md = got.contents.value
    # C[i * n] with n = 4096 sampled: lane k writes 4096 * 4 * k bytes past lane 0, each in its own sector.
    assert "| lane | offset B | sector |" in md and "| 1 | +16384 | 512 |" in md
    assert "what fixing it buys" in md.lower()


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_on_a_rule_code_shows_its_doc(client: LanguageClient) -> None:
    path = FIXTURES / "KL201_transpose.cu"
    uri, _ = await _open(client, path, name="hover_code_transpose.cu")
    line = path.read_text(encoding="utf-8").split("\n")[11]  # `... // ok: KL201`
    got = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=11, character=line.index("KL201") + 2)))
    doc = (ROOT / "rules" / "KL201-shared-bank-conflict.md").read_text(encoding="utf-8")
    assert got is not None and got.contents.value == doc


# ------------------------------------------------------------------------------------------ the CLI agrees

QUICK = ["grouping_root_cause.cu", "KL301_branches.cu", "KL901_suppressions.cu", "KL900_syntax_error.cu",
         "projects/launch_bounds/kernels.cuh"]


def _fixture_files() -> list[str]:
    out = [p.name for p in sorted(FIXTURES.glob("*.cu"))]
    for proj in sorted((FIXTURES / "projects").iterdir()):
        out += [f"projects/{proj.name}/{p.name}" for p in sorted(proj.iterdir()) if p.suffix in (".cu", ".cuh")]
    return out


def _run_dir(name: str) -> Path:
    """Where the CLI is run for fixture `name`: the CLI takes run-level keys (`timeout`, `work-budget`)
    from the working directory's config, the server from the file's nearest one; a fixture project with
    its own config is therefore linted from its directory, so that both read the same budget."""
    d = (FIXTURES / name).parent
    while d != FIXTURES and FIXTURES in d.parents:
        if (d / "kernlint.toml").exists() or (d / "pyproject.toml").exists():
            return d
        d = d.parent
    return ROOT


def _cli_sites(names: list[str]) -> dict[str, list[tuple[int, int, int, int, str, str]]]:
    out: dict[str, list] = {}
    groups: dict[Path, list[str]] = {}
    for n in names:
        groups.setdefault(_run_dir(n), []).append(n)
    for cwd, group in groups.items():
        out.update(_cli_sites_from(group, cwd))
    return out


def _cli_sites_from(names: list[str], cwd: Path) -> dict[str, list[tuple[int, int, int, int, str, str]]]:
    paths = [str(FIXTURES / n) for n in names]
    proc = subprocess.run([sys.executable, "-m", "kernlint", "--format", "json", "--cache-dir", CACHE, *paths],
                          capture_output=True, text=True, cwd=cwd, env=ENV, timeout=900)
    assert proc.returncode in (0, 1, 2), proc.stderr
    out: dict[str, list] = {n: [] for n in names}
    by_abs = {os.path.abspath(p): n for p, n in zip(paths, names)}
    for d in json.loads(proc.stdout)["diagnostics"]:
        name = by_abs.get(os.path.abspath(os.path.join(cwd, d["path"])))
        if name is not None:
            out[name].append((d["line"], d["column"], d["end_line"], d["end_column"], d["code"], d["severity"]))
    return out


_LEVEL = {types.DiagnosticSeverity.Error: "error", types.DiagnosticSeverity.Warning: "warning",
          types.DiagnosticSeverity.Information: "info"}


async def _agree(client: LanguageClient, names: list[str]) -> None:
    from kernlint.server.convert import span_range

    served = {}
    for name in names:
        path = FIXTURES / name
        if path.as_uri() in _opened:
            served[name] = list(client.diagnostics[path.as_uri()])
        else:
            served[name] = (await _open(client, path))[1]
    cli = _cli_sites(names)  # after the server: the ptxas figures it computed are in the shared cache
    key = lambda t: (t[0].start.line, t[0].start.character, t[0].end.line, t[0].end.character, t[1], t[2])  # noqa: E731
    for name in names:
        lines = (FIXTURES / name).read_text(encoding="utf-8").split("\n")
        want = [(span_range(lines, ln, col, el, ec), code, sev) for ln, col, el, ec, code, sev in cli[name]]
        mine = [(d.range, str(d.code), _LEVEL[d.severity]) for d in served[name] if d.code]
        assert sorted(map(key, mine)) == sorted(map(key, want)), name


@pytest.mark.asyncio(loop_scope="module")
async def test_cli_json_and_server_agree_on_some_fixtures(client: LanguageClient) -> None:
    await _agree(client, QUICK)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_cli_json_and_server_agree_on_every_fixture(client: LanguageClient, request: pytest.FixtureRequest) -> None:
    if "slow" not in (request.config.option.markexpr or ""):
        pytest.skip("exhaustive (about a minute): run with -m slow")
    await _agree(client, [n for n in _fixture_files() if n not in QUICK])


# ------------------------------------------------------------------------------------------ shutdown


@pytest_lsp.fixture(config=SERVER)
async def fresh(lsp_client: LanguageClient):
    await _start(lsp_client)
    yield


@pytest.mark.asyncio
async def test_shutdown_is_clean(fresh: LanguageClient) -> None:
    uri = (FIXTURES / "KL201_transpose.cu").with_name("shutdown_transpose.cu").as_uri()
    diags = await _published(fresh, uri, lambda: fresh.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="cuda-cpp", version=1,
                                             text=(FIXTURES / "KL201_transpose.cu").read_text(encoding="utf-8")))))
    assert diags
    await fresh.shutdown_session()
    assert fresh._server is not None and fresh._server.returncode == 0
    assert fresh.error is None


# ------------------------------------------------------------------------------------------ another client


@pytest_lsp.fixture(config=SERVER)
async def eglot(lsp_client: LanguageClient):
    _accept_registrations(lsp_client)
    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("emacs"),
                                                               root_uri=ROOT.as_uri()))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_what_the_client_cannot_show_is_not_sent(eglot: LanguageClient) -> None:
    # Emacs's eglot: no related information, no code description links, no code-action resolve.
    path = FIXTURES / "grouping_root_cause.cu"
    uri, diags = await _open(eglot, path, name="eglot_grouping.cu")
    assert diags and all(d.related_information is None and d.code_description is None for d in diags)
    assert any(d.code == "KL201" and d.range.start.line == 10 for d in diags)  # line 11, grouped with line 10
    uri, diags = await _open(eglot, FIXTURES / "KL201_transpose.cu", name="eglot_transpose.cu")
    acts = await _actions(eglot, uri, 17, diags)
    assert any(a.title.startswith("kernlint: suppress KL201") for a in acts)
    (fix_all,) = [a for a in acts if a.kind == types.CodeActionKind.SourceFixAll]
    assert fix_all.edit is not None and "tile[32][33]" in fix_all.edit.changes[uri][0].new_text  # no resolve step
