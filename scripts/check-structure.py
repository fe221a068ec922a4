#!/usr/bin/env python3
"""Checks the shape of src/ that issue 7 set: no import cycle between
modules, no file over 600 lines and no function over 100 lines (tests
aside). Reads `crate::`/`super::` paths outside test modules; prints each
breach with file:line and exits 1 when there is one.

    python3 scripts/check-structure.py [SRC_DIR]
"""

import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FN_LINES = 100
TEST_FILES = ("tests.rs", "testkit.rs")


def rust_files(root):
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".rs"):
                yield os.path.join(folder, name)


def without_tests(text):
    """The file up to its `#[cfg(test)] mod tests` block."""
    return re.split(r"#\[cfg\(test\)\]\s*mod tests\s*[{;]", text)[0]


def module_of(root, path):
    parts = os.path.relpath(path, root)[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def top_level_graph(root):
    """Edges between top-level modules (`app`, `store`, ...)."""
    graph = {}
    for path in rust_files(root):
        parts = module_of(root, path)
        if not parts or os.path.basename(path) in TEST_FILES:
            continue
        me = parts[0]
        code = re.sub(r"//.*", "", without_tests(open(path, encoding="utf-8").read()))
        targets = set(re.findall(r"\bcrate::(\w+)", code))
        # `use crate::{app::App, store};` names several modules at once.
        for group in re.findall(r"\bcrate::\{([^;]*)\}", code):
            targets.update(re.findall(r"(?:^|[{,])\s*(\w+)", group))
        graph.setdefault(me, set()).update(t for t in targets if t != me)
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def long_functions(path):
    lines = without_tests(open(path, encoding="utf-8").read()).split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(pub(\([^)]*\))? )?(const )?(async )?fn (\w+)", line)
        if not m or line.rstrip().endswith(";"):
            continue
        indent = m.group(1)
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == indent + "}"), i)
        if end - i + 1 > MAX_FN_LINES:
            yield i + 1, m.group(6), end - i + 1


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "src"
    breaches = []
    for component in cycles(top_level_graph(root)):
        breaches.append(f"import cycle between modules: {' -> '.join(component)}")
    for path in rust_files(root):
        if os.path.basename(path) in TEST_FILES:
            continue
        code_lines = without_tests(open(path, encoding="utf-8").read()).count("\n")
        if code_lines > MAX_FILE_LINES:
            breaches.append(f"{path}: {code_lines} lines (at most {MAX_FILE_LINES})")
        for line, name, length in long_functions(path):
            breaches.append(f"{path}:{line}: fn {name} is {length} lines (at most {MAX_FN_LINES})")
    for breach in breaches:
        print(breach)
    print(f"structure: {len(breaches)} breach(es)")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
