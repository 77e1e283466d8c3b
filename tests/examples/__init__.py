"""Tests of reference/examples/ and benchmarks/."""
