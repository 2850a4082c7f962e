"""Tests of `bench/`: the benchmarks still run (their quick modes), their helpers in
`bench/support/`, and the folder's layout (imports, docs, the results index)."""
