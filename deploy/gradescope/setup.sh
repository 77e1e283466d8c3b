#!/usr/bin/env bash
# Gradescope autograder image setup: installs Python's CPU torch and the grader.
# The autograder zip is this repository with setup.sh and run_autograder copied to its
# top level; Gradescope unpacks it to /autograder/source.
set -euo pipefail
apt-get update && apt-get install -y python3 python3-pip python3-venv
python3 -m venv /opt/grader
/opt/grader/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
/opt/grader/bin/pip install /autograder/source
