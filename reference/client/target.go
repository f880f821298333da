package client

import (
	"context"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// OpenTarget opens the reference client store on o as an adapters.Target:
// operation values applied in process, and crash points armed there
// (sqlitedb.Target).
func OpenTarget(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
	s, err := Open(ctx, Options{Path: o.Path, Clock: o.Clock})
	if err != nil {
		return nil, err
	}
	return sqlitedb.Target[cli.Store](s, cli.Apply), nil
}
