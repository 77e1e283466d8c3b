"""``report.html`` (the class) and each student's ``feedback.html``: self-contained pages
(inline CSS and SVG, no script, no font, nothing fetched), linked by relative paths so the
REPORT folder can be zipped, copied or opened from disk."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..rubric import Task
from . import plots
from .gradebook import STATUS_LABELS, Row
from .late import LatePolicy
from .similarity import KNOWN_MIN, MIN_SHARED, Pair

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1100px;
padding:0 1em;color:#1d1d1f}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #e4e4e4;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f5f5f7}td.n,th.n{text-align:right}
.ok{color:#1e7d32}.bad{color:#b8433a;font-weight:600}.muted{color:#777}
pre{background:#f7f7f9;padding:.6em;overflow:auto;max-height:24em;font-size:12px;
white-space:pre-wrap;overflow-wrap:anywhere}
table.panes{table-layout:fixed;width:100%}table.panes td,table.panes th{width:50%}
table.causes{table-layout:fixed;width:100%}table.causes td{overflow-wrap:anywhere}
table.causes td:nth-child(1){width:30%}
table.causes td:nth-child(2){width:10%}table.causes td:nth-child(3){width:25%}
td.status{max-width:22em;overflow-wrap:anywhere}
mark{background:#ffe08a}svg.plot{width:100%;height:auto;max-width:760px;display:block}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;
padding:.5em 1em}.card b{display:block;font-size:1.4em}
tr.late td,.late-key{background:#fff4e5}.wide{overflow-x:auto}figure{margin:1em 0}
figcaption{color:#555;font-size:.9em}
"""


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value == value else "-"


def feedback_href(name: str) -> str:
    return f"students/{quote(name)}/feedback.html"


@dataclass
class Context:
    """What the class report shows besides the rows."""

    title: str
    tasks: tuple[Task, ...]
    options: dict[str, Any]
    seed_source: str
    policy: LatePolicy | None
    executor: str
    started: datetime
    wall_time: float
    pairs: list[Pair]
    similarity_info: dict[str, Any]
    notes: list[str]
    graded_now: int
    reused: int
    changes: list[dict[str, Any]] = field(default_factory=list)  # history.changes


def task_stats(rows: list[Row], tasks: tuple[Task, ...]) -> list[dict[str, Any]]:
    stats = []
    for task in tasks:
        values = [r.task_points[task.id] for r in rows]
        stats.append({
            "task": task,
            "mean": statistics.fmean(values) if values else float("nan"),
            "median": statistics.median(values) if values else float("nan"),
            "full": sum(v >= task.points - 1e-9 for v in values) / len(values) if values else 0.0,
            "zero": sum(v <= 0 for v in values) / len(values) if values else 0.0,
        })
    return stats


_NUMBER = re.compile(r"0x[0-9a-fA-F]+|[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")


def cause_key(message: str) -> str:
    """What identifies a failure's cause: the message's first line with its numbers (values,
    shapes, addresses) made alike, so the same mistake on other inputs is one cause."""
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    return _NUMBER.sub("#", first)[:300]


def failed_tests(rows: list[Row]) -> list[dict[str, Any]]:
    """Causes of failure by how many submissions hit them: one item per distinct message
    (numbers alike), with the tests it failed and one example. Only graded submissions
    count (one that did not import has no test that ran), and unfinished stubs
    (``not_implemented``) do not."""
    found: dict[str, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: r.name):
        if row.status != "graded":
            continue
        for task_id, test in row.tests():
            if test["status"] in ("passed", "not_implemented"):
                continue
            message = test.get("message") or f"[{test['status']}]"
            item = found.setdefault(cause_key(message), {
                "cause": message.strip().splitlines()[0] if message.strip() else "",
                "submissions": set(), "tests": {}, "statuses": {}, "example": None})
            item["submissions"].add(row.name)
            item["tests"].setdefault((task_id, test["name"]), test.get("description", ""))
            item["statuses"][test["status"]] = item["statuses"].get(test["status"], 0) + 1
            if item["example"] is None:
                item["example"] = (row.name, task_id, test["name"], message)
    for item in found.values():
        item["count"] = len(item["submissions"])
    return sorted(found.values(), key=lambda i: (-i["count"], -len(i["tests"]), i["cause"]))


