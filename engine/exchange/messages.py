"""The messages of the exchange protocol: broadcast progress updates, capabilities sent as data,
and the operations a workload batch is split into.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = ["Update", "DataMessage", "Operation", "OWN", "INITIAL", "HEADER_BYTES"]

#: ``to`` of a row that stays with (or is dropped by) the performing worker.
OWN = -1
#: ``to`` of a row of :func:`~engine.exchange.simulation.split_batch` that no held capability
#: justifies: admitted as an initial capability of its owner, into every worker's ``glob``
#: (:meth:`~engine.exchange.worker.Worker.admit`).
INITIAL = -2
#: Bytes of an :class:`Update`'s fixed header on the wire: sender (4), seq (8), rows (4).
HEADER_BYTES = 16


@dataclass(frozen=True, eq=False)
class Update:
    """One broadcast progress update (``send_upd``): the signed changes ``gamma`` a worker
    took out of its ``temp``, numbered ``seq = 0, 1, 2, ...`` per sender (FIFO per sender).

    Attributes
    ----------
    sender : int
    seq : int
    loc : int32[n]
    ts : int64[n, m+K]
        Padded timestamps, as in the batched engine.
    diff : int64[n]
    """

    sender: int
    seq: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray

    def __len__(self) -> int:
        return len(self.loc)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire: :data:`HEADER_BYTES` plus, per row, a location (4), the padded
        timestamp (8 per coordinate) and the count (8)."""
        return HEADER_BYTES + len(self.loc) * (4 + 8 * self.ts.shape[1] + 8)


@dataclass(frozen=True, eq=False)
class DataMessage:
    """Capabilities sent as data by ``perf_op`` to worker ``receiver`` (positive counts),
    taken into its ``caps`` by ``recv_cap``."""

    receiver: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray


class Operation(NamedTuple):
    """One step of a split batch (:func:`~engine.exchange.simulation.split_batch`): rows
    performed by ``worker``.

    ``to[i]`` is :data:`OWN` (-1) for a capability the worker creates for itself or drops,
    a worker index for a capability sent to that worker as data, or :data:`INITIAL` (-2,
    then every row of the operation is): capabilities admitted as initial ones of ``worker``
    (:meth:`~engine.exchange.worker.Worker.admit` on every worker).
    """

    worker: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray
    to: np.ndarray

    @property
    def initial(self) -> bool:
        return bool(len(self.to)) and bool((self.to == INITIAL).all())
