package model

import "testing"

func TestEnvelopeTask(t *testing.T) {
	for env, want := range map[string]string{
		`{"causality":{"task":"a"}}`:                               "a",
		`{"x":[1,{"task":"no"}],"causality":{"hop":1,"task":"b"}}`: "b",
		`{"causality":{"task":"a","task":"b"}}`:                    "a",
		`{"causality":{"task":"c"},"causality":{"task":"d"}}`:      "c",
		`{"causality":{"task":7}}`:                                 "",
		`{"causality":"t"}`:                                        "",
		`["causality"]`:                                            "",
		`{"causality":{"task":`:                                    "",
		`{"task":"t"}`:                                             "",
	} {
		got, ok := envelopeTask([]byte(env))
		if got != want || ok != (want != "") {
			t.Errorf("envelopeTask(%s) = %q, %v; want %q", env, got, ok, want)
		}
	}
}
