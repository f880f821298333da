//! The crate speaks docs/protocol.md: framing, strict replies, yields and
//! resumes, crash points and bad input, checked on the demo backend
//! (src/bin/storecheck-demo-backend.rs) as the kit would see it, over its
//! stdin and stdout.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{Value, json};

struct Backend {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Backend {
    fn start() -> Backend {
        let mut child = Command::new(env!("CARGO_BIN_EXE_storecheck-demo-backend"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the demo backend");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Backend { child, stdin, lines }
    }

    fn send_raw(&mut self, line: &str) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(line.as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
        w.flush().unwrap();
    }

    fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string());
    }

    /// The next stdout line, which must be one JSON object with an id and
    /// exactly one of result, error and yield.
    fn recv(&mut self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(10)).expect("a line within 10 s");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        let obj = v.as_object().unwrap_or_else(|| panic!("stdout line is not an object: {line}"));
        assert!(obj.get("id").and_then(Value::as_u64).is_some(), "no id: {line}");
        let members: Vec<_> = ["result", "error", "yield"].into_iter().filter(|k| obj.contains_key(*k)).collect();
        assert_eq!(members.len(), 1, "want exactly one of result, error, yield: {line}");
        assert_eq!(obj.len(), 2, "want only id and one of result, error, yield: {line}");
        if let Some(e) = obj.get("error") {
            let e = e.as_object().unwrap();
            assert!(
                e.get("kind").and_then(Value::as_str).is_some() && e.get("message").and_then(Value::as_str).is_some() && e.len() == 2,
                "error must be {{kind, message}}: {line}"
            );
        }
        v
    }

    fn call(&mut self, v: Value) -> Value {
        self.send(v);
        self.recv()
    }

    fn nothing_for(&mut self, d: Duration) {
        if let Ok(line) = self.lines.recv_timeout(d) {
            panic!("want no line, got {line}");
        }
    }

    fn open(&mut self, id: u64, store: &str, path: &str) -> u64 {
        let r = self.call(json!({"id": id, "type": "open", "store": store, "path": path, "now_ms": 1000, "timeout_ms": 2000}));
        r["result"]["handle"].as_u64().unwrap_or_else(|| panic!("open: {r}"))
    }

    fn wait(mut self) -> Option<i32> {
        drop(self.stdin.take());
        self.child.wait().unwrap().code()
    }
}

fn kind(r: &Value) -> &str {
    r["error"]["kind"].as_str().unwrap_or_else(|| panic!("want an error: {r}"))
}

fn message(r: &Value) -> &str {
    r["error"]["message"].as_str().unwrap()
}

