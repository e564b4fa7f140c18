#!/usr/bin/env bash
# The documentation's checks and its API reference, in build/docs; any warning fails it:
#   the links, anchors and cited paths of every Markdown file (tools/check_docs.py);
#   the C++ and C reference from the public headers (doxygen docs/Doxyfile -> build/docs/cpp);
#   the Python reference from the package's docstrings (pdoc -> build/docs/python), run by the
#   Python given as $1 (default python3), which must import an installed dfgnn and pdoc.
# Usage: bash tools/docs.sh [PYTHON]      (CI: .ci/run, with python/ci.sh's venv)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-python3}
python3 tools/check_docs.py
mkdir -p build/docs/cpp
doxygen docs/Doxyfile
# pdoc reports its warnings on stderr and still exits 0.
"$py" -m pdoc dfgnn dfgnn.distributed -o build/docs/python 2>build/docs/pdoc.log
if [ -s build/docs/pdoc.log ]; then cat build/docs/pdoc.log >&2; exit 1; fi
echo "docs: build/docs/cpp/index.html, build/docs/python/index.html"
