"""The language server's protocol wiring (pygls): documents, settings, diagnostics, code actions, hover.

Lints run one at a time in a worker thread, so the protocol keeps answering while a file is
analysed: on open and save at once, on change after DEBOUNCE_S without a further change. A lint's
diagnostics are published only if the document has not changed since its text was taken.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Mapping
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from kernlint import __version__
from kernlint.server import actions, convert, hover
from kernlint.server.linting import CLIENT_KEYS, BufferLint, BufferLinter, SettingsProblem

DEBOUNCE_S = 0.25
_LINTABLE = (".cu", ".cuh")
_HEADERS = (".h", ".hpp", ".cuhpp", ".inl", ".cpp", ".cc", ".cxx")
_DEVICE_MARKERS = ("__global__", "__device__", "<<<")


class KernlintServer(LanguageServer):
    """The server's state: the linter, the last lint of each open document, pending lints."""

    def __init__(self, cache_dir: str | None = None, use_cache: bool = True) -> None:
        super().__init__("kernlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.linter = BufferLinter(cache_dir, use_cache)
        self.lints: dict[str, BufferLint] = {}
        self.versions: dict[str, int] = {}  # uri -> changes seen (a counter, not the client's version)
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.fixed: dict[tuple[str, Any], tuple[str, int]] = {}  # (uri, version) -> the fix-all text, count
        self.noted: set[str] = set()
        self.worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernlint-lint")

    # ---------------------------------------------------------------------------------- settings

    def take_settings(self, raw: Any) -> bool:
        """Use the client's settings `raw` (the `kernlint` section, or a mapping holding one); False if refused."""
        section = _section(raw)
        if section is None:
            return False
        try:
            self.linter.configure(section)
        except SettingsProblem as exc:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                             message=f"kernlint: {exc}; the previous settings stay"))
            return False
        return True

    async def pull_settings(self) -> None:
        """Ask the client for the `kernlint` section (workspace/configuration), when it can answer."""
        caps = self.client_capabilities.workspace
        if caps is None or not caps.configuration:
            return
        try:
            got = await self.workspace_configuration_async(types.ConfigurationParams(
                items=[types.ConfigurationItem(section="kernlint")]))
        except Exception as exc:  # noqa: BLE001 - a client that cannot answer: keep the settings we have
            self.window_log_message(types.LogMessageParams(types.MessageType.Warning,
                                                           f"kernlint: workspace/configuration failed: {exc}"))
            return
        if got and isinstance(got[0], Mapping):
            self.take_settings({"kernlint": got[0]})

    async def watch_files(self) -> None:
        """Ask the client to report changes to the files a lint reads (sources, headers, configs,
        compile_commands.json), when it can register watchers."""
        caps = self.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps is not None else None
        if watched is None or not watched.dynamic_registration:
            return
        globs = ["**/*.{cu,cuh,h,hpp,cuhpp,inl,cpp,cc,cxx}", "**/compile_commands.json", "**/pyproject.toml",
                 "**/kernlint.toml"]
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=g) for g in globs])
        try:
            await self.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="kernlint-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=options)]))
        except Exception as exc:  # noqa: BLE001 - without watchers, saves in the editor still count
            self.window_log_message(types.LogMessageParams(types.MessageType.Log,
                                                           f"kernlint: no file watchers: {exc}"))

    def files_changed(self) -> None:
        """A file on disk changed: forget what was memoised about files and lint every open document
        again (the result cache answers those the change does not touch)."""
        self.linter.forget_disk_state()
        self.fixed.clear()
        for uri in list(self.versions):
            self.versions[uri] += 1
            self.schedule(uri, 0)

    # ---------------------------------------------------------------------------------- linting

    def wanted(self, uri: str, text: str) -> bool:
        path = to_fs_path(uri) or uri
        suffix = os.path.splitext(path)[1].lower()
        return suffix in _LINTABLE or (suffix in _HEADERS and any(m in text for m in _DEVICE_MARKERS))

    def schedule(self, uri: str, delay: float, exact: bool = True) -> None:
        """Lint `uri` after `delay` seconds, replacing a lint scheduled before and not yet started.

        `exact`: with ptxas's register counts (open, save); while typing they are estimated."""
        old = self.pending.pop(uri, None)
        if old is not None and not old.done():
            old.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._lint_later(uri, delay, exact))

    async def _lint_later(self, uri: str, delay: float, exact: bool) -> None:
        if delay:
            await asyncio.sleep(delay)
        await self.lint_now(uri, exact=exact)

    async def lint_now(self, uri: str, keep_results: bool = False, exact: bool = True) -> BufferLint | None:
        """Lint the document's current text in the worker thread and publish its diagnostics."""
        try:
            doc = self.workspace.get_text_document(uri)
        except Exception:  # noqa: BLE001 - closed meanwhile
            return None
        text, version = doc.source, self.versions.get(uri, 0)
        if not self.wanted(uri, text):
            return None
        path = to_fs_path(uri) or uri
        loop = asyncio.get_running_loop()
        done = await loop.run_in_executor(self.worker, lambda: self.linter.lint(path, text, keep_results, exact))
        if self.versions.get(uri, 0) != version or uri not in self.versions:
            return None  # edited (or closed) while linting: a newer lint is on its way
        self.lints[uri] = done
        for note in done.notes:  # the project index's notes (a file skipped, an index not built): once each
            if note not in self.noted:
                self.noted.add(note)
                self.window_log_message(types.LogMessageParams(types.MessageType.Info, f"kernlint: note: {note}"))
        self.publish(uri, done, doc.version)
        return done

    def publish(self, uri: str, done: BufferLint, version: int | None) -> None:
        """Send the lint's diagnostics, with what the client says it can show."""
        caps = self.client_capabilities.text_document
        pd = caps.publish_diagnostics if caps is not None else None
        related = bool(pd and pd.related_information)
        link = bool(pd and pd.code_description_support)
        lines = done.text.split("\n")
        diags = [convert.to_lsp(d, uri, lines, related, link) for d in done.diagnostics]
        diags += [convert.problem_to_lsp(line, message, lines) for line, message in done.problems]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diags, version=version if pd and pd.version_support else None))

    def markup(self, text: str) -> types.MarkupContent:
        """`text` (Markdown) as the client's hover wants it: Markdown, or the same text as plain text."""
        caps = self.client_capabilities.text_document
        formats = caps.hover.content_format if caps is not None and caps.hover is not None else None
        kind = types.MarkupKind.Markdown if not formats or types.MarkupKind.Markdown in formats \
            else types.MarkupKind.PlainText
        return types.MarkupContent(kind=kind, value=text)

    # ---------------------------------------------------------------------------------- edits

    def text_edit(self, lines: list[str], e: Any) -> types.TextEdit:
        start = convert.position(lines, e.line, e.column, chars=True)
        end = convert.position(lines, e.end_line or e.line, e.end_column, chars=True)
        return types.TextEdit(range=types.Range(start=start, end=end), new_text=e.text)