fn tmp(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("storecheck-backend-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("db.sqlite").to_string_lossy().into_owned()
}

#[test]
fn hello_declares_stores_capabilities_per_store_and_crash_points() {
    let mut b = Backend::start();
    let r = b.call(json!({"id": 1, "type": "hello", "version": 1}));
    assert_eq!(
        r["result"],
        json!({
            "version": 1,
            "name": "storecheck-backend demo",
            "stores": ["kv", "kv_alone"],
            "capabilities": {
                "files": true, "shared_files": true, "in_memory": true, "concurrent_requests": true, "yields": true,
                "durability": "power_loss", "snapshot_revision": "sha256",
                "crash_points": {"kv": ["put/after_kv", "put/after_commit"]},
                "stores": {"kv_alone": {
                    "files": true, "in_memory": true, "durability": "process_crash",
                    "atomic_reads": true, "snapshot_revision": "opaque",
                }},
            }
        })
    );
    let r = b.call(json!({"id": 2, "type": "hello", "version": 2}));
    assert_eq!(kind(&r), "bad_request");
    assert_eq!(b.wait(), Some(0), "the end of stdin is a clean exit");
}

#[test]
fn operations_answer_results_and_their_kinds() {
    let mut b = Backend::start();
    let h = b.open(1, "kv", &tmp("ops"));
    let r = b.call(json!({"id": 2, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 7}, "now_ms": 5000, "timeout_ms": 1000}));
    assert_eq!(r, json!({"id": 2, "result": null}), "an operation that yields nothing answers result null");
    let r = b.call(json!({"id": 3, "type": "op", "handle": h, "store": "kv", "op": "get", "args": {"key": "a"}, "now_ms": 5000}));
    assert_eq!(r["result"], json!({"value": 7, "writes": 1}));
    let r = b.call(
        json!({"id": 4, "type": "op", "handle": h, "store": "kv", "op": "now", "args": {}, "now_ms": 1767225600000i64, "timeout_ms": 1234}),
    );
    assert_eq!(r["result"], json!({"now_ms": 1767225600000i64, "timeout_ms": 1234}), "the request's clock is the only clock");
    let r = b.call(
        json!({"id": 5, "type": "op", "handle": h, "store": "kv", "op": "fail", "args": {"kind": "stale_fencing_token"}, "now_ms": 5000}),
    );
    assert_eq!(kind(&r), "stale_fencing_token", "a store error travels with its kind");
    let r = b.call(json!({"id": 6, "type": "close", "handle": h}));
    assert_eq!(r, json!({"id": 6, "result": null}));
    let r = b.call(json!({"id": 7, "type": "op", "handle": h, "store": "kv", "op": "get", "args": {"key": "a"}, "now_ms": 5000}));
    assert_eq!(kind(&r), "bad_request", "a closed handle is gone");
    assert_eq!(b.wait(), Some(0));
}

