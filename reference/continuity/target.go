package continuity

import (
	"context"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// OpenTarget opens the reference continuity store on o as an adapters.Target:
// operation values applied in process, and crash points armed there
// (sqlitedb.Target).
func OpenTarget(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
	s, err := Open(ctx, Options{Path: o.Path})
	if err != nil {
		return nil, err
	}
	return sqlitedb.Target[c.Store](s, c.Apply), nil
}
