"""What student_template/README.md tells students holds: its Function example runs, each
example script runs with the assignments the guide says it needs, its install commands
agree with the Classroom workflow, and the grader's wheel holds the grader and nothing else."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from graders.authoring import template

from ..conftest import REFERENCE, ROOT, TEMPLATE

GUIDE = (TEMPLATE / "README.md").read_text()
WORKFLOW = (ROOT / ".github" / "workflows" / "classroom.yml").read_text()


def _run(code_or_args: str | list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    args = [sys.executable, "-c", code_or_args] if isinstance(code_or_args, str) else code_or_args
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"})


def test_the_guides_function_example_runs_and_matches_torch():
    block = re.search(r"```python\n(.*?)```", GUIDE, re.S)
    assert block and "class ScaledCube(Function)" in block[1]
    example = "\n".join(line[2:] if line.startswith("  ") else line
                        for line in block[1].splitlines())
    code = ("import tinytrain as tt\nx = tt.tensor([1.0, -2.0, 0.5], dtype=tt.float64, "
            "requires_grad=True)\n" + example +
            "\nassert y.grad_fn is not None\ny.sum().backward()\n"
            "print(y.data.tolist(), x.grad.data.tolist())\n")
    done = _run(code, REFERENCE)
    assert done.returncode == 0, done.stderr
    got_y, got_grad = _two_lists(done.stdout)
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64, requires_grad=True)
    y = 2.0 * x ** 3
    y.sum().backward()
    assert got_y == pytest.approx(y.tolist(), rel=1e-15)
    assert got_grad == pytest.approx(x.grad.tolist(), rel=1e-15)


def _two_lists(text: str) -> tuple[list[float], list[float]]:
    found = re.findall(r"\[[^\]]*\]", text)
    assert len(found) == 2, text
    return tuple([float(v) for v in item.strip("[]").split(",")] for item in found)


def _example_rows() -> list[tuple[str, tuple[str, ...]]]:
    rows = re.findall(r"^\| `(python examples/[^`]+)`.*\| ([\d, ]+) \|$", GUIDE, re.M)
    return [(command, tuple(sorted(a.strip() for a in needs.split(",")))) for command, needs in rows]


def test_the_guide_says_what_every_example_needs():
    described = {shlex.split(command)[1] for command, _ in _example_rows()}
    assert described == {f"examples/{p.name}" for p in (TEMPLATE / "examples").glob("*.py")}


@pytest.mark.parametrize("command, needs", _example_rows(),
                         ids=[shlex.split(c)[1].split("/")[1] for c, _ in _example_rows()])
def test_each_example_runs_with_the_assignments_the_guide_names(command, needs, tmp_path):
    """A template with only those assignments done (cut from the reference) runs it."""
    template.generate(REFERENCE / "tinytrain", tmp_path / "tinytrain", template.rubric_titles(),
                      only=lambda task: task.split(".")[0] not in needs)
    template.copy_examples(REFERENCE / "examples", tmp_path / "examples")
    args = shlex.split(command)
    if "train_gpt_parallel" in args[1]:
        args.append("--quick")  # 8 steps of a smaller model: the point is that it runs
    done = _run([sys.executable, *args[1:]], tmp_path, timeout=300)
    assert done.returncode == 0, f"{command} with assignments {needs}: {done.stderr[-2000:]}"


def test_the_install_commands_agree_with_the_classroom_workflow():
    torch_line = re.search(r"^python -m pip install (torch==\S+ --index-url \S+)$", GUIDE, re.M)
    assert torch_line, "the guide installs CPU torch"
    assert f"pip install {torch_line[1]}" in WORKFLOW, "the workflow installs the same torch"
    command = re.search(r'^  python -m pip install "\$\((grep [^)]*)\)"$', GUIDE, re.M)
    assert command, "the guide reads GRADER from the workflow"
    if shutil.which("grep") is None:
        pytest.skip("no grep")
    done = subprocess.run(["bash", "-c", command[1]], cwd=ROOT, capture_output=True, text=True,
                          timeout=10)
    expected = re.search(r'^\s*GRADER: "([^"]+)"', WORKFLOW, re.M)[1]
    assert done.stdout.strip() == expected, done.stderr


def test_the_wheel_students_install_holds_the_grader_only(tmp_path):
    """``pip wheel`` of the repository (what a course publishes for students): the graders
    package with its data files, and nothing of reference/, the template or the tests."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed (needed to build without network)")
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "graders", source / "graders",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "--no-index", "-q", str(source), "-w", str(tmp_path / "dist")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "dist").glob("tinytrain_grader-*-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    tops = {n.split("/")[0] for n in names}
    assert tops == {"graders", next(t for t in tops if t.endswith(".dist-info"))}, tops
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "graders").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert shipped - names == set(), "every file of graders/ (data files included) is in the wheel"
