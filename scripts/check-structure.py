#!/usr/bin/env python3
"""Checks the shape of src/ and that docs/ARCHITECTURE.md tells the truth:

- no import circle between files, inside a folder too: a file's edges are
  the `crate::`, `super::`, `self::` and child-module paths it names outside
  its test module (a `mod x;` declaration alone is not an edge);
- no file over 600 lines, tests included; no function over 80 lines
  (test functions aside);
- no comment that cites an issue or ticket instead of giving the reason;
- every path (`src/store/mod.rs`) and module (`store::chain`,
  `store::Ledger`) that ARCHITECTURE.md names in backticks exists.

- the tree tells the architecture: at most 8 `.rs` files loose in `src/`,
  no folder of `src/`, `tests/` or `benches/` with more than 25 `.rs`
  files directly in it; no import circle in the benches' and the
  integration tests' crates either (`benches/*/main.rs`, `tests/*/main.rs`);
- one shape for tests: no `*_tests.rs` file beside the code it tests (a
  file's tests are its own `mod tests`, a folder's its `tests.rs` or
  `tests/`), and no `#[path]` in `src/` or `tests/`, so no file is
  compiled into two crates.

Prints each breach with file:line and exits 1 when there is one.

    python3 scripts/check-structure.py [ROOT]
"""

import os
import re
import sys

MAX_FILE_LINES = 600
MAX_LOOSE_IN_SRC = 8
MAX_FILES_IN_FOLDER = 25
MAX_FN_LINES = 80
DOC = os.path.join("docs", "ARCHITECTURE.md")
# A comment that points at the tracker instead of saying why.
TICKET = re.compile(r"\b(?:[Ii]ssues? #?\d+|[Tt]ickets? #?\d+|#\d{1,4}\b)")


def rust_files(src):
    for folder, dirs, files in os.walk(src):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".rs"):
                yield os.path.join(folder, name)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_comments(code):
    code = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
    return re.sub(r"//.*", "", code)


def strip_strings(code):
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', code)