def render_report(rows: list[Row], ctx: Context) -> str:
    rows = sorted(rows, key=lambda r: r.name)
    tasks = ctx.tasks
    max_total = round(sum(t.points for t in tasks), 4)
    use_final = ctx.policy is not None or any(r.adjustment is not None for r in rows)
    shown_totals = [r.final if use_final else r.total for r in rows]
    graded = [r for r in rows if r.status == "graded"]
    problems = [r for r in rows if r.status != "graded" or r.test_problems()]
    parts = [f"<h1>{escape(ctx.title)}</h1>", _header(rows, ctx, max_total, shown_totals)]

    parts.append("<h2 id='distribution'>Distribution of total scores</h2>")
    label = "final points (after the late penalty)" if use_final else "total points"
    parts.append(_figure(plots.totals_histogram(shown_totals, max_total, label),
                         f"{len(rows)} submissions; {label}."))

    stats = task_stats(rows, tasks)
    parts.append("<h2 id='tasks'>Tasks</h2>")
    parts.append(_task_table(stats))
    ids = [t.id for t in tasks]
    fractions = {t.id: [r.task_points[t.id] / t.points for r in rows] for t in tasks}
    parts.append(_figure(plots.task_bars(ids, [s["mean"] / s["task"].points for s in stats],
                                         [s["full"] for s in stats]),
                         "Mean score (share of the task's points) and share of the class with "
                         "full marks, per task."))
    parts.append(_figure(plots.task_heatmap(ids, fractions),
                         "How many submissions scored in each band, per task."))

    parts.append("<h2 id='failed'>Why tests failed</h2>")
    parts.append(_failed_table(failed_tests(rows), len(rows)))

    parts.append("<h2 id='problems'>Not graded, errors, crashes and timeouts</h2>")
    parts.append(_problem_table(problems))

    parts.append("<h2 id='timing'>Grading time</h2>")
    ok_times = [r.duration for r in graded]
    bad_times = [r.duration for r in rows if r.status != "graded"]
    parts.append(_figure(plots.time_histogram(ok_times, bad_times),
                         _timing_caption(rows, ctx)))

    parts.append("<h2 id='changes'>Regrades that changed a grade</h2>")
    parts.append(_changes_table(ctx.changes))

    parts.append("<h2 id='students'>Submissions</h2>")
    parts.append(_student_table(rows, tasks, ctx.policy))

    parts.append("<h2 id='similarity'>Similar submissions</h2>")
    parts.append(_similarity_section([p for p in ctx.pairs if not p.known], ctx.similarity_info))
    parts.append("<h2 id='known'>Submissions that share code with known sources</h2>")
    parts.append(_known_section([p for p in ctx.pairs if p.known], ctx.similarity_info))
    return _page(ctx.title, "\n".join(parts))


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def _header(rows: list[Row], ctx: Context, max_total: float, totals: list[float]) -> str:
    count = len(rows)
    graded = sum(r.status == "graded" for r in rows)
    by_status = {s: sum(r.status == s for r in rows) for s in STATUS_LABELS}
    mean = statistics.fmean(totals) if totals else float("nan")
    median = statistics.median(totals) if totals else float("nan")
    broken = by_status["import_error"] + by_status["import_timeout"]
    cards = [("submissions", str(count)), ("graded", str(graded)),
             ("did not import", str(broken)), ("no package", str(by_status["no_package"])),
             ("grading failed", str(by_status["error"] + by_status["crashed"]
                                    + by_status["timeout"])),
             ("mean", f"{_num(mean)} / {max_total:g}"),
             ("median", f"{_num(median)} / {max_total:g}")]
    html = ["<div class='cards'>"]
    html += [f"<div class='card'>{escape(k)}<b>{escape(v)}</b></div>" for k, v in cards]
    html.append("</div>")
    o = ctx.options
    settings = [
        ("tasks", ", ".join(t.id for t in ctx.tasks)),
        ("seed", f"{o.get('seed', 0)} ({ctx.seed_source})"),
        ("profile", o.get("profile", "default") + (", no shrinking" if o.get("no_shrink") else "")),
        ("limit per submission", f"{o.get('timeout'):g} s"),
        ("ran", f"{ctx.executor}; started {ctx.started.isoformat(timespec='seconds')}; "
                f"{ctx.wall_time:.0f} s; graded now {ctx.graded_now}, kept from an earlier "
                f"run {ctx.reused}"),
        ("late policy", ctx.policy.describe() if ctx.policy else "none (no --deadline)"),
        ("versions", _versions(rows)),
    ]
    html.append("<table>")
    html += [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in settings]
    html.append("</table>")
    for note in ctx.notes:
        html.append(f"<p class='muted'>{escape(note)}</p>")
    html.append("<p><a href='grades.csv'>grades.csv</a> · <a href='canvas.csv'>canvas.csv</a>"
                " · <a href='gradescope.csv'>gradescope.csv</a> · <a href='similarity.csv'>"
                "similarity.csv</a> · <a href='history.jsonl'>history.jsonl</a> · "
                "hand-back folders: <code>handback/</code></p>")
    return "\n".join(html)


