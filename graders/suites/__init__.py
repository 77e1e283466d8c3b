"""The grader test suites: one folder per assignment, each test marked with its task."""