def _section(raw: Any) -> Mapping[str, Any] | None:
    """The kernlint settings in `raw`: `raw["kernlint"]`, `raw["settings"]["kernlint"]`, or `raw` itself
    when it holds only kernlint's keys. None when `raw` says nothing about kernlint."""
    if not isinstance(raw, Mapping):
        return None
    if isinstance(raw.get("kernlint"), Mapping):
        return raw["kernlint"]
    if isinstance(raw.get("settings"), Mapping):
        return _section(raw["settings"])
    if raw and all(k in CLIENT_KEYS for k in raw):
        return raw
    return None


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _contains(r: types.Range, p: types.Position) -> bool:
    return (r.start.line, r.start.character) <= (p.line, p.character) <= (r.end.line, r.end.character)


def build(cache_dir: str | None = None, use_cache: bool = True) -> KernlintServer:
    """The server with its features registered."""
    server = KernlintServer(cache_dir, use_cache)

    @server.feature(types.INITIALIZE)
    def initialize(ls: KernlintServer, params: types.InitializeParams) -> None:
        ls.take_settings(params.initialization_options)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: KernlintServer, params: types.InitializedParams) -> None:
        await ls.pull_settings()
        await ls.watch_files()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: KernlintServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.versions[uri] = ls.versions.get(uri, 0) + 1
        ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: KernlintServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.versions[uri] = ls.versions.get(uri, 0) + 1
        ls.schedule(uri, DEBOUNCE_S, exact=False)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: KernlintServer, params: types.DidSaveTextDocumentParams) -> None:
        # A saved file may hold the launch or the header another open document is linted with.
        ls.files_changed()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(ls: KernlintServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.files_changed()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: KernlintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.versions.pop(uri, None)
        ls.lints.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: KernlintServer, params: types.DidChangeConfigurationParams) -> None:
        if _section(params.settings) is not None:
            ls.take_settings(params.settings)
        else:
            await ls.pull_settings()  # the settings are pulled (the null-settings notification of VS Code)
        for uri in list(ls.versions):
            ls.versions[uri] += 1  # a lint under the old settings is not published
            ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll],
        resolve_provider=True))
    async def code_action(ls: KernlintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        done = ls.lints.get(uri)
        caps = ls.client_capabilities.text_document
        if done is None or caps is None or caps.code_action is None or caps.code_action.code_action_literal_support is None:
            return None  # a client that takes only commands: kernlint offers none
        lines = done.text.split("\n")
        only = params.context.only
        out: list[types.CodeAction] = []
        want_quick = not only or any(str(k).startswith("quickfix") for k in only)
        want_all = not only or any(str(k).startswith("source") for k in only)
        if want_quick:
            for d in done.diagnostics:
                lsp = convert.to_lsp(d, uri, lines, related=False)
                if not _overlaps(lsp.range, params.range):
                    continue
                if d.fixes:
                    out.append(types.CodeAction(
                        title=actions.fix_title(d), kind=types.CodeActionKind.QuickFix, diagnostics=[lsp],
                        is_preferred=True,
                        edit=types.WorkspaceEdit(changes={uri: [ls.text_edit(lines, e) for e in actions.fix_edits(d)]})))
                sup = actions.suppression_edit(done.text, d.line, d.code)
                if sup is not None:
                    out.append(types.CodeAction(
                        title=f"kernlint: suppress {d.code} on line {d.line}", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[lsp], edit=types.WorkspaceEdit(changes={uri: [ls.text_edit(lines, sup)]})))
        if want_all and any(d.fixes for d in done.grouped):
            action = types.CodeAction(title="kernlint: fix all (the edits re-linting proves)",
                                      kind=types.CodeActionKind.SourceFixAll,
                                      data={"uri": uri, "version": ls.versions.get(uri, 0)})
            resolvable = caps.code_action.resolve_support is not None and \
                "edit" in caps.code_action.resolve_support.properties
            out.append(action if resolvable else await _resolve_fix_all(ls, action))
        return out or None

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: KernlintServer, action: types.CodeAction) -> types.CodeAction:
        return await _resolve_fix_all(ls, action)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: KernlintServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        done = ls.lints.get(uri)
        try:
            doc = ls.workspace.get_text_document(uri)
        except Exception:  # noqa: BLE001
            return None
        if done is not None:
            lines = done.text.split("\n")
            hits = [d for d in done.diagnostics
                    if _contains(convert.span_range(lines, d.line, d.column, d.end_line, d.end_column), params.position)]
            if hits:
                if done.result is None and done.text == doc.source:
                    # The evaluations behind the lane table: kept only by a lint that asked for them.
                    text = done.text
                    path = to_fs_path(uri) or uri
                    again = await asyncio.get_running_loop().run_in_executor(
                        ls.worker, lambda: ls.linter.lint(path, text, keep_results=True, exact=done.exact))
                    if ls.lints.get(uri) is done:
                        ls.lints[uri] = done = again
                hits = [d for d in done.diagnostics
                        if _contains(convert.span_range(lines, d.line, d.column, d.end_line, d.end_column),
                                     params.position)]
                text = "\n\n---\n\n".join(hover.finding_markdown(d, done.result) for d in hits)
                return types.Hover(contents=ls.markup(text))
        line_text = doc.lines[params.position.line] if params.position.line < len(doc.lines) else ""
        code = hover.code_at(line_text, params.position.character)
        doc_text = hover.rule_markdown(code) if code else None
        if doc_text:
            return types.Hover(contents=ls.markup(doc_text))
        return None

    return server


