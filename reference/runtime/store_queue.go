package runtime

// Queued work: batches, claims and their renewal, abandonment and cancelling.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// free is the condition on queued_work_batches that no live claim holds a
// batch at now (by the expiry rule).
func (s *Store) free(now int64) Cond {
	return Cond{SQL: "(claim_token IS NULL OR claim_expires_at_ms <= ?)", Args: []any{s.rules.ExpiredBy(now)}}
}

// ready is the condition that a batch's available_at has come at now.
func ready(now int64) Cond { return Cond{SQL: "available_at_ms <= ?", Args: []any{now}} }

const batchColumns = `batch_id, session_id, COALESCE(source_key, ''), delivery_policy, slot_policy, merge_key,
	available_at_ms, enqueued_at_ms, claim_fencing_token`

// queryBatches runs a query over batchColumns and loads each batch's items.
func queryBatches(ctx context.Context, tx *sqlitedb.Tx, query string, args ...any) ([]r.QueuedWorkBatch, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+batchColumns+` FROM queued_work_batches `+query, args...)
	if err != nil {
		return nil, err
	}
	batches := []r.QueuedWorkBatch{}
	for rows.Next() {
		var b r.QueuedWorkBatch
		if err := rows.Scan(&b.BatchID, &b.SessionID, &b.SourceKey, &b.DeliveryPolicy, &b.SlotPolicy, &b.MergeKey,
			&b.AvailableAtMs, &b.EnqueuedAtMs, &b.ClaimFencingToken); err != nil {
			rows.Close()
			return nil, err
		}
		batches = append(batches, b)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	for i := range batches {
		if batches[i].Items, err = loadItems(ctx, tx, batches[i].BatchID); err != nil {
			return nil, err
		}
	}
	return batches, nil
}

func loadItems(ctx context.Context, tx *sqlitedb.Tx, batchID string) ([]r.QueuedWorkItem, error) {
	rows, err := tx.QueryContext(ctx, `SELECT item_id, payload FROM queued_work_items WHERE batch_id = ? ORDER BY item_index`, batchID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	items := []r.QueuedWorkItem{}
	for rows.Next() {
		var it r.QueuedWorkItem
		var payload []byte
		if err := rows.Scan(&it.ItemID, &payload); err != nil {
			return nil, err
		}
		it.Payload = rawOut(payload)
		items = append(items, it)
	}
	return items, rows.Err()
}

func loadBatch(ctx context.Context, tx *sqlitedb.Tx, session, batchID string) (*r.QueuedWorkBatch, error) {
	bs, err := queryBatches(ctx, tx, `WHERE session_id = ? AND batch_id = ?`, session, batchID)
	if err != nil || len(bs) == 0 {
		return nil, err
	}
	return &bs[0], nil
}

// deleteBatch deletes a batch and its items when cond (extra WHERE terms
// over args) holds.
func deleteBatch(ctx context.Context, tx *sqlitedb.Tx, session, batchID, cond string, args ...any) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM queued_work_batches WHERE session_id = ? AND batch_id = ? `+cond,
		append([]any{session, batchID}, args...)...)
	if err != nil {
		return fmt.Errorf("delete batch %s: %w", batchID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM queued_work_items WHERE batch_id = ?`, batchID)
	return err
}

