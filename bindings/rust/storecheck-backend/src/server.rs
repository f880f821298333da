//! The request loop: framing, the handle table, dispatch, yields, crash
//! points.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Map, Value, json};

use crate::wire::{Capabilities, Request};
use crate::{Error, PROTOCOL_VERSION};

/// The status a process exits with at an armed crash point (what
/// `storecheck serve` uses).
pub const CRASH_EXIT_STATUS: i32 = 70;

/// The longest request line read (the protocol's bound).
const MAX_LINE: usize = 16 << 20;

/// How much sooner than the request's `timeout_ms` an operation stops
/// waiting for a lock, so that its `io` answer still arrives while the kit
/// waits (at most this, and at most a tenth of the timeout).
const OP_MARGIN_MS: i64 = 50;

/// The timeout a request that carries none gets (the kit's default).
const DEFAULT_TIMEOUT_MS: i64 = 5000;

/// One open store: what an `open` request opened. Every `op` on its handle
/// is one `apply`; requests on one handle may run at once, from several
/// threads.
pub trait Store: Send + Sync + 'static {
    /// Runs operation `op` with its arguments (an object; see
    /// [`crate::args`]) and answers its result, or an error of the store's
    /// contract.
    fn apply(&self, cx: &Context, op: &str, args: Value) -> Result<Value, Error>;

    /// Releases the store (`close`, or the end of stdin). Dropping it is
    /// the default.
    fn close(&self) -> Result<(), Error> {
        Ok(())
    }
}

/// What an `open` request asks.
#[derive(Debug, Clone)]
pub struct OpenRequest {
    pub store: String,
    /// The database file (created if missing), or `None` for a private
    /// in-memory database.
    pub path: Option<String>,
    /// The kit's clock, unix milliseconds.
    pub now_ms: i64,
    /// How long the kit waits for the answer: wait for a lock no longer.
    pub timeout_ms: i64,
}

type Opener = Box<dyn Fn(&OpenRequest) -> Result<Arc<dyn Store>, Error> + Send + Sync>;
type SchemaWriter = Box<dyn Fn(&str, &str, i64) -> Result<(), Error> + Send + Sync>;

/// One store a backend implements: its name, how to open it, and what it
/// declares (its crash points; its own capabilities when they are not the
/// backend's).
pub struct StoreDef {
    name: String,
    open: Opener,
    crash_points: Vec<String>,
    declared: Arc<Declared>,
    capabilities: Option<Capabilities>,
    schema_writer: Option<SchemaWriter>,
}

impl StoreDef {
    pub fn new<S: Store>(name: impl Into<String>, open: impl Fn(&OpenRequest) -> Result<S, Error> + Send + Sync + 'static) -> Self {
        let name = name.into();
        StoreDef {
            declared: Arc::new(Declared::new(&name, &[])),
            name,
            open: Box::new(move |r| open(r).map(|s| Arc::new(s) as Arc<dyn Store>)),
            crash_points: Vec::new(),
            capabilities: None,
            schema_writer: None,
        }
    }

    /// The crash points `arm_crash` may arm in this store, each named
    /// `<op>/<place>` as [`Context::crash_point`] reaches them. Every point
    /// the store's code reaches must be here: reaching one that is not
    /// turns the operation's reply into a `bad_request` error naming it,
    /// so a declaration cannot silently disagree with the code. (The one
    /// point [`crate::Db`] reaches by itself, `<op>/after_commit`, is
    /// reached only when it is declared.) Calling this again adds to the
    /// list.
    pub fn crash_points<I: IntoIterator<Item = P>, P: Into<String>>(mut self, points: I) -> Self {
        for p in points {
            let p: String = p.into();
            if !self.crash_points.contains(&p) {
                self.crash_points.push(p);
            }
        }
        self.declared = Arc::new(Declared::new(&self.name, &self.crash_points));
        self
    }

    /// This store's own capabilities, in place of the backend's: the hello
    /// declares them under `capabilities.stores.<name>` (docs/protocol.md),
    /// and the kit checks this store by them.
    pub fn capabilities(mut self, caps: Capabilities) -> Self {
        self.capabilities = Some(caps);
        self
    }

    /// Answers `write_foreign_schema` for this store: `f(path, marker,
    /// version)` writes a new file its own open reads as carrying `marker`
    /// at `version` (declare `client_schema_writer`).
    pub fn schema_writer(mut self, f: impl Fn(&str, &str, i64) -> Result<(), Error> + Send + Sync + 'static) -> Self {
        self.schema_writer = Some(Box::new(f));
        self
    }
}

