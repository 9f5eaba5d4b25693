"""Consistent rollback (Abadi & Isard, *Timely Rollback*; docs/rollback.md).

* :mod:`~engine.rollback.problem` -- problems in the ``rollback-v1`` format, the conditions
  C1-C5 and the exact solver that reads like the paper;
* :mod:`~engine.rollback.batched` -- the batched solver over bitmask frontiers (cpu), and
  :mod:`~engine.rollback.cuda` -- the same solver on a GPU;
* :mod:`~engine.rollback.state` -- the state rebuilt after a rollback.
"""
