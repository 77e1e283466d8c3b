"""Running probes against a submission: the protocol, the sandboxed worker and the
grader-side clients (sandboxed or in-process)."""