/// A backend: its name for reports, its capabilities and its stores.
pub struct Backend {
    name: String,
    capabilities: Capabilities,
    stores: Vec<StoreDef>,
}

impl Backend {
    pub fn new(name: impl Into<String>, capabilities: Capabilities) -> Self {
        Backend { name: name.into(), capabilities, stores: Vec::new() }
    }

    pub fn store(mut self, def: StoreDef) -> Self {
        self.stores.push(def);
        self
    }

    /// The answer to `hello`.
    pub fn hello(&self) -> Value {
        let mut caps = self.capabilities.to_json();
        let mut per_store = Map::new();
        let mut points = Map::new();
        for s in &self.stores {
            if let Some(c) = &s.capabilities {
                per_store.insert(s.name.clone(), Value::Object(c.to_json()));
            }
            if !s.crash_points.is_empty() {
                points.insert(s.name.clone(), json!(s.crash_points));
            }
        }
        if !points.is_empty() {
            caps.insert("crash_points".into(), Value::Object(points));
        }
        if !per_store.is_empty() {
            caps.insert("stores".into(), Value::Object(per_store));
        }
        json!({
            "version": PROTOCOL_VERSION,
            "name": self.name,
            "stores": self.stores.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            "capabilities": caps,
        })
    }

    /// Answers the protocol on stdin and stdout until stdin ends, then
    /// closes every open store and exits 0. A panic in a store ends the
    /// process (status 101, the panic on stderr) rather than leave its
    /// request unanswered.
    pub fn serve(self) -> ! {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default(info);
            std::process::exit(101);
        }));
        let stdin = std::io::stdin();
        self.run(stdin.lock(), std::io::stdout());
        std::process::exit(0)
    }

    /// Answers the protocol on `input` and `output` until `input` ends; then
    /// waits for the requests in flight and closes every open store.
    pub fn run<R: BufRead, W: Write + Send + 'static>(self, mut input: R, output: W) {
        let shared = Arc::new(Shared {
            backend: self,
            out: Mutex::new(Box::new(output)),
            handles: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(0),
            resumes: Mutex::new(HashMap::new()),
            armed: Mutex::new(HashMap::new()),
            any_armed: AtomicBool::new(false),
        });
        let mut pool = Pool::new(shared.clone());
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line(&mut input, &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    eprintln!("storecheck-backend: reading stdin: {e}");
                    break;
                }
            }
            if line.len() > MAX_LINE {
                shared.reply(0, Err(Error::bad_request(format!("a request line of {} bytes, longer than {MAX_LINE}", line.len()))));
                continue;
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let req = match decode(&line) {
                Ok(req) => req,
                Err((id, e)) => {
                    shared.reply(id, Err(e));
                    continue;
                }
            };
            if req.kind == "resume" {
                shared.resume(req.id);
                continue;
            }
            pool.run(req);
        }
        // The kit closed stdin: whatever waits at a yield point stops there.
        shared.resumes.lock().unwrap_or_else(|e| e.into_inner()).clear();
        pool.finish();
        let handles: Vec<_> = shared.handles.lock().unwrap_or_else(|e| e.into_inner()).drain().collect();
        for (_, h) in handles {
            if let Err(e) = h.store.close() {
                eprintln!("storecheck-backend: closing a {} store at the end: {e}", h.name);
            }
        }
    }
}

/// Reads one line (without its newline), stopping early past the bound.
fn read_line<R: BufRead>(r: &mut R, line: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(total);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line.len() <= MAX_LINE {
            line.extend_from_slice(&buf[..take]);
        }
        r.consume(take);
        total += take;
        if done {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            return Ok(total);
        }
    }
}

/// Decodes a request line strictly; on failure, the id to answer (0 when
/// the line has none) and what was wrong.
fn decode(line: &[u8]) -> Result<Request, (u64, Error)> {
    let value: Value = serde_json::from_slice(line).map_err(|e| (0, Error::bad_request(format!("the request is not JSON: {e}"))))?;
    let Value::Object(obj) = &value else {
        return Err((0, Error::bad_request("the request is not a JSON object")));
    };
    let id = obj.get("id").and_then(Value::as_u64).unwrap_or(0);
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    serde_json::from_value(value).map_err(|e| (id, Error::bad_request(format!("request {id} ({kind:?}): {e}"))))
}

struct Handle {
    name: String,
    store: Arc<dyn Store>,
    declared: Arc<Declared>,
}

