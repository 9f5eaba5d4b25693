"""What a running job shows on stderr: its progress bar, round lines and notes."""

from __future__ import annotations

import sys

from spark_plugin.session.console import write_line

__all__ = ["Progress", "fmt_frontier"]


class Progress:
    """What a job shows on stderr while it runs, by ``level``:

    * 0: nothing;
    * 1 (the default): on a terminal a tqdm bar of final epochs, its postfix the current
      epoch's round and the frontier the job's loop decides from; nothing otherwise;
    * 2 (``-v``): also one line per round, ``NAME: epoch E round R: frontier PORT {..}``
      (written through the bar on a terminal; ``wcc``: ``frontier label.in0``).

    Rounds are counted from 1: after round ``R`` of an epoch the bar and the round line say
    ``round R``, and an epoch that ends there says ``rounds R``.
    """

    @staticmethod
    def level_of(progress: "bool | int | None") -> int:
        """A job's ``progress`` as a level: ``None``/``True`` 1, ``False`` 0."""
        return 1 if progress is None or progress is True else int(progress)

    def __init__(self, level: "bool | int | None", total: int | None, name: str = "wcc"):
        self.level = self.level_of(level)
        self.name = name
        self.bar = None
        if self.level >= 1 and sys.stderr.isatty():
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="epoch", desc=name, file=sys.stderr,
                                dynamic_ncols=True)
            except ImportError:  # pragma: no cover
                self.bar = None

    def note(self, text: str) -> None:
        """A one-off message (``NAME: text``) on stderr, shown from level 1."""
        if self.level >= 1:
            write_line(f"{self.name}: {text}", sys.stderr)

    def round(self, epoch: int, rounds: int, frontier, where: str = "label.in0") -> None:
        """Round ``rounds`` (1, 2, ...) of ``epoch`` is complete; ``frontier`` at ``where``."""
        if self.bar is not None:
            self.bar.set_postfix_str(f"epoch {epoch} round {rounds}, frontier {where} "
                                     f"{fmt_frontier(frontier)}")
        if self.level >= 2:
            write_line(f"{self.name}: epoch {epoch} round {rounds}: frontier {where} "
                       f"{fmt_frontier(frontier)}", sys.stderr)

    def start(self, epoch: int) -> None:
        """Epoch ``epoch`` starts: the bar names it at once (until its first round ends it
        would still name the epoch before -- what a Ctrl-C then showed, issue 32 item 20)."""
        if self.bar is not None:
            self.bar.set_postfix_str(f"epoch {epoch} started")

    def epoch(self, summary) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def fmt_frontier(frontier) -> str:
    return "{" + ", ".join("(" + ", ".join(str(x) for x in t) + ")" for t in frontier) + "}"
