"""The frontier trackers written from the papers, over the semantics of :mod:`engine.core`.

* :mod:`~engine.trackers.base` -- the interface every tracker offers (``FrontierTracker``);
* :mod:`~engine.trackers.reference` -- implied frontiers from ``Psi``, the oracle of every test;
* :mod:`~engine.trackers.propagation` -- timely-style local propagation (no ``Psi``);
* :mod:`~engine.trackers.naiad` -- Naiad's occurrence and precursor counts.
"""