/// One store's declared crash points, by operation, for a lookup without
/// building the point's name.
#[derive(Default)]
pub(crate) struct Declared {
    store: String,
    by_op: HashMap<String, HashSet<String>>,
    /// Every declared name, sorted, for the message.
    all: BTreeSet<String>,
}

impl Declared {
    fn new(store: &str, points: &[String]) -> Declared {
        let mut d = Declared { store: store.to_string(), ..Default::default() };
        for p in points {
            // A name without a slash can never be reached; it stays in the
            // hello (the kit may arm it) and in the message.
            if let Some((op, place)) = p.split_once('/') {
                d.by_op.entry(op.to_string()).or_default().insert(place.to_string());
            }
            d.all.insert(p.clone());
        }
        d
    }

    fn contains(&self, op: &str, place: &str) -> bool {
        self.by_op.get(op).is_some_and(|places| places.contains(place))
    }

    /// The error of an undeclared point: it names the points declared for
    /// the operation (a misspelt place is among them), or, when the
    /// operation has none, every point of the store.
    fn undeclared(&self, op: &str, place: &str) -> Error {
        let prefix = format!("{op}/");
        let mine: Vec<&String> = self.all.iter().filter(|p| p.starts_with(&prefix)).collect();
        let declared = if mine.is_empty() {
            format!("declared: {:?}", self.all.iter().collect::<Vec<_>>())
        } else {
            format!("declared for {op}: {mine:?}")
        };
        Error::bad_request(format!(
            "crash point \"{op}/{place}\" reached but not declared: add it to the {} store's crash_points ({declared})",
            self.store
        ))
    }
}

pub(crate) struct Shared {
    backend: Backend,
    out: Mutex<Box<dyn Write + Send>>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_handle: AtomicU64,
    /// The operations waiting at a yield point, by request id.
    resumes: Mutex<HashMap<u64, SyncSender<()>>>,
    /// Armed crash points: how many more reaches before the crash.
    armed: Mutex<HashMap<String, i64>>,
    any_armed: AtomicBool,
}

impl Shared {
    fn write(&self, line: &Value) {
        let text = serde_json::to_string(line)
            .unwrap_or_else(|e| format!("{{\"id\":0,\"error\":{{\"kind\":\"bad_request\",\"message\":\"encode: {e}\"}}}}"));
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        // A reply the kit cannot read (it is gone) is nobody's loss.
        let _ = out.write_all(text.as_bytes()).and_then(|_| out.write_all(b"\n")).and_then(|_| out.flush());
    }

    fn reply(&self, id: u64, res: Result<Value, Error>) {
        match res {
            Ok(v) => self.write(&json!({"id": id, "result": v})),
            Err(e) => self.write(&json!({"id": id, "error": {"kind": e.kind, "message": e.message}})),
        }
    }

    fn resume(&self, id: u64) {
        let waiting = self.resumes.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        match waiting {
            Some(tx) => {
                let _ = tx.send(());
            }
            None => eprintln!("storecheck-backend: a resume of request {id}, which waits at no yield point"),
        }
    }

    fn reach(&self, point: &str) {
        if !self.any_armed.load(Ordering::Relaxed) {
            return;
        }
        let mut armed = self.armed.lock().unwrap_or_else(|e| e.into_inner());
        let Some(left) = armed.get_mut(point) else { return };
        if *left > 1 {
            *left -= 1;
            return;
        }
        // At once: nothing more committed, nothing more written. Holding the
        // output lock first keeps a reply being written whole.
        let _out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        eprintln!("storecheck-backend: crash point {point} reached: exiting with status {CRASH_EXIT_STATUS}");
        std::process::exit(CRASH_EXIT_STATUS);
    }

