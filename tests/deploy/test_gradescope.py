"""Gradescope: the autograder zip, setup.sh and run_autograder in an /autograder-shaped
folder, with the grader installed from the zip into a fresh virtual environment.

setup.sh runs here with overrides (this machine's Python 3.11 instead of apt's, torch from
pip's local wheels where pip is configured with some, the grader's environment in a
temporary folder); the apt and uv
paths of setup.sh are exercised by scripts/gradescope_chroot_test.sh in a Debian chroot.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from filelock import FileLock

from graders import rubric
from graders.deploy.autograder_zip import build
from graders.harness import sandbox
from graders.report import Score, TaskScore
from graders.report.gradescope import results_json
from graders.runner.results import TestResult

from ..conftest import REFERENCE, ROOT, TEMPLATE

RUBRIC = rubric.load()
SOLUTION = ("BEGIN " + "SOLUTION", "END " + "SOLUTION")
TASK = "1.1"  # run_autograder grades this task only in these tests (TINYTRAIN_GRADESCOPE_TASKS)
IMPORT_ERROR_SECONDS = 60  # a whole grading of an unimportable upload, on a loaded 2-core machine


def test_zip_holds_the_grader_and_nothing_of_the_solutions(tmp_path):
    out = tmp_path / "autograder.zip"
    names = build(out)
    with zipfile.ZipFile(out) as archive:
        listed = archive.namelist()
        assert sorted(listed) == names
        contents = {n: archive.read(n) for n in listed}
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in archive.infolist()}
    assert {"setup.sh", "run_autograder", "pyproject.toml", "README.md"} <= set(listed)
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    assert {n.split("/")[0] for n in listed} == {"setup.sh", "run_autograder", "pyproject.toml",
                                                 "README.md", "graders"}
    assert not [n for n in listed if n.startswith("graders/authoring") or "__pycache__" in n]
    for name, data in contents.items():
        assert not any(m.encode() in data for m in SOLUTION), name
    # no file of the reference, the template or the project's tests, under any name
    shipped = {hashlib.sha256(d).hexdigest() for d in contents.values()}
    for folder in (REFERENCE, TEMPLATE, ROOT / "tests"):
        for path in folder.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.stat().st_size > 64:
                assert hashlib.sha256(path.read_bytes()).hexdigest() not in shipped, path
    build(tmp_path / "again.zip")
    assert (tmp_path / "again.zip").read_bytes() == out.read_bytes()  # reproducible


def test_zip_seed_and_refusals(tmp_path):
    seed = tmp_path / "seed"
    seed.write_text("987654321\n")
    names = build(tmp_path / "a.zip", seed_file=seed)
    assert "grader_seed" in names
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        info = archive.getinfo("grader_seed")
        assert archive.read(info) == b"987654321\n" and (info.external_attr >> 16) & 0o777 == 0o600
    seed.write_text("not a number")
    with pytest.raises(ValueError, match="integer"):
        build(tmp_path / "b.zip", seed_file=seed)
    # a solution marker anywhere in what would be shipped stops the build
    fake = tmp_path / "repo"
    fake.mkdir()
    for part in ("pyproject.toml", "deploy/gradescope", "graders"):
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, fake / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, fake / part)
    (fake / "graders" / "oops.py").write_text(f"# {SOLUTION[0]} 1.1\n")
    with pytest.raises(ValueError, match=r"oops\.py"):
        build(tmp_path / "c.zip", root=fake)
    assert not (tmp_path / "c.zip").exists()


def test_summary_names_only_visible_tasks(tmp_path):
    """A rubric with a hidden, an after_due_date and an after_published task: the
    always-visible summary names the visible task only; each test keeps its task's
    visibility."""
    text = (ROOT / "graders" / "rubric.toml").read_text()
    path = tmp_path / "rubric.toml"
    text = text.split("[[tasks]]")[0] + "".join(
        f'[[tasks]]\nid = "1.{i}"\ntitle = "Task {i} secret-{vis}"\npoints = 10\n'
        f'visibility = "{vis}"\n\n'
        for i, vis in enumerate(("visible", "hidden", "after_due_date", "after_published"), 1))
    path.write_text(text)
    tasks = rubric.load(path).tasks
    score = Score("sub", [TaskScore(t, [TestResult("t", t.id, "passed", "")]) for t in tasks],
                  0, "default", True)
    results = results_json(score)
    assert "Task 1 secret-visible: 10 / 10" in results["output"]
    assert "secret-hidden" not in results["output"] and "1.2" not in results["output"]
    for vis in ("after_due_date", "after_published"):
        assert vis not in results["output"]
    assert [t["visibility"] for t in results["tests"]] == [t.visibility for t in tasks]
    assert results["score"] == 40


# --- the zip installed and run in an /autograder-shaped folder ---------------------------

@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The zip unpacked into autograder/source and setup.sh run on it, once per test run
    (shared by pytest-xdist's workers through a lock)."""
    if os.geteuid() != 0:
        pytest.skip("setup.sh runs as root, as on Gradescope")
    base = tmp_path_factory.getbasetemp()
    # pytest-xdist's workers have their own folders in this run's one: share the install
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "gradescope-install"
    with FileLock(str(shared) + ".lock"):
        done = shared / "done.json"
        if not done.exists():
            shutil.rmtree(shared, ignore_errors=True)
            source = shared / "autograder" / "source"
            source.mkdir(parents=True)
            build(shared / "autograder.zip")
            with zipfile.ZipFile(shared / "autograder.zip") as archive:
                archive.extractall(source)
            for script in ("setup.sh", "run_autograder"):
                (source / script).chmod(0o755)  # zipfile does not restore modes
            env = {**_clean_env(), "AUTOGRADER_ROOT": str(shared / "autograder"),
                   "TINYTRAIN_PYTHON": sys.executable, "TINYTRAIN_TORCH_INDEX": _torch_index(),
                   "TINYTRAIN_GRADER_ENV": str(shared / "opt" / "tinytrain-grader")}
            start = time.monotonic()
            proc = subprocess.run(["bash", str(source / "setup.sh")], env=env, cwd=source,
                                  capture_output=True, text=True, timeout=1500)
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            done.write_text(json.dumps({"seconds": time.monotonic() - start,
                                        "stdout": proc.stdout[-8000:]}))
    return {"root": shared / "autograder", "env": shared / "opt" / "tinytrain-grader",
            "log": done}


