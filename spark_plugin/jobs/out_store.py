"""Where a resumable job's ``--out`` lives: every file operation of its manifest and data.

:class:`~spark_plugin.jobs.recovery.OutputLog` (the manifest, the epochs' data files, the
loop checkpoints) touches ``--out`` only through an :class:`OutStore`, with names relative
to ``--out`` (``a/b`` for a file in a subdirectory):

* :class:`LocalStore` -- a bare path (no URL scheme): the local file system, with fsync of
  every file before it is renamed into place and of the directory after, and the manifest
  as one file, ``_tfront_manifest.json``, replaced atomically (temporary file, fsync,
  ``rename``, fsync of the directory);
* :class:`HadoopStore` -- any URI (``hdfs://``, ``s3a://``, ``gs://``, ``file:///...``):
  Hadoop's ``org.apache.hadoop.fs.FileSystem`` of the running Spark session, through the
  JVM. ``rename`` is atomic on HDFS but not on object stores (a copy and a delete), so the
  manifest is never overwritten: each version is a new file ``_tfront_manifest.<n>.json``
  (created with ``overwrite=false``), holding a checksum of its own content; a reader takes
  the highest-numbered one that parses and verifies, and the older ones are deleted after a
  new one is written. A data file is written under a hidden name and renamed in before the
  manifest names it (hidden: readers skip names starting with ``.`` or ``_``), so a
  half-done copy is never part of the dataset.

:func:`open_store` applies the rule: a bare path is local, anything with ``://`` goes
through Hadoop (``file:///tmp/out`` too -- it is what a cluster's ``--out`` looks like).
A bare path's leading ``~`` is expanded (:func:`local_out`), as a shell would have, so every
file of the job -- manifest and data alike -- goes under the one directory it names.

One run at a time: :func:`hold_out` locks a directory on this machine's file system (a bare
path or a ``file:`` URI) with ``flock`` on its lock file :data:`LOCK` (the frontier service's
change log does the same), which the kernel releases when the holding process ends -- a
killed run leaves no stale lock. A second run is refused
(:class:`~spark_plugin.errors.OutputInUseError`, naming the holder's pid, host and
command). Hadoop's ``FileSystem`` has no such lock: an ``--out`` on HDFS or an object
store is not locked (``docs/wcc.md``, "Crash recovery").
"""

from __future__ import annotations

import abc
import errno
import fcntl
import hashlib
import socket
import sys
import threading
import json
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path

import pyarrow as pa

from spark_plugin.errors import OutputStateError

__all__ = ["OutStore", "LocalStore", "HadoopStore", "open_store", "is_local", "local_out",
           "hold_out", "OutLock", "MANIFEST", "LOCK"]

#: The manifest's name inside a local ``--out`` (a Hadoop one: ``_tfront_manifest.<n>.json``).
MANIFEST = "_tfront_manifest.json"
_VERSIONED = re.compile(r"^_tfront_manifest\.(\d+)\.json$")
#: The lock file inside ``--out`` (:func:`hold_out`): present while a run holds it (and left,
#: unlocked, by a killed one), naming the holder.
LOCK = "_tfront_lock"


def is_local(out) -> bool:
    """``out`` is a bare path (the local file system, :class:`LocalStore`); anything with a
    URL scheme, ``file://`` included, goes through Hadoop's ``FileSystem``."""
    return "://" not in str(out)


def local_out(out) -> Path:
    """The directory a bare path ``out`` names: a leading ``~`` or ``~user`` expanded as a
    shell would (``--out=~/o``, which the shell leaves alone, is ``$HOME/o``), so that no
    file of the job lands in a folder literally named ``~`` while another goes to ``$HOME``.

    Raises
    ------
    OutputStateError
        ``~user`` for a user this machine does not know.
    """
    p = Path(os.path.expanduser(os.fspath(out)))
    if str(p).startswith("~"):
        raise OutputStateError(f"--out {out}: cannot expand {str(p).split(os.sep)[0]!r} (no "
                               f"such user); write the directory's full path")
    return p


