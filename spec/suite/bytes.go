package suite

import (
	"bytes"
	"fmt"

	"github.com/onsi/gomega/format"
	"github.com/onsi/gomega/types"

	"github.com/storecheck/storecheck/spec"
)

// Every failure message of the suite shows bytes as text when they are
// printable UTF-8, else as hex (never Gomega's decimal arrays), and JSON
// text as its text: registered once, for every Expect in this process.
func init() { format.RegisterCustomFormatter(formatBytes) }

func formatBytes(v any) (string, bool) {
	switch b := v.(type) {
	case []byte:
		return spec.FormatBytes(b), true
	case spec.RawJSON:
		return "JSON text " + spec.FormatBytes(b), true
	}
	return "", false
}

// equalBytes matches bytes equal to want (nil only when want is nil: no
// value at all); its failure shows both as text or hex and names the
// encoding mistake that would turn want into what the backend answered
// (spec.BytesMistake), such as hex where the protocol sends base64.
func equalBytes(want []byte) types.GomegaMatcher { return bytesMatcher{want} }

type bytesMatcher struct{ want []byte }

func asBytes(actual any) ([]byte, error) {
	switch b := actual.(type) {
	case []byte:
		return b, nil
	case spec.RawJSON:
		return b, nil
	}
	return nil, fmt.Errorf("equalBytes wants bytes, got %T", actual)
}

func (m bytesMatcher) Match(actual any) (bool, error) {
	got, err := asBytes(actual)
	if err != nil {
		return false, err
	}
	return (got == nil) == (m.want == nil) && bytes.Equal(got, m.want), nil
}

func (m bytesMatcher) FailureMessage(actual any) string {
	got, _ := asBytes(actual)
	msg := fmt.Sprintf("Expected bytes\n    %s\nto equal\n    %s", spec.FormatBytes(got), spec.FormatBytes(m.want))
	if hint := spec.BytesMistake(got, m.want); hint != "" {
		msg += "\n" + hint
	}
	return msg
}

func (m bytesMatcher) NegatedFailureMessage(actual any) string {
	got, _ := asBytes(actual)
	return fmt.Sprintf("Expected bytes\n    %s\nnot to equal them", spec.FormatBytes(got))
}

// bytesHint is a description for an Expect on a value that holds bytes:
// the encoding mistake that would turn want into got, if one is
// recognised.
func bytesHint(got, want []byte) func() string {
	return func() string { return spec.BytesMistake(got, want) }
}
