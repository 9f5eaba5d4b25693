"""Sending policies of the exchange protocol: which part of a worker's ``temp`` ``send_upd``
broadcasts now (``docs/exchange.md``).
"""

from __future__ import annotations

import abc

import numpy as np

from engine.core.choices import Choice
from engine.errors import ExchangeError
from engine.exchange.multisets import _lookup

__all__ = ["SendPolicy", "Policy", "SendAll", "SendBatched", "HoldBack", "POLICIES",
           "make_policy"]


class SendPolicy(Choice):
    """The selectable sending policies (:data:`POLICIES`)."""

    ALL = "all"
    BATCH = "batch"
    HOLDBACK = "holdback"

    @classmethod
    def label(cls) -> str:
        return "sending policy"


class Policy(abc.ABC):
    """Decides which part of a worker's ``temp`` ``send_upd`` broadcasts now.

    :meth:`release` returns ``bool[n]`` over the rows of ``worker.temp``; an all-false mask
    means "send nothing now". Whatever it returns, :meth:`~engine.exchange.worker.Worker.send`
    refuses a send that leaves ``temp`` unjustified, so a wrong policy cannot break safety
    silently.
    """

    name = "policy"

    @abc.abstractmethod
    def release(self, worker, now=None) -> np.ndarray:
        """The rows of ``worker.temp`` to send now (``worker``: a
        :class:`~engine.exchange.worker.Worker`)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SendAll(Policy):
    """Send everything in ``temp`` at every opportunity (the naive baseline)."""

    name = "all"

    def release(self, worker, now=None):
        return np.ones(len(worker.temp[0]), bool)


class SendBatched(Policy):
    """Send everything, but only once ``temp`` holds ``size`` rows or the first operation
    since it was last empty or sent from (:attr:`~engine.exchange.worker.Worker.temp_since`) is
    ``interval`` old (in the caller's clock: :class:`~engine.exchange.simulation.Exchange` steps,
    or seconds): what a partial send -- such as
    :meth:`~engine.exchange.simulation.Exchange.quiesce`'s settling -- leaves behind does not make
    the next batch due early. Holding everything back is always allowed (no send happens) and
    sending everything is always justified, so this policy needs no check of its own.
    """

    name = "batch"

    def __init__(self, size: int = 32, interval: float | None = 64):
        if size < 1:
            raise ExchangeError(f"batch policy: size must be at least 1, got {size}")
        self.size, self.interval = size, interval

    def release(self, worker, now=None):
        n = len(worker.temp[0])
        due = n >= self.size or (self.interval is not None and now is not None
                                 and worker.temp_since is not None
                                 and now - worker.temp_since >= self.interval)
        return np.full(n, bool(due))

    def __repr__(self):
        return f"SendBatched(size={self.size}, interval={self.interval})"


class HoldBack(Policy):
    """Send the negative changes and the positive changes the worker cannot keep; keep back
    every positive change at ``p`` that the worker's own capabilities justify -- one strictly
    before ``p``, or at ``p`` with a larger count. Such a change cannot move any worker's
    frontier back (a capability at or before it is already accounted for), and while it is
    held, a later drop of the same pointstamp cancels it in ``temp``: created-and-consumed
    pointstamps are never sent. What stays in ``temp`` is exactly what ``justified`` allows.
    """

    name = "holdback"

    def release(self, worker, now=None):
        loc, ts, cnt = worker._temp          # read only
        pos = cnt > 0
        keep = np.zeros(len(cnt), bool)
        if pos.any():
            caps = worker._caps
            idx = np.flatnonzero(pos)
            ok = worker.holds(loc[idx], ts[idx], strict=True)
            ok |= cnt[idx] < _lookup(caps, loc[idx], ts[idx])
            keep[idx[ok]] = True
        return ~keep


#: The sending policies by name: each entry makes a fresh :class:`Policy`.
POLICIES = {SendPolicy.ALL.value: SendAll, SendPolicy.BATCH.value: SendBatched,
            SendPolicy.HOLDBACK.value: HoldBack}


def make_policy(policy: "str | SendPolicy | Policy") -> Policy:
    """A :class:`Policy` from its name (:data:`POLICIES`) or as given;
    :class:`~engine.errors.BackendError` lists the names for an unknown one."""
    if isinstance(policy, Policy):
        return policy
    return POLICIES[SendPolicy.parse(policy).value]()
