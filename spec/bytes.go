package spec

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FormatBytes is b for a person reading a failure: quoted text when it is
// printable UTF-8, else hex; nil is "nil". Long values are cut.
func FormatBytes(b []byte) string {
	const max = 256
	if b == nil {
		return "nil"
	}
	cut := ""
	if len(b) > max {
		cut = fmt.Sprintf("... (%d bytes)", len(b))
		b = b[:max]
	}
	if printable(b) {
		return strconv.Quote(string(b)) + cut
	}
	return fmt.Sprintf("hex %s (%d bytes, not text)", hex.EncodeToString(b), len(b)) + cut
}

// printable: valid UTF-8 of printable runes, spaces and line breaks.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

// BytesMistake names the encoding mistake that would turn want into got,
// when it recognises one ("" when not, or when they are equal): a backend
// that sends hex, or the text itself, where the protocol sends base64, or
// that encodes twice.
func BytesMistake(got, want []byte) string {
	if bytes.Equal(got, want) || len(want) == 0 {
		return ""
	}
	b64 := base64.StdEncoding.EncodeToString(got)
	wantHex := hex.EncodeToString(want)
	switch {
	case strings.EqualFold(b64, wantHex):
		return fmt.Sprintf("this looks like the hex of the expected bytes (%q) read as base64: the protocol sends bytes as base64 (%q)", wantHex, base64.StdEncoding.EncodeToString(want))
	case b64 == string(want) && printable(want):
		return fmt.Sprintf("this looks like the expected text sent as it is (%q) and read as base64: the protocol sends bytes as base64 (%q)", want, base64.StdEncoding.EncodeToString(want))
	case strings.EqualFold(string(got), wantHex):
		return "this is the hex of the expected bytes, as text: the backend hex-encoded them before the protocol's base64"
	case string(got) == base64.StdEncoding.EncodeToString(want) || string(got) == base64.RawStdEncoding.EncodeToString(want):
		return "this is the base64 of the expected bytes, as text: the backend encoded them twice (or sent base64 where the protocol sends JSON text as a plain JSON string)"
	case string(got) == base64.URLEncoding.EncodeToString(want) || string(got) == base64.RawURLEncoding.EncodeToString(want):
		return "this is the URL-safe base64 of the expected bytes, as text: the backend encoded them twice"
	}
	return ""
}

// NotBase64 explains why s, a byte field's JSON string, is not base64, and
// names a likely mistake (hex, URL-safe base64, no padding).
func NotBase64(s string) string {
	_, err := base64.StdEncoding.DecodeString(s)
	why := "not base64"
	if err != nil {
		why = "not base64 (" + err.Error() + ")"
	}
	short := s
	if len(short) > 64 {
		short = short[:64] + "..."
	}
	msg := fmt.Sprintf("%q is %s", short, why)
	switch {
	case len(s)%2 == 0 && isHex(s):
		b, _ := hex.DecodeString(s)
		msg += fmt.Sprintf("; it looks like hex (of %s): the protocol sends bytes as base64 (%q)", FormatBytes(b), base64.StdEncoding.EncodeToString(b))
	case decodes(base64.URLEncoding, s) || decodes(base64.RawURLEncoding, s):
		msg += "; it looks like URL-safe base64: the protocol sends bytes in standard base64 (+ and /, padded with =)"
	case decodes(base64.RawStdEncoding, s):
		msg += "; it looks like base64 without its = padding: the protocol pads"
	}
	return msg
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func decodes(e *base64.Encoding, s string) bool {
	_, err := e.DecodeString(s)
	return err == nil
}
