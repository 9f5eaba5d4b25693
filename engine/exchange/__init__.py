"""The progress exchange protocol between workers (docs/exchange.md).

* :mod:`~engine.exchange.multisets` -- signed multisets of pointstamps as consolidated columns,
  could-result-in between them, and the paper's ``justified``;
* :mod:`~engine.exchange.messages` -- progress updates, capabilities sent as data, and the
  operations a batch is split into;
* :mod:`~engine.exchange.policies` -- which part of its changes a worker broadcasts when;
* :mod:`~engine.exchange.worker` -- one worker: its configuration, the four transitions and
  their guards, its local frontier tracker;
* :mod:`~engine.exchange.simulation` -- the protocol simulated in one process: workload batches
  split among the workers, a seeded scheduler, the Safe and Mono checks under random
  interleavings;
* :mod:`~engine.exchange.processes` -- the same workers on real processes exchanging Arrow
  batches (``tfront replay --processes``; needs pyarrow, imported only there).
"""
