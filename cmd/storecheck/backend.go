package main

import (
	"context"
	"io"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
)

// withdraw turns off the capabilities the config withdraws.
func (c *Config) withdraw(caps spec.Capabilities) spec.Capabilities {
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

// withdrawn is a Backend with some of its declared capabilities taken off
// (by withdraw: the backend-wide ones and each store's own).
type withdrawn struct {
	adapters.Backend
	withdraw func(spec.Capabilities) spec.Capabilities
}

// siblings is b as a program that can start more processes of itself,
// when it is one (under the capabilities the config withdraws, too).
func siblings(b adapters.Backend) (adapters.Siblings, bool) {
	if w, ok := b.(withdrawn); ok {
		b = w.Backend
	}
	s, ok := b.(adapters.Siblings)
	return s, ok
}

func (w withdrawn) Info() adapters.Hello {
	info := w.Backend.Info()
	info.Capabilities.Capabilities = w.withdraw(info.Capabilities.Capabilities)
	if len(info.Capabilities.Stores) > 0 {
		own := adapters.StoreCapabilityMap{}
		for store, c := range info.Capabilities.Stores {
			c.Capabilities = w.withdraw(c.Capabilities)
			own[store] = c
		}
		info.Capabilities.Stores = own
	}
	return info
}

// backendFor is the backend a command checks: ref (the reference, in this
// process), or, when a backend command is given, that program through the
// exec adapter (returned too: the caller closes it); either way with the
// capabilities the config withdraws taken off. Everything downstream (the
// suite through suite.HarnessOf, the linearizability check, the simulator)
// opens its Targets through it.
func backendFor(ref adapters.Backend, command []string, timeout time.Duration, verbose bool, stderr io.Writer) (adapters.Backend, *adapters.Exec, error) {
	b := ref
	var exec *adapters.Exec
	if command != nil {
		o := execOptions(command, timeout)
		if verbose {
			o.Stderr = stderr
		}
		var err error
		if exec, err = adapters.StartExec(context.Background(), o); err != nil {
			return nil, nil, err
		}
		b = exec
	}
	if config != nil && len(config.Capabilities) > 0 {
		b = withdrawn{b, config.withdraw}
	}
	return b, exec, nil
}

// execOptions runs command over the wire protocol, speaking every
// registered store.
func execOptions(command []string, timeout time.Duration) adapters.ExecOptions {
	return adapters.ExecOptions{Command: command, Timeout: timeout, Contracts: stores.Contracts()}
}