def _versions(rows: list[Row]) -> str:
    seen: dict[str, int] = {}
    for row in rows:
        if row.score and row.status == "graded":
            env = row.score.get("environment", {})
            key = (f"grader {row.score.get('grader_version')}, torch {env.get('torch')}, "
                   f"hypothesis {env.get('hypothesis')}, python {env.get('python')}")
            seen[key] = seen.get(key, 0) + 1
    if len(seen) > 1:
        return "MIXED: " + "; ".join(f"{k} ({n} submissions)" for k, n in seen.items())
    return next(iter(seen), "-")


def _task_table(stats: list[dict[str, Any]]) -> str:
    html = ["<table><tr><th>task</th><th>title</th><th class='n'>points</th>"
            "<th class='n'>mean</th><th class='n'>median</th><th class='n'>full marks</th>"
            "<th class='n'>zero</th></tr>"]
    for s in stats:
        t = s["task"]
        html.append(f"<tr><td>{t.id}</td><td>{escape(t.title)}</td><td class='n'>{t.points:g}</td>"
                    f"<td class='n'>{_num(s['mean'])}</td><td class='n'>{_num(s['median'])}</td>"
                    f"<td class='n'>{s['full']:.0%}</td><td class='n'>{s['zero']:.0%}</td></tr>")
    html.append("</table>")
    return "\n".join(html)


def _failed_table(items: list[dict[str, Any]], count: int, limit: int = 25) -> str:
    if not items:
        return ("<p>No test of a graded submission failed (unfinished stubs, "
                "<code>not_implemented</code>, not counted).</p>")
    html = ["<p class='muted'>Why tests of graded submissions failed, errored or timed out: "
            "one row per cause (a message, its numbers aside), most submissions first. "
            "Unfinished stubs (<code>not_implemented</code>) and submissions that were not "
            "graded (no package, did not import) are not counted.</p>",
            "<table class='causes'><tr><th>cause</th><th class='n'>submissions</th>"
            "<th>tests</th><th>one example</th></tr>"]
    for item in items[:limit]:
        name, task_id, test_name, message = item["example"]
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(item["statuses"].items()))
        tests = sorted(item["tests"])
        shown = ", ".join(f"{t} <code>{escape(n)}</code>" for t, n in tests[:4])
        if len(tests) > 4:
            shown += f" and {len(tests) - 4} more"
        short = "\n".join(message.splitlines()[:12])
        html.append(
            f"<tr><td><code>{escape(item['cause'][:200])}</code></td>"
            f"<td class='n'>{item['count']} of {count}<br><span class='muted'>{escape(statuses)}"
            f"</span></td><td>{shown}</td><td><a href='{feedback_href(name)}'>{escape(name)}</a>"
            f" ({escape(task_id)} <code>{escape(test_name)}</code>)"
            f"<pre>{escape(short)}</pre></td></tr>")
    html.append("</table>")
    if len(items) > limit:
        html.append(f"<p class='muted'>{len(items) - limit} more causes; see each "
                    "student's feedback.</p>")
    return "\n".join(html)


def _problem_table(rows: list[Row]) -> str:
    if not rows:
        return "<p>None: every submission was graded and no test crashed or hung.</p>"
    html = ["<table><tr><th>submission</th><th>status</th><th>what happened</th></tr>"]
    for row in rows:
        if row.status != "graded":
            what = row.reason
            status = f"<span class='bad'>{escape(STATUS_LABELS.get(row.status, row.status))}</span>"
        else:
            counts = row.test_problems()
            what = ", ".join(f"{n} test{'s' if n > 1 else ''} ended in {s}"
                             for s, n in sorted(counts.items()))
            examples = [t.get("message", "") for _, t in row.tests()
                        if t["status"] in ("error", "timeout")]
            if examples and examples[0]:
                what += f": {examples[0].splitlines()[0][:200]}"
            status = "graded"
        html.append(f"<tr><td><a href='{feedback_href(row.name)}'>{escape(row.name)}</a></td>"
                    f"<td>{status}</td><td>{escape(what)}</td></tr>")
    html.append("</table>")
    return "\n".join(html)