def open_store(out, spark=None) -> "OutStore":
    """The store of ``out``: :class:`LocalStore` for a bare path, else :class:`HadoopStore`
    (which needs the Spark session)."""
    if is_local(out):
        return LocalStore(out)
    if spark is None:
        raise ValueError(f"--out {out}: a URI needs the Spark session (Hadoop's FileSystem)")
    from spark_plugin.session.lazy import session_of

    return HadoopStore(session_of(spark), out)


class OutStore(abc.ABC):
    """The file operations of a resumable ``--out``; names are relative to it (``""``: the
    directory itself). ``url`` names it in messages."""

    url: str

    def __str__(self) -> str:
        return self.url

    @abc.abstractmethod
    def path(self, name: str = "") -> str:
        """What Spark reads or writes for ``name`` (a local path or a URI)."""

    @abc.abstractmethod
    def exists(self, name: str = "") -> bool: ...

    @abc.abstractmethod
    def is_dir(self, name: str = "") -> bool: ...

    @abc.abstractmethod
    def is_file(self, name: str) -> bool: ...

    @abc.abstractmethod
    def listdir(self, name: str = "") -> list[str]:
        """The names in directory ``name``, sorted (``[]`` if it does not exist)."""

    @abc.abstractmethod
    def remove(self, name: str) -> None:
        """Delete ``name`` (a directory with what it holds); nothing if it does not exist."""

    @abc.abstractmethod
    def mkdirs(self, name: str = "") -> None: ...

    @abc.abstractmethod
    def rename_in(self, tmp: str, name: str) -> None:
        """Move the complete file or directory ``tmp`` (a hidden name) to ``name``, durably
        (its content first)."""

    def sync(self, name: str = "") -> None:
        """Make the names in directory ``name`` durable (a no-op where renames are)."""

    def lock(self) -> "OutLock | None":
        """Hold the directory for this run (:func:`hold_out`, creating it) where it is on this
        machine's file system; ``None`` elsewhere (HDFS, object stores: no lock there)."""
        here = self.local_path()
        return None if here is None else hold_out(here, self.url)

    def local_path(self) -> Path | None:
        """The directory on this machine's file system (a bare path, or a ``file:`` URI),
        absolute; ``None`` for any other file system."""
        if self.url.startswith("file:"):
            from urllib.parse import unquote, urlparse

            return Path(unquote(urlparse(self.url).path)).absolute()
        return None if "://" in self.url else Path(self.url).absolute()

    @abc.abstractmethod
    def write_table(self, name: str, table: pa.Table) -> None:
        """Write ``table`` as one Parquet file ``name`` (a hidden name; :meth:`rename_in`
        then puts it in place)."""

    @abc.abstractmethod
    def read_table(self, names, columns) -> pa.Table:
        """The Parquet files ``names`` (their ``columns``), concatenated.

        Raises pyarrow's ``ArrowInvalid``, ``KeyError`` or ``OSError`` for a damaged file."""

    @abc.abstractmethod
    def parquet_rows(self, names) -> int:
        """The rows of the Parquet files ``names``, from their footers."""

    @abc.abstractmethod
    def digest(self, name: str) -> str:
        """``sha256:<hex>`` of the bytes of file ``name`` (read in chunks): what the manifest
        records of each data file and loop checkpoint part, and checks on resume (a file
        rewritten with the same rows but other values has another digest)."""

    # -- the manifest --
    @abc.abstractmethod
    def load_manifest(self) -> dict | None:
        """The newest manifest, or ``None`` when there is none.

        Raises
        ------
        OutputStateError
            There are manifests but none can be read (unreadable, not JSON, checksum
            mismatch)."""

    @abc.abstractmethod
    def save_manifest(self, manifest: dict) -> None:
        """Write ``manifest`` atomically and durably: a reader sees the old or the new one."""

    @abc.abstractmethod
    def is_manifest(self, name: str) -> bool:
        """Whether the top-level ``name`` is one of the manifest's files (kept on resume)."""

    def _damaged(self, what: str, why) -> OutputStateError:
        return OutputStateError(f"--out {self.url}: {what} is unreadable ({why}); pass "
                                f"--overwrite to start over")


