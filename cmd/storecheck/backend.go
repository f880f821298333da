package main

import (
	"context"
	"io"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec/suite"
)

// withdraw turns off the capabilities the config withdraws.
func (c *Config) withdraw(caps suite.Capabilities) suite.Capabilities {
	if c == nil {
		return caps
	}
	for name, on := range c.Capabilities {
		if on {
			continue
		}
		switch name {
		case "files":
			caps.Files = false
		case "shared_files":
			caps.SharedFiles = false
		case "in_memory":
			caps.InMemory = false
		case "sqlite_locking":
			caps.SQLiteLocking = false
		case "client_schema_table":
			caps.ClientSchemaTable = false
		}
	}
	return caps
}

// harnessFor is h, or, when a backend command is given, the harness of that
// program through the exec adapter (the caller closes it); either way with
// the capabilities the config withdraws taken off.
func harnessFor(h suite.Harness, command []string, timeout time.Duration, verbose bool, stderr io.Writer) (suite.Harness, *adapters.Exec, error) {
	var backend *adapters.Exec
	if command != nil {
		o := adapters.ExecOptions{Command: command, Timeout: timeout}
		if verbose {
			o.Stderr = stderr
		}
		var err error
		if backend, err = adapters.StartExec(context.Background(), o); err != nil {
			return h, nil, err
		}
		h = suite.HarnessOf(backend)
	}
	h.Capabilities = config.withdraw(h.Capabilities)
	return h, backend, nil
}
