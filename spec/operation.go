package spec

import (
	"context"
	"strings"
)

type operationKey struct{}

// WithOperation returns a context whose operation is named name (an Op's
// Name). The adapter that applies an operation to a Go store sets it
// (adapters.Local), so that the store's hooks need name only the place:
// Yield(ctx, "before_tx") and CrashPoint(ctx, "after_commit") reach
// "<name>/before_tx" and "<name>/after_commit", as the Rust crate's
// Context does.
func WithOperation(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, operationKey{}, name)
}

// OperationOf is the name of the operation ctx runs, or "".
func OperationOf(ctx context.Context) string {
	name, _ := ctx.Value(operationKey{}).(string)
	return name
}

// PointName is the full name, "<operation>/<place>", of the yield or crash
// point place reached in ctx: place itself when it is one already (it
// holds a "/", the form a store that names its operation writes), else
// place after the name of ctx's operation (WithOperation). With no
// operation in ctx a bare place stays as it is.
func PointName(ctx context.Context, place string) string {
	if strings.Contains(place, "/") {
		return place
	}
	if op := OperationOf(ctx); op != "" {
		return op + "/" + place
	}
	return place
}