def _changes_table(changes: list[dict[str, Any]]) -> str:
    if not changes:
        return ("<p>None: no submission's latest grading changed its score or status (every "
                "grading is kept in <a href='history.jsonl'>history.jsonl</a>).</p>")
    html = ["<p class='muted'>The latest grading against the one before it; every grading "
            "(when, which content, what score) is in <a href='history.jsonl'>history.jsonl"
            "</a>.</p>",
            "<table class='changes'><tr><th>submission</th><th>before</th><th>now</th>"
            "<th class='n'>gradings</th></tr>"]

    def cell(record: dict[str, Any]) -> str:
        score = record.get("score")
        shown = "-" if score is None else _num(float(score))
        status = record.get("status") or "?"
        extra = "" if status == "graded" else f" ({STATUS_LABELS.get(status, status)})"
        return (f"<b>{shown}</b>{escape(extra)}<br><span class='muted'>"
                f"{escape(str(record.get('graded_at') or ''))}, content "
                f"{escape(str(record.get('content_hash') or '')[:12])}</span>")

    for change in changes:
        name = change["submission"]
        html.append(f"<tr><td><a href='{feedback_href(name)}'>{escape(name)}</a></td>"
                    f"<td>{cell(change['before'])}</td><td>{cell(change['now'])}</td>"
                    f"<td class='n'>{change['count']}</td></tr>")
    html.append("</table>")
    return "\n".join(html)


def _timing_caption(rows: list[Row], ctx: Context) -> str:
    times = [r.duration for r in rows if r.duration]
    if not times:
        return "No grading times recorded."
    return (f"Per submission: median {statistics.median(times):.1f} s, longest "
            f"{max(times):.1f} s; the whole batch took {ctx.wall_time:.0f} s of wall time "
            f"({ctx.executor}).")


def _student_table(rows: list[Row], tasks: tuple[Task, ...], policy: LatePolicy | None) -> str:
    final = policy is not None or any(r.adjustment is not None for r in rows)
    head = ["submission", "student", *(t.id for t in tasks), "raw" if final else "total"]
    if final:
        head += ["days late", "penalty", "final"]
    head += ["time (s)", "status"]
    html = ["<div class='wide'><table><tr>" + "".join(
        f"<th{' class=n' if h not in ('submission', 'student', 'status') else ''}>{escape(h)}</th>"
        for h in head) + "</tr>"]
    for row in rows:
        cells = [f"<td><a class='feedback' href='{feedback_href(row.name)}'>{escape(row.name)}</a></td>",
                 f"<td>{escape(', '.join(row.entry.names))}</td>"]
        cells += [f"<td class='n'>{_num(row.task_points[t.id])}</td>" for t in tasks]
        cells.append(f"<td class='n'>{_num(row.total)}</td>")
        if final:
            late = "-" if policy is None else "?" if row.days_late is None else str(row.days_late)
            cells += [f"<td class='n'>{late}</td>",
                      f"<td class='n'>{_num(row.penalty_points)}"
                      f"{f' ({row.penalty_percent:g}%)' if row.penalty_percent else ''}</td>",
                      f"<td class='n'><b>{_num(row.final)}</b></td>"]
        css = "ok" if row.status == "graded" else "bad"
        status = escape(row.grading_status)
        if row.adjustment is not None:
            status += f"<br><span class='muted'>adjusted: {escape(row.adjustment.describe())}</span>"
        cells.append(f"<td class='n'>{row.duration:.1f}</td>")
        cells.append(f"<td class='status {css}'>{status}</td>")
        late = " class='late'" if row.days_late else ""
        html.append(f"<tr{late}>" + "".join(cells) + "</tr>")
    html.append("</table></div>")
    if policy:
        html.append("<p class='muted'><span class='late-key'>Shaded rows</span> were submitted "
                    "late.</p>")
    return "\n".join(html)


def clusters(pairs: list[Pair]) -> list[list[str]]:
    """Groups of three or more submissions joined by flagged pairs (a copy passed around:
    three pairs of one three-way copy are one group), largest first."""
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for p in pairs:
        if p.flagged and not p.known:
            parent[root(p.a)] = root(p.b)
    groups: dict[str, list[str]] = {}
    for name in parent:
        groups.setdefault(root(name), []).append(name)
    found = [sorted(g) for g in groups.values() if len(g) >= 3]
    return sorted(found, key=lambda g: (-len(g), g))


