#!/usr/bin/env python3
"""Checks the Markdown of the repository; exit 1 and one line per problem.

- Every relative link of every Markdown file ([text](path), [text](path#anchor), [text](#anchor))
  names a file or folder of the tree, and its anchor a heading of the target (GitHub's anchors:
  lower case, punctuation dropped, spaces as hyphens, -1, -2 ... for repeats).
- Every repository path the docs (README.md, CHANGELOG.md, docs/) cite in their text exists:
  backtick-quoted names that look like files, and plain-text paths under the repository's top
  folders. A bare file name (`online.cuh`) passes when some file has that name; globs
  (raw-*.jsonl) and brace lists (message-{3,4}) must match a file. Command blocks, URLs,
  placeholders (BIN/, OUT/), paths outside the repository (../shared/...) and Kokkos' own files
  (Kokkos_*) are skipped; any other shared/... is reported, shared/ not being part of the tree.
- Every folder of perf/results is cited by some doc: raw data that no page shows is dead weight.

Usage: python3 tools/check_docs.py
"""
import fnmatch
import os
import re
import subprocess
import sys

os.chdir(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                        check=True).stdout.strip())
files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, text=True, check=True).stdout.split()
files = [f for f in files if os.path.exists(f)]
tracked = set(files)
dirs = set()
for f in files:
    d = os.path.dirname(f)
    while d:
        dirs.add(d)
        d = os.path.dirname(d)
names = {os.path.basename(f) for f in files}
problems = []

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.M | re.S)
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path, cache={}):
    """GitHub's anchors of a Markdown file's headings (those outside fenced blocks)."""
    if path not in cache:
        text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), open(path, encoding="utf-8").read())
        seen, found = {}, set()
        for m in re.finditer(r"(?m)^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$", text):
            title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
            slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
        cache[path] = found
    return cache[path]


def check_links(doc):
    base = os.path.dirname(doc)
    text = open(doc, encoding="utf-8").read()
    masked = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    masked = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), masked)
    for m in LINK.finditer(masked):
        target = m.group(1) or m.group(2)
        line = masked.count("\n", 0, m.start()) + 1
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(base, path)) if path else doc
        if full.startswith(".."):
            problems.append(f"{doc}:{line}: link outside the repository: {target}")
            continue
        if full not in tracked and full not in dirs:
            problems.append(f"{doc}:{line}: broken link: {target}")
            continue
        if anchor and full.endswith(".md") and anchor not in anchors(full):
            problems.append(f"{doc}:{line}: no heading for #{anchor} in {full}")


def expand(p):
    m = re.fullmatch(r"(.+)\.(\w+)/\.(\w+)", p)  # backward.cuh/.cu: both files
    if m:
        return [f"{m.group(1)}.{m.group(2)}", f"{m.group(1)}.{m.group(3)}"]
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    return [q for alt in m.group(1).split(",") for q in expand(p[:m.start()] + alt + p[m.end():])]


def exists(p, base):
    for cand in (p, os.path.normpath(os.path.join(base, p))):
        c = cand.rstrip("/")
        if "*" in c or "?" in c:
            if any(fnmatch.fnmatch(f, c) or fnmatch.fnmatch(f, c + "/*") for f in files):
                return True
        elif c in tracked or c in dirs:
            return True
    return "/" not in p and any(fnmatch.fnmatch(n, p) for n in names)


tops = sorted({f.split("/")[0] for f in files if "/" in f} | {"shared"})
EXT = r"\.(?:md|cu|cuh|hpp|cpp|h|py|sh|txt|jsonl|json|svg|toml|cmake)"
TOP = re.compile(r"(?<![\w./-])((?:%s)/[\w.*{},/-]*[\w*}/])" % "|".join(map(re.escape, tops)))


def cited_paths(doc):
    """The repository paths a doc cites in its text besides its links (code spans, plain paths)."""
    text = FENCE.sub("", open(doc, encoding="utf-8").read())
    text = LINK.sub(" ", text)  # links: check_links
    cites = set()
    for m in re.finditer(r"`([^`\n]+)`", text):
        tok = m.group(1).strip()
        if " " not in tok and not tok.startswith("Kokkos_") and re.fullmatch(r"[\w.*{},/-]+(?:" + EXT + r")(?:/\.\w+)?/?", tok):
            cites.add(tok)
    for m in TOP.finditer(text):
        cites.add(m.group(1))
    for m in re.finditer(r"(?<![\w./-])([\w-]+(?:\.[\w-]+)*\.(?:md|cu|cuh|hpp|cpp|py|sh))\b(?!/)", text):
        if not m.group(1).startswith("Kokkos_"):
            cites.add(m.group(1))  # a file named in plain text: some file has that name
    return cites


docs = sorted(f for f in files if f.endswith(".md"))
results = {os.path.join("perf/results", d) for d in os.listdir("perf/results")} if os.path.isdir("perf/results") else set()
cited_results = set()
for doc in docs:
    check_links(doc)
    if not (doc.startswith("docs/") or doc in ("README.md", "CHANGELOG.md")):
        continue
    base = os.path.dirname(doc)
    text = open(doc, encoding="utf-8").read()  # command blocks too: they name where runs write
    cited_results |= {r for r in results if re.search(re.escape(r) + r"(?![\w-])", text)}
    for c in sorted(cited_paths(doc)):
        if not c or c.startswith("shared/data") or "://" in c or c.startswith(("../", "mailto:", "#")) \
                or re.search(r"[A-Z]{2,}/", c):
            continue  # URLs, paths outside the repository, placeholders (BIN/, OUT/)
        for p in expand(c.rstrip(".,;:")):
            if not exists(p, base):
                problems.append(f"{doc}: missing path: {p}")
for r in sorted(results - cited_results):
    problems.append(f"{r}: no doc cites this folder of raw data")

for p in problems:
    print(p)
print(f"check_docs: {len(problems)} problem(s) in {len(docs)} Markdown files", file=sys.stderr)
sys.exit(1 if problems else 0)
