#!/usr/bin/env python3
"""Mutation score of the clause catalogue: how many small defects in correct plugins it catches.

Each mutant is one small change at one site of a plugin that certifies (the known-good set and
the examples): an off-by-one, a flipped comparison, a dropped statement, a wrong flag, a removed
lock, a shifted size-class index, min and max swapped, a wrong returned value. For each mutant
this program copies the changed file to a scratch directory, compiles the translation units it
touches with the build's own compile command, links the plugin library with the build's own link
command (the mutant objects swapped in), and certifies it:

    emm-certify --plugin MUTANT.so --backend fake --devices 2 --json REPORT --timeout-s 30

A mutant is killed when the certificate is NOT CERTIFIED (or a MUST clause that passed on the
unmutated plugin does not pass, or the plugin cannot be loaded, or certification runs past its
deadline); it survived when the plugin is still CERTIFIED. A mutant that does not compile or
link is stillborn and left out of the score, as are the mutants suites/mutation/equivalent.tsv
names (changes no input can observe):

    score = killed / (mutants run - stillborn - equivalent)

The real build tree is only read: nothing is written under --build-dir.

    mutate.py --list                                  # the mutants, built from the sources only
    mutate.py --sample 40 --seed 1 --jobs 1 --json r.json --markdown r.md
    mutate.py --only 3f2a9c01d4                       # one mutant, by id

Exit status: 0 when the run finished (and the score is at least --fail-under, if given); 1 when
the score is below --fail-under; 2 for a usage error, a missing build output, or an unmutated
subject that is not CERTIFIED (the run cannot mean anything then). README.md beside this file
says how to read the report and how a mutant is judged equivalent.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import concurrent.futures
import dataclasses
import fnmatch
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

REPO = Path(__file__).resolve().parents[2]
EQUIVALENT_TSV = Path(__file__).resolve().parent / "equivalent.tsv"
EXPORT_MACRO = "EMM_EXPORT_MEMORY_MANAGER("

# What is mutated: (folder, file patterns, one subject per file?). A known-good plugin is one
# source file and one library; an example is a folder whose files build one library. Test
# sources (their own executables, never in the plugin) are left out by TEST_SOURCE.
SUBJECT_GROUPS = [
    ("suites/known_good", ["*.cpp"], True),
    ("examples/pool", ["*.cpp", "detail/*.cpp", "detail/*.hpp"], False),
    ("examples/stream_ordered", ["*.cpp"], False),
    ("examples/host_only_minimal", ["*.cpp"], False),
    ("examples/logging", ["*.cpp"], False),
]
TEST_SOURCE = re.compile(r"(^|/)([^/]*_test|conformance_test|boost_conformance_test)\.cpp$")
# Sources linked into a subject's library that the certified plugin never runs: a mutant there
# changes nothing the certificate could judge, so it is not made (each with the reason).
NOT_RUN_BY_THE_PLUGIN = {
    "examples/logging/forwarding_memory_manager.cpp":
        "the library exports LoggingOverPool (examples/logging/plugin.cpp), the decorator over "
        "the pool; ForwardingMemoryManager is the run-time flavour, which logging_test.cpp "
        "tests and nothing in the certified plugin calls",
}

# Operator -> family; --operators takes either.
OPERATORS = {
    "literal_pm1": "off_by_one",      # an integer literal n -> n + 1, n - 1
    "operand_pm1": "off_by_one",      # a size/offset/alignment operand x -> (x + 1), (x - 1)
    "shift_pm1": "off_by_one",        # a << s -> a << (s + 1), a << (s - 1)
    "flip_comparison": "comparison",  # < <=, > >=, == !=
    "drop_statement": "drop",         # in finalizers, reset, initialize, guards; free/erase/insert
    "wrong_flag": "flag",             # CU_MEMHOSTALLOC_* / CU_MEM_ATTACH_* ... swapped or dropped
    "remove_lock": "lock",            # a lock_guard/scoped_lock/unique_lock, or lock()+unlock()
    "index_shift": "index",           # bins[i] -> bins[i + 1], bins[i - 1]
    "swap_min_max": "min_max",        # std::min <-> std::max
    "wrong_return": "return",         # return true <-> return false
}

# --- lexing -------------------------------------------------------------------------------------

# Keywords never start an expression statement's name chain nor end an operand.
KEYWORDS = {
    "alignas", "alignof", "auto", "bool", "break", "case", "catch", "char", "class", "const",
    "consteval", "constexpr", "constinit", "continue", "decltype", "default", "delete", "do",
    "double", "else", "enum", "explicit", "extern", "false", "final", "float", "for", "friend",
    "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "nullptr",
    "operator", "override", "private", "protected", "public", "return", "short", "signed",
    "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this",
    "thread_local", "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "while", "co_await", "co_return", "co_yield", "requires",
    "reinterpret_cast", "const_cast", "dynamic_cast",
}
CONTROL = {"if", "for", "while", "switch", "catch"}
PUNCTUATORS = sorted(
    ["<<=", ">>=", "<=>", "...", "->*", "::", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&",
     "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*"],
    key=len, reverse=True)
IDENT = re.compile(r"[A-Za-z_]\w*")
PPNUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|['\w.])*")
INTEGER = re.compile(r"^(0[xX][0-9a-fA-F']+|0[bB][01']+|[0-9][0-9']*)([uUlLzZ]*)$")
RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')


@dataclasses.dataclass
class Token:
    kind: str  # id, num, str, op
    text: str
    start: int
    end: int


def mask_source(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text with comments, string and character literals and preprocessor lines blanked
    (newlines kept, so offsets and line numbers stay), and the literals' spans."""
    out = list(text)
    literals: list[tuple[int, int]] = []
    n = len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    def digit_separator(i: int) -> bool:
        # 1'000'000: a quote inside a number, not a character literal.
        j = i - 1
        while j >= 0 and (text[j].isalnum() or text[j] in "_'"):
            j -= 1
        return j + 1 < i and text[j + 1].isdigit()

    i = 0
    line_start = True
    while i < n:
        c = text[i]
        if line_start:
            j = i
            while j < n and text[j] in " \t":
                j += 1
            line_start = False
            if j < n and text[j] == "#":
                end = j
                while True:
                    end = text.find("\n", end)
                    if end < 0:
                        end = n
                        break
                    if text[end - 1] == "\\":
                        end += 1
                        continue
                    break
                blank(i, end)
                i = end
                continue
        if c == "\n":
            line_start = True
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(i, end)
            i = end
        elif (m := RAW_STRING.match(text, i)) and (i == 0 or not (text[i - 1].isalnum()
                                                                  or text[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            end = text.find(close, m.end())
            end = n if end < 0 else end + len(close)
            literals.append((i, end))
            blank(i, end)
            i = end
        elif c == '"' or (c == "'" and not digit_separator(i)):
            start = i
            for prefix in ("u8", "u", "U", "L"):
                p = i - len(prefix)
                if text.startswith(prefix, p) and (p == 0 or not (text[p - 1].isalnum()
                                                                  or text[p - 1] == "_")):
                    start = p
                    break
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            literals.append((start, end))
            blank(start, end)
            i = end
        else:
            i += 1
    return "".join(out), literals


def tokenize(text: str, code: str, literals: list[tuple[int, int]]) -> list[Token]:
    literal_at = dict(literals)
    tokens: list[Token] = []
    i, n = 0, len(code)
    while i < n:
        if i in literal_at:
            end = literal_at[i]
            tokens.append(Token("str", text[i:end], i, end))
            i = end
            continue
        c = code[i]
        if c.isspace():
            i += 1
            continue
        if c.isalpha() or c == "_":
            m = IDENT.match(code, i)
            tokens.append(Token("id", m.group(), i, m.end()))
            i = m.end()
            continue
        if c.isdigit() or (c == "." and i + 1 < n and code[i + 1].isdigit()):
            m = PPNUMBER.match(code, i)
            tokens.append(Token("num", m.group(), i, m.end()))
            i = m.end()
            continue
        for p in PUNCTUATORS:
            if code.startswith(p, i):
                tokens.append(Token("op", p, i, i + len(p)))
                i += len(p)
                break
        else:
            tokens.append(Token("op", c, i, i + 1))
            i += 1
    return tokens


# --- structure: function and lambda bodies, statements -------------------------------------------

@dataclasses.dataclass
class Scope:
    """A function or lambda body; `name` is the function's last name component."""
    kind: str  # function | lambda
    name: str
    parent: Optional["Scope"]
    open: int
    close: int

    @property
    def function(self) -> str:
        scope = self
        while scope.kind == "lambda" and scope.parent is not None:
            scope = scope.parent
        return scope.name

    @property
    def in_lambda(self) -> bool:
        scope = self
        while scope is not None:
            if scope.kind == "lambda":
                return True
            scope = scope.parent
        return False


@dataclasses.dataclass
class Statement:
    kind: str  # simple | if | for | while | ...
    first: int  # token index
    last: int  # token index, inclusive
    scope: Scope
    braced: bool  # directly in a { } block (else the body of a control statement)
    body: Optional["Statement"] = None  # an if without else: its single statement
    has_else: bool = False


class Source:
    """One source file: its text, tokens, bracket pairs, function and lambda bodies and
    statements."""

    def __init__(self, path: Path, rel: str):
        self.path = path
        self.rel = rel
        self.text = path.read_text(encoding="utf-8")
        self.code, literals = mask_source(self.text)
        self.tokens = tokenize(self.text, self.code, literals)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        self.match = self._match_brackets()
        self.brace_kind: dict[int, tuple[str, str]] = {}
        for index, token in enumerate(self.tokens):
            if token.text == "{":
                self.brace_kind[index] = self._classify_brace(index)
        self.statements: list[Statement] = []
        self.scopes: list[Scope] = []
        self._parse_functions()
        self.excluded = self._excluded_ranges()

    # --- helpers
    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def tok(self, index: int) -> Token:
        if 0 <= index < len(self.tokens):
            return self.tokens[index]
        return Token("op", "", len(self.text), len(self.text))

    def spaced(self, index: int) -> bool:
        """Whether the token has white space on both sides (clang-format spaces binary
        operators, never template brackets)."""
        token = self.tokens[index]
        return (token.start > 0 and self.text[token.start - 1].isspace()
                and token.end < len(self.text) and self.text[token.end].isspace())

    def _match_brackets(self) -> dict[int, int]:
        match: dict[int, int] = {}
        stack: list[int] = []
        pairs = {")": "(", "]": "[", "}": "{"}
        for index, token in enumerate(self.tokens):
            if token.kind != "op":
                continue
            if token.text in "([{":
                stack.append(index)
            elif token.text in pairs:
                while stack and self.tokens[stack[-1]].text != pairs[token.text]:
                    stack.pop()  # unbalanced (a macro): forget the stray opener
                if stack:
                    opener = stack.pop()
                    match[opener] = index
                    match[index] = opener
        return match

    def _is_attribute_close(self, index: int) -> bool:
        # [[likely]]: ']' ']' whose opener is '[' '['.
        if self.tok(index).text != "]" or self.tok(index - 1).text != "]":
            return False
        opener = self.match.get(index)
        return opener is not None and self.tok(opener + 1).text == "["

    def _header_start(self, index: int) -> int:
        """The first token of the declaration that ends before token `index`."""
        p = index - 1
        while p >= 0:
            text = self.tokens[p].text
            if text in (")", "]") and p in self.match:
                p = self.match[p] - 1
                continue
            if text in (";", "{", "}"):
                return p + 1
            if text == ":" and self.tok(p - 1).text in ("public", "private", "protected"):
                return p + 1
            p -= 1
        return 0

    def _function_name(self, brace: int) -> str:
        start = self._header_start(brace)
        for p in range(start, brace):
            if self.tokens[p].text == "(":
                name = self.tok(p - 1).text
                if self.tok(p - 2).text == "~":
                    name = "~" + name
                return name
            if self.tokens[p].text in ("[", "{") and p in self.match:
                continue
        return "?"

    def _classify_brace(self, index: int) -> tuple[str, str]:
        p = index - 1
        while p >= 0:
            text = self.tokens[p].text
            if text in ("const", "override", "final", "noexcept", "mutable", "constexpr"):
                p -= 1
            elif self._is_attribute_close(p):
                p = self.match[p] - 1
            elif text == ")" and p in self.match and self.tok(self.match[p] - 1).text == "noexcept":
                p = self.match[p] - 2
            else:
                break
        if p < 0:
            return ("block", "")
        token = self.tokens[p]
        if token.text == ")" and p in self.match:
            before = self.tok(self.match[p] - 1)
            if before.text in CONTROL or before.text == "constexpr":
                return ("control", before.text)
            if before.text == "]" and not self._is_attribute_close(self.match[p] - 1):
                return ("lambda", "")
            return ("function", self._function_name(index))
        if token.text == "]":
            return ("lambda", "")
        if token.text in ("else", "try", "do"):
            return ("control", token.text)
        if token.text in ("{", ";", "}", ":"):
            return ("block", "")
        header = self.tokens[self._header_start(index):index]
        if any(h.text in ("class", "struct", "union", "namespace", "enum") for h in header):
            return ("scope", "")
        if token.kind == "str":  # extern "C" {
            return ("scope", "")
        return ("init", "")

    def _parse_functions(self) -> None:
        parsed_until = -1
        for index, token in enumerate(self.tokens):
            if token.text != "{" or index <= parsed_until:
                continue
            kind, name = self.brace_kind[index]
            if kind != "function" or index not in self.match:
                continue
            close = self.match[index]
            scope = Scope("function", name.split("::")[-1], None, index, close)
            self.scopes.append(scope)
            self._parse_body(index + 1, close, scope)
            parsed_until = close

    def _parse_body(self, i: int, end: int, scope: Scope) -> None:
        while i < end:
            i = self._parse_statement(i, end, scope, braced=True)

    def _skip_attributes(self, i: int) -> int:
        while self.tok(i).text == "[" and self.tok(i + 1).text == "[" and i in self.match:
            i = self.match[i] + 1
        return i

    def _scan_lambdas(self, i: int, end: int, scope: Scope) -> None:
        """Parses the lambda bodies between tokens i and end (a condition, an initializer)."""
        while i < end:
            if self.tokens[i].text == "{" and self.brace_kind.get(i, ("",))[0] == "lambda" \
                    and i in self.match:
                close = self.match[i]
                lambda_scope = Scope("lambda", scope.function, scope, i, close)
                self.scopes.append(lambda_scope)
                self._parse_body(i + 1, close, lambda_scope)
                i = close + 1
            else:
                i += 1

    def _parse_statement(self, i: int, end: int, scope: Scope, braced: bool) -> int:
        if i >= end:
            return end
        text = self.tokens[i].text
        if text == ";":
            return i + 1
        if text == "{" and i in self.match:
            kind = self.brace_kind[i][0]
            if kind in ("block", "control", "init", "lambda"):
                self._parse_body(i + 1, self.match[i], scope)
                return self.match[i] + 1
        if text in ("if", "while", "for", "switch"):
            j = i + 1
            if self.tok(j).text == "constexpr":
                j += 1
            if self.tok(j).text != "(" or j not in self.match:
                return self._parse_simple(i, end, scope, braced)
            close = self.match[j]
            self._scan_lambdas(j, close, scope)
            body_start = self._skip_attributes(close + 1)
            body_braced = self.tok(body_start).text == "{"
            body_index = len(self.statements)
            after = self._parse_statement(body_start, end, scope, braced=False)
            body = None
            if not body_braced and body_index < len(self.statements):
                body = self.statements[body_index]
            statement = Statement(text, i, after - 1, scope, braced, body)
            if text == "if" and self.tok(after).text == "else":
                statement.has_else = True
                after = self._parse_statement(after + 1, end, scope, braced=False)
                statement.last = after - 1
            self.statements.append(statement)
            return after
        if text == "do":
            after = self._parse_statement(i + 1, end, scope, braced=False)
            while after < end and self.tokens[after].text != ";":
                after += 1
            return after + 1
        if text == "try":
            after = self._parse_statement(i + 1, end, scope, braced=False)
            while self.tok(after).text == "catch" and self.tok(after + 1).text == "(":
                after = self._parse_statement(self.match.get(after + 1, after + 1) + 1, end,
                                              scope, braced=False)
            return after
        if text in ("case", "default"):
            j = i
            while j < end and self.tokens[j].text != ":":
                j += 1
            return j + 1
        return self._parse_simple(i, end, scope, braced)

    def _parse_simple(self, i: int, end: int, scope: Scope, braced: bool) -> int:
        j = i
        depth = 0
        while j < end:
            token = self.tokens[j]
            if token.text == "{" and self.brace_kind.get(j, ("",))[0] == "lambda" and j in self.match:
                close = self.match[j]
                lambda_scope = Scope("lambda", scope.function, scope, j, close)
                self.scopes.append(lambda_scope)
                self._parse_body(j + 1, close, lambda_scope)
                j = close + 1
                continue
            if token.text in "([{" and token.kind == "op":
                depth += 1
            elif token.text in ")]}" and token.kind == "op":
                if depth == 0:
                    break  # a block ends without ';' (robustness)
                depth -= 1
            elif token.text == ";" and depth == 0:
                self.statements.append(Statement("simple", i, j, scope, braced))
                return j + 1
            j += 1
        return max(j, i + 1)

    def _excluded_ranges(self) -> list[tuple[int, int]]:
        """Token ranges no operator touches: assertions (checks, not behaviour), throw
        expressions (the message, not the condition) and alignas arguments."""
        ranges = []
        for index, token in enumerate(self.tokens):
            if token.text in ("assert", "static_assert", "alignas") \
                    and self.tok(index + 1).text == "(" and index + 1 in self.match:
                ranges.append((index, self.match[index + 1]))
            elif token.text == "throw":
                j = index
                depth = 0
                while j < len(self.tokens):
                    t = self.tokens[j].text
                    if t in "([{":
                        depth += 1
                    elif t in ")]}":
                        if depth == 0:
                            break
                        depth -= 1
                    elif t == ";" and depth == 0:
                        break
                    j += 1
                ranges.append((index, j))
        return ranges

    def is_excluded(self, index: int) -> bool:
        return any(a <= index <= b for a, b in self.excluded)

    def in_code_body(self, index: int) -> bool:
        """Inside a function body, or in a namespace- or class-scope initializer."""
        return any(s.open < index < s.close for s in self.scopes) or self._in_initializer(index)

    def _in_initializer(self, index: int) -> bool:
        # `constexpr std::size_t kChunkBytes = std::size_t{4} << 20;` at namespace scope, or a
        # member's default `int holds = 0;`: constants and initial states are behaviour too.
        start = self._header_start(index)
        return any(t.text == "=" for t in self.tokens[start:index])

    def statement_text(self, statement: Statement) -> str:
        return self.text[self.tokens[statement.first].start:self.tokens[statement.last].end]


# --- mutants ------------------------------------------------------------------------------------

@dataclasses.dataclass
class Edit:
    start: int
    end: int
    replacement: str


@dataclasses.dataclass
class Mutant:
    id: str
    subject: str
    file: str  # repository-relative
    line: int
    operator: str
    detail: str
    edits: list[Edit]
    before: str
    after: str

    def apply(self, text: str) -> str:
        for edit in sorted(self.edits, key=lambda e: e.start, reverse=True):
            text = text[:edit.start] + edit.replacement + text[edit.end:]
        return text

    def site(self) -> str:
        return f"{self.file}:{self.line}"


class MutantFactory:
    """Collects one file's mutants, with stable ids and without duplicate programs."""

    def __init__(self, source: Source, subject: str):
        self.source = source
        self.subject = subject
        self.mutants: list[Mutant] = []
        self._seen_texts: set[str] = set()
        self._seen_keys: collections.Counter = collections.Counter()

    def add(self, operator: str, edits: list[Edit], detail: str) -> None:
        source = self.source
        edits = sorted(edits, key=lambda e: e.start)
        mutated = text = source.text
        for edit in reversed(edits):
            mutated = mutated[:edit.start] + edit.replacement + mutated[edit.end:]
        if mutated == text:
            return
        digest = hashlib.sha1(mutated.encode()).hexdigest()
        if digest in self._seen_texts:
            return  # another operator made this very program already
        self._seen_texts.add(digest)
        line = source.line_of(edits[0].start)
        original = "\x1f".join(text[e.start:e.end] for e in edits)
        replacement = "\x1f".join(e.replacement for e in edits)
        key = (source.rel, line, operator, original, replacement)
        ordinal = self._seen_keys[key]
        self._seen_keys[key] += 1
        # Stable: the same change at the same line gets the same id in every run. The ordinal
        # only separates identical changes on one line (two `a < b` on a line).
        material = "\0".join([source.rel, str(line), operator, original, replacement]
                             + ([str(ordinal)] if ordinal else []))
        mutant_id = hashlib.sha1(material.encode()).hexdigest()[:10]
        before, after = self._diff_lines(edits, mutated)
        self.mutants.append(Mutant(mutant_id, self.subject, source.rel, line, operator, detail,
                                   edits, before, after))

    def _diff_lines(self, edits: list[Edit], mutated: str) -> tuple[str, str]:
        text = self.source.text
        first = min(e.start for e in edits)
        last = max(e.end for e in edits)
        start = text.rfind("\n", 0, first) + 1
        end = text.find("\n", last)
        end = len(text) if end < 0 else end
        delta = sum(len(e.replacement) - (e.end - e.start) for e in edits)
        squash = lambda s: " ".join(part.strip() for part in s.split("\n") if part.strip())
        return squash(text[start:end]), squash(mutated[start:end + delta]) or "(nothing)"


SIZE_NAME = re.compile(
    r"(?i)(size|offset|length|bytes|align|need|rounded|units|order|capacity|count|held|keep|top)")
INDEX_CONTAINER = re.compile(r"(?i)(list|head|bitmap|free|bin|class|bucket|order|level)")
ALLOC_CALL = re.compile(r"(?i)(alloc|round_up|view)")
# Calls that give memory back or change a container's membership. Queries whose names contain
# "free" (free_bytes, free_block_count, largest_free_block) are not frees.
FREE_ERASE_INSERT = re.compile(
    r"^(free|mem_free\w*|\w+_free|free_(?!bytes|block_count)\w+|erase\w*|insert\w*|emplace\w*|"
    r"push_back|pop_back|clear|recycle|remove_\w+|mem_host_unregister)$")
# Functions whose every statement may be dropped: NBEP 7's lifecycle methods, the guard code
# defer_cleanup's CleanupGuard runs, and what finalizers call.
DROP_FUNCTIONS = {"reset", "initialize", "defer_cleanup", "hold", "end_hold", "release",
                  "give_back", "finalize", "put_back", "release_all", "release_pointer"}
LOCK_TYPES = {"lock_guard", "scoped_lock", "unique_lock", "shared_lock"}
FLAG_GROUPS = [
    ["CU_MEMHOSTALLOC_DEVICEMAP", "CU_MEMHOSTALLOC_PORTABLE", "CU_MEMHOSTALLOC_WRITECOMBINED"],
    ["CU_MEMHOSTREGISTER_DEVICEMAP", "CU_MEMHOSTREGISTER_PORTABLE"],
    ["CU_MEM_ATTACH_GLOBAL", "CU_MEM_ATTACH_HOST", "CU_MEM_ATTACH_SINGLE"],
    ["CU_STREAM_NON_BLOCKING", "CU_STREAM_DEFAULT"],
    ["CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", "CU_MEM_HANDLE_TYPE_NONE"],
]
BOOL_FLAGS = ["mapped", "portable", "wc", "attach_global"]


def operand_after(source: Source, i: int) -> Optional[tuple[int, int]]:
    """The token range of the primary expression starting at token i (a name chain with calls
    and subscripts, a parenthesised group, or a number)."""
    tokens, match = source.tokens, source.match
    if i >= len(tokens):
        return None
    token = tokens[i]
    if token.text == "(" and i in match:
        return (i, match[i])
    if token.kind == "num":
        return (i, i)
    if token.kind != "id" or token.text in KEYWORDS:
        return None
    j = i
    while True:
        nxt = source.tok(j + 1).text
        if nxt in ("::", ".", "->") and source.tok(j + 2).kind == "id":
            j += 2
        elif nxt in ("(", "[", "{") and j + 1 in match and not source.spaced(j + 1) \
                and source.text[source.tokens[j + 1].start - 1] != " ":
            j = match[j + 1]
        else:
            return (i, j)


def operand_before(source: Source, p: int) -> Optional[tuple[int, int]]:
    """The token range of the primary expression ending at token p."""
    tokens, match = source.tokens, source.match
    if p < 0:
        return None
    j = p
    while True:
        token = tokens[j]
        if token.text in (")", "]", "}") and j in match:
            opener = match[j]
            if source.tok(opener - 1).kind == "id" and source.tok(opener - 1).text not in KEYWORDS:
                j = opener - 1
            elif token.text == ")" and source.tok(opener - 1).text in (")", "]"):
                j = opener - 1  # f(x)(y), a[i](y)
                continue
            else:
                return (opener, p) if token.text == ")" else None
        elif token.kind == "num":
            return (j, p)
        elif token.kind != "id" or token.text in KEYWORDS:
            return None
        if source.tok(j - 1).text in ("::", ".", "->") and j - 2 >= 0:
            j -= 2
            continue
        return (j, p)


def last_name(source: Source, span: tuple[int, int]) -> str:
    """The name of the member or function the chain ends with, outside any call arguments:
    `block->size` -> size, `block_bytes(k)` -> block_bytes."""
    names = [t.text for t in source.tokens[span[0]:span[1] + 1] if t.kind == "id"]
    depth = 0
    last = ""
    for t in source.tokens[span[0]:span[1] + 1]:
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        elif depth == 0 and t.kind == "id":
            last = t.text
    return last or (names[-1] if names else "")


def span_text(source: Source, span: tuple[int, int]) -> tuple[int, int, str]:
    start = source.tokens[span[0]].start
    end = source.tokens[span[1]].end
    return start, end, source.text[start:end]


def is_simple_operand(source: Source, span: tuple[int, int]) -> bool:
    # No operator at the top level: `x`, `a.b->c`, `f(x)`, `(x + y)`.
    depth = 0
    for t in source.tokens[span[0]:span[1] + 1]:
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        elif depth == 0 and t.kind == "op" and t.text not in ("::", ".", "->"):
            return False
    return True


def plus_one(source: Source, span: tuple[int, int], sign: str) -> tuple[int, int, str]:
    """The edit that turns the operand at `span` into operand +/- 1, parenthesised only where
    precedence needs it."""
    start, end, text = span_text(source, span)
    first, last = source.tokens[span[0]], source.tokens[span[1]]
    if first.text == "(" and source.match.get(span[0]) == span[1]:
        return start, end, f"{text[:-1]} {sign} 1)"
    before, after = source.tok(span[0] - 1).text, source.tok(span[1] + 1).text
    if (before in ("(", ",", "[") and after in (")", ",", "]")) or \
            (before in ("=", "return") and after == ";"):
        return start, end, f"{text} {sign} 1"
    return start, end, f"({text} {sign} 1)"


def statement_of(source: Source, index: int) -> Optional[Statement]:
    best = None
    for statement in source.statements:
        if statement.kind == "simple" and statement.first <= index <= statement.last:
            if best is None or statement.first >= best.first:
                best = statement
    return best


def gen_literal(source: Source, add: Callable) -> None:
    for index, token in enumerate(source.tokens):
        if token.kind != "num" or source.is_excluded(index) or not source.in_code_body(index):
            continue
        m = INTEGER.match(token.text)
        if not m:
            continue
        digits, suffix = m.group(1), m.group(2)
        # An array dimension in a declaration (char buffer[64]) only sizes a scratch buffer.
        if source.tok(index - 1).text == "[" and source.tok(index + 1).text == "]" \
                and source.tok(index - 2).kind == "id":
            statement = statement_of(source, index)
            if statement is not None and not is_expression_statement(source, statement):
                continue
        clean = digits.replace("'", "")
        if clean[:2] in ("0x", "0X"):
            value, fmt = int(clean, 16), lambda v: hex(v)
        elif clean[:2] in ("0b", "0B"):
            value, fmt = int(clean, 2), lambda v: bin(v)
        else:
            value, fmt = int(clean, 10), str
        for delta in (1, -1):
            if value + delta < 0:
                continue
            add("literal_pm1", [Edit(token.start, token.end, fmt(value + delta) + suffix)],
                f"integer literal {token.text} -> {fmt(value + delta) + suffix}")


def gen_operand(source: Source, add: Callable) -> None:
    sites: dict[tuple[int, int], str] = {}
    for index, token in enumerate(source.tokens):
        if source.is_excluded(index) or not source.in_code_body(index):
            continue
        if token.kind == "op" and token.text in ("+", "-", "*", "/", "%") and source.spaced(index):
            previous = source.tok(index - 1)
            if previous.kind == "str" or source.tok(index + 1).kind == "str":
                continue  # string concatenation
            if not (previous.kind in ("id", "num") or previous.text in (")", "]", "}")):
                continue  # unary
            for span in (operand_before(source, index - 1), operand_after(source, index + 1)):
                if span and source.tokens[span[0]].kind != "num" \
                        and SIZE_NAME.search(last_name(source, span)):
                    sites.setdefault(span, f"operand of '{token.text}'")
        # The size handed to an allocation: mem_alloc(bytes), allocate(need), view(a, b).
        if token.kind == "id" and ALLOC_CALL.search(token.text) and source.tok(index + 1).text == "(" \
                and index + 1 in source.match:
            close = source.match[index + 1]
            j = index + 2
            while j < close:
                span = operand_after(source, j)
                if span is None:
                    break
                if source.tok(span[1] + 1).text in (",", ")") and \
                        SIZE_NAME.search(last_name(source, span)) and \
                        source.tokens[span[0]].kind != "num":
                    sites.setdefault(span, f"size argument of {token.text}()")
                # next argument
                k = span[1] + 1
                while k < close and source.tokens[k].text != ",":
                    k = source.match.get(k, k) + 1 if source.tokens[k].text in "([{" else k + 1
                j = k + 1
    for span, where in sorted(sites.items()):
        for sign in ("+", "-"):
            start, end, replacement = plus_one(source, span, sign)
            add("operand_pm1", [Edit(start, end, replacement)],
                f"{where}: {source.text[start:end]} -> {replacement}")


def gen_shift(source: Source, add: Callable) -> None:
    for index, token in enumerate(source.tokens):
        if token.text not in ("<<", ">>") or not source.spaced(index):
            continue
        if source.is_excluded(index) or not source.in_code_body(index):
            continue
        statement = statement_of(source, index)
        if statement is not None:
            words = source.tokens[statement.first:statement.last + 1]
            if any(t.kind == "str" or t.text in ("hex", "dec", "endl", "cout", "cerr")
                   for t in words):
                continue  # a stream, not a shift
        span = operand_after(source, index + 1)
        if span is None or (span[0] == span[1] and source.tokens[span[0]].kind == "num"):
            continue  # a literal shift count is literal_pm1's
        for sign in ("+", "-"):
            start, end, replacement = plus_one(source, span, sign)
            add("shift_pm1", [Edit(start, end, replacement)],
                f"shift count {source.text[start:end]} -> {replacement}")


FLIPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}


def gen_comparison(source: Source, add: Callable) -> None:
    for index, token in enumerate(source.tokens):
        if token.kind != "op" or token.text not in FLIPS or not source.spaced(index):
            continue
        if source.is_excluded(index) or not source.in_code_body(index):
            continue
        flipped = FLIPS[token.text]
        add("flip_comparison", [Edit(token.start, token.end, flipped)],
            f"'{token.text}' -> '{flipped}'")


def is_expression_statement(source: Source, statement: Statement) -> bool:
    """An expression statement or `return;` — dropping it leaves a valid program. Declarations
    (their names are used later), value returns and throws are never dropped."""
    tokens = source.tokens[statement.first:statement.last + 1]
    if not tokens:
        return False
    first = tokens[0].text
    if first == "return":
        return len(tokens) == 2
    if first in ("++", "--", "*", "(", "::"):
        return True
    if tokens[0].kind != "id" or first in KEYWORDS:
        return False
    i = 0
    while i + 2 < len(tokens) and tokens[i + 1].text == "::" and tokens[i + 2].kind == "id":
        i += 2
    following = tokens[i + 1].text if i + 1 < len(tokens) else ";"
    return following in ("(", ".", "->", "[", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
                         "^=", "<<=", ">>=", "++", "--", ";")


def calls_in(source: Source, statement: Statement) -> list[str]:
    """Functions the statement calls, not counting those inside lambdas it contains."""
    lambda_ranges = [(s.open, s.close) for s in source.scopes if s.kind == "lambda"
                     and statement.first < s.open < statement.last]
    names = []
    for index in range(statement.first, statement.last + 1):
        if any(a <= index <= b for a, b in lambda_ranges):
            continue
        token = source.tokens[index]
        if token.kind == "id" and source.tok(index + 1).text == "(":
            names.append(token.text)
    return names


def gen_drop(source: Source, add: Callable) -> None:
    # The single statement of an `if` is dropped with its `if` (one mutant, not two).
    if_bodies = {id(s.body) for s in source.statements if s.kind == "if" and s.body is not None}
    for statement in source.statements:
        scope = statement.scope
        if source.is_excluded(statement.first):
            continue
        if statement.kind == "simple":
            if id(statement) in if_bodies or not is_expression_statement(source, statement):
                continue
            body = statement
        elif statement.kind == "if" and not statement.has_else and statement.body is not None \
                and statement.braced:
            body = statement.body
            if not (is_expression_statement(source, body)
                    or source.tokens[body.first].text in ("return", "continue", "break")):
                continue
        else:
            continue
        frees = [n for n in calls_in(source, body) if FREE_ERASE_INSERT.match(n)]
        if scope.in_lambda:
            where = f"in a lambda in {scope.function}()"
        elif scope.function in DROP_FUNCTIONS:
            where = f"in {scope.function}()"
        elif frees:
            where = f"a {frees[0]}() call"
        else:
            continue
        start = source.tokens[statement.first].start
        end = source.tokens[statement.last].end
        # The body of an unbraced for/while keeps an empty body; elsewhere the statement goes.
        replacement = "" if statement.braced else "{}"
        what = "guard `if`" if statement.kind == "if" else "statement"
        add("drop_statement", [Edit(start, end, replacement)], f"{what} dropped {where}")


def gen_lock(source: Source, add: Callable) -> None:
    unlocked: dict[tuple[int, str], list[Statement]] = collections.defaultdict(list)
    for statement in source.statements:
        if statement.kind != "simple" or not statement.braced:
            continue
        tokens = source.tokens[statement.first:statement.last + 1]
        texts = [t.text for t in tokens]
        start = tokens[0].start
        end = tokens[-1].end
        lock_type = next((t for t in texts[:4] if t in LOCK_TYPES), None)
        if lock_type is not None and texts[0] in ("std", *LOCK_TYPES, "const"):
            add("remove_lock", [Edit(start, end, "")], f"std::{lock_type} removed")
        elif "lock_all_arenas" in texts and "=" in texts:
            add("remove_lock", [Edit(start, end, "")], "lock_all_arenas() removed")
        # name.lock(); ... name.unlock();  (a std::mutex used by hand)
        if len(texts) == 6 and texts[1] in (".", "->") and texts[2] in ("lock", "unlock") \
                and texts[3:] == ["(", ")", ";"]:
            unlocked[(id(statement.scope), texts[0])].append(statement)
    for (_, name), statements in unlocked.items():
        locks = [s for s in statements if source.tokens[s.first + 2].text == "lock"]
        unlocks = [s for s in statements if source.tokens[s.first + 2].text == "unlock"]
        for lock, unlock in zip(locks, unlocks):
            edits = [Edit(source.tokens[s.first].start, source.tokens[s.last].end, "")
                     for s in (lock, unlock)]
            add("remove_lock", edits, f"{name}.lock() / {name}.unlock() pair removed")


def gen_index(source: Source, add: Callable) -> None:
    for index, token in enumerate(source.tokens):
        if token.text != "[" or index not in source.match or source.is_excluded(index):
            continue
        if not source.in_code_body(index):
            continue
        previous = source.tok(index - 1)
        if not (previous.kind == "id" and previous.text not in KEYWORDS or previous.text in (")", "]")):
            continue
        if source.tok(index + 1).text == "[" or source._is_attribute_close(index - 1):
            continue
        container = operand_before(source, index - 1)
        if container is None or not INDEX_CONTAINER.search(last_name(source, container)):
            continue
        close = source.match[index]
        if close == index + 1:
            continue
        inner = (index + 1, close - 1)
        if inner[0] == inner[1] and source.tokens[inner[0]].kind == "num":
            continue  # a literal index is literal_pm1's
        start, end, text = span_text(source, inner)
        base = text if is_simple_operand(source, inner) else f"({text})"
        for sign in ("+", "-"):
            add("index_shift", [Edit(start, end, f"{base} {sign} 1")],
                f"index into {last_name(source, container)}: [{text}] -> [{base} {sign} 1]")


def gen_min_max(source: Source, add: Callable) -> None:
    for index, token in enumerate(source.tokens):
        if token.text not in ("min", "max") or source.is_excluded(index):
            continue
        if source.tok(index - 1).text != "::" or source.tok(index - 2).text != "std":
            continue
        if source.tok(index + 1).text not in ("(", "<"):
            continue
        other = "max" if token.text == "min" else "min"
        add("swap_min_max", [Edit(token.start, token.end, other)],
            f"std::{token.text} -> std::{other}")


def gen_return(source: Source, add: Callable) -> None:
    for index, token in enumerate(source.tokens):
        if token.text != "return" or source.is_excluded(index):
            continue
        value = source.tok(index + 1)
        if value.text in ("true", "false") and source.tok(index + 2).text == ";":
            other = "false" if value.text == "true" else "true"
            add("wrong_return", [Edit(value.start, value.end, other)],
                f"return {value.text} -> return {other}")


def gen_flag(source: Source, add: Callable) -> None:
    for index, token in enumerate(source.tokens):
        if token.kind != "id" or source.is_excluded(index) or not source.in_code_body(index):
            continue
        for group in FLAG_GROUPS:
            if token.text in group:
                for other in group:
                    if other != token.text:
                        add("wrong_flag", [Edit(token.start, token.end, other)],
                            f"{token.text} -> {other}")
                if token.text.startswith(("CU_MEMHOSTALLOC_", "CU_MEMHOSTREGISTER_")):
                    add("wrong_flag", [Edit(token.start, token.end, "0u")],
                        f"{token.text} dropped (0u)")
        if token.text in BOOL_FLAGS and source.tok(index - 1).text not in ("bool", ".", "->"):
            if source.tok(index + 1).text in ("=", "(", "{"):
                continue  # a declaration or a member initialiser, not a use
            add("wrong_flag", [Edit(token.start, token.end, f"!{token.text}")],
                f"{token.text} -> !{token.text}")
            scope = next((s for s in source.scopes if s.kind == "function"
                          and s.open < index < s.close), None)
            if scope is None:
                continue
            header = source.tokens[source._header_start(scope.open):scope.open]
            params = [t.text for t in header if t.text in BOOL_FLAGS and t.text != token.text]
            if params:
                # The next flag of the function's parameters (mapped -> portable -> wc), wrapping.
                later = [p for p in params if BOOL_FLAGS.index(p) > BOOL_FLAGS.index(token.text)]
                other = later[0] if later else params[0]
                add("wrong_flag", [Edit(token.start, token.end, other)],
                    f"{token.text} -> {other} (flags swapped)")


GENERATORS = [
    ("remove_lock", gen_lock),
    ("drop_statement", gen_drop),
    ("wrong_flag", gen_flag),
    ("wrong_return", gen_return),
    ("swap_min_max", gen_min_max),
    ("flip_comparison", gen_comparison),
    ("index_shift", gen_index),
    ("shift_pm1", gen_shift),
    ("operand_pm1", gen_operand),
    ("literal_pm1", gen_literal),
]


def mutants_of(source: Source, subject: str) -> list[Mutant]:
    factory = MutantFactory(source, subject)
    for _, generate in GENERATORS:
        generate(source, factory.add)
    return factory.mutants


# --- subjects -----------------------------------------------------------------------------------

@dataclasses.dataclass
class Subject:
    name: str
    folder: str
    files: list[str]  # repository-relative: the sources that are mutated


def discover_subjects() -> list[Subject]:
    subjects = []
    for folder, patterns, per_file in SUBJECT_GROUPS:
        root = REPO / folder
        if not root.is_dir():
            raise SystemExit(f"mutate: subject folder {folder} is missing from {REPO}")
        files = sorted({str(p.relative_to(REPO)) for pattern in patterns for p in root.glob(pattern)
                        if p.is_file() and not TEST_SOURCE.search(str(p))
                        and str(p.relative_to(REPO)) not in NOT_RUN_BY_THE_PLUGIN})
        if per_file:
            subjects += [Subject(Path(f).stem, folder, [f]) for f in files]
        else:
            subjects.append(Subject(Path(folder).name, folder, files))
    names = [s.name for s in subjects]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise SystemExit(f"mutate: two subjects are named {sorted(duplicates)}; rename one source")
    return subjects


# --- building a mutant --------------------------------------------------------------------------

class BuildError(Exception):
    pass


class SubjectUnavailable(Exception):
    """The build does not make this subject's library (yet): not configured, or no target."""


def run_text(argv: list[str], cwd: Path) -> str:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"`{' '.join(argv)}` failed ({result.returncode}): "
                         f"{(result.stderr or result.stdout).strip()[-2000:]}")
    return result.stdout


def replace_path(command: str, old: str, new: str) -> str:
    return re.sub(r"(?<!\S)" + re.escape(old) + r"(?!\S)", lambda _: new, command)


@dataclasses.dataclass
class Unit:
    """One translation unit of a subject, as the build compiles it."""
    source: str  # repository-relative
    argv: list[str]
    directory: Path
    object: str  # as the build names it (relative to the build directory, usually)
    target: str  # the CMake target whose object it is


class SubjectBuild:
    """How the build makes one subject's plugin library: its translation units, the archives
    that carry their objects, and the link command."""

    def __init__(self, tree: "BuildTree", subject: Subject):
        self.subject = subject
        self.tree = tree
        self.units: dict[str, Unit] = {}
        for rel in subject.files:
            unit = tree.units.get(str(REPO / rel))
            if unit is not None:
                self.units[rel] = unit
            elif rel.endswith(".cpp"):
                raise SubjectUnavailable(f"{rel} is not in {tree.build_dir}/compile_commands.json: "
                                         f"that build does not compile it (not configured yet, "
                                         f"or its options leave the target out)")
        exporters = [rel for rel in self.units
                     if EXPORT_MACRO in (REPO / rel).read_text(encoding="utf-8")]
        if len(exporters) != 1:
            raise SubjectUnavailable(f"expected one source with {EXPORT_MACRO[:-1]}, found "
                                     f"{exporters or 'none'}")
        self.target = self.units[exporters[0]].target
        commands = tree.commands(self.target)
        if not commands:
            raise SystemExit(f"mutate: ninja knows no commands for target {self.target}")
        self.link = commands[-1]
        self.library = self._output_of(self.link)
        # archive path -> (its command, its objects), for archives holding a subject object.
        self.archives: dict[str, tuple[str, list[str]]] = {}
        objects = {u.object for u in self.units.values()}
        for command in commands:
            m = re.search(r"\bar\s+\w*q\w*\s+(\S+)\s+(.*?)(?:&&|$)", command)
            if m and objects & set(m.group(2).split()):
                self.archives[m.group(1)] = (command, m.group(2).split())
        for unit in self.units.values():
            if not (re.search(r"(?<!\S)" + re.escape(unit.object) + r"(?!\S)", self.link)
                    or any(unit.object in objs for _, objs in self.archives.values())):
                raise SystemExit(f"mutate: {unit.object} ({unit.source}) is neither on the link "
                                 f"line of {self.target} nor in an archive it links")
        self._deps: dict[str, set[str]] = {}

    @staticmethod
    def _output_of(link: str) -> str:
        m = re.search(r"\s-o\s+(\S+)", link)
        if not m:
            raise SystemExit(f"mutate: no -o in the link command: {link}")
        return m.group(1)

    def units_including(self, rel: str) -> list[Unit]:
        """The translation units to recompile when `rel` changes."""
        if rel in self.units:
            return [self.units[rel]]
        path = str(REPO / rel)
        found = []
        for unit in self.units.values():
            if unit.object not in self._deps:
                self._deps[unit.object] = self.tree.deps(unit.object)
            if path in self._deps[unit.object]:
                found.append(unit)
        if not found:
            raise BuildError(f"no translation unit of {self.subject.name} includes {rel} "
                             f"(ninja -t deps); is the build up to date?")
        return found

    def build(self, work: Path, rel: str, text: str, werror: bool,
              extra_flags: Iterable[str] = (), all_units: bool = False) -> Path:
        """Compiles the units `rel` (holding `text`) touches and links the plugin library into
        `work`; returns the library. Raises BuildError with the compiler's words."""
        src = work / "src"
        obj = work / "obj"
        units = list(self.units.values()) if all_units else self.units_including(rel)
        # The mutated file and the units compiled are mirrored under work/src at their
        # repository paths, so `#include "detail/x.hpp"` finds the mutated header first; the
        # original folder comes next (-iquote) for every other quoted include.
        copies = {u.source for u in units} | {rel}
        for copy in copies:
            target = src / copy
            target.parent.mkdir(parents=True, exist_ok=True)
            if copy == rel:
                target.write_text(text, encoding="utf-8")
            else:
                shutil.copyfile(REPO / copy, target)
        swapped: dict[str, str] = {}
        for unit in units:
            out = obj / (unit.source + ".o")
            out.parent.mkdir(parents=True, exist_ok=True)
            argv = list(unit.argv)
            for flag in ("-o", "-c"):
                if flag not in argv:
                    raise BuildError(f"no {flag} in the compile command of {unit.source}")
            argv[argv.index("-o") + 1] = str(out)
            argv[argv.index("-c") + 1] = str(src / unit.source)
            # The build's -Werror is the compiler's check, not the catalogue's: a mutant that
            # only draws a warning is a program the catalogue must judge.
            argv[1:1] = ["-iquote", str((REPO / unit.source).parent)]
            argv += list(extra_flags) + ([] if werror else ["-Wno-error"])
            result = subprocess.run(argv, cwd=unit.directory, capture_output=True, text=True)
            if result.returncode != 0:
                raise BuildError(f"compiling {unit.source}: " + first_error(result.stderr))
            swapped[unit.object] = str(out)
        link = self.link
        for archive, (command, objects) in self.archives.items():
            if not set(objects) & set(swapped):
                continue
            copy = work / Path(archive).name
            rewritten = replace_path(command, archive, str(copy))
            for old, new in swapped.items():
                rewritten = replace_path(rewritten, old, new)
            self._shell(rewritten, f"archiving {Path(archive).name}")
            link = replace_path(link, archive, str(copy))
        for old, new in swapped.items():
            link = replace_path(link, old, new)
        library = work / Path(self.library).name
        link = replace_path(link, self.library, str(library))
        link_flags = list(extra_flags)
        if "-fsanitize=thread" in link_flags:
            # As the build's own _tsan copies (cmake/EmmConformance.cmake): the library calls its
            # own instrumented copies of inline code (shared_ptr's reference counts), not
            # emm-certify's uninstrumented ones, whose synchronisation TSan cannot see: without
            # it the unmutated pool showed a false race at thread exit and lost its TSan baseline.
            link_flags.append("-Wl,-Bsymbolic-functions")
        if link_flags:
            link = link.replace(" -shared ", " -shared " + " ".join(link_flags) + " ", 1)
        self._shell(link, "linking")
        return library

    def _shell(self, command: str, what: str) -> None:
        result = subprocess.run(["bash", "-c", command], cwd=self.tree.build_dir,
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(f"{what}: " + first_error(result.stderr or result.stdout))


def first_error(output: str) -> str:
    lines = output.strip().splitlines()
    errors = [line for line in lines if "error" in line]
    return (errors[0] if errors else (lines[-1] if lines else "(no output)")).strip()[:400]


class BuildTree:
    def __init__(self, build_dir: Path):
        self.build_dir = build_dir
        database = build_dir / "compile_commands.json"
        if not database.is_file():
            raise SystemExit(f"mutate: {database} not found; configure the build first "
                             f"(cmake --preset default)")
        self.units: dict[str, Unit] = {}
        for entry in json.loads(database.read_text(encoding="utf-8")):
            argv = entry.get("arguments") or shlex.split(entry["command"])
            directory = Path(entry["directory"])
            path = str((directory / entry["file"]).resolve())
            try:
                obj = argv[argv.index("-o") + 1]
            except (ValueError, IndexError):
                continue
            m = re.search(r"CMakeFiles/([^/]+)\.dir/", obj)
            # A source several targets compile belongs to the plugin's own: not a test's, nor the
            # ThreadSanitizer variant emm_add_certification_test(THREAD_SANITIZER ON) adds.
            if not m or path in self.units and ("_test" in m.group(1) or
                                                m.group(1).endswith("_tsan")):
                continue
            self.units[path] = Unit(str(Path(path).relative_to(REPO)) if path.startswith(str(REPO))
                                    else path, argv, directory, obj, m.group(1))

    def ninja(self, *args: str) -> str:
        return run_text(["ninja", "-C", str(self.build_dir), *args], REPO)

    def commands(self, target: str) -> list[str]:
        return [line for line in self.ninja("-t", "commands", target).splitlines() if line.strip()]

    def deps(self, obj: str) -> set[str]:
        out = self.ninja("-t", "deps", obj)
        return {line.strip() for line in out.splitlines()[1:] if line.startswith(" ")}

    def stale(self, targets: list[str]) -> bool:
        out = self.ninja("-n", *targets)
        return "no work to do" not in out


# --- certifying ---------------------------------------------------------------------------------

@dataclasses.dataclass
class Certificate:
    exit: int  # emm-certify's exit status; -1 past the deadline, < -1 a signal
    outcomes: dict[tuple[str, str], tuple[str, str, str]]  # (clause, backend) -> level, outcome, msg
    order: list[tuple[str, str]]
    stderr: str
    seconds: float


def certify(program: Path, library: Path, work: Path, extra: list[str], timeout_s: int,
            deadline_s: int, env_extra: Optional[dict] = None, name: str = "certify") -> Certificate:
    report = work / f"{name}.json"
    argv = [str(program), "--plugin", str(library), "--backend", "fake", "--devices", "2",
            "--json", str(report), "--timeout-s", str(timeout_s), *extra]
    env = dict(os.environ)
    # The logging example writes its event log here instead of /tmp.
    env["EMM_LOGGING_PLUGIN_CSV"] = str(work / "logging-events.csv")
    env.update(env_extra or {})
    started = time.monotonic()
    try:
        result = subprocess.run(argv, cwd=work, capture_output=True, text=True, env=env,
                                timeout=deadline_s, start_new_session=True)
        code, stderr = result.returncode, result.stderr
    except subprocess.TimeoutExpired as expired:
        code = -1
        stderr = (expired.stderr or b"").decode(errors="replace") if isinstance(expired.stderr, bytes) \
            else (expired.stderr or "")
    seconds = time.monotonic() - started
    outcomes: dict = {}
    order: list = []
    if report.is_file():
        try:
            for r in json.loads(report.read_text(encoding="utf-8")).get("results", []):
                key = (r["clause"], r.get("backend", "fake"))
                outcomes[key] = (r.get("level", ""), r["outcome"], r.get("message", ""))
                order.append(key)
        except (json.JSONDecodeError, KeyError):
            pass  # a truncated report: the exit status decides
    return Certificate(code, outcomes, order, stderr, seconds)


def judge(baseline: Certificate, cert: Certificate) -> tuple[str, list[str], str]:
    """killed or survived; the clauses that caught it (first first); the first message."""
    regressions = []
    for key in cert.order:
        level, outcome, message = cert.outcomes[key]
        base = baseline.outcomes.get(key, ("", "pass", ""))
        if level == "MUST" and outcome != "pass" and base[1] == "pass":
            regressions.append((key, outcome, message))
    clauses = [f"{key[0]} ({outcome})" for key, outcome, _ in regressions]
    message = regressions[0][2] if regressions else ""
    if cert.exit == -1:
        return "killed", clauses + ["(deadline)"], message or "certification ran past its deadline"
    if cert.exit < -1:
        return "killed", clauses + [f"(emm-certify signal {-cert.exit})"], message
    if cert.exit == 2:
        tail = cert.stderr.strip().splitlines()
        return "killed", clauses + ["(load)"], message or (tail[-1] if tail else "exit 2")
    if cert.exit != baseline.exit or regressions:
        return "killed", clauses or [f"(verdict: exit {cert.exit})"], message
    return "survived", [], ""


# --- the run ------------------------------------------------------------------------------------

@dataclasses.dataclass
class Result:
    mutant: Mutant
    status: str  # killed | survived | stillborn | equivalent | not_run | error
    clauses: list[str] = dataclasses.field(default_factory=list)
    message: str = ""
    seconds: float = 0.0
    via: str = ""  # "tsan" when the TSan build killed it


def read_equivalent() -> dict[str, dict]:
    if not EQUIVALENT_TSV.is_file():
        return {}
    rows = {}
    header = None
    for number, line in enumerate(EQUIVALENT_TSV.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if header is None:
            header = fields
            if header[:5] != ["id", "subject", "operator", "site", "reason"]:
                raise SystemExit(f"mutate: {EQUIVALENT_TSV}:{number}: the header must be "
                                 f"id<TAB>subject<TAB>operator<TAB>site<TAB>reason")
            continue
        if len(fields) != len(header) or not fields[4].strip():
            raise SystemExit(f"mutate: {EQUIVALENT_TSV}:{number}: expected {len(header)} "
                             f"tab-separated fields with a reason, got {line!r}")
        rows[fields[0]] = dict(zip(header, fields))
    return rows


@dataclasses.dataclass
class TsanPlan:
    build: SubjectBuild
    flags: list[str]  # added to the compile and link commands
    all_units: bool  # recompile every unit of the subject, not only those the mutant touches
    baseline: Optional[Certificate] = None


class Runner:
    def __init__(self, args, tree: BuildTree, builds: dict[str, SubjectBuild]):
        self.args = args
        self.tree = tree
        self.builds = builds
        self.extra = shlex.split(args.extra_certify_args or "")
        self.baselines: dict[str, Certificate] = {}
        self.lock = threading.Lock()
        self.tsan_plans: dict[str, Optional[TsanPlan]] = {}
        self.tsan_locks: dict[str, threading.Lock] = {}
        self.tsan_tree: Optional[BuildTree] = None
        if args.tsan_certify is not None:
            # The build the instrumented emm-certify came from (<build>/conformance/emm-certify),
            # unless --tsan-build-dir names another.
            tsan_dir = args.tsan_build_dir or args.tsan_certify.parent.parent
            if (tsan_dir / "compile_commands.json").is_file() and tsan_dir != tree.build_dir:
                self.tsan_tree = BuildTree(tsan_dir)
        self.work_root = Path(args.work_dir) if args.work_dir else \
            Path(tempfile.mkdtemp(prefix="emm-mutation-"))
        self.work_root.mkdir(parents=True, exist_ok=True)

    def _work(self, name: str) -> Path:
        work = self.work_root / name
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        return work

    def _done(self, work: Path) -> None:
        if not self.args.keep:
            shutil.rmtree(work, ignore_errors=True)

    def baseline(self, subject: str) -> Certificate:
        """The unmutated subject through the same pipeline (copy, compile, link, certify): it must
        be CERTIFIED, or no mutant's result means anything."""
        build = self.builds[subject]
        rel = next(iter(build.units))
        work = self._work(f"baseline-{subject}")
        try:
            library = build.build(work, rel, (REPO / rel).read_text(encoding="utf-8"),
                                  self.args.werror)
        except BuildError as error:
            raise SystemExit(f"mutate: the unmutated subject {subject} does not build through the "
                             f"mutant pipeline: {error}")
        cert = certify(self.args.certify, library, work, self.extra, self.args.timeout_s,
                       self.args.deadline_s)
        allowed = {0, 3} if "--only" in self.extra else {0}
        if cert.exit not in allowed:
            failed = [f"{k[0]} ({v[1]})" for k, v in cert.outcomes.items()
                      if v[0] == "MUST" and v[1] not in ("pass", "not_supported")]
            raise SystemExit(
                f"mutate: the unmutated subject {subject} ({build.target}) is not CERTIFIED: "
                f"emm-certify exit {cert.exit}, failing MUST clauses {', '.join(failed) or 'none'} "
                f"(report in {work}). Against a failing baseline every mutant would count as "
                f"killed: fix the plugin or the checker, or leave the subject out "
                f"(--skip-subjects {subject}).")
        self._done(work)
        return cert

    def tsan_plan(self, subject: str) -> Optional[TsanPlan]:
        """How to build `subject` for TSan, proven on the unmutated subject once: it must be
        CERTIFIED under the instrumented emm-certify too, or a TSan verdict on a mutant means
        nothing. None (with a warning) when it is not."""
        with self.lock:
            subject_lock = self.tsan_locks.setdefault(subject, threading.Lock())
        with subject_lock:
            if subject in self.tsan_plans:
                return self.tsan_plans[subject]
            plan = self._make_tsan_plan(subject)
            self.tsan_plans[subject] = plan
            return plan

    def _make_tsan_plan(self, subject: str) -> Optional[TsanPlan]:
        plan = None
        if self.tsan_tree is not None:
            # The TSan build's own commands: every object it links is instrumented.
            try:
                build = SubjectBuild(self.tsan_tree, self.builds[subject].subject)
                if self.tsan_tree.stale([build.target]):
                    log(f"tsan: {self.tsan_tree.build_dir} is not up to date for {build.target}; "
                        f"using {self.tree.build_dir}'s commands with -fsanitize=thread instead")
                else:
                    plan = TsanPlan(build, [], False)
            except (SubjectUnavailable, BuildError) as why:
                log(f"tsan: {self.tsan_tree.build_dir} cannot build {subject} ({why}); using "
                    f"{self.tree.build_dir}'s commands with -fsanitize=thread instead")
        if plan is None:
            # This build's commands with -fsanitize=thread added, every unit of the subject
            # recompiled so that both sides of a race are instrumented.
            plan = TsanPlan(self.builds[subject], ["-fsanitize=thread"], True)
        rel = next(iter(plan.build.units))
        work = self._work(f"tsan-baseline-{subject}")
        try:
            library = plan.build.build(work, rel, (REPO / rel).read_text(encoding="utf-8"),
                                       self.args.werror, plan.flags, plan.all_units)
        except BuildError as error:
            log(f"tsan: the unmutated {subject} does not build for TSan ({error}); its lock "
                f"removals get no TSan certification")
            return None
        cert = certify(self.args.tsan_certify, library, work, self.extra,
                       tsan_timeout(self.args.timeout_s), 4 * self.args.deadline_s, TSAN_ENV,
                       "tsan")
        if cert.exit != 0:
            failed = [f"{key[0]} {outcome}: {message[:300]}"
                      for key, (_, outcome, message) in cert.outcomes.items()
                      if outcome not in ("pass", "not_supported")]
            log(f"tsan: the unmutated {subject} is not CERTIFIED under TSan (exit {cert.exit}; "
                f"see {work}); its lock removals get no TSan certification. Not passed: "
                f"{failed or cert.stderr.strip().splitlines()[-3:]}")
            return None
        self._done(work)
        plan.baseline = cert
        return plan

    def run_one(self, mutant: Mutant) -> Result:
        build = self.builds[mutant.subject]
        work = self._work(mutant.id)
        started = time.monotonic()
        text = mutant.apply((REPO / mutant.file).read_text(encoding="utf-8"))
        try:
            library = build.build(work, mutant.file, text, self.args.werror)
        except BuildError as error:
            self._done(work)
            return Result(mutant, "stillborn", message=str(error),
                          seconds=time.monotonic() - started)
        cert = certify(self.args.certify, library, work, self.extra, self.args.timeout_s,
                       self.args.deadline_s)
        status, clauses, message = judge(self.baselines[mutant.subject], cert)
        result = Result(mutant, status, clauses, message, time.monotonic() - started)
        if status == "survived" and mutant.operator == "remove_lock" and self.args.tsan_certify:
            self._tsan(mutant, text, work, result)
        result.seconds = time.monotonic() - started
        self._done(work)
        return result

    def _tsan(self, mutant: Mutant, text: str, work: Path, result: Result) -> None:
        """A lock removal the checks missed: the same mutant built for ThreadSanitizer and
        certified by an instrumented emm-certify, which reports a data race the clauses'
        assertions may not see (halt_on_error: the clause that raced fails)."""
        plan = self.tsan_plan(mutant.subject)
        if plan is None:
            return
        try:
            library = plan.build.build(work / "tsan", mutant.file, text, self.args.werror,
                                       plan.flags, plan.all_units)
        except BuildError as error:
            result.message = f"tsan build failed: {error}"
            return
        cert = certify(self.args.tsan_certify, library, work / "tsan", self.extra,
                       tsan_timeout(self.args.timeout_s), 4 * self.args.deadline_s, TSAN_ENV,
                       "tsan")
        status, clauses, message = judge(plan.baseline, cert)
        if status == "killed":
            result.status, result.clauses, result.message, result.via = \
                "killed", clauses, message, "tsan"


TSAN_ENV = {"TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1"}


def tsan_timeout(timeout_s: int) -> int:
    """A clause's --timeout-s under ThreadSanitizer, which runs threaded code 5 to 15 times slower:
    with the plain timeout a loaded machine made the unmutated pool time out in ALLOC-10 (no TSan
    baseline, so none of its lock removals was judged) and would count a slow mutant as killed.
    Its whole certification gets four times --deadline-s for the same reason."""
    return max(4 * timeout_s, 120)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- reports ------------------------------------------------------------------------------------

STATUSES = ["killed", "survived", "stillborn", "equivalent", "not_run"]


def tally(results: list[Result], key: Callable[[Result], str]) -> dict[str, dict]:
    table: dict[str, dict] = {}
    for r in results:
        row = table.setdefault(key(r), {s: 0 for s in STATUSES})
        row[r.status] += 1
    for row in table.values():
        judged = row["killed"] + row["survived"]
        row["score"] = round(row["killed"] / judged, 4) if judged else None
    return dict(sorted(table.items()))


def score_text(score: Optional[float]) -> str:
    return "—" if score is None else f"{100 * score:.1f}%"


def build_report(args, catalogue: list[Mutant], results: list[Result], equivalent: dict,
                 stale_equivalent: list[str], elapsed: float) -> dict:
    totals = {s: sum(1 for r in results if r.status == s) for s in STATUSES}
    judged = totals["killed"] + totals["survived"]
    return {
        "tool": "suites/mutation/mutate.py",
        "build_dir": str(args.build_dir),
        "certify": str(args.certify),
        "extra_certify_args": args.extra_certify_args or "",
        "timeout_s": args.timeout_s,
        "deadline_s": args.deadline_s,
        "sample": args.sample,
        "seed": args.seed,
        "seconds": round(elapsed, 1),
        "catalogue": {
            "mutants": len(catalogue),
            "by_operator": dict(sorted(collections.Counter(m.operator for m in catalogue).items())),
            "by_subject": dict(sorted(collections.Counter(m.subject for m in catalogue).items())),
        },
        "eligible": args.eligible,
        "selected": len(results),
        "totals": totals,
        # killed / (run - stillborn - equivalent): the mutants the checks could be asked about.
        "score": round(totals["killed"] / judged, 4) if judged else None,
        "by_subject": tally(results, lambda r: r.mutant.subject),
        "by_operator": tally(results, lambda r: r.mutant.operator),
        "stale_equivalent": stale_equivalent,
        "mutants": [
            {"id": r.mutant.id, "subject": r.mutant.subject, "file": r.mutant.file,
             "line": r.mutant.line, "operator": r.mutant.operator, "detail": r.mutant.detail,
             "before": r.mutant.before, "after": r.mutant.after, "status": r.status,
             "killed_by": r.clauses, "first_clause": r.clauses[0] if r.clauses else None,
             "via": r.via or None, "message": r.message,
             "equivalent_reason": equivalent.get(r.mutant.id, {}).get("reason"),
             "seconds": round(r.seconds, 2)}
            for r in sorted(results, key=lambda r: (r.mutant.subject, r.mutant.file,
                                                    r.mutant.line, r.mutant.id))],
    }


def md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def markdown(report: dict) -> str:
    out = ["# Mutation score of the emmkit checks", ""]
    t = report["totals"]
    sample = (f"a sample of {report['selected']} (seed {report['seed']}) of the "
              f"{report['eligible']} selected" if report["sample"]
              else f"{report['selected']} mutants")
    out += [f"**Score: {score_text(report['score'])}** — killed {t['killed']} / "
            f"(run − stillborn − equivalent) {t['killed'] + t['survived']}; "
            f"{sample} of a catalogue of {report['catalogue']['mutants']}; "
            f"stillborn {t['stillborn']}, equivalent {t['equivalent']}, not run {t['not_run']}; "
            f"{report['seconds']} s.", "",
            f"Certified with `{report['certify']} --backend fake --devices 2 --timeout-s "
            f"{report['timeout_s']}{(' ' + report['extra_certify_args']) if report['extra_certify_args'] else ''}`"
            f" (deadline {report['deadline_s']} s per mutant).", ""]
    for title, key in (("By subject", "by_subject"), ("By operator", "by_operator")):
        out += [f"## {title}", "",
                "| | killed | survived | stillborn | equivalent | not run | score |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for name, row in report[key].items():
            out.append(f"| {name} | {row['killed']} | {row['survived']} | {row['stillborn']} | "
                       f"{row['equivalent']} | {row['not_run']} | {score_text(row['score'])} |")
        out.append("")
    out += ["## Catalogue (all mutants, before sampling)", "", "| operator | mutants |",
            "| --- | ---: |"]
    for name, count in report["catalogue"]["by_operator"].items():
        out.append(f"| {name} | {count} |")
    out.append("")
    mutants = report["mutants"]
    survivors = [m for m in mutants if m["status"] == "survived"]
    out += [f"## Survivors ({len(survivors)})", "",
            "Each is a property the checks miss or an equivalent program (README.md: how to tell "
            "them apart). Never ignore one: add a check, or list it in equivalent.tsv with the "
            "argument.", ""]
    if survivors:
        out += ["| id | site | operator | before | after |", "| --- | --- | --- | --- | --- |"]
        for m in survivors:
            out.append(f"| `{m['id']}` | {m['file']}:{m['line']} | {m['operator']} | "
                       f"`{md_escape(m['before'])}` | `{md_escape(m['after'])}` |")
        out.append("")
    killed = [m for m in mutants if m["status"] == "killed"]
    out += [f"## Killed ({len(killed)})", ""]
    if killed:
        out += ["| id | site | operator | change | first clause | all |",
                "| --- | --- | --- | --- | --- | --- |"]
        for m in killed:
            via = " (TSan)" if m["via"] == "tsan" else ""
            out.append(f"| `{m['id']}` | {m['file']}:{m['line']} | {m['operator']} | "
                       f"{md_escape(m['detail'])} | {m['first_clause']}{via} | "
                       f"{md_escape(', '.join(m['killed_by']))} |")
        out.append("")
    for status, title in (("stillborn", "Stillborn (do not build; not scored)"),
                          ("equivalent", "Equivalent (equivalent.tsv; not scored)"),
                          ("not_run", "Not run (time limit)")):
        rows = [m for m in mutants if m["status"] == status]
        if not rows:
            continue
        out += [f"## {title} ({len(rows)})", ""]
        for m in rows:
            why = m["message"] if status == "stillborn" else (m["equivalent_reason"] or "")
            out.append(f"- `{m['id']}` {m['file']}:{m['line']} {m['operator']}: "
                       f"{md_escape(m['detail'])}{(' — ' + md_escape(why)) if why else ''}")
        out.append("")
    if report.get("skipped_subjects"):
        out += ["## Subjects skipped", ""]
        out += [f"- {name}: {md_escape(why)}" for name, why in report["skipped_subjects"].items()]
        out.append("")
    if report["stale_equivalent"]:
        out += ["## Stale equivalent.tsv rows", "",
                "These ids match no mutant of the current sources (the line moved or the code "
                "changed): judge the mutant again under its new id.", ""]
        out += [f"- `{i}`" for i in report["stale_equivalent"]] + [""]
    return "\n".join(out)


# --- main ---------------------------------------------------------------------------------------

def parse_args(argv: list[str]):
    parser = argparse.ArgumentParser(
        description="Mutation score of the emmkit checks over the known-good plugins and the "
                    "examples (suites/mutation/README.md).")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build" / "default",
                        help="the built tree whose compile and link commands are used "
                             "(default: build/default); only read")
    parser.add_argument("--certify", type=Path,
                        help="emm-certify (default: BUILD_DIR/conformance/emm-certify)")
    parser.add_argument("--subjects", help="comma-separated subject names (default: all)")
    parser.add_argument("--skip-subjects", help="comma-separated subject names to leave out")
    parser.add_argument("--operators",
                        help="comma-separated operators or families: " + ", ".join(
                            f"{op} ({family})" for op, family in OPERATORS.items()))
    parser.add_argument("--sample", type=int, help="certify a random sample of N mutants")
    parser.add_argument("--seed", type=int, default=1, help="seed of --sample (default 1)")
    parser.add_argument("--only", help="comma-separated mutant ids")
    parser.add_argument("--list", action="store_true",
                        help="list the (selected) mutants and their counts; build nothing")
    parser.add_argument("--jobs", type=int, default=2, help="mutants in parallel (default 2)")
    parser.add_argument("--time-limit", type=float,
                        help="seconds after which no new mutant starts; the report covers those run")
    parser.add_argument("--timeout-s", type=int, default=30,
                        help="emm-certify --timeout-s: seconds per clause (default 30)")
    parser.add_argument("--deadline-s", type=int, default=300,
                        help="seconds one certification may take in all; past it the mutant "
                             "counts as killed (default 300; an unmutated run takes about 1 s)")
    parser.add_argument("--extra-certify-args", default="",
                        help="more emm-certify arguments, as one shell-quoted string")
    parser.add_argument("--tsan-certify", type=Path,
                        help="for lock removals the checks miss: rebuild the subject with "
                             "-fsanitize=thread and certify with this instrumented emm-certify "
                             "(e.g. build/tsan/conformance/emm-certify)")
    parser.add_argument("--tsan-build-dir", type=Path,
                        help="the TSan build whose compile and link commands make the TSan "
                             "mutants (default: the build --tsan-certify is in, when it has "
                             "compile_commands.json; else BUILD_DIR's with -fsanitize=thread)")
    parser.add_argument("--json", type=Path, help="write the JSON report here")
    parser.add_argument("--markdown", type=Path, help="write the Markdown report here")
    parser.add_argument("--work-dir", help="scratch folder (default: a new one under $TMPDIR)")
    parser.add_argument("--keep", action="store_true",
                        help="keep each mutant's scratch folder (sources, objects, reports)")
    parser.add_argument("--werror", action="store_true",
                        help="keep the build's -Werror: a mutant that draws a warning is "
                             "stillborn (default: -Wno-error is appended)")
    parser.add_argument("--fail-under", type=float,
                        help="exit 1 when the score (percent) is below this")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.sample is not None and args.sample < 1:
        parser.error("--sample must be at least 1")
    args.build_dir = args.build_dir.resolve()
    if args.certify is None:
        args.certify = args.build_dir / "conformance" / "emm-certify"
    args.certify = args.certify.resolve()
    if args.tsan_certify is not None:
        args.tsan_certify = args.tsan_certify.resolve()
    if args.tsan_build_dir is not None:
        args.tsan_build_dir = args.tsan_build_dir.resolve()
    return args


def select(args, subjects: list[Subject], catalogue: list[Mutant]) -> list[Mutant]:
    chosen = catalogue
    if args.subjects:
        wanted = [s.strip() for s in args.subjects.split(",") if s.strip()]
        known = {s.name for s in subjects}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise SystemExit(f"mutate: unknown subject(s) {unknown}; choose from {sorted(known)}")
        chosen = [m for m in chosen if m.subject in wanted]
    if args.skip_subjects:
        unwanted = [s.strip() for s in args.skip_subjects.split(",") if s.strip()]
        known = {s.name for s in subjects}
        unknown = [w for w in unwanted if w not in known]
        if unknown:
            raise SystemExit(f"mutate: unknown subject(s) {unknown}; choose from {sorted(known)}")
        chosen = [m for m in chosen if m.subject not in unwanted]
    if args.operators:
        wanted = [o.strip() for o in args.operators.split(",") if o.strip()]
        unknown = [w for w in wanted if w not in OPERATORS and w not in OPERATORS.values()]
        if unknown:
            raise SystemExit(f"mutate: unknown operator(s) {unknown}; choose from "
                             f"{sorted(OPERATORS)} or the families {sorted(set(OPERATORS.values()))}")
        chosen = [m for m in chosen if m.operator in wanted or OPERATORS[m.operator] in wanted]
    if args.only:
        ids = [i.strip() for i in args.only.split(",") if i.strip()]
        by_id = {m.id: m for m in catalogue}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise SystemExit(f"mutate: no mutant has the id {missing} (mutate.py --list shows them)")
        chosen = [m for m in chosen if m.id in ids]
    chosen = sorted(chosen, key=lambda m: m.id)
    args.eligible = len(chosen)  # what the filters kept, before sampling (for the report)
    if args.sample is not None and args.sample < len(chosen):
        chosen = sorted(random.Random(args.seed).sample(chosen, args.sample), key=lambda m: m.id)
    return chosen


def print_counts(title: str, counter: collections.Counter) -> None:
    print(f"{title}: " + ", ".join(f"{k} {v}" for k, v in sorted(counter.items())))


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    subjects = discover_subjects()
    catalogue = []
    for subject in subjects:
        for rel in subject.files:
            catalogue += mutants_of(Source(REPO / rel, rel), subject.name)
    ids = collections.Counter(m.id for m in catalogue)
    clashes = [i for i, n in ids.items() if n > 1]
    if clashes:
        raise SystemExit(f"mutate: mutant ids clash: {clashes} (a bug in mutate.py)")
    chosen = select(args, subjects, catalogue)

    if args.list:
        for m in chosen:
            print(f"{m.id}  {m.subject:<18} {m.site():<48} {m.operator:<16} "
                  f"{m.before}  =>  {m.after}")
        print()
        print(f"{len(chosen)} mutants" + (f" of {len(catalogue)}" if len(chosen) != len(catalogue)
                                          else ""))
        print_counts("by operator", collections.Counter(m.operator for m in chosen))
        print_counts("by subject", collections.Counter(m.subject for m in chosen))
        return 0

    equivalent = read_equivalent()
    all_ids = {m.id for m in catalogue}
    stale = sorted(i for i in equivalent if i not in all_ids)
    for i in stale:
        log(f"mutate: equivalent.tsv names {i}, which no current mutant has (the code moved or "
            f"changed): judge it again")
    if not args.certify.is_file():
        log(f"mutate: {args.certify} not found; build it (cmake --build {args.build_dir} "
            f"--target emm-certify) or pass --certify")
        return 2
    if args.tsan_certify and not args.tsan_certify.is_file():
        log(f"mutate: --tsan-certify {args.tsan_certify} not found")
        return 2
    tree = BuildTree(args.build_dir)
    builds: dict[str, SubjectBuild] = {}
    skipped: dict[str, str] = {}
    explicit = set((args.subjects or "").split(","))
    for subject in subjects:
        if not any(m.subject == subject.name for m in chosen):
            continue
        try:
            builds[subject.name] = SubjectBuild(tree, subject)
        except SubjectUnavailable as why:
            if subject.name in explicit:
                log(f"mutate: subject {subject.name} cannot be built: {why}")
                return 2
            # A plugin added to the sources but not yet to this build: say so, run the rest.
            skipped[subject.name] = str(why)
            log(f"mutate: skipping subject {subject.name}: {why}")
    chosen = [m for m in chosen if m.subject not in skipped]
    needed = sorted(builds)
    targets = sorted({b.target for b in builds.values()})
    if targets and tree.stale(targets):
        log(f"mutate: {args.build_dir} is not up to date for {' '.join(targets)}: mutants are "
            f"linked with its other objects, so build first (scripts/mutation.sh does: cmake "
            f"--build {args.build_dir} --target {' '.join(targets)})")
        return 2

    if args.certify.parent.parent == tree.build_dir and tree.stale(["emm-certify"]):
        # Not an error: the score is of the checker that runs, which the report names.
        log(f"mutate: note: {args.certify} is older than its sources; the mutants are judged by "
            f"the binary as built")
    runner = Runner(args, tree, builds)
    started = time.monotonic()
    for name in needed:
        log(f"baseline: {name} ({builds[name].target}) ...")
        runner.baselines[name] = runner.baseline(name)
        log(f"baseline: {name} CERTIFIED in {runner.baselines[name].seconds:.1f} s")

    results: list[Result] = []
    queue = []
    for m in chosen:
        if m.id in equivalent:
            results.append(Result(m, "equivalent", message=equivalent[m.id]["reason"]))
        else:
            queue.append(m)
    lock = threading.Lock()
    position = [0]
    done = [0]

    def worker() -> None:
        while True:
            with lock:
                if position[0] >= len(queue):
                    return
                if args.time_limit is not None and time.monotonic() - started > args.time_limit:
                    while position[0] < len(queue):
                        results.append(Result(queue[position[0]], "not_run"))
                        position[0] += 1
                    return
                mutant = queue[position[0]]
                position[0] += 1
            try:
                result = runner.run_one(mutant)
            except Exception as error:  # an infrastructure failure must not end the run unsaid
                result = Result(mutant, "stillborn", message=f"mutate.py error: {error!r}")
            with lock:
                results.append(result)
                done[0] += 1
                how = {"killed": f"KILLED by {result.clauses[0] if result.clauses else '?'}"
                                 + (" (TSan)" if result.via else ""),
                       "survived": "SURVIVED", "stillborn": "stillborn"}[result.status]
                log(f"[{done[0]}/{len(queue)}] {mutant.id} {mutant.site()} {mutant.operator}: "
                    f"{how} ({result.seconds:.1f} s)")

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in [pool.submit(worker) for _ in range(args.jobs)]:
            future.result()
    elapsed = time.monotonic() - started
    if not args.keep:
        shutil.rmtree(runner.work_root, ignore_errors=True)

    report = build_report(args, catalogue, results, equivalent, stale, elapsed)
    report["skipped_subjects"] = skipped
    report["skipped_by_option"] = args.skip_subjects or ""
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown(report), encoding="utf-8")
    t = report["totals"]
    print(f"mutation score {score_text(report['score'])}: killed {t['killed']}, survived "
          f"{t['survived']}, stillborn {t['stillborn']}, equivalent {t['equivalent']}, "
          f"not run {t['not_run']} ({elapsed:.0f} s)")
    for m in report["mutants"]:
        if m["status"] == "survived":
            print(f"  survived {m['id']} {m['file']}:{m['line']} {m['operator']}: "
                  f"{m['before']}  =>  {m['after']}")
    if args.fail_under is not None and report["score"] is not None \
            and 100 * report["score"] < args.fail_under:
        log(f"mutate: score {score_text(report['score'])} is below --fail-under {args.fail_under}%")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
