#!/usr/bin/env python3
"""storecheck backend "py2": the continuity, runtime and client stores in
Python on the standard sqlite3 module, written from the Rust seeds and
docs/protocol.md alone (an independent second implementation; the kit's own
Go reference was not read).

    storecheck run -- python3 examples/python-backend/backend.py

Files:
  storecheck_protocol.py  framing, dispatch, handles, errors, the one
                          transaction helper (crash and yield points), codecs
  store_continuity.py     seed 003, meerkat-mobkit LocalContinuityStore
  store_runtime.py        seed 000, lash_sqlite_store RuntimePersistence
  store_client.py         seed 002, onlyne ClientStore + SessionLedger
  readings.py             the attribution switch (PY2_KIT_READINGS): answer a
                          named silence the kit's way instead, to attribute a
                          failure to one reading; off by default
  READINGS.md             every place a seed is silent, and the reading taken
  FINDINGS.md             what the kit asks that the seeds do not say
  backend_test.go         the suite against this backend, for all three stores

PY2_TRACE=DIR appends every request and reply to DIR/trace-<pid>.jsonl.

Requests are answered one at a time, in order: the hello declares
concurrent_requests false, so the simulator keeps one operation in flight per
process (its stores declare shared_files, so it races two processes; a store
of it run as one process would be told "races inside the process were not
explored"). Every operation is one SQLite
transaction (BEGIN IMMEDIATE when it writes); time comes only from each
request's now_ms.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from storecheck_protocol import Backend  # noqa: E402
from store_client import ClientStore  # noqa: E402
from store_continuity import ContinuityStore  # noqa: E402
from store_runtime import RuntimeStore  # noqa: E402


def main():
    Backend("py2 (independent python backend) 1.0",
            {"continuity": ContinuityStore, "runtime": RuntimeStore, "client": ClientStore}).serve()


if __name__ == "__main__":
    main()