class LocalStore(OutStore):
    """``--out`` on the local file system: fsync before every rename and of the directory
    after; the manifest one file replaced atomically."""

    def __init__(self, out):
        self.root = local_out(out)
        self.url = str(out)

    def local_path(self) -> Path:
        return self.root.absolute()

    def _p(self, name: str) -> Path:
        return self.root / name if name else self.root

    def path(self, name: str = "") -> str:
        return str(self._p(name))

    def exists(self, name: str = "") -> bool:
        return self._p(name).exists()

    def is_dir(self, name: str = "") -> bool:
        return self._p(name).is_dir()

    def is_file(self, name: str) -> bool:
        return self._p(name).is_file()

    def listdir(self, name: str = "") -> list[str]:
        p = self._p(name)
        return sorted(x.name for x in p.iterdir()) if p.is_dir() else []

    def remove(self, name: str) -> None:
        p = self._p(name)
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()

    def mkdirs(self, name: str = "") -> None:
        self._p(name).mkdir(parents=True, exist_ok=True)

    def rename_in(self, tmp: str, name: str) -> None:
        src = self._p(tmp)
        if src.is_file():
            _fsync_file(src)
        os.replace(src, self._p(name))

    def sync(self, name: str = "") -> None:
        fd = os.open(self._p(name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def write_table(self, name: str, table: pa.Table) -> None:
        import pyarrow.parquet as pq

        pq.write_table(table, self._p(name))

    def read_table(self, names, columns) -> pa.Table:
        import pyarrow.parquet as pq

        parts = [pq.read_table(self._p(n), columns=list(columns)) for n in names]
        return pa.concat_tables(parts) if parts else None

    def parquet_rows(self, names) -> int:
        import pyarrow.parquet as pq

        return sum(pq.read_metadata(self._p(n)).num_rows for n in names)

    def digest(self, name: str) -> str:
        return _file_digest(self._p(name))

    def load_manifest(self) -> dict | None:
        m = self._p(MANIFEST)
        if not m.is_file():
            return None
        try:
            return json.loads(m.read_text())
        except (OSError, ValueError) as e:
            raise self._damaged(MANIFEST, e) from None

    def save_manifest(self, manifest: dict) -> None:
        tmp = self._p(f".{MANIFEST}.{uuid.uuid4().hex[:8]}.tmp")
        with open(tmp, "w") as h:
            json.dump(manifest, h, indent=1)
            h.flush()
            os.fsync(h.fileno())
        os.replace(tmp, self._p(MANIFEST))
        self.sync()

    def is_manifest(self, name: str) -> bool:
        return name == MANIFEST


class OutLock:
    """This process's hold on the lock of one ``--out`` (:func:`hold_out`): re-entrant in the
    thread that took it (the command holds it from its first check, the job's
    :class:`~spark_plugin.jobs.recovery.OutputLog` takes it again); :meth:`release` once
    per :func:`hold_out`. The last release deletes the lock file (while still holding it)
    and, if this hold created the directory and it is empty, the directory."""

    _held: dict = {}   # real path of the directory -> OutLock
    _mutex = threading.Lock()

    def __init__(self, key: str, directory: Path, handle, created: bool):
        self.key, self.directory, self.handle, self.created = key, directory, handle, created
        self.thread, self.count = threading.get_ident(), 1

    def release(self) -> None:
        with OutLock._mutex:
            self.count -= 1
            if self.count > 0 or self.handle is None:
                return
            OutLock._held.pop(self.key, None)
            try:
                os.unlink(self.directory / LOCK)   # still held: no other run locks this inode
            except FileNotFoundError:
                pass
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
            self.handle = None
            if self.created:
                try:
                    os.rmdir(self.directory)   # only if empty: a run refused before writing
                except OSError:
                    pass


def hold_out(out, url: str | None = None) -> OutLock:
    """Lock the local directory ``out`` (created if missing) for this run: ``flock`` on its
    :data:`LOCK` file, which then names the holder (pid, host, command). A killed holder's
    lock is free again (the kernel drops it with the process); its file is reused.

    Raises
    ------
    OutputInUseError
        Another process (or another thread of this one) holds it: the message names it.
    OutputStateError
        The directory cannot be created or the lock file not written (``--out`` named).
    """
    from spark_plugin.errors import OutputInUseError

    name = url if url is not None else str(out)
    d = local_out(out).absolute()
    created = False
    try:
        if not d.is_dir():
            d.mkdir(parents=True)
            created = True
    except FileExistsError:
        pass
    except OSError as e:
        raise OutputStateError(f"--out {name}: cannot create the directory "
                               f"({(e.strerror or str(e)).lower()}: {e.filename or d})") from None
    key = os.path.realpath(d)
    with OutLock._mutex:
        mine = OutLock._held.get(key)
        if mine is not None:
            if mine.thread != threading.get_ident():
                raise OutputInUseError(f"--out {name} is in use by another job of this process "
                                       f"(pid {os.getpid()}, another thread); one run at a "
                                       f"time per --out")
            mine.count += 1
            return mine
        path = d / LOCK
        for _ in range(100):
            try:
                handle = open(path, "a+")
            except OSError as e:
                raise OutputStateError(f"--out {name}: cannot write its lock file {LOCK} "
                                       f"({(e.strerror or str(e)).lower()})") from None
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                handle.seek(0)
                holder = handle.read().strip() or "a process that has not said which"
                handle.close()
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise OutputInUseError(
                        f"--out {name} is in use by another tfront run ({holder}); wait for "
                        f"it to end, or choose another --out") from None
                raise OutputStateError(f"--out {name}: cannot lock {LOCK} "
                                       f"({(e.strerror or str(e)).lower()})") from None
            try:   # its holder may have deleted it as we opened it: lock the new one then
                same = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            handle.close()
        else:
            raise OutputStateError(f"--out {name}: its lock file {LOCK} keeps being replaced")
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}: "
                     f"{' '.join(sys.argv)[:300]}\n")
        handle.flush()
        lock = OutLock._held[key] = OutLock(key, d, handle, created)
        return lock