func (s *Store) EnqueueQueuedWork(ctx context.Context, d r.QueuedWorkBatchDraft) (r.QueuedWorkBatch, error) {
	now := s.now()
	var out r.QueuedWorkBatch
	if d.DeliveryPolicy != r.DeliverNextTurn && d.DeliveryPolicy != r.DeliverInterrupt {
		return out, spec.Errorf(r.ErrInvalidArgument, "unknown delivery policy %q", d.DeliveryPolicy)
	}
	if d.SlotPolicy != r.SlotExclusive && d.SlotPolicy != r.SlotMergeable {
		return out, spec.Errorf(r.ErrInvalidArgument, "unknown slot policy %q", d.SlotPolicy)
	}
	err := s.db.Write(ctx, "enqueue_queued_work", func(tx *sqlitedb.Tx) error {
		var sourceKey any
		if d.SourceKey != "" {
			sourceKey = d.SourceKey
			var existing string
			err := tx.QueryRowContext(ctx, `SELECT batch_id FROM queued_work_batches WHERE session_id = ? AND source_key = ?`,
				d.SessionID, d.SourceKey).Scan(&existing)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return err
			default:
				b, err := loadBatch(ctx, tx, d.SessionID, existing)
				if err != nil {
					return err
				}
				out = *b
				return nil
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO queued_work_batches (batch_id, session_id, source_key, delivery_policy,
			slot_policy, merge_key, available_at_ms, enqueued_at_ms) VALUES ('', ?, ?, ?, ?, ?, ?, ?)`,
			d.SessionID, sourceKey, d.DeliveryPolicy, d.SlotPolicy, d.MergeKey, d.AvailableAtMs, now)
		if err != nil {
			return err
		}
		seq, err := res.LastInsertId()
		if err != nil {
			return err
		}
		// The enqueue sequence is never reused (AUTOINCREMENT), so neither
		// is the batch id.
		id := batchID(d.SessionID, seq)
		if _, err := tx.ExecContext(ctx, `UPDATE queued_work_batches SET batch_id = ? WHERE enqueue_seq = ?`, id, seq); err != nil {
			return err
		}
		for i, p := range d.Payloads {
			if _, err := tx.ExecContext(ctx, `INSERT INTO queued_work_items (batch_id, item_index, item_id, payload) VALUES (?, ?, ?, ?)`,
				id, i, r.ItemID(id, i), raw(p)); err != nil {
				return err
			}
		}
		b, err := loadBatch(ctx, tx, d.SessionID, id)
		if err != nil {
			return err
		}
		out = *b
		return nil
	})
	return out, err
}

// errClaimLost rolls back a claim that lost a batch to another claimer.
var errClaimLost = errors.New("a batch of the claim was claimed by another")

func (s *Store) ClaimReadyQueuedWork(ctx context.Context, session string, leaseFence r.SessionExecutionLeaseFence, owner string,
	boundary r.QueuedWorkClaimBoundary, ttl uint64, maxBatches int) (*r.QueuedWorkClaim, error) {
	now := s.now()
	maxBatches = s.rules.ClaimCap(maxBatches)
	if maxBatches == 0 {
		return nil, nil
	}
	if boundary != r.BoundaryTurn && boundary != r.BoundaryStep {
		return nil, spec.Errorf(r.ErrInvalidArgument, "unknown claim boundary %q", boundary)
	}
	var out *r.QueuedWorkClaim
	err := s.db.Write(ctx, "claim_ready_queued_work", func(tx *sqlitedb.Tx) error {
		if err := s.ensureLease(ctx, tx, session, leaseFence, now); err != nil {
			return err
		}
		claimable := s.rules.Claimable(ready(now), s.free(now))
		candidates, err := queryBatches(ctx, tx, `WHERE session_id = ? AND `+claimable.SQL+` ORDER BY `+s.rules.ClaimOrder+` LIMIT ?`,
			append(append([]any{session}, claimable.Args...), maxBatches)...)
		if err != nil {
			return err
		}
		n := r.SelectClaimPrefix(candidates, boundary, maxBatches)
		if n == 0 {
			return nil
		}
		selected := candidates[:n]
		fence := selected[0].ClaimFencingToken + 1
		claim := r.QueuedWorkClaim{SessionID: session, OwnerID: owner, FencingToken: fence, ClaimedAtMs: now,
			ExpiresAtMs: expiry(now, ttl), ClaimID: claimID(session, selected[0].BatchID, fence)}
		claim.LeaseToken = claimToken(claim.ClaimID, owner, now)
		// The guard repeats the free condition: a row another claimer
		// holds is never taken, and the claim stands only as a whole.
		free, updated := s.free(now), 0
		for _, b := range selected {
			res, err := tx.ExecContext(ctx, `UPDATE queued_work_batches SET claim_id = ?, claim_owner_id = ?, claim_token = ?,
				claim_fencing_token = `+s.rules.ClaimFence+`, claim_claimed_at_ms = ?, claim_expires_at_ms = ?
				WHERE session_id = ? AND batch_id = ? AND `+free.SQL,
				append([]any{claim.ClaimID, owner, claim.LeaseToken, now, claim.ExpiresAtMs, session, b.BatchID}, free.Args...)...)
			if err != nil {
				return err
			}
			changed, err := res.RowsAffected()
			if err != nil {
				return err
			}
			updated += int(changed)
		}
		if !s.rules.ClaimStands(len(selected), updated) {
			return errClaimLost
		}
		if err := spec.CrashPoint(ctx, "claim_ready_queued_work/after_batches_update"); err != nil {
			return err
		}

		for _, b := range selected {
			loaded, err := loadBatch(ctx, tx, session, b.BatchID)
			if err != nil {
				return err
			}
			claim.Batches = append(claim.Batches, *loaded)
		}
		out = &claim
		return nil
	})
	if errors.Is(err, errClaimLost) {
		return nil, nil
	}
	return out, err
}

// RenewQueuedWorkClaim is the seed's: one UPDATE of every batch the claim's
// id and token hold, with no expiry condition, committed; then the answer is
// judged by how many batches it changed (the seed's renewed_claim, not
// shown: the reference answers the claim only when it changed exactly the
// claim's batches).
func (s *Store) RenewQueuedWorkClaim(ctx context.Context, c r.QueuedWorkClaim, ttl uint64) (r.QueuedWorkClaim, error) {
	now := s.now()
	expires := expiry(now, ttl)
	var changed int64
	err := s.db.Write(ctx, "renew_queued_work_claim", func(tx *sqlitedb.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE queued_work_batches SET claim_expires_at_ms = ?
			WHERE session_id = ? AND claim_id = ? AND claim_token = ?`, expires, c.SessionID, c.ClaimID, c.LeaseToken)
		if err != nil {
			return err
		}
		changed, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return r.QueuedWorkClaim{}, err
	}
	if changed == 0 || changed != int64(len(c.Batches)) {
		return r.QueuedWorkClaim{}, spec.Errorf(r.ErrQueuedWorkClaimExpired, "claim %s of session %s: the renewal changed %d of its %d batches",
			c.ClaimID, c.SessionID, changed, len(c.Batches))
	}
	c.ExpiresAtMs = expires
	return c, nil
}

func (s *Store) AbandonQueuedWorkClaim(ctx context.Context, c r.QueuedWorkClaim) error {
	return s.db.Write(ctx, "abandon_queued_work_claim", func(tx *sqlitedb.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE queued_work_batches SET claim_id = NULL, claim_owner_id = NULL,
			claim_token = NULL, claim_claimed_at_ms = 0, claim_expires_at_ms = 0
			WHERE session_id = ? AND claim_id = ? AND claim_token = ?`, c.SessionID, c.ClaimID, c.LeaseToken)
		return err
	})
}

func (s *Store) CancelQueuedWorkBatch(ctx context.Context, session, batchID string) (*r.QueuedWorkBatch, error) {
	now := s.now()
	var out *r.QueuedWorkBatch
	err := s.db.Write(ctx, "cancel_queued_work_batch", func(tx *sqlitedb.Tx) error {
		cancellable := s.rules.Cancellable(s.free(now))
		cond := `AND ` + cancellable.SQL
		bs, err := queryBatches(ctx, tx, `WHERE session_id = ? AND batch_id = ? `+cond, append([]any{session, batchID}, cancellable.Args...)...)
		if err != nil || len(bs) == 0 {
			return err
		}
		out = &bs[0]
		return deleteBatch(ctx, tx, session, batchID, cond, cancellable.Args...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) ListQueuedWork(ctx context.Context, session string) ([]r.QueuedWorkBatch, error) {
	var out []r.QueuedWorkBatch
	err := s.db.Read(ctx, "list_queued_work", func(tx *sqlitedb.Tx) (err error) {
		out, err = queryBatches(ctx, tx, `WHERE session_id = ? ORDER BY enqueue_seq`, session)
		return err
	})
	return out, err
}

func (s *Store) ListPendingQueuedWork(ctx context.Context, session string) ([]r.QueuedWorkBatch, error) {
	now := s.now()
	var out []r.QueuedWorkBatch
	err := s.db.Read(ctx, "list_pending_queued_work", func(tx *sqlitedb.Tx) (err error) {
		free := s.free(now)
		out, err = queryBatches(ctx, tx, `WHERE session_id = ? AND `+free.SQL+` ORDER BY enqueue_seq`, append([]any{session}, free.Args...)...)
		return err
	})
	return out, err
}
