"""Where a frontier service keeps its state on disk: the change log, and saved versions.

A :class:`~spark_plugin.service.frontier_service.FrontierService` with ``log_path`` publishes
its frontier changes to a :class:`ChangeLog` first (one Parquet file per ``apply`` call that
changed a frontier, ``changes-<n>.parquet`` in order, read back with :func:`read_log`), in a
directory locked for one service. ``FrontierService.save`` writes its state as a new version
directory (:func:`save_version`: ``v-<n>/`` with ``state.json``, ``counts.parquet`` and
``held.parquet``, synced, renamed into place atomically, older versions removed after), and
``FrontierService.restore`` reads the newest complete one back (:func:`load_newest`),
checking checksums, format, graph and every field, then cuts the change log back to what that
state had published (:meth:`ChangeLog.cut`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from engine.core.graph import Graph

from spark_plugin.errors import ChangeLogError, ServiceStateError

__all__ = ["ChangeLog", "read_log", "save_version", "load_newest", "STATE_FORMAT", "CRASH_ENV"]

log = logging.getLogger(__name__)

#: Format tag of the saved state (``state.json``).
STATE_FORMAT = "timely-frontier-service-state/2"
_STATE_FILE, _COUNTS_FILE, _HELD_FILE = "state.json", "counts.parquet", "held.parquet"
_VERSION_PREFIX = "v-"
_LOG_PREFIX = "changes-"
_LOCK_FILE = ".lock"
#: ``save`` kills its own process (SIGKILL) at the named step when this variable names it:
#: the crash tests' hook (``files-written``, ``renamed``).
CRASH_ENV = "TFRONT_SERVICE_CRASH_AT"


# -- the change log ----------------------------------------------------------------------------

class ChangeLog:
    """A service's frontier change log in ``directory`` (created if missing): one Parquet file
    per ``apply`` call that changed a frontier, ``changes-<n>.parquet`` in order, ``index``
    the number of the next one. One service at a time: a lock file (``.lock``, ``flock``)
    refuses a second one (:class:`~spark_plugin.errors.ChangeLogError`) until the first is
    closed or its process ends."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_file = _lock_dir(self.directory)
        self.index = _next_log_index(self.directory)

    def close(self) -> None:
        """Release the directory's lock (the files stay readable)."""
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def write(self, changes: pa.Table) -> None:
        """Write ``changes`` as the next file: written under a temporary name, synced,
        renamed into place, the directory synced; a failed write leaves no file."""
        path = self.directory / f"{_LOG_PREFIX}{self.index:08d}.parquet"
        tmp = path.with_name(path.name + ".tmp")
        try:
            pq.write_table(changes, tmp)
            _fsync(tmp)
            os.replace(tmp, path)
            _fsync(self.directory)
        except BaseException:
            if tmp.exists() and not tmp.is_dir():
                tmp.unlink()
            raise
        self.index += 1

    def files(self) -> list[Path]:
        """The log's files, in order."""
        return sorted(self.directory.glob(f"{_LOG_PREFIX}*.parquet"))

    def cut(self, index: int) -> None:
        """Set aside the change log files from ``index`` on (written after the save)."""
        stamp = time.time_ns()
        later = [f for f in self.files() if int(f.stem[len(_LOG_PREFIX):]) >= index]
        for f in later:
            os.replace(f, f.with_name(f"{f.name}.discarded-{stamp}"))
        if later:
            _fsync(self.directory)
            log.warning("restored state predates %d change log file(s) in %r (from %s on); "
                        "set aside as *.discarded-%d: their batches are applied again on "
                        "redelivery", len(later), str(self.directory), later[0].name, stamp)
        have = len(self.files())
        if have < index:
            log.warning("change log %r has %d file(s), the saved state had written %d: it "
                        "does not replay to the restored frontiers", str(self.directory),
                        have, index)
        self.index = _next_log_index(self.directory)


def read_log(path: str | os.PathLike) -> pa.Table:
    """All frontier changes of a service's change log directory, in order."""
    files = sorted(Path(path).glob(f"{_LOG_PREFIX}*.parquet"))
    if not files:
        raise ServiceStateError(f"no change log files ({_LOG_PREFIX}*.parquet) in {str(path)!r}")
    return pa.concat_tables([pq.read_table(f) for f in files])


