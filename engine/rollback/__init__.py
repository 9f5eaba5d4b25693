"""Consistent rollback (Abadi & Isard, *Timely Rollback*; docs/rollback.md).

* :mod:`~engine.rollback.problem` -- the rollback problem, the conditions C1-C5 and the exact
  solver that reads like the paper;
* :mod:`~engine.rollback.format` -- the ``timely-rollback v1`` text format: problems read,
  answers printed;
* :mod:`~engine.rollback.batched` -- the batched solver over bitmask frontiers (cpu), and
  :mod:`~engine.rollback.cuda` -- the same solver on a GPU;
* :mod:`~engine.rollback.state` -- the state rebuilt after a rollback.
"""
