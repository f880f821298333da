"""The attribution switch.

By default this backend answers with its own readings of what the seeds
leave open (READINGS.md), and with the seeds' own text where they speak.
Each place where that answer differs from the kit's known choice has a name
here. Setting

    PY2_KIT_READINGS=name,name,...      (or "all", or "silences")

makes the backend answer that place the kit's way instead. It exists only to
attribute a failure of the kit to exactly one reading (FINDINGS.md: "with
PY2_KIT_READINGS=all but X, spec Y fails; with all, it passes"); it is never
on by default, and the default backend was written without it. The kit's
choices behind the switch come from spec/*/contract.go's documentation and
the kit's own failure messages, never from its implementation.
"""

import os

NAMES = {
    # continuity
    "continuity.cas_token": "silence: the snapshot revision is the sha256 hex of the raw bytes, never parsed",
    # runtime
    "runtime.ids": "silence: batch ids <session>:batch:<n>, claim ids <session>:claim:<batch>:<n>, "
                   "checkpoint refs sha256:<hex>",
    "runtime.graph_conflict": "silence: an append of a stored or repeated node id is graph_node_conflict, not io",
    "runtime.json_verbatim": "silence: opaque JSON is kept byte for byte, not as serde_json rewrites it",
    "runtime.active_path": "silence: the active path stops at a tombstoned node",
    "runtime.claim_batches_after_update": "silence: a claim's batches carry their claim fencing token after the claim",
    "runtime.claim_prefix": "silence: mergeable batches with no merge key merge; delivery policy is not compared",
    "runtime.completion_live": "silence: a completed claim must still be live (not expired)",
    "runtime.renew_expiry": "SEED: renew's UPDATE has no expiry condition; the kit requires a live claim",
    "runtime.graph_kind_late": "silence: a graph delta kind outside the vocabulary is refused where the "
                               "delta is applied (after the lease, revision and claim checks), not on arrival",
    "runtime.ledger_order": "silence: the token ledger is ordered by source then model",
    "runtime.gc_head_only": "silence: gc keeps only the head's checkpoint",
    "runtime.attachment_first_stage": "silence: a re-staged uncommitted attachment keeps its first staging",
    # client
    "client.event_seq": "silence: event seqs are previous + 1, the first 1",
    "client.session_for_task": "silence: a task's session is its latest open binding's, else its latest",
    "client.task_kind": "silence: open_task refuses a kind other than root or relay",
    "client.open_refresh_false": "SEED: the upsert answers true on a refresh; the kit wants false",
    "client.verdicts": "silence: settle_task refuses a verdict that is not completed, failed or cancelled",
    "client.millis": "SEED: session updated_at, fault created_at and binding times are unix seconds",
    "client.bind_at_now": "SEED: upsert_session opens its binding at the tuple's updated_at; the kit at now",
    "client.head_preview": "silence: head_preview keeps 200 code points, then an ellipsis",
    "client.empty_ref_task_id": "SEED: backend_ref {\"task_id\":\"\"} files the tuple under \"\"",
    "client.schema_table": "silence: the marker lives in schema_meta(marker, version); a file with tables "
                           "and no marker is refused",
}

_ON = {x.strip() for x in os.environ.get("PY2_KIT_READINGS", "").split(",") if x.strip()}
_unknown = {x.lstrip("-") for x in _ON} - set(NAMES) - {"all", "silences"}
if _unknown:
    raise SystemExit(f"PY2_KIT_READINGS: unknown reading(s) {', '.join(sorted(_unknown))}; "
                     f"known: {', '.join(sorted(NAMES))}")


def _excluded():
    # "all,-name" turns every reading the kit's way but name.
    return {x[1:] for x in _ON if x.startswith("-")}


def kit(name):
    """True when the place `name` should answer the kit's way. "silences"
    turns every reading of a silence the kit's way, and none of the places
    where the seed speaks (those the kit now checks as the seed states)."""
    if name not in NAMES:
        raise KeyError(name)
    if name in _excluded():
        return False
    if "silences" in _ON and not NAMES[name].startswith("SEED"):
        return True
    return name in _ON or "all" in _ON


def active():
    return sorted(n for n in NAMES if kit(n))


# PY2_BREAK=name,... breaks one of the rules the seeds state, on purpose, for
# the test that shows the kit still catches a backend that reads the seeds'
# silences its own way (the latitude is not blindness). Never on by default.
BREAKS = {
    "continuity.upsert_fence": "upsert_continuity_record accepts a fence lower than the stored one",
}

_broken = {n.strip() for n in os.environ.get("PY2_BREAK", "").split(",") if n.strip()}
for _n in _broken:
    if _n not in BREAKS:
        raise SystemExit(f"PY2_BREAK: unknown rule {_n!r} (known: {', '.join(sorted(BREAKS))})")


def broken(name):
    """Whether PY2_BREAK asks this backend to break the named rule."""
    if name not in BREAKS:
        raise KeyError(name)
    return name in _broken