    fn handle(self: &Arc<Self>, req: Request) -> Result<Value, Error> {
        let b = &self.backend;
        match req.kind.as_str() {
            "hello" => {
                if req.version != Some(PROTOCOL_VERSION as i64) {
                    return Err(Error::bad_request(format!(
                        "hello: protocol version {:?} asked; this backend speaks {PROTOCOL_VERSION}",
                        req.version
                    )));
                }
                Ok(b.hello())
            }
            "open" => {
                let store = need(req.store, "open", "store")?;
                let def = b.stores.iter().find(|s| s.name == store).ok_or_else(|| {
                    Error::bad_request(format!(
                        "open: no store {store:?}; this backend has {}",
                        b.stores.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                    ))
                })?;
                let path = match (req.path, req.in_memory.unwrap_or(false)) {
                    (Some(p), false) if !p.is_empty() => Some(p),
                    (None, true) => None,
                    _ => return Err(Error::bad_request("open: give either a path or \"in_memory\": true, not both or neither")),
                };
                let open = OpenRequest { store: store.clone(), path, now_ms: req.now_ms.unwrap_or(0), timeout_ms: timeout(req.timeout_ms) };
                let s = (def.open)(&open)?;
                let handle = self.next_handle.fetch_add(1, Ordering::Relaxed) + 1;
                let declared = def.declared.clone();
                self.handles.lock().unwrap_or_else(|e| e.into_inner()).insert(handle, Handle { name: store, store: s, declared });
                Ok(json!({ "handle": handle }))
            }
            "close" => {
                let handle = need(req.handle, "close", "handle")?;
                let h = self.handles.lock().unwrap_or_else(|e| e.into_inner()).remove(&handle);
                let h = h.ok_or_else(|| Error::bad_request(format!("close: no open handle {handle}")))?;
                h.store.close()?;
                Ok(Value::Null)
            }
            "op" => {
                let handle = need(req.handle, "op", "handle")?;
                let store = need(req.store, "op", "store")?;
                let op = need(req.op, "op", "op")?;
                let now_ms = need(req.now_ms, "op", "now_ms")?;
                let h = self
                    .handles
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&handle)
                    .map(|h| (h.name.clone(), h.store.clone(), h.declared.clone()));
                let (name, s, declared) = h.ok_or_else(|| Error::bad_request(format!("{store} {op}: no open handle {handle}")))?;
                if name != store {
                    return Err(Error::bad_request(format!("{store} {op}: handle {handle} is a {name} store")));
                }
                let args = match req.args {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(v @ Value::Object(_)) => v,
                    Some(other) => return Err(Error::bad_request(format!("{store} {op}: args must be an object, not {other}"))),
                };
                let cx = Context {
                    id: req.id,
                    store,
                    op: op.clone(),
                    now_ms,
                    timeout_ms: timeout(req.timeout_ms),
                    yields: req.yields.unwrap_or(false),
                    shared: self.clone(),
                    declared,
                    undeclared: Mutex::new(None),
                };
                let res = s.apply(&cx, &op, args);
                // A crash point reached but not declared fails the operation
                // whatever it answered: the declaration is what the kit
                // explores, and it must be the code's.
                match cx.undeclared.into_inner().unwrap_or_else(|e| e.into_inner()) {
                    Some(e) => Err(e),
                    None => res,
                }
            }
            "arm_crash" => {
                let point = need(req.point, "arm_crash", "point")?;
                let nth = req.nth.unwrap_or(1);
                if !b.stores.iter().any(|s| s.crash_points.contains(&point)) {
                    return Err(Error::bad_request(format!("arm_crash: no crash point {point:?}")));
                }
                if nth < 1 {
                    return Err(Error::bad_request(format!("arm_crash: nth must be 1 or more, not {nth}")));
                }
                self.armed.lock().unwrap_or_else(|e| e.into_inner()).insert(point, nth);
                self.any_armed.store(true, Ordering::Relaxed);
                Ok(Value::Null)
            }
            "write_foreign_schema" => {
                let store = need(req.store, "write_foreign_schema", "store")?;
                let path = need(req.path, "write_foreign_schema", "path")?;
                let marker = need(req.marker, "write_foreign_schema", "marker")?;
                let writer = b.stores.iter().find(|s| s.name == store).and_then(|s| s.schema_writer.as_ref());
                let writer =
                    writer.ok_or_else(|| Error::bad_request(format!("write_foreign_schema: the {store:?} store has no schema writer")))?;
                writer(&path, &marker, req.version.unwrap_or(0))?;
                Ok(Value::Null)
            }
            other => Err(Error::bad_request(format!(
                "unknown request type {other:?} (accepted: hello, open, close, op, arm_crash, resume, write_foreign_schema)"
            ))),
        }
    }
}

fn need<T>(v: Option<T>, what: &str, member: &str) -> Result<T, Error> {
    v.ok_or_else(|| Error::bad_request(format!("{what}: missing {member:?}")))
}

fn timeout(ms: Option<i64>) -> i64 {
    match ms {
        Some(ms) if ms > 0 => ms,
        _ => DEFAULT_TIMEOUT_MS,
    }
}

/// Workers: an idle one takes the next request; a new one starts when all
/// are busy, so any number may be in flight (one paused at a yield point
/// holds no other back).
struct Pool {
    shared: Arc<Shared>,
    tx: Option<Sender<Request>>,
    rx: Arc<Mutex<Receiver<Request>>>,
    idle: Arc<AtomicUsize>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    fn new(shared: Arc<Shared>) -> Pool {
        let (tx, rx) = mpsc::channel();
        Pool { shared, tx: Some(tx), rx: Arc::new(Mutex::new(rx)), idle: Arc::new(AtomicUsize::new(0)), workers: Vec::new() }
    }

