"""Answers recorded in one grading are worth nothing in another: every input a grading
draws depends on the grading seed (DESIGN.md), so a lookup table of the reference's
answers wins no point at another seed.

The liar: the reference is graded at seed 0 and every reply its worker sent is recorded,
keyed by the request exactly as the worker received it (the probe's name and its
arguments, in the wire format). The template is then graded with a worker that answers
every request found in the table with the recorded reply (in the recorded order where a
request came several times) and any other request with its own (failing) work: a
submission that replaced the probes with a table, as tests/checks/test_lying_observations.py's
liars replace them with constants. The table lives on the grader's side of the pipe
here (the grader sees only replies, so this is the same as a worker holding the table)
because the sandboxed worker can write nothing that outlives it.

At seed 0 the replay must win every point (the control: the table does answer the
grader's requests); at seed 12345 it must win none. All three gradings run every task
with ``--profile quick`` (the first third of each test's examples: every test and every
fixed case runs, only fewer of Hypothesis's draws) and ``--no-shrink``, so the whole test
takes a few minutes in CI."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import pickle
import sys
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..conftest import REFERENCE, TEMPLATE, wait_for_grading

OPTIONS = ("--profile", "quick", "--no-shrink")
SECRET = 12345


def _key(request: dict[str, Any]) -> str:
    from graders.harness import protocol

    wire = protocol.encode({"probe": request["probe"], "args": request["args"],
                            "kwargs": request["kwargs"]})
    return hashlib.sha256(wire).hexdigest()


def _grade_with(mode: str, table_path: Path, submission: Path, out: Path, seed: int,
                timeout: float = 900) -> dict[str, Any]:
    """Grade ``submission`` at ``seed`` in a fork of this process whose grader records
    (``mode="record"``) every worker reply into ``table_path``, or replays (``"replay"``)
    the replies recorded there."""
    import torch  # noqa: F401 - imported before forking, once

    import graders.cli
    from graders.harness import client

    out.mkdir(parents=True, exist_ok=True)
    log = out / "grader.log"
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            sys.stdout = sys.stderr = open(log, "w")
            real = client.SandboxClient._exchange
            if mode == "record":
                table: dict[str, list[Any]] = defaultdict(list)

                def exchange(self, worker, request, deadline, what, limit):
                    reply = real(self, worker, request, deadline, what, limit)
                    if request.get("cmd") == "call":
                        table[_key(request)].append(copy.deepcopy(reply))
                    return reply
            else:
                table = pickle.loads(table_path.read_bytes())
                served: dict[str, int] = defaultdict(int)
                hits = [0, 0]
                missed: list[Any] = []
                hit_probes: dict[str, int] = defaultdict(int)

                def exchange(self, worker, request, deadline, what, limit):
                    if request.get("cmd") == "call":
                        key = _key(request)
                        hits[key in table] += 1
                        if key not in table:
                            missed.append(request)
                        else:
                            hit_probes[request["probe"]] += 1
                        if key in table:
                            replies = table[key]
                            reply = replies[min(served[key], len(replies) - 1)]
                            served[key] += 1
                            return copy.deepcopy(reply)
                    return real(self, worker, request, deadline, what, limit)
            client.SandboxClient._exchange = exchange
            code = graders.cli.main([str(submission), "--out", str(out), "--seed", str(seed),
                                     *OPTIONS])
            if mode == "record":
                table_path.write_bytes(pickle.dumps(dict(table)))
            else:
                (out / "hits.json").write_text(json.dumps({
                    "missed": hits[0], "hit": hits[1], "hit_probes": hit_probes,
                    "missed_probes": sorted({r["probe"] for r in missed})}))
                (out / "missed.pickle").write_bytes(pickle.dumps(missed))
        except BaseException:  # noqa: BLE001 - reported through the log and the exit code
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            os._exit(code)
    status = wait_for_grading(pid, submission, timeout)
    score_path = out / "score.json"
    score = json.loads(score_path.read_text()) if score_path.exists() else {}
    score["_exit"] = os.waitstatus_to_exitcode(status)
    score["_log"] = log.read_text() if log.exists() else ""
    hits_path = out / "hits.json"
    score["_hits"] = json.loads(hits_path.read_text()) if hits_path.exists() else {}
    return score


def _passed(score: dict[str, Any]) -> list[str]:
    return [f"{t['id']} {x['name']}" for t in score["tasks"] for x in t["tests"]
            if x["status"] == "passed"]


def test_answers_recorded_at_one_seed_win_nothing_at_another(tmp_path):
    table = tmp_path / "table.pickle"
    recorded = _grade_with("record", table, REFERENCE, tmp_path / "record", seed=0)
    assert recorded["_exit"] == 0, recorded["_log"]
    assert recorded["score"] == recorded["max_score"], "the reference lost points at seed 0"

    # the control: at the recording's own seed the table answers every request
    # (but assignment 6: its requests carry the kernel source the grader reads from the
    # submission being graded, so another submission's answers never match them)
    again = _grade_with("replay", table, TEMPLATE, tmp_path / "again", seed=0)
    assert again["_exit"] == 0, again["_log"]
    lost = {t["id"]: t["score"] for t in again["tasks"]
            if t["score"] < t["max_score"] and not t["id"].startswith("6.")}
    assert not lost, (
        f"the replay at seed 0 lost points in {lost} (the table does not answer the "
        f"grader's requests: {again['_hits']})")
    assert all(p.startswith("cuda.") for p in again["_hits"]["missed_probes"]), again["_hits"]

    replay = _grade_with("replay", table, TEMPLATE, tmp_path / "replay", seed=SECRET)
    assert replay["_exit"] == 0, replay["_log"]
    passed = _passed(replay)
    scored = {t["id"]: t["score"] for t in replay["tasks"] if t["score"]}
    assert not passed and not scored, (
        f"answers recorded at seed 0 replayed at seed {SECRET} passed {len(passed)} "
        f"tests (task scores {scored}): {passed}")
    assert replay["score"] == 0


def test_case_values_are_todays_at_seed_0_and_others_at_another_seed():
    """The helpers behind every fixed case: at grading seed 0 the legacy values (the
    seed a case was written with, the literal arrays, the compile constexprs); at another
    seed other values, the same shapes and kinds, never those of seed 0."""
    import numpy as np

    from graders.kerneltable import KERNELS
    from graders.suites import _seed

    program = {"leaves": [[np.array([0.5, -1.0]), True], [[1.0, 2.0], False]],
               "ops": [["add", 0, 1]]}
    try:
        _seed.set_grading_seed(0)
        assert _seed.case_seed(7, "a case") == 7
        assert (_seed.case_rng(7, "a case").random(3) ==
                np.random.default_rng(7).random(3)).all()
        assert _seed.seeded_values([0.5, -1.0], "x") == [0.5, -1.0]
        assert _seed.seeded_program(program, "p") is program
        assert _seed.reseeded(program, [program], "p") is program
        legacy = [r["constexprs"] for k in KERNELS for r in k.compile_requests()]
        assert legacy == [dict(k.compile_constexprs) for k in KERNELS for _ in k.compile_dtypes]

        _seed.set_grading_seed(SECRET)
        assert _seed.case_seed(7, "a case") != 7
        assert _seed.case_seed(7, "a case") == _seed.case_seed(7, "a case")
        assert _seed.case_seed(7, "a case") != _seed.case_seed(7, "another case")
        drawn = _seed.seeded_values([0.5, -1.0], "x")
        assert isinstance(drawn, list) and len(drawn) == 2 and drawn != [0.5, -1.0]
        assert 0.0 not in drawn
        other = _seed.seeded_program(program, "p")
        assert other["ops"] == program["ops"]
        assert [flag for _, flag in other["leaves"]] == [True, False]
        assert isinstance(other["leaves"][0][0], np.ndarray)
        assert not np.array_equal(other["leaves"][0][0], program["leaves"][0][0])
        assert _seed.reseeded(dict(program), [program], "p") == dict(program)  # not the same object
        seeded = [r["constexprs"] for k in KERNELS for r in k.compile_requests()]
        assert all(s != c and s.keys() == c.keys() for s, c in zip(seeded, legacy))
    finally:
        _seed.set_grading_seed(0)
