"""Harnesses for running the product the way users do, shared by the tests and the benchmarks (as numpy.testing is):
a real Dagster daemon on a throwaway project home (``daemon_harness``), a throwaway PostgreSQL server
(``pg_server``), a reliability drop and fault helpers (``reliability_data``), the PostgreSQL/DuckDB parity check
(``parity``) and a slice of the Open LLM Leaderboard as a landing folder (``openllm_slice``). Nothing outside this
subpackage, the tests and the benchmarks imports it."""
