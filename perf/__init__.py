"""Benchmarks and synthetic workload generation for timely-frontier."""