def _torch_index() -> str:
    """Where setup.sh takes torch from: pip's own configuration where it finds wheels on
    local disk (the development machines), else PyTorch's CPU index, as on Gradescope."""
    if "TINYTRAIN_TORCH_INDEX" in os.environ:
        return os.environ["TINYTRAIN_TORCH_INDEX"]
    return "" if os.environ.get("PIP_FIND_LINKS") else "https://download.pytorch.org/whl/cpu"


def _clean_env() -> dict[str, str]:
    """This process's environment without the test run's Python path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def run_autograder(installed: dict[str, Path], tmp_path: Path, upload: dict[str, Path | str],
                   tasks: str | None = TASK, timeout: float = 600,
                   reuse_source: bool = False) -> tuple[dict, str, float]:
    """A fresh /autograder (source from the install, run_autograder copied to its top as
    Gradescope does) with ``upload`` as the submission: {path in upload: folder to copy or
    file text}; ``reuse_source``: tmp_path/autograder/source is there already.
    (results.json, printed text, seconds)."""
    root = tmp_path / "autograder"
    if not reuse_source:
        shutil.copytree(installed["root"] / "source", root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir(parents=True)
    for where, what in upload.items():
        target = root / "submission" / where
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(what, Path):
            shutil.copytree(what, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.write_text(what)
    env = {**_clean_env(), "AUTOGRADER_ROOT": str(root),
           "GRADER_BIN": str(installed["env"] / "bin")}
    if tasks:
        env["TINYTRAIN_GRADESCOPE_TASKS"] = tasks
    start = time.monotonic()
    proc = subprocess.run([str(root / "run_autograder")], env=env, cwd=root,
                          capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((root / "results" / "results.json").read_text())
    return results, proc.stdout + proc.stderr, elapsed


def test_setup_installs_the_grader_for_root_alone(installed):
    env, source = installed["env"], installed["root"] / "source"
    for path in (env, source):
        info = path.stat()
        assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o700, path
    assert stat.S_IMODE(installed["root"].stat().st_mode) == 0o700
    # a regular install from the zip, not the checkout: the grader imported from the venv
    python = env / "bin" / "python"
    where = subprocess.run([str(python), "-P", "-c", "import graders; print(graders.__file__)"],
                           capture_output=True, text=True, env=_clean_env(), cwd="/")
    assert where.returncode == 0, where.stderr
    assert where.stdout.startswith(str(env)), where.stdout
    torch = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, env=_clean_env(), cwd="/")
    assert torch.stdout.startswith("2.13.0"), torch.stdout + torch.stderr
    print(f"setup.sh took {json.loads(installed['log'].read_text())['seconds']:.0f} s")


def test_setup_builds_a_worker_environment_the_worker_user_can_read(installed):
    """--prepare-sandbox after the chmod -R go-rwx: a worker environment of its own (built
    from this install, not one cached from another), no inode shared with a file the
    worker user cannot read, every worker module imported as the worker user."""
    printed = json.loads(installed["log"].read_text())["stdout"]
    found = re.search(r"worker environment (\S+): built", printed)
    assert found, printed
    assert "imported every worker module" in printed, printed
    env = Path(found.group(1))
    sealed = env / "site" / "graders"  # the grader's own modules: root's alone, on purpose
    for path in env.rglob("*"):
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            continue
        if sealed in path.parents:
            assert info.st_nlink == 1 and info.st_uid == 0, path
            rel = str(path.relative_to(sealed))
            assert info.st_mode & 0o077 == 0 or rel in sandbox.READABLE_GRADER_FILES, path
        else:
            assert sandbox.shareable(info) or info.st_nlink == 1, path
            assert info.st_mode & 0o004, path


def test_reference_one_folder_down_gets_full_marks(installed, tmp_path):
    upload = {"hw1/tinytrain": REFERENCE / "tinytrain", "hw1/notes.txt": "mine"}
    results, printed, _ = run_autograder(installed, tmp_path, upload)
    assert results["score"] == RUBRIC.task(TASK).points
    assert "grading hw1/tinytrain/" in printed
    assert {t["status"] for t in results["tests"]} == {"passed"}


def test_template_scores_zero_with_not_implemented(installed, tmp_path):
    results, _, _ = run_autograder(installed, tmp_path, {"tinytrain": TEMPLATE / "tinytrain"})
    assert results["score"] == 0 and results["tests"]
    assert all(t["output"].startswith("[not_implemented]") for t in results["tests"])


def test_the_package_uploaded_on_its_own_is_graded(installed, tmp_path):
    """The package's files at the top of the upload (tinytrain/'s contents)."""
    upload = {p.name: (p if p.is_dir() else p.read_text())
              for p in (REFERENCE / "tinytrain").iterdir() if p.name != "__pycache__"}
    results, printed, _ = run_autograder(installed, tmp_path, upload)
    assert "the tinytrain package itself" in printed
    assert results["score"] == RUBRIC.task(TASK).points


def test_no_package_says_where_it_looked(installed, tmp_path):
    upload = {"hw1/tinytrain.py": "x = 1\n", "hw1/tinytrain_notes/readme.txt": "",
              "other/tinytrain/README": "no __init__ here\n"}
    results, printed, _ = run_autograder(installed, tmp_path, upload)
    assert results["score"] == 0 and results["tests"] == []
    for shown in (results["output"], printed):
        assert "no tinytrain package was found" in shown
        assert "hw1/tinytrain.py" in shown and "other/tinytrain/README" in shown
    assert {"output", "score", "visibility", "tests"} <= set(results)


def test_appending_to_run_autograder_while_it_runs_does_nothing(installed, tmp_path):
    """Bash reads a script as it runs it; run_autograder ends in exec, so a line a
    submission appends to it is never run."""
    marker = tmp_path / "appended-line-ran"
    script = tmp_path / "autograder" / "run_autograder"
    hook = (REFERENCE / "tinytrain" / "ops" / "arithmetic.py").read_text() + (
        "\ntry:\n"
        f"    with open({str(script)!r}, 'a') as _f:\n"
        f"        _f.write('\\ntouch {marker}\\n')\n"
        "except OSError:\n"
        "    pass\n")
    upload = {"tinytrain": REFERENCE / "tinytrain"}
    results, _, _ = run_autograder(installed, tmp_path,
                                   {**upload, "tinytrain/ops/arithmetic.py": hook})
    assert not marker.exists()
    assert results["score"] == RUBRIC.task(TASK).points


def _hardened(installed: dict[str, Path]) -> bool:
    """The grader remembers an import failure (the hardened runner has --budget)."""
    help_text = subprocess.run([str(installed["env"] / "bin" / "tinytrain-grade"), "--help"],
                               capture_output=True, text=True, env=_clean_env()).stdout
    return "--budget" in help_text


def test_unimportable_upload_is_graded_in_seconds(installed, tmp_path):
    """A syntax error in a file ``import tinytrain`` runs, the whole rubric, through run_autograder:
    every test fails with the reason, within IMPORT_ERROR_SECONDS."""
    if not _hardened(installed):
        pytest.skip("needs the hardened runner (import failures remembered): "
                    "this grader has no --budget")
    upload = {"tinytrain": TEMPLATE / "tinytrain", "tinytrain/ops/arithmetic.py": "def broken(:\n"}
    results, _, elapsed = run_autograder(installed, tmp_path, upload, tasks=None)
    assert results["score"] == 0
    assert len(results["tests"]) > 100
    assert all("SyntaxError" in t["output"] for t in results["tests"])
    assert elapsed < IMPORT_ERROR_SECONDS, f"{elapsed:.0f} s"
    print(f"unimportable upload graded in {elapsed:.1f} s")


# --- one autograder per assignment (--tasks) and exact points -----------------------------

def _fake_score(tasks, counts, passed_every: int = 1) -> Score:
    """A score with ``counts[i]`` tests for task i, every ``passed_every``-th passed."""
    return Score("sub", [TaskScore(t, [TestResult(f"t{k}", t.id,
                                                  "passed" if k % passed_every == 0 else "failed",
                                                  "") for k in range(n)])
                         for t, n in zip(tasks, counts, strict=True)], 0, "default", True)


def test_test_maxima_add_up_to_the_points_exactly():
    """Every task of the rubric with awkward test counts (3, 7, 11, ...): the maxima add up
    to each task's points and to the rubric's total with ==, and so does a full score."""
    tasks = RUBRIC.tasks
    counts = [(3, 7, 11, 13, 17, 19, 23, 29, 31)[i % 9] for i in range(len(tasks))]
    results = results_json(_fake_score(tasks, counts))
    total = sum(t.points for t in tasks)
    assert sum(t["max_score"] for t in results["tests"]) == total
    assert results["score"] == total
    for task in tasks:
        mine = [t["max_score"] for t in results["tests"] if t["number"] == task.id]
        assert sum(mine) == task.points and max(mine) - min(mine) < 0.01, task.id
    assert results["output"].splitlines()[-1] == f"total: {total:g} / {total:g}"
    # a partial score: the top-level score is the sum of the tests' scores
    partial = results_json(_fake_score(tasks, counts, passed_every=3))
    assert partial["score"] == sum(t["score"] for t in partial["tests"]) < total
    assert partial["score"] == pytest.approx(_fake_score(tasks, counts, 3).score, abs=0.01)


def test_zip_for_one_assignment_names_its_tasks(tmp_path, capsys):
    from graders.deploy import autograder_zip

    names = build(tmp_path / "hw2.zip", tasks="2")
    assert "grader_tasks" in names
    with zipfile.ZipFile(tmp_path / "hw2.zip") as archive:
        listed = archive.read("grader_tasks").decode().strip().split(",")
    assert listed == [t.id for t in RUBRIC.tasks if t.assignment == "2"]
    assert "grader_tasks" not in build(tmp_path / "all.zip")
    with pytest.raises(ValueError, match="unknown task"):
        build(tmp_path / "bad.zip", tasks="99")
    assert autograder_zip.main(["--out", str(tmp_path / "m.zip"), "--tasks", "1.1,1.3"]) == 0
    printed = capsys.readouterr().out
    points = RUBRIC.task("1.1").points + RUBRIC.task("1.3").points
    assert f"grades 2 task(s) (1.1, 1.3), {points:g} points" in printed


def test_run_autograder_passes_the_zips_tasks_to_the_grader(tmp_path):
    """graders.deploy.gradescope with a stand-in grader that records its arguments: the
    zip's grader_tasks become --tasks; without the file, no --tasks."""
    grader = tmp_path / "fake-grade"
    grader.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/argv\n")
    grader.chmod(0o755)
    root = tmp_path / "autograder"
    make = {"hw": REFERENCE / "tinytrain"}
    for with_file in (True, False):
        shutil.rmtree(root, ignore_errors=True)
        (root / "source").mkdir(parents=True)
        shutil.copytree(make["hw"], root / "submission" / "tinytrain",
                        ignore=shutil.ignore_patterns("__pycache__"))
        if with_file:
            (root / "source" / "grader_tasks").write_text("2.1,2.2\n")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("TINYTRAIN_GRADESCOPE_TASKS", None)
        proc = subprocess.run([sys.executable, "-m", "graders.deploy.gradescope", "--root",
                               str(root), "--grader", str(grader)], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        argv = (tmp_path / "argv").read_text().split()
        assert ("--tasks" in argv) == with_file
        if with_file:
            assert argv[argv.index("--tasks") + 1] == "2.1,2.2"


def test_assignment_autograder_end_to_end(installed, tmp_path):
    """The zip built for two tasks (--tasks 1.1,1.3), its grader_tasks in an installed
    /autograder: the reference gets exactly those tasks' points, results.json holds their
    tests only, and the maxima add up to the points exactly."""
    build(tmp_path / "hw.zip", tasks="1.1,1.3")
    with zipfile.ZipFile(tmp_path / "hw.zip") as archive:
        spec = archive.read("grader_tasks").decode()
    source = tmp_path / "autograder" / "source"
    shutil.copytree(installed["root"] / "source", source)
    (source / "grader_tasks").write_text(spec)
    results, _, _ = run_autograder(installed, tmp_path, {"tinytrain": REFERENCE / "tinytrain"},
                                   tasks=None, reuse_source=True)
    points = RUBRIC.task("1.1").points + RUBRIC.task("1.3").points
    assert {t["number"] for t in results["tests"]} == {"1.1", "1.3"}
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) == points
    assert f"total: {points:g} / {points:g}" in results["output"]


def test_readme_quotes_no_stale_figures_of_the_zip():
    """The zip's size and file count change with every grader change: the README leaves
    them to the command's own output (it prints them)."""
    import re

    text = (ROOT / "README.md").read_text()
    assert not re.search(r"zip \(\d+ KiB|\d+ KiB, \d+ files", text)
    assert "docs/instructors.md" in text and (ROOT / "docs" / "instructors.md").is_file()
