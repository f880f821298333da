package main

import (
	"fmt"
	"strings"
)

// A reproduce command is what a report prints for a check to be run again:
// the command, every flag whose value changes the run, and the backend
// after "--". A person pastes it into a shell, so every word is quoted for
// one.

// changing is " --NAME VALUE" for each named option of f whose value is not
// its default, in the order given: the flags that change a run and that the
// run was given (on the command line or in the config).
func changing(f *flags, names ...string) string {
	var b strings.Builder
	for _, name := range names {
		o, _ := optionNamed(name)
		switch v := f.str(name); {
		case v == o.def:
		case o.kind == kindBool:
			fmt.Fprintf(&b, " --%s=%s", name, v)
		default:
			fmt.Fprintf(&b, " --%s %s", name, shellQuote(v))
		}
	}
	return b.String()
}

// always is " --NAME VALUE" for each named option of f, default or not.
func always(f *flags, names ...string) string {
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, " --%s %s", name, shellQuote(f.str(name)))
	}
	return b.String()
}

// backendSuffix is " -- BACKEND ARG..." for a backend command, quoted for a
// shell; "" for the embedded reference.
func backendSuffix(command []string) string {
	if len(command) == 0 {
		return ""
	}
	words := make([]string, len(command))
	for i, w := range command {
		words[i] = shellQuote(w)
	}
	return " -- " + strings.Join(words, " ")
}

// shellQuote is w as one word of a POSIX shell: as it is when it holds
// nothing a shell reads specially, else in single quotes.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