def _similarity_section(pairs: list[Pair], info: dict[str, Any], limit: int = 10) -> str:
    html = [f"<p class='muted'>copydetect (MOSS's winnowing) on each submission's solution "
            f"regions (the lines that differ from the student template), comparing "
            f"{info.get('compared', 0)} submissions. Not counted: the template's own code "
            f"({info.get('template_fingerprints', 0)} fingerprints) and code found in more "
            f"than {info.get('common_max')} submissions ({info.get('common_fingerprints', 0)} "
            f"fingerprints). Matches shorter than {info.get('noise')} normalised characters "
            f"are ignored. Most shared code first; marked when one shares a third or more of its "
            f"code with the other and at least {MIN_SHARED} tokens. A high share is a reason "
            f"to read both, not a verdict.</p>"]
    if info.get("error"):
        html.append(f"<p class='bad'>{escape(info['error'])}</p>")
    shown = pairs[:limit]
    if not shown:
        html.append("<p>No two submissions share code beyond the template and common code.</p>")
        return "\n".join(html)
    groups = clusters(pairs)
    if groups:
        html.append("<p><b>Clusters</b> (three or more submissions that share code with one "
                    "another, pair by pair below):</p><ul class='clusters'>")
        for group in groups:
            links = ", ".join(f"<a href='{feedback_href(n)}'>{escape(n)}</a>" for n in group)
            html.append(f"<li class='bad'>{len(group)} submissions: {links}"
                        f"<span class='muted'> ({escape(', '.join(group))})</span></li>")
        html.append("</ul>")
    html.append("<table><tr><th>submission</th><th>submission</th><th class='n'>similarity</th>"
                "<th class='n'>shared tokens</th></tr>")
    for p in shown:
        flag = " class='bad'" if p.flagged else ""
        html.append(f"<tr><td><a href='{feedback_href(p.a)}'>{escape(p.a)}</a> "
                    f"<span class='muted'>({p.similarity_a:.0%} of its code)</span></td>"
                    f"<td><a href='{feedback_href(p.b)}'>{escape(p.b)}</a> "
                    f"<span class='muted'>({p.similarity_b:.0%})</span></td>"
                    f"<td class='n'><span{flag}>{p.similarity:.0%}</span></td>"
                    f"<td class='n'>{p.shared_tokens}</td></tr>")
    html.append("</table>")
    for p in shown:
        if p.snippet_a and p.flagged:
            html.append(f"<details><summary>{escape(p.a)} and {escape(p.b)}: the shared code "
                        f"marked</summary><table class='panes'><tr><th>{escape(p.a)}</th>"
                        f"<th>{escape(p.b)}</th></tr><tr><td><pre>{p.snippet_a}</pre></td>"
                        f"<td><pre>{p.snippet_b}</pre></td></tr></table></details>")
    html.append("<p class='muted'>All pairs that share code: <a href='similarity.csv'>"
                "similarity.csv</a>.</p>")
    return "\n".join(html)


def _known_section(matches: list[Pair], info: dict[str, Any], limit: int = 10) -> str:
    graders, known = info.get("grader_sources", []), info.get("known_sources", [])
    given = (f" and {len(known)} folder(s) given with --known-sources "
             f"({', '.join(escape(k) for k in known)})" if known else "")
    html = [f"<p class='muted'>Each submission's solution regions against the "
            f"{len(graders)} modules of the grader that hold code of the homework (every "
            f"student who installs the grader can read them: graders/probes and "
            f"graders/oracle){given}. The grader's modules are compared without the code "
            f"they share with the reference solution ({info.get('reference_kgrams', 0)} "
            f"k-grams), the template's code does not count, and code common to the class "
            f"does count here. Listed from {KNOWN_MIN} shared tokens (honest code shares "
            f"less with the grader's modules; see the README), most shared code first; "
            f"every match is in <a href='similarity.csv'>similarity.csv</a>. A match is a "
            f"reason to read the code, not a verdict.</p>"]
    for key in ("error", "known_error"):
        if info.get(key):
            html.append(f"<p class='bad'>{escape(info[key])}</p>")
    html.append(_grader_references(info.get("grader_references") or {}))
    shown = [p for p in matches if p.flagged][:limit]
    if not shown:
        html.append(f"<p>No submission shares {KNOWN_MIN} tokens or more with a known "
                    f"source.</p>")
        return "\n".join(html)
    html.append("<table><tr><th>submission</th><th>known source</th><th class='n'>shared "
                "tokens</th><th class='n'>share of the submission's code</th></tr>")
    for p in shown:
        html.append(f"<tr><td><a href='{feedback_href(p.a)}'>{escape(p.a)}</a></td>"
                    f"<td>{escape(p.b)}</td><td class='n'><span class='bad'>"
                    f"{p.shared_tokens}</span></td><td class='n'>{p.similarity_a:.0%}</td></tr>")
    html.append("</table>")
    for p in shown:
        if p.snippet_a:
            html.append(f"<details><summary>{escape(p.a)} and {escape(p.b)}: the shared code "
                        f"marked</summary><table class='panes'><tr><th>{escape(p.a)}</th>"
                        f"<th>{escape(p.b)}</th></tr><tr><td><pre>{p.snippet_a}</pre></td>"
                        f"<td><pre>{p.snippet_b}</pre></td></tr></table></details>")
    more = sum(p.flagged for p in matches) - len(shown)
    if more > 0:
        html.append(f"<p class='muted'>{more} more in similarity.csv.</p>")
    return "\n".join(html)


