#!/usr/bin/env bash
# Checks that every repository path docs/*.md and README.md cite exists in the tree: markdown
# link targets, backtick-quoted names that look like files, and plain-text paths under the
# repository's top folders. A bare file name (`online.cuh`) passes when some tracked file has
# that name; globs (raw-*.jsonl) and brace lists (message-{3,4}) must match a tracked file.
# Paths outside the repository (../shared/...), URLs, command lines' placeholders, the GPU
# machine's data folder (shared/data) and Kokkos' own files (Kokkos_*) are skipped; any other
# shared/... is reported, since shared/ is not part of the repository. Usage: bash tools/check_doc_links.sh   (exit 1 and one line per missing path)
set -eu
cd "$(git rev-parse --show-toplevel)"
python3 - "$@" <<'EOF'
import fnmatch, os, re, subprocess, sys

files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
tracked = set(files)
dirs = {os.path.dirname(f) for f in files}
for d in list(dirs):
    while d:
        dirs.add(d)
        d = os.path.dirname(d)
names = {os.path.basename(f) for f in files}
tops = sorted({f.split("/")[0] for f in files if "/" in f} | {"shared"})  # shared/: outside
ext = r"\.(?:md|cu|cuh|hpp|cpp|h|py|sh|txt|jsonl|json|svg|toml|cmake)"

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

docs = sorted(f for f in files if f.startswith("docs/") and f.endswith(".md")) + ["README.md"]
top_re = re.compile(r"(?<![\w./-])((?:%s)/[\w.*{},/-]*[\w*}/])" % "|".join(map(re.escape, tops)))
missing = 0
for doc in docs:
    base = os.path.dirname(doc)
    text = open(doc).read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # command blocks: arguments, not citations
    cites = set()
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        cites.add(m.group(1).split("#")[0])
    for m in re.finditer(r"`([^`\n]+)`", text):
        tok = m.group(1).strip()
        if " " not in tok and not tok.startswith("Kokkos_") and re.fullmatch(r"[\w.*{},/-]+(?:" + ext + r")(?:/\.\w+)?/?", tok):
            cites.add(tok)
    for m in top_re.finditer(text):
        cites.add(m.group(1))
    for m in re.finditer(r"(?<![\w./-])([\w-]+(?:\.[\w-]+)*\.(?:md|cu|cuh|hpp|cpp|py|sh))\b(?!/)", text):
        if not m.group(1).startswith("Kokkos_"):
            cites.add(m.group(1))  # a file named in plain text: some tracked file has that name
    for c in sorted(cites):
        if not c or c.startswith("shared/data") or "://" in c or c.startswith(("../", "mailto:")) or re.search(r"[A-Z]{2,}/", c):
            continue  # URLs, paths outside the repository, placeholders (BIN/, OUT/)
        for p in expand(c.rstrip(".,;:")):
            if not exists(p, base):
                print(f"{doc}: {p}")
                missing += 1
print(f"{missing} missing path(s) in {len(docs)} files", file=sys.stderr)
sys.exit(1 if missing else 0)
EOF