async def _resolve_fix_all(ls: KernlintServer, action: types.CodeAction) -> types.CodeAction:
    """Fill in the fix-all action's edit: the edits `kernlint.engine.fix` proves, as one whole-document edit."""
    data = action.data if isinstance(action.data, Mapping) else {}
    uri = str(data.get("uri", ""))
    done = ls.lints.get(uri)
    if done is None or data.get("version") != ls.versions.get(uri, 0):
        return action  # the document changed: nothing to apply (the client asks again)
    path = to_fs_path(uri) or uri
    key = (uri, data.get("version"))
    if key not in ls.fixed:  # a client without resolve asks for it with every code-action request
        ls.fixed.clear()
        ls.fixed[key] = await asyncio.get_running_loop().run_in_executor(
            ls.worker, lambda: ls.linter.fix_all(path, done.text, done.grouped, done.exact))
    new, count = ls.fixed[key]
    if new == done.text:
        return action
    lines = done.text.split("\n")
    end = types.Position(line=len(lines) - 1, character=len(lines[-1].encode("utf-16-le", "surrogatepass")) // 2)
    action.title = f"kernlint: fix all ({count} finding{'s' if count != 1 else ''}, proven by re-linting)"
    action.edit = types.WorkspaceEdit(changes={uri: [types.TextEdit(
        range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=new)]})
    return action
