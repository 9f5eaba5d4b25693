"""Operators in their own words (docs/operate.md): ``Operate`` descriptions, nested scopes,
a ``Dataflow`` built from them (:mod:`~engine.operate.dataflow`) and the progress ``Report``s
operators send, translated into pointstamp changes (:mod:`~engine.operate.report`).
"""
