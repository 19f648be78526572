#!/usr/bin/env python3
"""The largest files and functions of the repository, in lines (for issue notes and reviews).

    deploy/code-sizes.py [N]     the N largest of each (default 10)

Files: every tracked .h/.cc/.cu, total lines. Functions: bodies of function definitions at
namespace or class level (lambdas count towards the function they are in), from the line of the
signature that opens the body to its closing brace; found by matching braces outside comments,
strings and character literals in clang-formatted code, which is what we have everywhere.
"""
import re
import subprocess
import sys

CONTROL = re.compile(r"^\s*(if|for|while|switch|else|do|try|catch|namespace|class|struct|union|"
                     r"enum|extern|return|case|default)\b")


def strip(line, state):
    """The line without comments and literal contents. `state` carries what stays open at the
    end of a line: None, "/*" (a block comment) or the closing delimiter of a raw string."""
    out, i, n = [], 0, len(line)
    while i < n:
        if state == "/*":
            j = line.find("*/", i)
            if j < 0:
                return "".join(out), state
            i, state = j + 2, None
            continue
        if state is not None:  # inside a raw string literal
            j = line.find(state, i)
            if j < 0:
                return "".join(out), state
            i, state = j + len(state), None
            out.append('""')
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state, i = "/*", i + 2
            continue
        m = re.match(r'R"([^(\s]*)\(', line[i:])
        if m and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
            state, i = ")" + m.group(1) + '"', i + m.end()
            continue
        if c in "\"'":
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), state


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    state = None
    scope = []  # per open brace: "fn" (a function body) or "other"
    start = None  # (line, name) of the function being read
    sig, sig_line = "", None  # code since the last ; { or } outside functions, and its line
    found = []
    for no, raw in enumerate(lines, 1):
        code, state = strip(raw, state)
        for ch in code + " ":
            in_fn = "fn" in scope
            if ch == "{":
                text = sig.strip()
                if not in_fn and "(" in text and not CONTROL.match(text) and \
                        not text.endswith("=") and not text.startswith("#"):
                    m = re.search(r"((?:[A-Za-z_~][\w~]*::)*(?:operator\s*\S+?|[A-Za-z_~][\w~]*))"
                                  r"\s*\(", text)
                    start = (sig_line or no, m.group(1) if m else "?")
                    scope.append("fn")
                else:
                    scope.append("other")
                sig, sig_line = "", None
            elif ch == "}":
                kind = scope.pop() if scope else "other"
                if kind == "fn" and "fn" not in scope and start:
                    found.append((no - start[0] + 1, path, start[0], start[1]))
                    start = None
                sig, sig_line = "", None
            elif ch == ";" and not in_fn:
                sig, sig_line = "", None
            elif not in_fn:
                if not ch.isspace() and sig_line is None:
                    sig_line = no
                if ch == "#" and not sig.strip():
                    break  # a preprocessor line
                sig += ch
    return found


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    files = subprocess.run(["git", "ls-files", "*.h", "*.cc", "*.cu"], capture_output=True,
                           text=True, check=True).stdout.split()
    sizes = []
    fns = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            sizes.append((sum(1 for _ in fh), f))
        fns += functions(f)
    print(f"largest files (lines), of {len(files)}:")
    for lines, f in sorted(sizes, reverse=True)[:n]:
        print(f"  {lines:6d}  {f}")
    print(f"largest functions (lines, signature to closing brace), of {len(fns)}:")
    for lines, f, line, name in sorted(fns, reverse=True)[:n]:
        print(f"  {lines:6d}  {f}:{line}  {name}")


if __name__ == "__main__":
    main()
