"""The semantics (docs/semantics.md): timestamps, path summaries, antichains, dataflow graphs,
pointstamp counts, the closure ``Psi`` as the definition reads, and the workload format.

Plain Python over tuples and NumPy arrays; imports nothing from the layers above it
(:mod:`engine.trackers`, :mod:`engine.batched`, ...), nor any GPU or Spark library.
"""
