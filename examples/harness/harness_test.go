package harness_test

import (
	"context"
	"testing"

	mystore "github.com/storecheck/storecheck/reference/continuity"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/suite"
)

// TestConformance is the README's example: a backend author's whole test.
func TestConformance(t *testing.T) {
	suite.Test(t, suite.Harness{
		Name:         "mystore",
		Capabilities: suite.Capabilities{Files: true, SharedFiles: true},
		Continuity: func(ctx context.Context, o suite.Options) (continuity.Store, error) {
			s, err := mystore.Open(ctx, mystore.Options{Path: o.Path})
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	})
}
