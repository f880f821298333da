package client

import "github.com/storecheck/storecheck/spec"

// Refusals are the error kinds each operation may answer, each with the
// rule that makes it: the error cells of the store's coverage matrix
// (spec.Contract.Cells). Every operation may also answer io, when the store
// cannot do its work. (schema_mismatch is the answer of opening a store,
// which is no operation.)
var Refusals = map[string][]spec.Refusal{
	"enqueue_intent": {{Kind: ErrInvalidArgument, Rule: RulePayloadJSON}},
	"accept_intent":  {{Kind: ErrInvalidArgument, Rule: RulePayloadJSON}},
	"append_event":   {{Kind: ErrInvalidArgument, Rule: RulePayloadJSON}},
	"open_task":      {{Kind: ErrInvalidArgument, Rule: RuleOpenTaskKinds}},
	"settle_task":    {{Kind: ErrInvalidArgument, Rule: RuleSettleVerdictWords}},
}