def _grader_references(found: dict[str, list[str]], limit: int = 3) -> str:
    """Submissions whose code names the grader's own modules (an import of
    graders.probes shares no tokens with the code it imports: similarity cannot see it)."""
    if not found:
        return "<p>No submission refers to the grader's modules (<code>graders</code>).</p>"
    html = [f"<p class='bad'>{len(found)} submission(s) refer to the grader's modules "
            "(<code>graders</code>): the worker blocks such imports, so the attempt is what "
            "to read.</p><table><tr><th>submission</th><th>where</th></tr>"]
    for name, refs in sorted(found.items()):
        shown = "<br>".join(escape(r) for r in refs[:limit])
        more = f"<br><span class='muted'>and {len(refs) - limit} more</span>" if len(refs) > limit else ""
        html.append(f"<tr><td><a href='{feedback_href(name)}'>{escape(name)}</a></td>"
                    f"<td><code>{shown}</code>{more}</td></tr>")
    html.append("</table>")
    return "\n".join(html)


_SYMBOL = {"passed": "ok", "failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT",
           "not_implemented": "not implemented"}


def render_feedback(name: str, display: str, outcome: dict[str, Any],
                    score: dict[str, Any] | None) -> str:
    """One student's page: the grading status, each task, and every test that did not pass
    with its message (no seed: the page may go to the student)."""
    parts = ["<p><a href='../../report.html'>class report</a></p>",
             f"<h1>{escape(display)}</h1>"]
    if display != name:
        parts.append(f"<p class='muted'>submission {escape(name)}</p>")
    status = outcome.get("status", "?")
    if status != "graded":
        parts.append(f"<p class='bad'>Not graded: {escape(status)}: "
                     f"{escape(outcome.get('reason', ''))}</p>")
    if score:
        if score.get("error"):
            parts.append(f"<p class='bad'>{escape(score['error'])}</p>")
        parts.append(f"<p>Total: <b>{_num(score.get('score', 0))} / "
                     f"{_num(score.get('max_score', 0))}</b></p>")
        parts.append("<table><tr><th>task</th><th>title</th><th class='n'>passed</th>"
                     "<th class='n'>score</th></tr>")
        for t in score.get("tasks", []):
            parts.append(f"<tr><td>{escape(t['id'])}</td><td>{escape(t['title'])}</td>"
                         f"<td class='n'>{t['passed']}/{t['total']}</td>"
                         f"<td class='n'>{_num(t['score'])} / {_num(t['max_score'])}</td></tr>")
        parts.append("</table>")
        for t in score.get("tasks", []):
            for test in t.get("tests", []):
                if test["status"] == "passed":
                    continue
                parts.append(f"<h3>[{_SYMBOL.get(test['status'], test['status'])}] "
                             f"{escape(t['id'])} <code>{escape(test['name'])}</code></h3>"
                             f"<p>{escape(test.get('description', ''))}</p>")
                if test.get("message"):
                    parts.append(f"<pre>{escape(test['message'])}</pre>")
                if test.get("output"):
                    parts.append(f"<p class='muted'>printed:</p><pre>{escape(test['output'])}</pre>")
    parts.append("<p class='muted'>The grader's printed report: <a href='feedback.txt'>"
                 "feedback.txt</a>; the scores: <a href='score.json'>score.json</a>. This page is "
                 "the instructor's; the one to hand back, with the "
                 f"final points and nothing of the class: <a href='../../handback/{quote(name)}"
                 "/feedback.html'>handback/</a>.</p>")
    return _page(f"Feedback: {display}", "\n".join(parts))


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
