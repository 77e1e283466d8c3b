"""Tasks 5.8-5.10: the layer operators (embedding, layer_norm, dropout), checked like
assignment 2's operators by the checks generated from the op table
(``graders.suites._opchecks``): forward values, gradients against torch and against
central differences, error cases. Dropout is random: here only its deterministic case
(p=1); test_dropout.py checks the rest statistically.
"""

from __future__ import annotations

from graders.suites._opchecks import op_checks

globals().update(op_checks("5"))