def _lock_dir(log_dir: Path):
    """Open and ``flock`` the log directory's lock file, or raise :class:`ChangeLogError`."""
    f = open(log_dir / _LOCK_FILE, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip() or "unknown"
        f.close()
        raise ChangeLogError(f"change log directory {str(log_dir)!r} is in use by another "
                             f"FrontierService ({holder}); close it (FrontierService.close) "
                             f"or let its process end first") from None
    f.seek(0)
    f.truncate()
    f.write(f"pid {os.getpid()}\n")
    f.flush()
    return f


def _next_log_index(log_dir: Path) -> int:
    idx = [int(p.stem[len(_LOG_PREFIX):]) for p in log_dir.glob(f"{_LOG_PREFIX}*.parquet")
           if p.stem[len(_LOG_PREFIX):].isdigit()]
    return max(idx) + 1 if idx else 0


# -- saved versions ----------------------------------------------------------------------------

def save_version(path: str | os.PathLike, graph: Graph, counts: pa.Table, held: pa.Table,
                 fields: dict) -> Path:
    """Write a service's state as a new version under directory ``path``; return its directory.

    The version (``path/v-<n>/``: ``state.json`` with ``fields`` -- sequence state, part
    digests, the change log's index --, the files' checksums and the graph's fingerprint;
    ``counts.parquet`` from ``counts``; ``held.parquet`` from ``held``) is written to a
    temporary directory, every file and the directory synced, then renamed into place in
    one atomic step; older versions are removed afterwards. A crash at any point leaves the
    previous version or the new one complete, and :func:`load_newest` reads the newest.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob(f"{_VERSION_PREFIX}*.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    versions = _versions(path)
    n = versions[-1][0] + 1 if versions else 1
    final = path / f"{_VERSION_PREFIX}{n:08d}"
    tmp = path / f"{final.name}.tmp-{os.getpid()}"
    tmp.mkdir()
    pq.write_table(counts, tmp / _COUNTS_FILE)
    pq.write_table(held, tmp / _HELD_FILE)
    state = {"format": STATE_FORMAT, "graph": _graph_info(graph), **fields,
             "files": {f: _file_digest(tmp / f) for f in (_COUNTS_FILE, _HELD_FILE)}}
    state["checksum"] = _state_checksum(state)
    (tmp / _STATE_FILE).write_text(json.dumps(state, indent=1, sort_keys=True))
    for f in (_COUNTS_FILE, _HELD_FILE, _STATE_FILE):
        _fsync(tmp / f)
    _fsync(tmp)
    _crash_point("files-written")
    os.replace(tmp, final)
    _fsync(path)
    _crash_point("renamed")
    for _, old in versions:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_newest(path: str | os.PathLike, graph: Graph) -> tuple[Path, dict, pa.Table, pa.Table]:
    """The newest complete version saved under ``path`` for ``graph``: its directory, its
    ``state.json`` (every field checked, keys converted to ints), the counts and the held
    rows.

    Raises
    ------
    ServiceStateError
        No saved version, unreadable or corrupted files (checksums), another format,
        another graph, or a field that is missing or invalid; the message names it.
    """
    path = Path(path)
    versions = _versions(path)
    if not versions:
        raise ServiceStateError(f"cannot read saved service state in {str(path)!r}: no "
                                f"complete saved version ({_VERSION_PREFIX}<n>/) there")
    where = versions[-1][1]
    state, counts, held = _load_version(where, graph)
    return where, state, counts, held


def _graph_info(graph: Graph) -> dict:
    """Size and a structural fingerprint of ``graph`` (locations, edges, summaries)."""
    h = hashlib.sha256()
    h.update(repr(graph.m).encode())
    for l in graph.locations:
        h.update(repr((l.kind.value, l.op, l.port, l.depth)).encode())
    for e in graph.edges:
        h.update(repr((e.src, e.dst, e.channel, [repr(s) for s in e.summaries])).encode())
    return {"num_locations": graph.num_locations, "m": graph.m, "max_depth": graph.max_depth,
            "fingerprint": h.hexdigest()}


def _crash_point(step: str) -> None:
    """The crash tests' hook: a real SIGKILL of this process at ``step`` of :func:`save_version`."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _state_checksum(state: dict) -> str:
    body = {k: v for k, v in state.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _versions(path: Path) -> list[tuple[int, Path]]:
    """Complete saved versions under ``path`` (renamed into place), oldest first."""
    if not path.is_dir():
        return []
    out = []
    for d in path.iterdir():
        tail = d.name[len(_VERSION_PREFIX):]
        if d.name.startswith(_VERSION_PREFIX) and tail.isdigit() and d.is_dir():
            out.append((int(tail), d))
    return sorted(out)


def _load_version(where: Path, graph: Graph) -> tuple[dict, pa.Table, pa.Table]:
    """Read and check one saved version: checksums, format, graph, every field."""
    state_file = where / _STATE_FILE
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError) as e:
        raise ServiceStateError(f"cannot read saved service state {str(state_file)!r}: "
                                f"{e}") from e
    if not isinstance(state, dict):
        raise ServiceStateError(f"{str(state_file)!r} is not a JSON object")
    if state.get("format") != STATE_FORMAT:
        raise ServiceStateError(f"{str(state_file)!r} has format {state.get('format')!r}, "
                                f"expected {STATE_FORMAT!r}")
    if state.get("checksum") != _state_checksum(state):
        raise ServiceStateError(f"{str(state_file)!r} is corrupted: its checksum does not "
                                f"match its contents")
    info = _graph_info(graph)
    if state.get("graph") != info:
        raise ServiceStateError(f"saved state in {str(where)!r} belongs to another graph "
                                f"(saved {state.get('graph')}, given {info})")
    files = state.get("files")
    if not isinstance(files, dict):
        raise ServiceStateError(f"{str(state_file)!r}: field 'files' is missing or invalid")
    tables = []
    for name in (_COUNTS_FILE, _HELD_FILE):
        f = where / name
        try:
            digest = _file_digest(f)
        except OSError as e:
            raise ServiceStateError(f"cannot read saved service state {str(f)!r}: {e}") from e
        if files.get(name) != digest:
            raise ServiceStateError(f"{str(f)!r} does not match the checksum in state.json: "
                                    f"corrupted, or from another save")
        try:
            tables.append(pq.read_table(f))
        except (OSError, pa.ArrowInvalid) as e:
            raise ServiceStateError(f"cannot read saved service state {str(f)!r}: {e}") from e
    return _checked_fields(state, state_file), tables[0], tables[1]


def _checked_fields(state: dict, where: Path) -> dict:
    """``state`` with every field checked (types, ranges) and keys converted to ints."""
    def fail(name, why):
        raise ServiceStateError(f"{str(where)!r}: field {name!r} {why}")

    def count(name, v, low=0):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            fail(name, f"must be an integer >= {low}, got {v!r}")
        return v

    def seq_key(name, k):
        if not isinstance(k, str) or not k.isdigit():
            fail(name, f"has a key {k!r} that is not a sequence number")
        return int(k)

    def mapping(name, v):
        if not isinstance(v, dict) or any(not isinstance(p, str) or not p for p in v):
            fail(name, f"must map producer names to values, got {v!r:.200}")
        return v

    for k in ("strict", "next_seq", "pending", "recent", "duplicates", "applied", "log_index"):
        if k not in state:
            fail(k, "is missing")
    if not isinstance(state["strict"], bool):
        fail("strict", f"must be true or false, got {state['strict']!r}")
    out = {"strict": state["strict"],
           "duplicates": count("duplicates", state["duplicates"]),
           "applied": count("applied", state["applied"]),
           "log_index": None if state["log_index"] is None
           else count("log_index", state["log_index"])}
    nxt = {p: count(f"next_seq[{p!r}]", n)
           for p, n in mapping("next_seq", state["next_seq"]).items()}
    pending = {}
    for p, units in mapping("pending", state["pending"]).items():
        if not isinstance(units, dict):
            fail(f"pending[{p!r}]", "must be an object")
        pending[p] = {}
        for q, u in units.items():
            name = f"pending[{p!r}][{q!r}]"
            qi = seq_key(name, q)
            if qi < nxt.get(p, 0):
                fail(name, f"is held but below next_seq {nxt.get(p, 0)}")
            if not isinstance(u, dict) or not isinstance(u.get("received"), dict):
                fail(name, "must have 'parts' and 'received'")
            parts = count(f"{name}['parts']", u.get("parts"), 1)
            rec = {}
            for k, d in u["received"].items():
                ki = seq_key(f"{name}['received']", k)
                if ki >= parts or not isinstance(d, str) or len(d) != 64:
                    fail(f"{name}['received'][{k!r}]", f"is not a part digest of {parts} parts")
                rec[ki] = d
            if not rec:
                fail(name, "has no part received")
            pending[p][qi] = {"parts": parts, "received": rec}
    recent = {}
    for p, r in mapping("recent", state["recent"]).items():
        if not isinstance(r, dict):
            fail(f"recent[{p!r}]", "must be an object")
        recent[p] = {}
        for q, v in r.items():
            name = f"recent[{p!r}][{q!r}]"
            qi = seq_key(name, q)
            if qi >= nxt.get(p, 0):
                fail(name, f"is not below next_seq {nxt.get(p, 0)}")
            if not (isinstance(v, list) and len(v) == 2 and isinstance(v[1], list)):
                fail(name, "must be [parts, digests]")
            parts = count(f"{name}[0]", v[0], 1)
            if len(v[1]) != parts or any(not isinstance(d, str) or len(d) != 64 for d in v[1]):
                fail(name, f"must list {parts} part digests")
            recent[p][qi] = (parts, v[1])
    out.update(next_seq=nxt, pending=pending, recent=recent)
    return out
