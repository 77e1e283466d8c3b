"""Assignment 2: every operator check, generated from the op table (``graders.optable``)
for the ops of assignment 2's tasks; ``graders.suites._opchecks`` says what each check
does. Test ids name the operator, e.g. ``test_backward[maximum]`` or
``test_subgradient[relu-zero]``.
"""

from __future__ import annotations

from graders.suites._opchecks import op_checks

globals().update(op_checks("2"))
