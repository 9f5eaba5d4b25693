"""The progress exchange protocol between workers (docs/exchange.md).

* :mod:`~engine.exchange.protocol` -- the protocol simulated in one process: workers, policies,
  the Safe and Mono checks under random interleavings;
* :mod:`~engine.exchange.processes` -- the same workers on real processes exchanging Arrow
  batches (``tfront replay --processes``; needs pyarrow, imported only there).
"""
