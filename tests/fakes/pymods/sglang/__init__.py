"""Test double of the `sglang` package: only `sglang.bench_serving` exists."""
