#!/usr/bin/env bash
# Build the Gradescope autograder zip and run it as Gradescope would, in a chroot of a
# fresh Debian or Ubuntu (made with debootstrap): setup.sh as root (apt's python3.11, the
# grader's venv, the sandbox), then run_autograder on uploads of several shapes.
#
#   debootstrap --variant=minbase bookworm /srv/bookworm http://deb.debian.org/debian
#   scripts/gradescope_chroot_test.sh /srv/bookworm [TASKS]
#
# TASKS (default: all) is passed to run_autograder through TINYTRAIN_GRADESCOPE_TASKS.
# Where download.pytorch.org cannot be reached, set TINYTRAIN_TORCH_INDEX= (empty) and
# WHEELS=/folder/with/the/torch/wheel: the folder is bound into the chroot as pip's
# find-links. CA_BUNDLE (default: $PIP_CERT) is a certificate bundle pip trusts inside
# the chroot, for networks that intercept TLS. The chroot is changed (packages, /opt, /autograder): use a throwaway one.
set -euo pipefail
chroot_dir="$(realpath "$1")"
tasks="${2:-}"
here="$(cd "$(dirname "$0")/.." && pwd)"
[ "$(id -u)" = 0 ] || { echo "run as root (chroot, mounts)" >&2; exit 1; }

mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
bind() { mkdir -p "$2"; mount --bind "$1" "$2"; mounts+=("$2"); }
bind /proc "$chroot_dir/proc"
bind /dev "$chroot_dir/dev"
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
pip_env=()
if [ -n "${WHEELS:-}" ]; then
  bind "$WHEELS" "$chroot_dir/wheels"
  pip_env+=("PIP_FIND_LINKS=/wheels")
fi
# a network that inspects TLS with its own authority (as PIP_CERT says here): trust it inside
ca_bundle="${CA_BUNDLE:-${PIP_CERT:-}}"
if [ -n "$ca_bundle" ]; then
  cp "$ca_bundle" "$chroot_dir/tmp/host-ca.crt"
  pip_env+=("PIP_CERT=/tmp/host-ca.crt")
fi
if [ -n "${TINYTRAIN_TORCH_INDEX+set}" ]; then
  pip_env+=("TINYTRAIN_TORCH_INDEX=$TINYTRAIN_TORCH_INDEX")
fi
in_chroot() {
  chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 "$@"
}

echo "== the zip"
cd "$here"
python3 -m graders.deploy.autograder_zip --out "$chroot_dir/tmp/autograder.zip"
rm -rf "$chroot_dir/autograder" "$chroot_dir/opt/tinytrain-grader"
mkdir -p "$chroot_dir/autograder/source"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
  "$chroot_dir/tmp/autograder.zip" "$chroot_dir/autograder/source"
chmod 0755 "$chroot_dir/autograder/source/setup.sh" "$chroot_dir/autograder/source/run_autograder"

echo "== setup.sh in $(. "$chroot_dir/etc/os-release"; echo "$PRETTY_NAME")"
start=$(date +%s)
in_chroot "${pip_env[@]}" /bin/bash -c 'cd /autograder/source && bash ./setup.sh'
echo "setup.sh took $(( $(date +%s) - start )) s"
cp "$chroot_dir/autograder/source/run_autograder" "$chroot_dir/autograder/run_autograder"
ls -ld "$chroot_dir/autograder" "$chroot_dir/autograder/source" "$chroot_dir/opt/tinytrain-grader"

grade_upload() {  # NAME, then a command (run on the host) that fills $upload
  local name="$1"; shift
  local upload="$chroot_dir/autograder/submission"
  rm -rf "$upload" "$chroot_dir/autograder/results" "$chroot_dir/autograder/wrapped"
  mkdir -p "$upload" "$chroot_dir/autograder/results"
  "$@" "$upload"
  echo "== run_autograder: $name"
  start=$(date +%s)
  in_chroot ${tasks:+TINYTRAIN_GRADESCOPE_TASKS="$tasks"} /bin/bash -c 'cd /autograder && ./run_autograder' \
    | tail -n 4
  echo "($(( $(date +%s) - start )) s)"
  python3 - "$chroot_dir/autograder/results/results.json" <<'EOF'
import json, sys
results = json.load(open(sys.argv[1]))
statuses = sorted({t["status"] for t in results["tests"]})
print(f"results.json: score {results['score']}, {len(results['tests'])} tests {statuses}")
print("output: " + results["output"].splitlines()[0] if results["output"] else "output: (none)")
EOF
}
reference_in_hw1() { mkdir -p "$1/hw1"; cp -r "$here/reference/tinytrain" "$1/hw1/"; }
template_at_top() { cp -r "$here/student_template/tinytrain" "$1/"; }
no_package() { mkdir -p "$1/hw1"; echo "x = 1" > "$1/hw1/tinytrain.py"; }
syntax_error() { mkdir -p "$1/tinytrain"; echo "def broken(:" > "$1/tinytrain/__init__.py"; }
grade_upload "the reference in hw1/" reference_in_hw1
grade_upload "the template" template_at_top
grade_upload "no package" no_package
grade_upload "a syntax error" syntax_error
