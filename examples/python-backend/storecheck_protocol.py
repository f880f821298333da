"""The storecheck wire protocol (docs/protocol.md, version 1) and the pieces
every store of this backend shares: errors, the one transaction helper with
its crash and yield points, and the codecs of the wire's values.

Nothing here knows a store's rules; store_continuity.py, store_runtime.py and
store_client.py do. backend.py wires them together.
"""

import base64
import datetime
import json
import os
import sqlite3
import sys
import traceback

PROTOCOL_VERSION = 1
CRASH_EXIT_STATUS = 70  # what `storecheck serve` uses; any status will do


def log(*args):
    print("py2-backend:", *args, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Errors


class StoreError(Exception):
    """A failed request: a kind of the store's closed set, or bad_request."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def bad_request(message):
    return StoreError("bad_request", message)


class Rollback(Exception):
    """Raised inside a transaction body: roll everything back, then answer
    `value` (the seed's `TxOutcome::Rollback(Ok(value))`)."""

    def __init__(self, value=None):
        super().__init__("rollback")
        self.value = value


# --------------------------------------------------------------------------
# Crash points and yield points


class CrashPoints:
    """The points `arm_crash` may arm. reach(point) is called by the
    transaction helper (and by transaction bodies, between their statements);
    on the Nth reach of an armed point the process exits at once: no
    rollback, no commit, no reply."""

    def __init__(self):
        self.declared = {}  # store -> [point]
        self.armed = {}     # point -> reaches left before the crash

    def declare(self, store, points):
        self.declared[store] = list(points)

    def known(self, point):
        return any(point in pts for pts in self.declared.values())

    def arm(self, point, nth):
        if not self.known(point):
            raise bad_request(f"arm_crash: no crash point {point!r}")
        if not isinstance(nth, int) or isinstance(nth, bool) or nth < 1:
            raise bad_request(f"arm_crash: nth must be 1 or more, not {nth!r}")
        self.armed[point] = nth

    def reach(self, point):
        left = self.armed.get(point)
        if left is None:
            return
        if left > 1:
            self.armed[point] = left - 1
            return
        log(f"crash point {point} reached: exiting")
        try:
            sys.stderr.flush()
        finally:
            os._exit(CRASH_EXIT_STATUS)


CRASH = CrashPoints()


class Yields:
    """The yield points of the request in flight (docs/protocol.md, "Yield
    points"): when an op request asks for them ("yields": true), each one
    writes {"id": N, "yield": "<op>/<place>"} and waits for the kit's
    {"type": "resume", "id": N}. This backend answers one request at a time,
    so while it waits the kit sends it nothing else."""

    def __init__(self):
        self.request = None  # the id of the op request that asked for yields

    def reach(self, place):
        rid = self.request
        if rid is None:
            return
        sys.stdout.write(json.dumps({"id": rid, "yield": place}) + "\n")
        sys.stdout.flush()
        while True:
            raw = sys.stdin.buffer.readline()
            if not raw:
                # The kit closed stdin (it gave up on this process): stop here.
                os._exit(0)
            line = raw.strip()
            if not line:
                continue
            msg = json.loads(line)
            if msg.get("type") == "resume" and msg.get("id") == rid:
                return
            log(f"at the yield point {place} of request {rid}, a line that is not its resume: {line[:200]!r}")
            os._exit(76)


YIELDS = Yields()


def yield_point(name):
    """A pause point: before each transaction begins ("<op>/before_begin")
    and after each commit ("<op>/after_commit"), where this backend holds no
    database lock and no lock of its own."""
    YIELDS.reach(name)


# --------------------------------------------------------------------------
# The database and the one transaction helper


def busy_ms(timeout_ms, margin_ms=0):
    """The busy timeout for a request the kit waits timeout_ms for: open
    waits for a lock the whole timeout_ms (the kit's locked-open spec wants
    no less); an operation gives up margin_ms earlier, so that a lock wait
    that gives up is still answered (io) before the kit stops waiting."""
    if not isinstance(timeout_ms, int) or timeout_ms <= 0:
        timeout_ms = 5000
    return max(1, timeout_ms - min(margin_ms, timeout_ms // 10))


OP_MARGIN_MS = 50


class Database:
    """One sqlite3 connection (one handle). Every operation goes through
    run(): BEGIN (IMMEDIATE for a write), the body, COMMIT; a StoreError,
    Rollback or SQLite error rolls it all back."""

    def __init__(self, path, timeout_ms, wal=True):
        self.path = path
        self.memory = path == ":memory:"
        try:
            self.conn = sqlite3.connect(path, timeout=busy_ms(timeout_ms) / 1000.0,
                                        isolation_level=None, check_same_thread=False)
        except sqlite3.Error as e:
            raise StoreError("io", f"open {path!r}: {e}")
        self.set_timeout(timeout_ms)
        self.wal = wal and not self.memory

    def enable_wal(self):
        if self.wal:
            try:
                mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()
            except sqlite3.Error as e:
                raise StoreError("io", f"journal_mode=WAL on {self.path!r}: {e}")
            if mode is None or str(mode[0]).lower() != "wal":
                raise StoreError("io", f"journal_mode=WAL on {self.path!r}: got {mode!r}")
            # FULL syncs the WAL at every commit, before the answer, so an
            # acknowledged write survives a power cut: SQLite's default,
            # which the seeds' stores leave in place, said here because a
            # SQLite may be built with another. NORMAL (this backend's first
            # choice) syncs only at checkpoints, and the kit's power cuts
            # lost acknowledged commits with it (FINDINGS.md, F-D1).
            self.conn.execute("PRAGMA synchronous=FULL")

    def set_timeout(self, timeout_ms, margin_ms=0):
        try:
            self.conn.execute(f"PRAGMA busy_timeout={busy_ms(timeout_ms, margin_ms)}")
        except sqlite3.Error as e:
            raise StoreError("io", f"busy_timeout: {e}")

    def close(self):
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        self.conn.close()

    def run(self, op, body, write=True):
        """Run body(tx) as one transaction of operation `op`.

        write: BEGIN IMMEDIATE (the write lock is taken before the first read,
        so every check and write of the operation sees one state no other
        connection can move); else a deferred read transaction (one snapshot).
        The crash point "<op>/after_commit" is reached after the commit of a
        write, before the reply is sent."""
        yield_point(f"{op}/before_begin")
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as e:
            raise StoreError("io", f"{op}: begin: {e}")
        tx = Tx(conn, op)
        try:
            result = body(tx)
        except Rollback as r:
            self._rollback(op)
            return r.value
        except StoreError:
            self._rollback(op)
            raise
        except sqlite3.Error as e:
            self._rollback(op)
            raise StoreError("io", f"{op}: {e}")
        except OverflowError as e:
            self._rollback(op)
            raise StoreError("io", f"{op}: a value does not fit SQLite's 64-bit integers: {e}")
        except BaseException:
            self._rollback(op)
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as e:
            self._rollback(op)
            raise StoreError("io", f"{op}: commit: {e}")
        if write:
            CRASH.reach(f"{op}/after_commit")
        yield_point(f"{op}/after_commit")
        return result

    def _rollback(self, op):
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        except sqlite3.Error as e:
            log(f"{op}: rollback failed: {e}")


class Tx:
    """What a transaction body gets: the connection's statements and the
    operation's crash points between them."""

    def __init__(self, conn, op):
        self.conn = conn
        self.op = op

    def execute(self, sql, params=()):
        return self.conn.execute(sql, params)

    def one(self, sql, params=()):
        return self.conn.execute(sql, params).fetchone()

    def all(self, sql, params=()):
        return self.conn.execute(sql, params).fetchall()

    def changes(self, sql, params=()):
        return self.conn.execute(sql, params).rowcount

    def point(self, place):
        CRASH.reach(f"{self.op}/{place}")


# --------------------------------------------------------------------------
# Codecs of wire values


def b64_in(v, what):
    """[]byte: a base64 string; null is empty bytes."""
    if v is None:
        return b""
    if not isinstance(v, str):
        raise bad_request(f"{what}: want a base64 string, got {type(v).__name__}")
    try:
        return base64.b64decode(v, validate=True)
    except ValueError as e:
        raise bad_request(f"{what}: not base64: {e}")


def b64_out(data):
    return base64.b64encode(bytes(data or b"")).decode("ascii")


def canonical_json(value):
    """The text a serde_json::Value serializes to: compact, object keys in
    order (serde_json's default map is a BTreeMap), non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def json_text_in(v, what, kind="invalid_argument"):
    """An opaque JSON value: on the wire a JSON string holding the JSON text.
    Returns (value, canonical text), or None for null / "" (no document).
    Text that is not JSON fails with `kind`."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise bad_request(f"{what}: want a string holding JSON text, got {type(v).__name__}")
    if v.strip() == "":
        return None
    try:
        value = json.loads(v)
    except ValueError as e:
        raise StoreError(kind, f"{what} is not JSON: {e}: {v[:80]!r}")
    try:
        return value, canonical_json(value)
    except ValueError as e:
        raise StoreError(kind, f"{what} is not JSON: {e}")


def need(args, key, typ, what=None):
    """A required argument of the given JSON type."""
    if key not in args:
        raise bad_request(f"{what or 'args'}: missing {key!r}")
    v = args[key]
    if typ is int:
        if not isinstance(v, int) or isinstance(v, bool):
            raise bad_request(f"{what or 'args'}: {key!r} must be an integer, got {v!r}")
    elif typ is str:
        if not isinstance(v, str):
            raise bad_request(f"{what or 'args'}: {key!r} must be a string, got {v!r}")
    elif typ is dict:
        if not isinstance(v, dict):
            raise bad_request(f"{what or 'args'}: {key!r} must be an object, got {v!r}")
    elif typ is bool:
        if not isinstance(v, bool):
            raise bad_request(f"{what or 'args'}: {key!r} must be a bool, got {v!r}")
    return v


def opt(args, key, typ, default):
    """An argument that may be absent or null."""
    v = args.get(key)
    if v is None:
        return default
    return need(args, key, typ)


def uint(args, key, what=None):
    v = need(args, key, int, what)
    if v < 0:
        raise bad_request(f"{what or 'args'}: {key!r} must not be negative, got {v}")
    return v


def str_list(args, key):
    v = args.get(key)
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise bad_request(f"{key!r} must be a list of strings")
    return v


# Times: RFC 3339 on the wire; kept as UTC text of fixed width, so that text
# order is time order.

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def time_in(v, what):
    """An RFC 3339 time → unix milliseconds (floor; sub-millisecond dropped)."""
    if not isinstance(v, str):
        raise bad_request(f"{what}: want an RFC 3339 string, got {v!r}")
    s = v.strip()
    try:
        if s[-1:] in "zZ":
            s, tz = s[:-1], datetime.timezone.utc
        else:
            sign = 1 if s[-6] == "+" else -1
            if s[-6] not in "+-" or s[-3] != ":":
                raise ValueError("no zone")
            tz = datetime.timezone(sign * datetime.timedelta(hours=int(s[-5:-3]), minutes=int(s[-2:])))
            s = s[:-6]
        date, _, clock = s.replace("t", "T").partition("T")
        y, mo, d = (int(x) for x in date.split("-"))
        hh, mi, rest = clock.split(":")
        sec, _, frac = rest.partition(".")
        if frac and not frac.isdigit():
            raise ValueError("bad fraction")
        frac = (frac + "000")[:3]
        dt = datetime.datetime(y, mo, d, int(hh), int(mi), int(sec), tzinfo=tz)
    except (ValueError, IndexError) as e:
        raise bad_request(f"{what}: not an RFC 3339 time: {v!r} ({e})")
    delta = dt - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000 + int(frac)


def fmt_ms(ms):
    """Unix milliseconds → "YYYY-MM-DDTHH:MM:SS.mmmZ"."""
    dt = _EPOCH + datetime.timedelta(milliseconds=ms)
    return (f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
            f".{dt.microsecond // 1000:03d}Z")


def fmt_s(seconds):
    """Unix seconds → "YYYY-MM-DDTHH:MM:SSZ"."""
    dt = _EPOCH + datetime.timedelta(seconds=seconds)
    return f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}Z"


def text_to_ms(text):
    """A time this backend stored (either width) → unix milliseconds."""
    return time_in(text, "stored time")


# --------------------------------------------------------------------------
# The request loop


class Backend:
    """Handles, dispatch and the request loop. `stores` maps a store name to
    its class: cls(path_or_memory, req) opens it; cls.OPS names its
    operations; cls.KINDS is its error set; cls.CRASH_POINTS its points."""

    def __init__(self, name, stores):
        self.name = name
        self.stores = stores
        self.handles = {}
        self.next_handle = 0
        for store, cls in stores.items():
            CRASH.declare(store, cls.CRASH_POINTS)

    def hello(self, req):
        if req.get("version") != PROTOCOL_VERSION:
            raise bad_request(f"protocol version {req.get('version')!r} asked; this backend speaks 1")
        # Every read is one transaction (Db.run: BEGIN), the reads the seeds
        # run as several statements included: atomic_reads.
        # One request at a time (serve reads the next line only once the
        # one before is answered; Yields waits for its resume alone):
        # concurrent_requests is false, said rather than left out, so the
        # kit keeps one operation in flight per process. Races inside one
        # process are not explored; races between processes are, since
        # every store declares shared_files.
        caps = {"files": True, "shared_files": True, "in_memory": True, "sqlite_locking": True, "yields": True,
                "atomic_reads": True, "concurrent_requests": False}
        for cls in self.stores.values():
            caps.update(getattr(cls, "CAPABILITIES", {}))
        caps["crash_points"] = {s: list(c.CRASH_POINTS) for s, c in self.stores.items()}
        return {"version": PROTOCOL_VERSION, "name": self.name, "stores": list(self.stores),
                "capabilities": caps}

    def handle(self, req):
        t = req.get("type")
        if t == "hello":
            return self.hello(req)
        if t == "open":
            store = req.get("store")
            cls = self.stores.get(store)
            if cls is None:
                raise bad_request(f"open: no store {store!r}; this backend has {', '.join(self.stores)}")
            if req.get("in_memory") is True:
                path = ":memory:"
            else:
                path = req.get("path")
                if not isinstance(path, str) or not path:
                    raise bad_request("open: give a path or \"in_memory\": true")
            timeout_ms = req.get("timeout_ms")
            s = cls(path, timeout_ms if isinstance(timeout_ms, int) else 5000, req.get("now_ms") or 0)
            self.next_handle += 1
            self.handles[self.next_handle] = (store, s)
            return {"handle": self.next_handle}
        if t == "close":
            h = self.handles.pop(req.get("handle"), None)
            if h is None:
                raise bad_request(f"close: no handle {req.get('handle')!r}")
            h[1].close()
            return None
        if t == "op":
            h = self.handles.get(req.get("handle"))
            if h is None:
                raise bad_request(f"op: no handle {req.get('handle')!r}")
            store, s = h
            if req.get("store") != store:
                raise bad_request(f"op: handle {req.get('handle')} is a {store} store, not {req.get('store')!r}")
            op = req.get("op")
            fn = type(s).OPS.get(op) if isinstance(op, str) else None
            if fn is None:
                raise bad_request(f"op: the {store} store has no operation {op!r}")
            args = req.get("args")
            if args is None:
                args = {}
            if not isinstance(args, dict):
                raise bad_request("op: args must be an object")
            now_ms = req.get("now_ms")
            if not isinstance(now_ms, int) or isinstance(now_ms, bool):
                raise bad_request("op: now_ms must be an integer")
            timeout_ms = req.get("timeout_ms")
            s.db.set_timeout(timeout_ms if isinstance(timeout_ms, int) else 5000, OP_MARGIN_MS)
            s.now_ms = now_ms
            YIELDS.request = req.get("id") if req.get("yields") is True else None
            try:
                return fn(s, args)
            except StoreError as e:
                if e.kind != "bad_request" and e.kind not in type(s).KINDS:
                    raise StoreError("io", f"{e.kind}: {e.message}")
                raise
            finally:
                YIELDS.request = None
        if t == "arm_crash":
            CRASH.arm(req.get("point"), req.get("nth", 1))
            return None
        if t == "write_foreign_schema":
            cls = self.stores.get(req.get("store"))
            writer = getattr(cls, "write_foreign_schema", None)
            if writer is None:
                raise bad_request(f"write_foreign_schema: the {req.get('store')!r} store has no schema writer")
            version = req.get("version", 0)
            if not isinstance(req.get("path"), str) or not isinstance(req.get("marker"), str) or not isinstance(version, int):
                raise bad_request("write_foreign_schema: want a path, a marker and an integer version")
            writer(req["path"], req["marker"], version)
            return None
        raise bad_request(f"request type {t!r} is not supported")

    def serve(self):
        log("ready")
        out = sys.stdout
        # PY2_TRACE=DIR: append every request and reply to DIR/trace-<pid>.jsonl
        # (a debugging aid; off by default).
        trace_dir = os.environ.get("PY2_TRACE")
        trace = open(os.path.join(trace_dir, f"trace-{os.getpid()}.jsonl"), "a") if trace_dir else None
        while True:
            # readline, not iteration: a yield point reads the resume from
            # the same buffer in the middle of a request.
            raw = sys.stdin.buffer.readline()
            if not raw:
                break
            line = raw.decode("utf-8", errors="replace").strip()
            if not line:
                continue
            rid = 0
            try:
                req = json.loads(line)
                if not isinstance(req, dict):
                    raise ValueError("a request is a JSON object")
                rid = req.get("id", 0)
                reply = {"id": rid, "result": self.handle(req)}
            except StoreError as e:
                reply = {"id": rid, "error": {"kind": e.kind, "message": e.message}}
            except Exception as e:  # a malformed request, or a bug: say so on stderr
                log(f"request {line[:300]!r} failed:\n{traceback.format_exc()}")
                reply = {"id": rid, "error": {"kind": "bad_request", "message": f"{type(e).__name__}: {e}"}}
            text = json.dumps(reply, ensure_ascii=False)
            if trace is not None:
                trace.write(line + "\n" + text + "\n")
                trace.flush()
            out.write(text + "\n")
            out.flush()
        for _, s in list(self.handles.values()):
            try:
                s.close()
            except Exception:
                pass
        self.handles.clear()