    fn run(&mut self, req: Request) {
        // Claim an idle worker, or start one with this request.
        if self.idle.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok() {
            if let Some(tx) = &self.tx {
                let _ = tx.send(req);
            }
            return;
        }
        let (shared, rx, idle) = (self.shared.clone(), self.rx.clone(), self.idle.clone());
        self.workers.push(std::thread::spawn(move || {
            let mut next = Some(req);
            while let Some(req) = next.take() {
                let id = req.id;
                let res = shared.handle(req);
                shared.reply(id, res);
                idle.fetch_add(1, Ordering::AcqRel);
                next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv().ok();
            }
        }));
    }

    fn finish(mut self) {
        self.tx = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// What an operation's code gets: the request's clock and deadline, and its
/// yield and crash points.
pub struct Context {
    id: u64,
    store: String,
    op: String,
    now_ms: i64,
    timeout_ms: i64,
    yields: bool,
    shared: Arc<Shared>,
    declared: Arc<Declared>,
    /// The first crash point reached that the store did not declare: the
    /// operation's reply becomes this error.
    undeclared: Mutex<Option<Error>>,
}

impl Context {
    /// The kit's clock, unix milliseconds: the only time a store may read.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// How long the kit waits for this reply.
    pub fn timeout_ms(&self) -> i64 {
        self.timeout_ms
    }

    /// How long to wait for a lock: a little less than `timeout_ms`, so that
    /// an `io` answer after the wait arrives while the kit still waits.
    pub fn busy_timeout_ms(&self) -> i64 {
        (self.timeout_ms - OP_MARGIN_MS.min(self.timeout_ms / 10)).max(1)
    }

    /// The operation's name.
    pub fn op(&self) -> &str {
        &self.op
    }

    /// The store's name.
    pub fn store(&self) -> &str {
        &self.store
    }

    /// A yield point, named `<op>/<place>`: a place where the operation
    /// holds no database lock and no lock of its own. When the request asked
    /// for yields, it tells the kit and waits for the kit's resume; else it
    /// does nothing. An error means the kit stopped waiting (stdin ended):
    /// give up the operation.
    pub fn yield_point(&self, place: &str) -> Result<(), Error> {
        if !self.yields {
            return Ok(());
        }
        let name = format!("{}/{}", self.op, place);
        let (tx, rx) = mpsc::sync_channel(1);
        self.shared.resumes.lock().unwrap_or_else(|e| e.into_inner()).insert(self.id, tx);
        self.shared.write(&json!({"id": self.id, "yield": name}));
        rx.recv().map_err(|_| Error::io(format!("{name}: the kit stopped waiting at this yield point")))
    }

    /// A crash point, named `<op>/<place>`: when `arm_crash` armed it, the
    /// Nth reach exits the process at once with [`CRASH_EXIT_STATUS`],
    /// committing nothing more and answering nothing.
    ///
    /// The point must be among the store's [`StoreDef::crash_points`]. One
    /// that is not is a mistake of the backend's, caught on every reach,
    /// armed or not: the operation goes on, and its reply is then a
    /// `bad_request` error saying `crash point "<op>/<place>" reached but
    /// not declared: add it to the <store> store's crash_points (declared
    /// for <op>: [...])` (or every point of the store, when none is declared
    /// for the operation), whatever the operation answered (the message goes
    /// to stderr too).
    pub fn crash_point(&self, place: &str) {
        if !self.declared.contains(&self.op, place) {
            let mut first = self.undeclared.lock().unwrap_or_else(|e| e.into_inner());
            if first.is_none() {
                let e = self.declared.undeclared(&self.op, place);
                eprintln!("storecheck-backend: {}", e.message);
                *first = Some(e);
            }
            return;
        }
        if self.shared.any_armed.load(Ordering::Relaxed) {
            self.shared.reach(&format!("{}/{}", self.op, place));
        }
    }

    /// A crash point the store may leave undeclared: reached only when it
    /// is declared ([`crate::Db`]'s `<op>/after_commit`).
    pub(crate) fn crash_point_if_declared(&self, place: &str) {
        if self.declared.contains(&self.op, place) {
            self.crash_point(place);
        }
    }

    /// Whether the store declared crash point `<op>/<place>` for this
    /// operation.
    pub fn declares_crash_point(&self, place: &str) -> bool {
        self.declared.contains(&self.op, place)
    }
}
