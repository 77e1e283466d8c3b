#!/usr/bin/env bash
# Gradescope image setup (runs once, as root, when the autograder is built; Gradescope
# unpacks the zip made by tinytrain-gradescope-zip into /autograder/source).
#
# 1. Python 3.11 beside the image's own python3 (which Gradescope's harness uses and which
#    stays untouched): the distribution's python3.11 package (Ubuntu 22.04, the default
#    base image, has it in universe; Debian 12 has it as its python3), else a standalone
#    CPython 3.11 installed by uv (from uv's PyPI wheel) into /opt/tinytrain-python.
# 2. A virtual environment /opt/tinytrain-grader with CPU torch 2.13.0 and the grader
#    (a regular install, not editable).
# 3. The grader's environment and /autograder/source made root's alone (0700): student
#    code runs as another user and must not read the grader, the oracle or a secret seed.
# 4. The worker's sandbox (its user and environment), when the grader has
#    `tinytrain-grade --prepare-sandbox`.
#
# Overrides, for the project's tests and for instructors with other needs:
#   AUTOGRADER_ROOT        /autograder
#   TINYTRAIN_PYTHON       a Python >= 3.11 to use as is (no apt, no uv)
#   TINYTRAIN_GRADER_ENV   /opt/tinytrain-grader
#   TINYTRAIN_TORCH_INDEX  https://download.pytorch.org/whl/cpu (empty: pip's own index)
set -euo pipefail

root="${AUTOGRADER_ROOT:-/autograder}"
source_dir="$root/source"
grader_env="${TINYTRAIN_GRADER_ENV:-/opt/tinytrain-grader}"
torch_index="${TINYTRAIN_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
uv_version="0.13.9"
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 DEBIAN_FRONTEND=noninteractive

is_311() { "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] < (3, 11))' 2>/dev/null; }

find_python() {
  if [ -n "${TINYTRAIN_PYTHON:-}" ]; then
    is_311 "$TINYTRAIN_PYTHON" || { echo "TINYTRAIN_PYTHON=$TINYTRAIN_PYTHON is not Python >= 3.11 with venv" >&2; exit 1; }
    echo "$TINYTRAIN_PYTHON"; return
  fi
  apt-get update -q >&2
  if apt-get install -y -q --no-install-recommends python3.11 python3.11-venv ca-certificates >&2 \
      && is_311 /usr/bin/python3.11; then
    echo /usr/bin/python3.11; return
  fi
  echo "setup.sh: no python3.11 package here; installing CPython 3.11 with uv" >&2
  apt-get install -y -q --no-install-recommends python3 python3-venv ca-certificates >&2
  python3 -m venv /opt/tinytrain-uv >&2
  /opt/tinytrain-uv/bin/pip install -q "uv==$uv_version" >&2
  export UV_PYTHON_INSTALL_DIR=/opt/tinytrain-python
  /opt/tinytrain-uv/bin/uv python install 3.11 >&2
  /opt/tinytrain-uv/bin/uv python find 3.11
}

python="$(find_python)"
echo "setup.sh: Python $("$python" -c 'import platform; print(platform.python_version())') at $python"

rm -rf "$grader_env"
"$python" -m venv "$grader_env"
if [ -n "$torch_index" ]; then
  "$grader_env/bin/pip" install -q torch==2.13.0 --index-url "$torch_index"
else
  "$grader_env/bin/pip" install -q torch==2.13.0
fi
"$grader_env/bin/pip" install -q "$source_dir"
grade="$grader_env/bin/tinytrain-grade"
"$grade" --help >/dev/null

if [ -f "$source_dir/grader_seed" ] && ! "$grade" --help | grep -q -- --seed-file; then
  echo "setup.sh: the zip holds a secret seed but this grader has no --seed-file" >&2
  exit 1
fi
# root's alone: the grader (torch, the oracle, the suites) and the zip's contents. Done
# before the sandbox is prepared, so that whatever that step sets up for the worker is
# left as it sets it (the worker's environment is its own, outside the grader's).
chown -R 0:0 "$grader_env" "$source_dir"
chmod -R go-rwx "$grader_env" "$source_dir"
if "$grade" --help | grep -q -- --prepare-sandbox; then
  "$grade" --prepare-sandbox
else
  echo "setup.sh: this grader has no --prepare-sandbox: the worker runs as root (a fault boundary only)"
fi
chmod 0700 "$root"
echo "setup.sh: done; $grade"
