package model

import "testing"

// The task an envelope names, by the first and by the last occurrence of a
// member named twice (client.envelope_task).
func TestEnvelopeTask(t *testing.T) {
	for env, want := range map[string][2]string{
		`{"causality":{"task":"a"}}`:                               {"a", "a"},
		`{"x":[1,{"task":"no"}],"causality":{"hop":1,"task":"b"}}`: {"b", "b"},
		`{"causality":{"task":"a","task":"b"}}`:                    {"a", "b"},
		`{"causality":{"task":"c"},"causality":{"task":"d"}}`:      {"c", "d"},
		`{"causality":{"task":7}}`:                                 {"", ""},
		`{"causality":{"task":"e"},"causality":7}`:                 {"e", ""},
		`{"causality":"t"}`:                                        {"", ""},
		`["causality"]`:                                            {"", ""},
		`{"causality":{"task":`:                                    {"", ""},
		`{"task":"t"}`:                                             {"", ""},
	} {
		for i, last := range []bool{false, true} {
			got, ok := envelopeTask([]byte(env), last)
			if got != want[i] || ok != (want[i] != "") {
				t.Errorf("envelopeTask(%s, last %v) = %q, %v; want %q", env, last, got, ok, want[i])
			}
		}
	}
}
