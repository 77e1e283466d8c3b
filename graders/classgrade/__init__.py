"""Grading a whole class: ``tinytrain-grade-class SUBMISSIONS --out REPORT``.

Each submission is graded by the per-submission grader (``tinytrain-grade``) in its own
process group, under an outer wall-clock limit, on this machine (``--jobs N``) or on a
Dask cluster (``--dask ADDRESS``). The results become a gradebook (``grades.csv``, in
otter-grader's layout), per-student feedback, a self-contained ``report.html`` and a
similarity check (``similarity.csv``).
"""
