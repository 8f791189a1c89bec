"""Kernel names from ptxas's mangled ones: cu++filt or c++filt when present, else a small subset of the
Itanium C++ ABI in Python (enough for the names kernels have)."""
from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence


def _opening(text: str, open_: str, close: str) -> int | None:
    """Index of the `open_` that matches the `close` ending `text` (None when unbalanced)."""
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += (text[index] == close) - (text[index] == open_)
        if depth == 0:
            return index
    return None


def split_demangled(text: str) -> tuple[str, str, str]:
    """Split ``void ns::k<float, 4>(float const*, int)`` into ``("k", "ns::k", "float, 4")``.

    Works from the end of the string, matching brackets, so return types and parameter lists
    containing templates do not confuse it.
    """
    text = text.strip()
    head = text
    if text.endswith(")"):
        index = _opening(text, "(", ")")
        if index is not None:
            head = text[:index]
    args = ""
    if head.endswith(">"):
        index = _opening(head, "<", ">")
        if index is not None:
            args = head[index + 1 : -1].strip()
            head = head[:index]
    # Drop the return type that template functions carry: the name is the last space-free token
    # outside brackets ("(anonymous namespace)::k" keeps its space inside parentheses).
    depth = 0
    start = 0
    for index, char in enumerate(head):
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif char == " " and depth == 0:
            start = index + 1
    qualified = head[start:].strip()
    plain = qualified.rsplit("::", 1)[-1]
    return plain, qualified, args


_BUILTIN = {
    "v": "void", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char",
    "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long",
    "m": "unsigned long", "x": "long long", "y": "unsigned long long", "f": "float",
    "d": "double", "e": "long double", "n": "__int128", "o": "unsigned __int128", "w": "wchar_t",
}


class _Unsupported(Exception):
    """The mangled name uses a construct the fallback demangler does not handle."""


class _Demangler:
    """Just enough of the Itanium C++ ABI for kernel names: nested names, builtin and class
    types, pointers/references/const, integer literals and template parameter references."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0
        self.subs: list[str] = []
        self.template_args: list[str] = []

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def take(self, n: int = 1) -> str:
        out = self.text[self.pos : self.pos + n]
        self.pos += n
        return out

    def number(self) -> int:
        match = re.compile(r"n?\d+").match(self.text, self.pos)
        if match is None:
            raise _Unsupported
        self.pos = match.end()
        token = match.group(0)
        return -int(token[1:]) if token.startswith("n") else int(token)

    def source_name(self) -> str:
        length = self.number()
        name = self.take(length)
        return "(anonymous namespace)" if name.startswith("_GLOBAL__N") else name

    def name(self) -> tuple[list[str], list[str]]:
        """Return (qualified components, template args of the last component)."""
        if self.peek() == "N":
            self.take()
            while self.peek() in ("K", "V", "r"):
                self.take()
            parts: list[str] = []
            args: list[str] = []
            while self.peek() != "E":
                if not self.peek():
                    raise _Unsupported
                if self.peek() == "I":
                    args = self.template_arg_list()
                    self.subs.append("::".join(parts) + f"<{', '.join(args)}>")
                else:
                    parts.append(self.source_name())
                    args = []
                    self.subs.append("::".join(parts))
            self.take()
            return parts, args
        if self.peek(2) == "St":
            self.take(2)
            parts = ["std", self.source_name()]
        elif self.peek().isdigit():
            parts = [self.source_name()]
        else:
            raise _Unsupported
        args = []
        if self.peek() == "I":
            self.subs.append("::".join(parts))
            args = self.template_arg_list()
        return parts, args

    def template_arg_list(self) -> list[str]:
        self.take()  # I
        args = []
        while self.peek() != "E":
            if not self.peek():
                raise _Unsupported
            if self.peek() == "L":
                self.take()
                kind = self.type()
                value = self.number()
                self.take()  # E
                args.append(("true" if value else "false") if kind == "bool" else str(value)
                            + ("u" if kind.startswith("unsigned") else ""))
            else:
                args.append(self.type())
        self.take()
        self.template_args = args
        return args

    def type(self) -> str:
        code = self.peek()
        if code in _BUILTIN:
            self.take()
            return _BUILTIN[code]
        if code in "PRKO" or code == "V":
            self.take()
            inner = self.type()
            result = {"P": f"{inner}*", "R": f"{inner}&", "O": f"{inner}&&",
                      "K": f"{inner} const", "V": f"{inner} volatile"}[code]
            self.subs.append(result)
            return result
        if code == "S":
            match = re.compile(r"S([0-9A-Z]*)_").match(self.text, self.pos)
            if match is None:
                raise _Unsupported
            self.pos = match.end()
            index = int(match.group(1), 36) + 1 if match.group(1) else 0
            if index >= len(self.subs):
                raise _Unsupported
            return self.subs[index]
        if code == "T":
            match = re.compile(r"T(\d*)_").match(self.text, self.pos)
            if match is None:
                raise _Unsupported
            self.pos = match.end()
            index = int(match.group(1)) + 1 if match.group(1) else 0
            if index >= len(self.template_args):
                raise _Unsupported
            return self.template_args[index]
        if code.isdigit() or code == "N":
            parts, args = self.name()
            result = "::".join(parts) + (f"<{', '.join(args)}>" if args else "")
            return result
        raise _Unsupported


def demangle_minimal(mangled: str) -> tuple[str, str, str] | None:
    """Demangle a kernel name's identity (plain name, qualified name, template args) in Python.

    Parameter types are not needed (kernels cannot be overloaded on them in a way that matters
    here), so only the name and its template arguments are decoded.  ``None`` when the name uses
    something outside the supported subset.
    """
    if not mangled.startswith("_Z"):
        return mangled, mangled, ""
    parser = _Demangler(mangled)
    parser.pos = 2
    try:
        parts, args = parser.name()
    except (_Unsupported, ValueError, IndexError):
        return None
    qualified = "::".join(parts)
    return parts[-1], qualified, ", ".join(args)


def _demangle_tool(names: Sequence[str]) -> dict[str, str]:
    """Demangle with ``cu++filt`` (ships with nvcc) or binutils' ``c++filt``; {} if neither runs."""
    for tool in ("cu++filt", "c++filt"):
        exe = shutil.which(tool)
        if exe is None:
            continue
        try:
            done = subprocess.run([exe], input="\n".join(names) + "\n", capture_output=True,
                                  text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        lines = done.stdout.splitlines()
        if done.returncode == 0 and len(lines) == len(names):
            return dict(zip(names, lines))
    return {}


def demangle_kernels(names: Sequence[str]) -> dict[str, tuple[str, str, str]]:
    """Map each mangled kernel name to (plain name, qualified name, template args)."""
    mangled = [name for name in names if name.startswith("_Z")]
    tool = _demangle_tool(mangled) if mangled else {}
    out: dict[str, tuple[str, str, str]] = {}
    for name in names:
        if name in tool and tool[name] != name:
            out[name] = split_demangled(tool[name])
        else:
            out[name] = demangle_minimal(name) or (name, name, "")
    return out
