"""--dask ADDRESS: the same gradings on a Dask cluster (a LocalCluster of two worker
processes here) give the same gradebook rows as grading on this machine."""

from __future__ import annotations

import csv

import pytest

from .class_builder import Student, build
from .class_fixtures import TASKS, grade_class, graded_class  # noqa: F401 - the fixture

distributed = pytest.importorskip("distributed", reason="the cluster extra is not installed")


def test_dask_cluster_grades_like_the_local_machine(graded_class, tmp_path):  # noqa: F811
    students = [Student("reference", "reference"),
                Student("m-records-without-requires-grad", "mutant", "1.1"),
                Student("broken", "broken", zipped=True)]
    submissions = build(tmp_path / "class", students)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        result = grade_class(submissions, tmp_path / "report", "--tasks", TASKS, "--no-shrink",
                             "--dask", cluster.scheduler_address)
    assert result.returncode == 0, result.stderr
    assert f"Dask cluster at {cluster.scheduler_address} (2 workers, 2 threads)" in result.stderr
    with open(tmp_path / "report" / "grades.csv", newline="") as handle:
        on_dask = {r["file"]: r for r in csv.DictReader(handle)}
    local = {r["file"]: r for r in graded_class.grades()}
    for name in ("points-per-question", "reference", "m-records-without-requires-grad", "broken"):
        assert on_dask[name] == local[name], name
    report = (tmp_path / "report" / "report.html").read_text()
    assert "Dask cluster at" in report