def _file_digest(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as h:
        os.fsync(h.fileno())


def checksum(manifest: dict) -> str:
    """``sha256:<hex>`` of the manifest's canonical JSON without its ``checksum`` field."""
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class HadoopStore(OutStore):
    """``--out`` through Hadoop's ``FileSystem`` (HDFS, S3A, GCS, ``file://``), by py4j.

    The manifest is versioned (module docstring): version ``n`` is
    ``_tfront_manifest.<n>.json``, never overwritten, with a ``checksum`` field; a
    manifest ``_tfront_manifest.json`` of a local run is read as version 0."""

    def __init__(self, spark, out):
        sc = spark.sparkContext
        self.spark, self.url = spark, str(out).rstrip("/")
        self._jvm = sc._jvm
        self._root = self._jvm.org.apache.hadoop.fs.Path(self.url)
        self.fs = self._root.getFileSystem(sc._jsc.hadoopConfiguration())
        self.version = -1   # the newest manifest version seen (the next is one more)

    def _p(self, name: str):
        return self._jvm.org.apache.hadoop.fs.Path(self.path(name)) if name else self._root

    def path(self, name: str = "") -> str:
        return f"{self.url}/{name}" if name else self.url

    def exists(self, name: str = "") -> bool:
        return bool(self.fs.exists(self._p(name)))

    def is_dir(self, name: str = "") -> bool:
        p = self._p(name)
        return bool(self.fs.exists(p) and self.fs.getFileStatus(p).isDirectory())

    def is_file(self, name: str) -> bool:
        p = self._p(name)
        return bool(self.fs.exists(p) and self.fs.getFileStatus(p).isFile())

    def listdir(self, name: str = "") -> list[str]:
        if not self.is_dir(name):
            return []
        return sorted(st.getPath().getName() for st in self.fs.listStatus(self._p(name)))

    def remove(self, name: str) -> None:
        p = self._p(name)
        if self.fs.exists(p) and not self.fs.delete(p, True):
            raise OutputStateError(f"--out {self.url}: could not delete {name or '.'}")

    def mkdirs(self, name: str = "") -> None:
        if not self.fs.mkdirs(self._p(name)):
            raise OutputStateError(f"--out {self.url}: could not create {name or '.'}")

    def rename_in(self, tmp: str, name: str) -> None:
        if not self.fs.rename(self._p(tmp), self._p(name)):
            raise OutputStateError(f"--out {self.url}: could not rename {tmp} to {name}")

    def write_table(self, name: str, table: pa.Table) -> None:
        import pyarrow.parquet as pq

        with tempfile.TemporaryDirectory() as d:
            local = os.path.join(d, "part.parquet")
            pq.write_table(table, local)
            src = self._jvm.org.apache.hadoop.fs.Path(Path(local).as_uri())
            self.fs.copyFromLocalFile(True, True, src, self._p(name))

    def read_table(self, names, columns) -> pa.Table:
        import pyarrow.parquet as pq

        parts = []
        with tempfile.TemporaryDirectory() as d:
            for k, n in enumerate(names):
                local = os.path.join(d, f"{k}.parquet")
                dst = self._jvm.org.apache.hadoop.fs.Path(Path(local).as_uri())
                self.fs.copyToLocalFile(False, self._p(n), dst, True)
                parts.append(pq.read_table(local, columns=list(columns)))
        return pa.concat_tables(parts) if parts else None

    def digest(self, name: str) -> str:
        with tempfile.TemporaryDirectory() as d:   # a local copy: no chunk-by-chunk py4j calls
            local = os.path.join(d, "file")
            dst = self._jvm.org.apache.hadoop.fs.Path(Path(local).as_uri())
            self.fs.copyToLocalFile(False, self._p(name), dst, True)
            return _file_digest(local)

    def parquet_rows(self, names) -> int:
        names = list(names)
        if not names:
            return 0
        return int(self.spark.read.parquet(*(self.path(n) for n in names)).count())

    # -- the versioned manifest --
    def _read_bytes(self, name: str) -> bytes:
        stream = self.fs.open(self._p(name))
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def _versions(self) -> list[tuple[int, str]]:
        out = []
        for name in self.listdir():
            m = _VERSIONED.match(name)
            if m:
                out.append((int(m.group(1)), name))
            elif name == MANIFEST:
                out.append((0, name))
        return sorted(out, reverse=True)

    def load_manifest(self) -> dict | None:
        versions = self._versions()
        if not versions:
            return None
        self.version = versions[0][0]
        problems = []
        for n, name in versions:     # the newest that parses and verifies
            try:
                manifest = json.loads(self._read_bytes(name).decode())
            except Exception as e:   # noqa: BLE001 -- py4j, decoding, JSON: try the older
                problems.append(f"{name}: {e}")
                continue
            if name != MANIFEST and (not isinstance(manifest, dict)
                                     or manifest.get("checksum") != checksum(manifest)):
                problems.append(f"{name}: checksum mismatch")
                continue
            if isinstance(manifest, dict):
                manifest.pop("checksum", None)
            return manifest
        raise self._damaged("every manifest version", "; ".join(problems))

    def save_manifest(self, manifest: dict) -> None:
        self.version += 1
        name = f"_tfront_manifest.{self.version:08d}.json"
        data = json.dumps({**manifest, "checksum": checksum(manifest)}, indent=1).encode()
        stream = self.fs.create(self._p(name), False)   # never overwrites a version
        try:
            stream.write(bytearray(data))
            stream.hsync()
        finally:
            stream.close()
        for n, old in self._versions():   # the older ones, once the new one is complete
            if n < self.version or old == MANIFEST:
                self.remove(old)

    def is_manifest(self, name: str) -> bool:
        return name == MANIFEST or bool(_VERSIONED.match(name))