def without_tests(code):
    """The code with its `#[cfg(test)] mod tests { … }` blocks cut out."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", code):
        if m.start() < i:
            continue
        out.append(code[i : m.start()])
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        i = j
    out.append(code[i:])
    return "".join(out)


class Tree:
    """The module tree of one crate: module path (a tuple) -> file."""

    def __init__(self, src):
        self.src = src
        self.files = {}
        for path in rust_files(src):
            self.files[self.module_of(path)] = path

    def module_of(self, path):
        parts = os.path.relpath(path, self.src)[:-3].split(os.sep)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        return tuple(parts)

    def file_for(self, parts):
        """The file of the longest prefix of `parts` that is a module."""
        for n in range(len(parts), -1, -1):
            if parts[:n] in self.files:
                return self.files[parts[:n]]
        return None


def use_paths(code):
    """Every path a `use` statement names, braces expanded."""

    def expand(prefix, tree):
        tree = tree.strip()
        m = re.match(r"^(.*?)\{(.*)\}$", tree, flags=re.S)
        if not m:
            yield prefix + [p for p in tree.split("::") if p and p != "*"]
            return
        head = [p for p in m.group(1).split("::") if p]
        body, depth, item, items = m.group(2), 0, "", []
        for ch in body:
            if ch == "," and depth == 0:
                items.append(item)
                item = ""
                continue
            depth += {"{": 1, "}": -1}.get(ch, 0)
            item += ch
        items.append(item)
        for it in items:
            if it.strip():
                yield from expand(prefix + head, re.sub(r"\s+as\s+\w+", "", it))

    for m in re.finditer(r"\buse\s+([^;]+);", code):
        yield from expand([], m.group(1))


def resolve(tree, me, path, children):
    """The module `path` (a list of segments) names, from module `me`."""
    if not path:
        return None
    head = path[0]
    if head == "crate":
        return list(path[1:])
    if head == "self":
        return list(me) + list(path[1:])
    if head == "super":
        base = list(me)
        while path and path[0] == "super":
            base = base[:-1]
            path = path[1:]
        return base + list(path)
    if head in children:
        return list(me) + list(path)
    return None


def file_graph(tree):
    graph = {}
    # A `#[path]` module of the crate root is a file of another folder: an
    # edge to it is not an edge to the root.
    root = tree.files.get(())
    elsewhere = set()
    if root:
        elsewhere = set(re.findall(r"#\[path\s*=[^\]]*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)", read(root)))
    for parts, path in tree.files.items():
        code = strip_strings(strip_comments(without_tests(read(path))))
        children = set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code, flags=re.M))
        named = list(use_paths(code))
        body = re.sub(r"\buse\s+[^;]+;", "", code)
        named += [p.split("::") for p in re.findall(r"\b(?:crate|super|self)(?:::\w+)+", body)]
        named += [p.split("::") for p in re.findall(r"(?<![:\w])(\w+(?:::\w+)+)", body) if p.split("::")[0] in children]
        edges = set()
        for p in named:
            target = resolve(tree, parts, p, children)
            if target is None or (target and target[0] in elsewhere):
                continue
            f = tree.file_for(tuple(target))
            if f and f != path:
                edges.add(f)
        graph[path] = edges
    return graph


def cycles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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
    text = read(path)
    lines = text.split("\n")
    test_lines = set()
    for m in re.finditer(r"#\[(?:cfg\(test\)|test)\]", text):
        test_lines.add(text.count("\n", 0, m.start()))
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(pub(\([^)]*\))? )?(const )?(async )?(unsafe )?fn (\w+)", line)
        if not m or line.rstrip().endswith(";"):
            continue
        # A test module's own folder (`x/tests.rs` with `x/tests/*.rs`) is
        # test code throughout, as `tests.rs` is.
        in_tests = os.path.basename(path) in ("tests.rs", "testkit.rs") or "tests" in path.split(os.sep)[:-1]
        if in_tests or any(j in test_lines for j in range(max(0, i - 3), i)):
            continue
        indent = m.group(1)
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == indent + "}"), i)
        if end - i + 1 > MAX_FN_LINES:
            yield i + 1, m.group(7), end - i + 1


def ticket_comments(path):
    for n, line in enumerate(read(path).split("\n"), 1):
        comment = re.search(r"//(.*)", line)
        if comment and TICKET.search(comment.group(1)):
            yield n, comment.group(1).strip()


def doc_names(root, tree):
    """Backticked names in the architecture page that do not exist."""
    doc = os.path.join(root, DOC)
    if not os.path.exists(doc):
        yield f"{DOC}: missing"
        return
    text = read(doc)
    everything = "\n".join(read(p) for p in tree.files.values())
    top = {p[0] for p in tree.files if p} | {"src", "docs", "scripts", "tests", "benches", "assets", "sample-data", "fuzz"}
    for n, line in enumerate(text.split("\n"), 1):
        for name in re.findall(r"`([^`\s]+)`", line):
            if re.search(r"[*{}<>?]", name):
                continue
            first = re.split(r"/|::", name)[0]
            if "/" in name and first in top:
                candidate = name.rstrip("/")
                tries = [candidate, os.path.join("src", candidate), candidate + ".rs", os.path.join("src", candidate + ".rs")]
                if not any(os.path.exists(os.path.join(root, t)) for t in tries):
                    yield f"{DOC}:{n}: `{name}` names no file"
            elif re.fullmatch(r"\w+(::\w+)+", name) and first in top | {"crate"}:
                if not module_item_exists(tree, name.split("::")):
                    yield f"{DOC}:{n}: `{name}` names no module or item"
            elif re.fullmatch(r"[A-Z]\w*(::\w+)+", name):
                if not type_member_exists(everything, name.split("::")):
                    yield f"{DOC}:{n}: `{name}` names no type, variant or method"


def bodies(code, head):
    """The `{ … }` bodies that follow each match of the regex `head`."""
    for m in re.finditer(head, code):
        i = code.find("{", m.end())
        if i < 0 or ";" in code[m.end() : i]:
            continue
        depth, j = 1, i + 1
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        yield code[i + 1 : j - 1]


def type_member_exists(code, parts):
    """`Type::member`: a variant of the enum, or a method, associated const
    or type in an `impl Type`, `impl … for Type` or `trait Type` block."""
    ty = re.escape(parts[0])
    found = list(bodies(code, r"\benum\s+" + ty + r"\b"))
    if not found and not re.search(r"\b(?:struct|trait|type)\s+" + ty + r"\b", code):
        return False
    found += bodies(code, r"\bimpl(?:<[^>]*>)?\s+(?:[\w:<>, ]+\s+for\s+)?" + ty + r"\b[^{;]*")
    found += bodies(code, r"\btrait\s+" + ty + r"\b[^{;]*")
    member = re.escape(parts[1])
    return any(
        re.search(r"\b(?:fn|const|type)\s+" + member + r"\b|^\s*" + member + r"\b\s*(?:[({,]|$)", body, flags=re.M)
        for body in found
    )


def module_item_exists(tree, parts):
    if parts[0] == "crate":
        parts = parts[1:]
    if tuple(parts) in tree.files:
        return True
    for n in range(len(parts) - 1, 0, -1):
        if tuple(parts[:n]) in tree.files:
            rest = parts[n:]
            code = read(tree.files[tuple(parts[:n])])
            # The item (or a variant, a method of it) is declared in that file.
            return all(
                re.search(
                    r"\b(?:fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+" + re.escape(p) + r"\b"
                    r"|^\s*" + re.escape(p) + r"\s*[({,]"
                    r"|\bpub\s+use\s+[^;]*\b" + re.escape(p) + r"\b",
                    code,
                    flags=re.M,
                )
                for p in rest
            )
    return False


def crate_roots(root):
    """src/ and every folder crate of benches/ and tests/ (one with a main.rs)."""
    yield os.path.join(root, "src")
    for top in ("benches", "tests"):
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for name in sorted(os.listdir(base)):
            folder = os.path.join(base, name)
            if os.path.isfile(os.path.join(folder, "main.rs")):
                yield folder


def tree_shape(root):
    """Loose files in src/, crowded folders, `*_tests.rs` files, `#[path]`."""
    src = os.path.join(root, "src")
    loose = sorted(n for n in os.listdir(src) if n.endswith(".rs"))
    if len(loose) > MAX_LOOSE_IN_SRC:
        yield f"src/: {len(loose)} files loose (at most {MAX_LOOSE_IN_SRC}; give the rest a folder): {', '.join(loose)}"
    for top in ("src", "tests", "benches"):
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            n = sum(1 for f in files if f.endswith(".rs"))
            if n > MAX_FILES_IN_FOLDER:
                rel = os.path.relpath(folder, root)
                yield f"{rel}/: {n} files (at most {MAX_FILES_IN_FOLDER}; split it by concern)"
    for top in ("src", "tests"):
        for path in rust_files(os.path.join(root, top)):
            rel = os.path.relpath(path, root)
            if top == "src" and os.path.basename(path).endswith("_tests.rs"):
                yield f"{rel}: tests beside the code; put them in its `mod tests` or the folder's tests/"
            for n, line in enumerate(read(path).split("\n"), 1):
                if re.match(r"\s*#\[path\s*=", line):
                    yield f"{rel}:{n}: #[path] compiles a file into a second crate; share it through a crate"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    src = os.path.join(root, "src")
    tree = Tree(src)
    breaches = list(tree_shape(root))
    for crate in crate_roots(root):
        for component in cycles(file_graph(Tree(crate))):
            names = [os.path.relpath(p, root) for p in component]
            breaches.append(f"import circle between files: {' <-> '.join(names)}")
    for path in rust_files(src):
        rel = os.path.relpath(path, root)
        lines = read(path).count("\n")
        if lines > MAX_FILE_LINES:
            breaches.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES}, tests included)")
        for line, name, length in long_functions(path):
            breaches.append(f"{rel}:{line}: fn {name} is {length} lines (at most {MAX_FN_LINES})")
        for line, comment in ticket_comments(path):
            breaches.append(f"{rel}:{line}: a comment cites a ticket; give the reason instead: {comment[:80]}")
    breaches.extend(doc_names(root, tree))
    for breach in breaches:
        print(breach)
    print(f"structure: {len(breaches)} breach(es)")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