#[test]
fn bad_requests_name_what_was_wrong_and_never_end_the_process() {
    let mut b = Backend::start();
    let h = b.open(1, "kv", &tmp("bad"));
    let cases: Vec<(Value, &str)> = vec![
        (json!({"id": 10, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a"}, "now_ms": 1}), "value"),
        (
            json!({"id": 11, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 1, "extra": 2}, "now_ms": 1}),
            "extra",
        ),
        (
            json!({"id": 12, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": 5, "value": 1}, "now_ms": 1}),
            "invalid type",
        ),
        (json!({"id": 13, "type": "op", "handle": h, "store": "kv", "op": "nope", "args": {}, "now_ms": 1}), "nope"),
        (json!({"id": 14, "type": "op", "handle": 99, "store": "kv", "op": "get", "args": {"key": "a"}, "now_ms": 1}), "handle 99"),
        (
            json!({"id": 15, "type": "op", "handle": h, "store": "kv_alone", "op": "get", "args": {"key": "a"}, "now_ms": 1}),
            "is a kv store",
        ),
        (json!({"id": 16, "type": "op", "handle": h, "store": "kv", "op": "get", "args": {"key": "a"}}), "now_ms"),
        (json!({"id": 17, "type": "op", "handle": h, "store": "kv", "op": "get", "args": [1], "now_ms": 1}), "args must be an object"),
        (json!({"id": 18, "type": "open", "store": "nostore", "path": "/tmp/x", "now_ms": 1}), "nostore"),
        (json!({"id": 19, "type": "open", "store": "kv", "now_ms": 1}), "path"),
        (json!({"id": 20, "type": "frobnicate"}), "frobnicate"),
        (json!({"id": 21, "type": "open", "store": "kv", "path": "/tmp/x", "colour": "red"}), "colour"),
        (json!({"id": 22, "type": "arm_crash", "point": "put/nowhere", "nth": 1}), "put/nowhere"),
        (json!({"id": 23, "type": "arm_crash", "point": "put/after_kv", "nth": 0}), "nth"),
        (json!({"id": 24, "type": "write_foreign_schema", "store": "kv", "path": "/tmp/x", "marker": "m"}), "schema writer"),
        (json!({"id": 25, "type": "close", "handle": 1234}), "1234"),
    ];
    for (req, want) in cases {
        let id = req["id"].as_u64().unwrap();
        let r = b.call(req.clone());
        assert_eq!(r["id"], json!(id), "{req}");
        assert_eq!(kind(&r), "bad_request", "{req}: {r}");
        assert!(message(&r).contains(want), "{req}: the message should name {want:?}: {r}");
    }
    // Lines that are no request at all are answered with id 0.
    for (line, want) in [
        ("not json", "not JSON"),
        ("[1,2]", "object"),
        ("{\"type\":\"hello\",\"version\":1}", "id"),
        ("{\"id\":\"x\",\"type\":\"hello\"}", "invalid type"),
    ] {
        b.send_raw(line);
        let r = b.recv();
        assert_eq!(r["id"], json!(0), "{line}");
        assert!(message(&r).contains(want), "{line}: {r}");
    }
    b.send_raw("");
    b.send_raw("   ");
    let r = b.call(json!({"id": 30, "type": "op", "handle": h, "store": "kv", "op": "get", "args": {"key": "a"}, "now_ms": 1}));
    assert_eq!(r["result"], json!({"value": null, "writes": 0}), "still serving after bad input and blank lines");
    assert_eq!(b.wait(), Some(0));
}

#[test]
fn yields_pause_at_each_point_until_resumed_and_hold_no_other_request_back() {
    let mut b = Backend::start();
    let h = b.open(1, "kv", &tmp("yields"));
    b.send(json!({"id": 2, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 1}, "now_ms": 1, "yields": true}));
    assert_eq!(b.recv(), json!({"id": 2, "yield": "put/before_write"}));
    b.nothing_for(Duration::from_millis(200));
    // While request 2 waits, another request on the same handle is answered.
    let r = b.call(json!({"id": 3, "type": "op", "handle": h, "store": "kv", "op": "get", "args": {"key": "a"}, "now_ms": 1}));
    assert_eq!(r["result"], json!({"value": null, "writes": 0}), "the paused write has not begun");
    b.send(json!({"type": "resume", "id": 2}));
    assert_eq!(b.recv(), json!({"id": 2, "yield": "put/after_write"}));
    let r =
        b.call(json!({"id": 4, "type": "op", "handle": h, "store": "kv", "op": "get", "args": {"key": "a"}, "now_ms": 1, "yields": true}));
    assert_eq!(r, json!({"id": 4, "yield": "get/before_read"}));
    b.send(json!({"type": "resume", "id": 4}));
    assert_eq!(b.recv(), json!({"id": 4, "yield": "get/after_read"}));
    b.send(json!({"type": "resume", "id": 4}));
    assert_eq!(b.recv()["result"], json!({"value": 1, "writes": 1}), "the write committed before its after_write point");
    b.send(json!({"type": "resume", "id": 2}));
    assert_eq!(b.recv(), json!({"id": 2, "result": null}));
    // A request that did not ask for yields writes none.
    let r = b.call(json!({"id": 5, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "b", "value": 2}, "now_ms": 1}));
    assert_eq!(r, json!({"id": 5, "result": null}));
    // A resume of a request that waits nowhere gets no reply.
    b.send(json!({"type": "resume", "id": 77}));
    b.nothing_for(Duration::from_millis(200));
    assert_eq!(b.wait(), Some(0));
}

// concurrent_requests as the simulator uses it: two writes on one handle,
// both in flight, each paused at a yield point while the other moves; the
// kit moves one at a time, and the one it resumes answers though the other
// waits mid-operation.
#[test]
fn two_requests_on_one_handle_move_one_at_a_time_between_their_yield_points() {
    let mut b = Backend::start();
    let h = b.open(1, "kv", &tmp("overlap"));
    for id in [2, 3] {
        b.send(json!({"id": id, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": id}, "now_ms": 1, "yields": true}));
        assert_eq!(b.recv(), json!({"id": id, "yield": "put/before_write"}));
    }
    b.send(json!({"type": "resume", "id": 3}));
    assert_eq!(b.recv(), json!({"id": 3, "yield": "put/after_write"}), "request 3 wrote while request 2 waits before its write");
    b.nothing_for(Duration::from_millis(100));
    b.send(json!({"type": "resume", "id": 2}));
    assert_eq!(b.recv(), json!({"id": 2, "yield": "put/after_write"}), "request 2 wrote while request 3 waits after its commit");
    b.send(json!({"type": "resume", "id": 3}));
    assert_eq!(b.recv(), json!({"id": 3, "result": null}));
    b.send(json!({"type": "resume", "id": 2}));
    assert_eq!(b.recv(), json!({"id": 2, "result": null}));
    let r = b.call(json!({"id": 4, "type": "op", "handle": h, "store": "kv", "op": "get", "args": {"key": "a"}, "now_ms": 1}));
    assert_eq!(r["result"], json!({"value": 2, "writes": 2}), "both writes committed, in the order the kit moved them");
    assert_eq!(b.wait(), Some(0));
}

#[test]
fn the_end_of_stdin_releases_an_operation_waiting_at_a_yield_point() {
    let mut b = Backend::start();
    let h = b.open(1, "kv", &tmp("eof"));
    b.send(json!({"id": 2, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 1}, "now_ms": 1, "yields": true}));
    assert_eq!(b.recv()["yield"], json!("put/before_write"));
    assert_eq!(b.wait(), Some(0), "no hang: the process exits when the kit stops waiting");
}

#[test]
fn an_armed_crash_point_exits_on_its_nth_reach_leaving_nothing_of_the_operation() {
    let path = tmp("crash");
    let mut b = Backend::start();
    let h = b.open(1, "kv", &path);
    assert_eq!(b.call(json!({"id": 2, "type": "arm_crash", "point": "put/after_kv", "nth": 2})), json!({"id": 2, "result": null}));
    let r = b.call(json!({"id": 3, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 1}, "now_ms": 1}));
    assert_eq!(r["result"], Value::Null, "the first reach goes on");
    b.send(json!({"id": 4, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 2}, "now_ms": 1}));
    b.nothing_for(Duration::from_millis(300));
    assert_eq!(b.wait(), Some(storecheck_backend::CRASH_EXIT_STATUS), "the second reach exits with status 70, without a reply");

    let mut b = Backend::start();
    let h = b.open(1, "kv", &path);
    let r = b.call(json!({"id": 2, "type": "op", "handle": h, "store": "kv", "op": "get", "args": {"key": "a"}, "now_ms": 1}));
    assert_eq!(r["result"], json!({"value": 1, "writes": 1}), "the crashed write left nothing; the acknowledged one is there");
    // A crash after the commit loses only the answer.
    b.call(json!({"id": 3, "type": "arm_crash", "point": "put/after_commit", "nth": 1}));
    b.send(json!({"id": 4, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 3}, "now_ms": 1}));
    assert_eq!(b.wait(), Some(70));
    let mut b = Backend::start();
    let h = b.open(1, "kv", &path);
    let r = b.call(json!({"id": 2, "type": "op", "handle": h, "store": "kv", "op": "get", "args": {"key": "a"}, "now_ms": 1}));
    assert_eq!(r["result"], json!({"value": 3, "writes": 2}), "the write committed before the crash is all there");
    assert_eq!(b.wait(), Some(0));
}

#[test]
fn many_requests_in_flight_are_each_answered_once() {
    let mut b = Backend::start();
    let h = b.open(1, "kv", &tmp("many"));
    for i in 0..50u64 {
        b.send(json!({"id": 100 + i, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": format!("k{}", i % 5), "value": i}, "now_ms": 1}));
    }
    let mut ids: Vec<u64> = (0..50).map(|_| b.recv()["id"].as_u64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, (100..150).collect::<Vec<_>>());
    assert_eq!(b.wait(), Some(0));
}

#[test]
fn a_crash_point_reached_but_not_declared_fails_the_operation_naming_it() {
    let mut b = Backend::start();
    // kv_alone runs kv's code but declares no crash points; its put reaches
    // put/after_kv.
    let h = b.open(1, "kv_alone", &tmp("undeclared"));
    let r = b
        .call(json!({"id": 2, "type": "op", "handle": h, "store": "kv_alone", "op": "put", "args": {"key": "a", "value": 1}, "now_ms": 1}));
    assert_eq!(kind(&r), "bad_request", "{r}");
    assert_eq!(
        message(&r),
        "crash point \"put/after_kv\" reached but not declared: add it to the kv_alone store's crash_points (declared: [])"
    );
    // Unarmed or not, every reach is checked: the next put fails the same way.
    let r = b
        .call(json!({"id": 3, "type": "op", "handle": h, "store": "kv_alone", "op": "put", "args": {"key": "a", "value": 2}, "now_ms": 1}));
    assert!(message(&r).contains("\"put/after_kv\" reached but not declared"), "{r}");
    // The helper's own after_commit is reached only when declared: a write
    // that reaches no other point answers as usual.
    let r = b.call(json!({"id": 4, "type": "op", "handle": h, "store": "kv_alone", "op": "touch", "args": {"key": "a"}, "now_ms": 1}));
    assert_eq!(r, json!({"id": 4, "result": null}));
    // In a store that declares points for the operation, the message lists
    // those.
    let h = b.open(6, "kv", &tmp("undeclared-kv"));
    let r = b.call(json!({"id": 7, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 1, "crash_place": "after_kv_typo"}, "now_ms": 1}));
    assert_eq!(
        message(&r),
        "crash point \"put/after_kv_typo\" reached but not declared: add it to the kv store's crash_points (declared for put: [\"put/after_commit\", \"put/after_kv\"])"
    );
    // The undeclared point cannot be armed either.
    let r = b.call(json!({"id": 5, "type": "arm_crash", "point": "put/after_nowhere", "nth": 1}));
    assert_eq!(kind(&r), "bad_request");
    assert_eq!(b.wait(), Some(0), "a store's mistake is an answer, not the end of the process");
}

#[test]
fn a_declared_crash_point_goes_on_unarmed_and_crashes_armed() {
    let path = tmp("declared");
    let mut b = Backend::start();
    let h = b.open(1, "kv", &path);
    let r = b.call(json!({"id": 2, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 1}, "now_ms": 1}));
    assert_eq!(r, json!({"id": 2, "result": null}), "put/after_kv and put/after_commit are declared: nothing to say");
    let r = b.call(json!({"id": 3, "type": "op", "handle": h, "store": "kv", "op": "touch", "args": {"key": "a"}, "now_ms": 1}));
    assert_eq!(r, json!({"id": 3, "result": null}), "touch/after_commit is not declared, so the helper does not reach it");
    assert_eq!(b.call(json!({"id": 4, "type": "arm_crash", "point": "put/after_kv", "nth": 1})), json!({"id": 4, "result": null}));
    b.send(json!({"id": 5, "type": "op", "handle": h, "store": "kv", "op": "put", "args": {"key": "a", "value": 2}, "now_ms": 1}));
    assert_eq!(b.wait(), Some(storecheck_backend::CRASH_EXIT_STATUS));
}

#[test]
fn the_revision_helper_is_the_hex_sha256_of_the_bytes() {
    let mut b = Backend::start();
    let h = b.open(1, "kv", &tmp("revision"));
    let r = b.call(json!({"id": 2, "type": "op", "handle": h, "store": "kv", "op": "revision", "args": {"key": "abc"}, "now_ms": 1}));
    assert_eq!(r["result"], json!("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    assert_eq!(b.wait(), Some(0));
}
